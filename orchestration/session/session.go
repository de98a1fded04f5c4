// Package session is step 1 of a turn (docs/turn.md): resolve or create the session
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
	CreateSessionIfAbsent(ctx context.Context, s *store.Session) (bool, error)
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
	ReadTurn(ctx context.Context, sessionID, userID, clientRequestID string) (*store.TurnSession, error)
	RepeatedRequest(ctx context.Context, userID, clientRequestID string) error
	WriteTurn(ctx context.Context, user, assistant *store.Message, w store.TurnWrite) error
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

// Begun is a turn as its begin read it ([Core.Begin]): its rows prepared, written once
// [Core.Commit] returns nil. Duplicate means the client_request_id was seen before:
// Assistant is the earlier message and nothing new must be generated.
type Begun struct {
	Session   *store.Session
	User      *store.Message
	Assistant *store.Message
	// Events are the first events of the assistant message's log (status queued),
	// committed with the rows.
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

	read       *store.TurnSession // the session as read, for the write's check
	newSession *store.Session     // the session the turn creates, when the request named none
}

// Core creates sessions and turns.
type Core struct {
	store   Store
	initial func() Artifacts
	now     func() time.Time
}

// New returns a core over st. initial gives every phase's block with its defaults (fresh
// maps each call): a session starts with all of them, so the model and the front end see
// the same keys from the first turn (docs/turn.md); nil starts sessions empty.
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

// The statuses of a session: active until its last phase is done.
const (
	StatusActive    = "active"
	StatusCompleted = "completed"
)

// ErrChanged is Commit's answer when the session changed between the turn's Begin and
// its Commit (a concurrent turn, a phase move, a rename): nothing was written; begin again.
var ErrChanged = store.ErrSessionChanged

// Begin is step 1 as read: the turn's session as it stands (read, or a new one made when
// the request names none), checked (the caller's, no generation running, no repeated
// client_request_id), and the turn's rows prepared from it: its two messages, the
// session's metadata with the turn counted for the phase and the phase's carryover block
// taken, and the first event of the assistant's log (status queued). Nothing is written
// until [Core.Commit], so the turn can be planned while it is. A repeated
// client_request_id answers the earlier turn (Duplicate).
func (c *Core) Begin(ctx context.Context, req Request) (*Begun, error) {
	b := &Begun{}
	sess := &store.Session{}
	var err error
	if req.SessionID == "" { // untitled until its first completed turn names it (AutoTitle)
		b.newSession = c.newSession(req.UserID, "", req.Locale)
		req.SessionID, *sess = b.newSession.ID, *b.newSession
		b.Seen = store.Seen{Prompts: true} // not known without a read: the plan looks
		if req.ClientRequestID != "" {     // a mobile retry must start nothing
			err = c.store.RepeatedRequest(ctx, req.UserID, req.ClientRequestID)
		}
	} else {
		var read *store.TurnSession
		if read, err = c.store.ReadTurn(ctx, req.SessionID, req.UserID, req.ClientRequestID); err == nil {
			b.read, b.Seen, *sess = read, read.Seen, read.Session
		}
	}
	var dup *store.DuplicateRequestError
	if errors.As(err, &dup) {
		return c.duplicate(ctx, req.UserID, dup)
	}
	if err != nil {
		return nil, fmt.Errorf("session: begin turn: %w", err)
	}
	b.User, b.Assistant = c.newMessages(req)
	b.User.Phase, b.Assistant.Phase = sess.Phase, sess.Phase
	if err := c.prepare(b, sess); err != nil {
		return nil, fmt.Errorf("session: begin turn: %w", err)
	}
	return b, nil
}

// Commit ends step 1: the turn Begin prepared, written atomically (the two messages, the
// assistant's claimed by lease, its first event and the session's metadata), only if the
// session is still as read ([ErrChanged] otherwise). A new session is created with it; a
// repeated client_request_id answers the earlier turn (Duplicate). When it returns nil, the
// turn's begin has committed.
func (c *Core) Commit(ctx context.Context, b *Begun, lease store.Lease) (*Begun, error) {
	w := store.TurnWrite{Lease: lease, Events: b.Events, Read: b.read, Metadata: b.Session.Metadata, NewSession: b.newSession}
	err := c.store.WriteTurn(ctx, b.User, b.Assistant, w)
	var dup *store.DuplicateRequestError
	switch {
	case errors.As(err, &dup):
		return c.duplicate(ctx, b.User.UserID, dup)
	case errors.Is(err, ErrChanged):
		return nil, ErrChanged
	case err != nil:
		return nil, fmt.Errorf("session: begin turn: %w", err)
	}
	return b, nil
}

// Copy is b with copies of its two messages, for a turn that starts on its Begin while
// Commit (which fills the messages' links and times) goes on: the decoded state is made
// anew by each Begin and never changed after, so it is shared.
func (b *Begun) Copy() *Begun {
	c := *b
	user, assistant := *b.User, *b.Assistant
	c.User, c.Assistant = &user, &assistant
	return &c
}

// prepare makes the turn's rows from the session as it stands: it decodes the state,
// counts the turn for the phase, takes the phase's carryover block and makes the queued
// event. b.Session is a copy of sess with the new metadata.
func (c *Core) prepare(b *Begun, sess *store.Session) error {
	arts, err := DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return err
	}
	meta, err := DecodeMetadata(sess.Metadata)
	if err != nil {
		return err
	}
	if meta.TurnCounts == nil {
		meta.TurnCounts = map[string]int{}
	}
	meta.TurnCounts[sess.Phase]++
	b.Carryover = carryover.Take(meta.Carryover, sess.Phase)
	copied := *sess
	if copied.Metadata, err = meta.Encode(); err != nil {
		return err
	}
	b.Session, b.Artifacts, b.Metadata = &copied, arts, meta
	queued, err := queuedEvent(b, sess.Phase)
	if err != nil {
		return err
	}
	b.Events = []store.Event{queued}
	return nil
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
		Phase: string(phases.Initial), Status: StatusActive,
		Artifacts: arts, Metadata: store.JSON(`{}`), CreatedAt: now, UpdatedAt: now,
	}
}

// newMessages makes the turn's two messages; the store stamps them with the session's phase.
func (c *Core) newMessages(req Request) (*store.Message, *store.Message) {
	now := c.now()
	user := &store.Message{
		ID: store.NewID(), SessionID: req.SessionID, UserID: req.UserID, Role: store.RoleUser,
		Status: store.StatusCompleted, Content: req.Text,
		RequestID: req.RequestID, ClientRequestID: req.ClientRequestID, CreatedAt: now, CompletedAt: &now,
	}
	// The reply is stamped a microsecond (the databases' resolution) after the message it
	// answers, so listing a session by time always puts it second.
	assistant := &store.Message{
		ID: store.NewID(), SessionID: req.SessionID, UserID: req.UserID, Role: store.RoleAssistant,
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
	return store.Event{MessageID: id, Seq: 1, Name: events.Status, Data: data, CreatedAt: b.Assistant.CreatedAt}, nil
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
