package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/session"
)

type postMessageBody struct {
	SessionID       string          `json:"session_id"`
	Text            string          `json:"text"`
	Locale          string          `json:"locale"`
	ClientRequestID string          `json:"client_request_id"`
	RuntimePolicy   json.RawMessage `json:"runtime_policy"`
}

// turnAnswer is the 202 body of a message-creating call.
type turnAnswer struct {
	MessageID   string `json:"message_id"`
	RequestID   string `json:"request_id"`
	SessionID   string `json:"session_id"`
	EventsURL   string `json:"events_url"`
	StreamToken string `json:"stream_token"`
}

// postSessionMessage serves POST /api/v1/sessions/{id}/messages.
func (s *Server) postSessionMessage(c echo.Context) error {
	var body postMessageBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	body.SessionID = c.Param("id")
	return s.startTurn(c, body)
}

// postMessage serves POST /api/v1/messages, which makes a session when none is named.
func (s *Server) postMessage(c echo.Context) error {
	var body postMessageBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	return s.startTurn(c, body)
}

func (s *Server) startTurn(c echo.Context, body postMessageBody) error {
	req, err := s.turnRequest(c, body)
	if err != nil {
		return err
	}
	after, err := lastEventID(c) // a streamed POST resumes as GET …/events does
	if err != nil {
		return err
	}
	release := func() {}
	if wantsEventStream(c) { // before the turn starts: a refused stream starts nothing
		if release, err = s.slots.take(c, req.UserID); err != nil {
			return err
		}
	}
	turn, err := s.orch.HandleMessage(c.Request().Context(), req)
	if err != nil {
		release()
		return err
	}
	if wantsEventStream(c) {
		// A repeated streamed POST is how fetch-based clients reconnect: it answers the
		// earlier turn from the client's position, and 204 once it has seen the end. A new
		// turn streams from its start whatever Last-Event-ID a client left set.
		if !turn.Duplicate {
			after = 0
		}
		if isFinished(&turn.Message) && after >= turn.Message.LastEventID {
			release()
			return c.NoContent(http.StatusNoContent)
		}
		return s.stream(c, &turn.Message, after, false, nil, release)
	}
	return s.answerTurn(c, mustClaims(c), turn)
}

// turnRequest checks a message body, whichever route it came by, and makes it the
// orchestrator's request; the locale falls back to Accept-Language.
func (s *Server) turnRequest(c echo.Context, body postMessageBody) (orchestration.Request, error) {
	if strings.TrimSpace(body.Text) == "" {
		return orchestration.Request{}, badRequest(`"text" is required`)
	}
	if err := checkLocale(body.Locale); err != nil {
		return orchestration.Request{}, err
	}
	policy, err := parseRuntimePolicy(body.RuntimePolicy)
	if err != nil {
		return orchestration.Request{}, badRequest(err.Error())
	}
	claims := mustClaims(c)
	if err := checkLoosening(policy, s.cfg.ReplyPolicy, s.cfg.SerpQueriesOptional, claims.IsAdmin()); err != nil {
		return orchestration.Request{}, err
	}
	locale := body.Locale
	if locale == "" {
		locale = c.Request().Header.Get("Accept-Language")
	}
	return orchestration.Request{Request: session.Request{
		UserID: claims.Subject, SessionID: body.SessionID, Text: body.Text, Locale: locale,
		ClientRequestID: body.ClientRequestID, RequestID: requestID(c),
	}, Policy: policy}, nil
}

func (s *Server) answerTurn(c echo.Context, claims *auth.Claims, turn *orchestration.Turn) error {
	token, err := s.auth.SignStream(claims.Subject, turn.MessageID, auth.DefaultStreamTTL)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, turnAnswer{
		MessageID: turn.MessageID, RequestID: turn.RequestID, SessionID: turn.SessionID,
		EventsURL: "/api/v1/messages/" + turn.MessageID + "/events", StreamToken: token,
	})
}

// messageRate refuses a message over the user's rate with 429 and Retry-After before its
// body is read; a message refused, here or by what follows (too many turns running, a bad
// body), uses up nothing.
func (s *Server) messageRate() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if s.rate == nil {
				return next(c)
			}
			ok, retry, undo := s.rate.Allow(c.Request().Context(), mustClaims(c).Subject)
			if !ok {
				return tooManyMessages(retry)
			}
			err := next(c)
			if err != nil {
				undo()
			}
			return err
		}
	}
}

func wantsEventStream(c echo.Context) bool {
	return strings.Contains(c.Request().Header.Get(echo.HeaderAccept), "text/event-stream")
}

// cancelMessage serves POST /api/v1/messages/{id}/cancel.
func (s *Server) cancelMessage(c echo.Context) error {
	id := c.Param("id")
	if err := s.orch.Cancel(c.Request().Context(), id, mustClaims(c).Subject); err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, map[string]string{"message_id": id, "status": "cancelling"})
}
