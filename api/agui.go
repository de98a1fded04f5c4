package api

import (
	"encoding/json"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/protocols/agui"
)

// aguiRequestPrefix makes a run's id this route's client_request_id: a second post of a
// run joins it instead of starting another generation.
const aguiRequestPrefix = "ag-ui:"

// postAGUIRun serves POST /api/v1/ag-ui: a RunAgentInput whose last user message is the
// turn's text, in the conversation its threadId names, answered as the run's AG-UI events.
// A runId posted before joins that run, from its start.
func (s *Server) postAGUIRun(c echo.Context) error {
	var in agui.RunAgentInput
	if err := decodeJSON(c, &in); err != nil {
		return err
	}
	text, err := in.Check()
	if err != nil {
		return badRequest(err.Error())
	}
	body := postMessageBody{Text: text, Locale: in.ForwardedProps.Locale, RuntimePolicy: in.ForwardedProps.RuntimePolicy,
		ClientRequestID: aguiRequestPrefix + in.RunID}
	turn, release, err := s.conversationTurn(c, in.ThreadID, body)
	if err != nil {
		return err
	}
	sess, err := s.store.GetSession(c.Request().Context(), turn.SessionID, mustClaims(c).Subject)
	if err != nil {
		release()
		return err
	}
	state := agui.State{Phase: sess.Phase}
	if err := json.Unmarshal(sess.Artifacts, &state.Artifacts); err != nil {
		release()
		return err
	}
	run := agui.Run{ThreadID: in.ThreadID, RunID: in.RunID, MessageID: turn.MessageID, Messages: in.Messages,
		State: state, Join: turn.Duplicate}
	return s.stream(c, &turn.Message, 0, false, agui.NewStream(run), release)
}
