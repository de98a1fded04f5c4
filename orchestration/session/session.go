// Package session is step 1 of a turn (orchestrator.md §2): resolve or create the session
// (a new one starts with every phase's artifact block), check it belongs to the caller,
// persist the user message and create the pending assistant message, claimed by this
// replica's lease and with its log started by `status: queued`, in one atomic write (which
// also creates a new session, refuses a second concurrent generation and answers a
// client_request_id the user already sent with the earlier turn), count the turn for the
// phase and take the phase's carryover block if one is waiting. It also names untitled
// sessions ([AutoTitle]).
package session

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what the session core needs of persistence.
type Store interface {
	CreateSession(ctx context.Context, s *store.Session) error
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	CreateTurn(ctx context.Context, user, assistant *store.Message, start store.TurnStart) error
	GetMessage(ctx context.Context, id, userID string) (*store.Message, error)
}

// Request is what a client asked for: a message in a session (or in a new one, untitled
// until its first completed turn names it, see [AutoTitle]).
type Request struct {
	UserID          string
	SessionID       string // empty: create a session
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
	// Events are the first events of the assistant message's log, already committed
	// (status queued).
	Events []store.Event
	// Artifacts and Metadata are the session's state, decoded once for the whole turn.
	// The orchestrator drops Artifacts, and User, once the turn is planned.
	Artifacts Artifacts
	Metadata  Metadata
	// Carryover is the phase's carryover block, taken for this turn ("" for none).
	Carryover string
	// Seen is what the turn's begin saw of the session's history, strategies and stored
	// prompts, so the plan skips the reads that would find nothing.
	Seen      store.Seen
	Duplicate bool
}

// Core creates sessions and turns.
type Core struct {
	store   Store
	initial func() Artifacts
	now     func() time.Time
}

// New returns a core over st. initial gives every phase's block with its defaults (fresh
// maps each call): a session starts with all of them, so the model and the front end see
// the same keys from the first turn (seed 002 §5.2); nil starts sessions empty.
func New(st Store, initial func() Artifacts) *Core {
	if initial == nil {
		initial = func() Artifacts { return Artifacts{} }
	}
	return &Core{store: st, initial: initial, now: func() time.Time { return time.Now().UTC() }}
}

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
	s := c.newSession(userID, title, locale)
	if err := c.store.CreateSession(ctx, s); err != nil {
		return nil, fmt.Errorf("session: create: %w", err)
	}
	return s, nil
}

// Begin persists the turn atomically: the session (created when the request names none;
// else its phase's turn counted and its carryover block taken, written only if no one
// changed it meanwhile), the user's message, and the assistant message claimed by lease
// with its log started (status queued).
//
// locked, when not nil, receives a copy of the turn as it will be written once the
// session has been read and the turn's checks have passed, before the write and the commit
// (store.TurnStart.Locked): from there the turn fails only if the database does or a
// concurrent write wins, so the caller can plan it and call the upstream meanwhile. A retried race calls it again with
// the new copy; the copy that counts is the last one, and only if Begin succeeds.
func (c *Core) Begin(ctx context.Context, req Request, lease store.Lease, locked func(*Begun)) (*Begun, error) {
	b := &Begun{}
	start := store.TurnStart{Lease: lease, Prepare: func(sess *store.Session, seen store.Seen) ([]store.Event, error) {
		b.Seen = seen
		return c.prepare(b, sess)
	}}
	if locked != nil {
		start.Locked = func() { locked(b.copy()) }
	}
	if req.SessionID == "" { // untitled until its first completed turn names it (AutoTitle)
		start.NewSession = c.newSession(req.UserID, "", req.Locale)
		req.SessionID = start.NewSession.ID
	}
	b.User, b.Assistant = c.newMessages(req)
	err := c.store.CreateTurn(ctx, b.User, b.Assistant, start)
	var dup *store.DuplicateRequestError
	if errors.As(err, &dup) {
		return c.duplicate(ctx, req.UserID, dup)
	}
	if err != nil {
		return nil, fmt.Errorf("session: begin turn: %w", err)
	}
	return b, nil
}

