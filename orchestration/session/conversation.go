package session

import (
	"context"
	"fmt"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/store"
)

// A conversation is a chat a client of another protocol names itself (the AI SDK's chat
// id, AG-UI's thread id). The first turn under a new name makes its session, and every later
// one finds it. The session's id is derived from the user and the name (a name-based UUID,
// version 5), so finding it needs no table of names, the same name under another user is
// another session, and two replicas making it at once make the same one.

// ConversationID is the id of the session of userID's conversation name.
func ConversationID(userID, name string) string {
	return uuid.NewSHA1(conversationSpace(), []byte(userID+"\x00"+name)).String()
}

// conversationSpace is the namespace of conversations' session ids (a random UUID, fixed).
func conversationSpace() uuid.UUID {
	return uuid.UUID{0x6b, 0x1f, 0x0e, 0x52, 0x3c, 0x9a, 0x4d, 0x7e, 0x8f, 0x21, 0x5a, 0xc4, 0x90, 0x3d, 0x17, 0xe8}
}

// OpenConversation returns the session of userID's conversation name, made in locale when
// it does not exist yet.
func (c *Core) OpenConversation(ctx context.Context, userID, name, locale string) (*store.Session, error) {
	s := c.newSession(userID, "", locale)
	s.ID = ConversationID(userID, name)
	created, err := c.store.CreateSessionIfAbsent(ctx, s)
	if err != nil {
		return nil, fmt.Errorf("session: open conversation: %w", err)
	}
	if created {
		return s, nil
	}
	got, err := c.store.GetSession(ctx, s.ID, userID)
	if err != nil {
		return nil, fmt.Errorf("session: open conversation: %w", err)
	}
	return got, nil
}
