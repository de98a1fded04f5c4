package api

import (
	"errors"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// conversationTurn starts a turn in the conversation a client of another protocol names
// (the AI SDK's chat id, AG-UI's thread id): the conversation's session, made on its first
// turn (session.ConversationID). The user's stream slot is taken first, so a refused stream
// starts nothing; release gives it back. A body whose client_request_id was used before
// answers the earlier turn (turn.Duplicate).
func (s *Server) conversationTurn(c echo.Context, name string, body postMessageBody) (turn *orchestration.Turn, release func(), err error) {
	claims := mustClaims(c)
	body.SessionID = session.ConversationID(claims.Subject, name)
	req, err := s.turnRequest(c, body)
	if err != nil {
		return nil, nil, err
	}
	if release, err = s.slots.take(c, claims.Subject); err != nil {
		return nil, nil, err
	}
	ctx := c.Request().Context()
	turn, err = s.orch.HandleMessage(ctx, req)
	if errors.Is(err, store.ErrNotFound) { // the conversation's first turn
		if _, err = s.orch.OpenConversation(ctx, claims.Subject, name, req.Locale); err == nil {
			turn, err = s.orch.HandleMessage(ctx, req)
		}
	}
	if err != nil {
		release()
		return nil, nil, err
	}
	return turn, release, nil
}

// conversationSession is the id of the session of the conversation name of the caller.
func conversationSession(c echo.Context, name string) string {
	return session.ConversationID(mustClaims(c).Subject, name)
}