// copy is b with its own copies of the rows the store goes on reading until the turn is
// written; the decoded state is made anew by each prepare and never changed after, so it
// is shared.
func (b *Begun) copy() *Begun {
	c := *b
	user, assistant := *b.User, *b.Assistant
	c.User, c.Assistant = &user, &assistant
	return &c
}

// prepare runs on the session as the begin read it: it decodes the state,
// counts the turn for the phase, takes the phase's carryover block and makes the queued
// event. It may run more than once (the store retries a lost race), so it starts from the
// row each time.
func (c *Core) prepare(b *Begun, sess *store.Session) ([]store.Event, error) {
	arts, err := DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return nil, err
	}
	meta, err := DecodeMetadata(sess.Metadata)
	if err != nil {
		return nil, err
	}
	if meta.TurnCounts == nil {
		meta.TurnCounts = map[string]int{}
	}
	meta.TurnCounts[sess.Phase]++
	b.Carryover = carryover.Take(meta.Carryover, sess.Phase)
	if sess.Metadata, err = meta.Encode(); err != nil {
		return nil, err
	}
	copied := *sess
	b.Session, b.Artifacts, b.Metadata = &copied, arts, meta
	queued, err := queuedEvent(b, sess.Phase)
	if err != nil {
		return nil, err
	}
	b.Events = []store.Event{queued}
	return b.Events, nil
}

// newSession is a session for userID in the initial phase, every phase's block in place,
// not yet stored.
func (c *Core) newSession(userID, title, locale string) *store.Session {
	now := c.now()
	arts, err := c.initial().Encode()
	if err != nil { // plain JSON values from the handlers: cannot fail
		arts = store.JSON(`{}`)
	}
	return &store.Session{
		ID: store.NewID(), UserID: userID, Title: title, Locale: NormalizeLocale(locale),
		Phase: string(phases.Initial), Status: "active",
		Artifacts: arts, Metadata: store.JSON(`{}`), CreatedAt: now, UpdatedAt: now,
	}
}

// newMessages makes the turn's two messages; the store stamps them with the session's phase.
func (c *Core) newMessages(req Request) (*store.Message, *store.Message) {
	now := c.now()
	user := &store.Message{
		ID: store.NewID(), SessionID: req.SessionID, UserID: req.UserID, Role: "user",
		Status: store.StatusCompleted, Content: req.Text,
		RequestID: req.RequestID, ClientRequestID: req.ClientRequestID, CreatedAt: now, CompletedAt: &now,
	}
	// The reply is stamped a microsecond (the databases' resolution) after the message it
	// answers, so listing a session by time always puts it second.
	assistant := &store.Message{
		ID: store.NewID(), SessionID: req.SessionID, UserID: req.UserID, Role: "assistant",
		Status: store.StatusPending, RequestID: req.RequestID,
		ClientRequestID: req.ClientRequestID, CreatedAt: now.Add(time.Microsecond),
	}
	return user, assistant
}

// queuedEvent is the first event of every generation's log.
func queuedEvent(b *Begun, phase string) (store.Event, error) {
	id := b.Assistant.ID
	data, err := events.Encode(&events.StatusData{
		Base:  events.Base{MessageID: id, RequestID: b.Assistant.RequestID},
		State: events.StateQueued, Phase: phase,
	})
	if err != nil {
		return store.Event{}, err
	}
	return store.Event{MessageID: id, Seq: 1, Name: events.Status, Data: data}, nil
}

// duplicate is the earlier turn a repeated client_request_id names, with its session.
func (c *Core) duplicate(ctx context.Context, userID string, dup *store.DuplicateRequestError) (*Begun, error) {
	assistant, err := c.store.GetMessage(ctx, dup.AssistantMessageID, userID)
	if err != nil {
		return nil, fmt.Errorf("session: earlier message of a repeated request: %w", err)
	}
	sess, err := c.store.GetSession(ctx, dup.SessionID, userID)
	if err != nil {
		return nil, fmt.Errorf("session: earlier session of a repeated request: %w", err)
	}
	return &Begun{Session: sess, Assistant: assistant, Duplicate: true}, nil
}
