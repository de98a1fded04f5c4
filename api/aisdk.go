package api

import (
	"errors"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/protocols/aisdk"
	"github.com/phaseflow/phaseflow/store"
)

// The AI SDK's routes (docs/front-end.md): useChat with DefaultChatTransport pointed at
// /api/v1/ai-sdk/chat posts there, resumes at …/{id}/stream and may load a conversation
// from …/{id}/messages. The translation is package aisdk's.

// aisdkRequestPrefix makes the page's user message id this route's client_request_id, so
// a repeated post of the same message answers the turn it started.
const aisdkRequestPrefix = "ai-sdk:"

// postAISDKChat serves POST /api/v1/ai-sdk/chat: the last user message of the body is the
// turn's text, in the conversation the body's id names; the answer is the turn's UI message
// stream. A regenerate posts the same text as a new turn.
func (s *Server) postAISDKChat(c echo.Context) error {
	var req aisdk.ChatRequest
	if err := decodeJSON(c, &req); err != nil {
		return err
	}
	if err := req.Check(); err != nil {
		return badRequest(err.Error())
	}
	userMessageID, text, _ := req.LastUserMessage()
	body := postMessageBody{Text: text, Locale: req.Locale, RuntimePolicy: req.Policy}
	if req.Trigger == aisdk.TriggerSubmit && userMessageID != "" {
		body.ClientRequestID = aisdkRequestPrefix + userMessageID
	}
	turn, release, err := s.conversationTurn(c, req.ID, body)
	if err != nil {
		return err
	}
	return s.streamAISDK(c, &turn.Message, 0, release)
}

// getAISDKStream serves GET /api/v1/ai-sdk/chat/{id}/stream: the conversation's running
// turn from the start of its log (after Last-Event-ID when sent), 204 when none runs.
func (s *Server) getAISDKStream(c echo.Context) error {
	after, err := lastEventID(c)
	if err != nil {
		return err
	}
	claims := mustClaims(c)
	msg, err := s.store.RunningMessage(c.Request().Context(), conversationSession(c, c.Param("id")), claims.Subject)
	if errors.Is(err, store.ErrNotFound) {
		return c.NoContent(http.StatusNoContent)
	}
	if err != nil {
		return err
	}
	release, err := s.slots.take(c, claims.Subject)
	if err != nil {
		return err
	}
	return s.streamAISDK(c, msg, after, release)
}

// streamAISDK answers msg's log as the UI message stream.
func (s *Server) streamAISDK(c echo.Context, msg *store.Message, after int64, release func()) error {
	c.Response().Header().Set(aisdk.Header, aisdk.HeaderVersion)
	return s.stream(c, msg, after, false, aisdk.NewStream(msg.ID, after), release)
}

// getAISDKMessages serves GET /api/v1/ai-sdk/chat/{id}/messages: the conversation as the AI
// SDK's UIMessage list, [] for a conversation not started.
func (s *Server) getAISDKMessages(c echo.Context) error {
	msgs, err := s.store.ListMessages(c.Request().Context(), conversationSession(c, c.Param("id")), mustClaims(c).Subject)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return err
	}
	ui, err := aisdk.UIMessages(msgs)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, ui)
}
