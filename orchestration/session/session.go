// Package session is step 1 of a turn (orchestrator.md §2): resolve or create the session,
// check it belongs to the caller, persist the user message and create the pending assistant
// message in one transaction (which is also what refuses a second concurrent generation),
// count the turn for the phase and take the phase's carryover block if one is waiting.
package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the session core needs of persistence.
type Store interface {
	CreateSession(ctx context.Context, s *store.Session) error
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	UpdateSession(ctx context.Context, s *store.Session) error
	CreateTurn(ctx context.Context, user, assistant *store.Message) error
	GetMessage(ctx context.Context, id, userID string) (*store.Message, error)
}

// Request is what a client asked for: a message in a session (or in a new one).
type Request struct {
	UserID          string
	SessionID       string // empty: create a session
	Title           string // for a new session; empty: taken from the text
	Text            string
	Locale          string // for a new session: "en" or "zh"
	ClientRequestID string
	RequestID       string
}

// Begun is a turn whose rows exist. Duplicate means the client_request_id was seen before:
// Assistant is the earlier message and nothing new must be generated.
type Begun struct {
	Session   *store.Session
	User      *store.Message
	Assistant *store.Message
	Metadata  Metadata
	Carryover string
	Duplicate bool
}

// Core creates sessions and turns.
type Core struct {
	store Store
	now   func() time.Time
}

// New returns a core over st.
func New(st Store) *Core { return &Core{store: st, now: func() time.Time { return time.Now().UTC() }} }

// NormalizeLocale maps what a client sent (a locale or an Accept-Language value) to one of
// the supported locales, "en" by default.
func NormalizeLocale(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if strings.HasPrefix(s, "zh") {
		return "zh"
	}
	return "en"
}

// CreateSession makes a new session for userID in the initial phase.
func (c *Core) CreateSession(ctx context.Context, userID, title, locale string) (*store.Session, error) {
	now := c.now()
	s := &store.Session{
		ID: uuid.NewString(), UserID: userID, Title: title, Locale: NormalizeLocale(locale),
		Phase: string(phases.Initial), Status: "active",
		Artifacts: store.JSON(`{}`), Metadata: store.JSON(`{}`),
		CreatedAt: now, UpdatedAt: now,
	}
	if err := c.store.CreateSession(ctx, s); err != nil {
		return nil, fmt.Errorf("session: create: %w", err)
	}
	return s, nil
}

// Begin resolves the session and persists the turn's two messages.
func (c *Core) Begin(ctx context.Context, req Request) (*Begun, error) {
	sess, err := c.resolve(ctx, req)
	if err != nil {
		return nil, err
	}
	user, assistant := c.newMessages(sess, req)
	err = c.store.CreateTurn(ctx, user, assistant)
	var dup *store.DuplicateRequestError
	if errors.As(err, &dup) {
		return c.duplicate(ctx, sess, req.UserID, dup)
	}
	if err != nil {
		return nil, fmt.Errorf("session: begin turn: %w", err)
	}
	b := &Begun{Session: sess, User: user, Assistant: assistant}
	if err := c.countTurn(ctx, b); err != nil {
		return nil, err
	}
	return b, nil
}

func (c *Core) resolve(ctx context.Context, req Request) (*store.Session, error) {
	if req.SessionID == "" {
		title := req.Title
		if title == "" {
			title = TitleFrom(req.Text)
		}
		return c.CreateSession(ctx, req.UserID, title, req.Locale)
	}
	sess, err := c.store.GetSession(ctx, req.SessionID, req.UserID)
	if err != nil {
		return nil, fmt.Errorf("session: get %s: %w", req.SessionID, err)
	}
	return sess, nil
}

func (c *Core) newMessages(sess *store.Session, req Request) (*store.Message, *store.Message) {
	now := c.now()
	user := &store.Message{
		ID: uuid.NewString(), SessionID: sess.ID, UserID: req.UserID, Role: "user",
		Status: store.StatusCompleted, Content: req.Text, Phase: sess.Phase,
		RequestID: req.RequestID, ClientRequestID: req.ClientRequestID, CreatedAt: now, CompletedAt: &now,
	}
	// The reply is stamped a microsecond (the databases' resolution) after the message it
	// answers, so listing a session by time always puts it second.
	assistant := &store.Message{
		ID: uuid.NewString(), SessionID: sess.ID, UserID: req.UserID, Role: "assistant",
		Status: store.StatusPending, Phase: sess.Phase, RequestID: req.RequestID,
		ClientRequestID: req.ClientRequestID, CreatedAt: now.Add(time.Microsecond),
	}
	return user, assistant
}

func (c *Core) duplicate(ctx context.Context, sess *store.Session, userID string, dup *store.DuplicateRequestError) (*Begun, error) {
	assistant, err := c.store.GetMessage(ctx, dup.AssistantMessageID, userID)
	if err != nil {
		return nil, fmt.Errorf("session: earlier message of a repeated request: %w", err)
	}
	return &Begun{Session: sess, Assistant: assistant, Duplicate: true}, nil
}

// countTurn adds the turn to the phase's count and takes the phase's carryover block.
func (c *Core) countTurn(ctx context.Context, b *Begun) error {
	meta, err := DecodeMetadata(b.Session.Metadata)
	if err != nil {
		return err
	}
	if meta.TurnCounts == nil {
		meta.TurnCounts = map[string]int{}
	}
	meta.TurnCounts[b.Session.Phase]++
	b.Carryover = carryover.Take(meta.Carryover, b.Session.Phase)
	raw, err := meta.Encode()
	if err != nil {
		return err
	}
	b.Session.Metadata, b.Session.UpdatedAt, b.Metadata = raw, c.now(), meta
	if err := c.store.UpdateSession(ctx, b.Session); err != nil {
		return fmt.Errorf("session: count turn: %w", err)
	}
	return nil
}

// TitleFrom makes a session title from the first line of a message, at most 60 characters.
func TitleFrom(text string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.TrimSpace(line)
	if utf8.RuneCountInString(line) <= 60 {
		return line
	}
	r := []rune(line)
	return strings.TrimSpace(string(r[:59])) + "…"
}
