package session

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/store"
)

// fakeStore is the session step's store: ReadTurn answers the session (or an error) the
// case sets, WriteTurn records what it was asked to write and answers writeErr, and the
// earlier turn of a repeated request is there to read back.
type fakeStore struct {
	read     *store.TurnSession
	readErr  error
	writeErr error

	written *store.TurnWrite
	user    *store.Message
}

func (f *fakeStore) CreateSession(context.Context, *store.Session) error { return nil }

func (f *fakeStore) CreateSessionIfAbsent(context.Context, *store.Session) (bool, error) {
	return true, nil
}

func (f *fakeStore) GetSession(_ context.Context, id, userID string) (*store.Session, error) {
	return &store.Session{ID: id, UserID: userID}, nil
}

func (f *fakeStore) ReadTurn(context.Context, string, string, string) (*store.TurnSession, error) {
	return f.read, f.readErr
}

func (f *fakeStore) RepeatedRequest(context.Context, string, string) error { return f.readErr }

func (f *fakeStore) WriteTurn(_ context.Context, user, _ *store.Message, w store.TurnWrite) error {
	f.written, f.user = &w, user
	return f.writeErr
}

func (f *fakeStore) GetMessage(_ context.Context, id, userID string) (*store.Message, error) {
	return &store.Message{ID: id, UserID: userID, Role: store.RoleAssistant, Status: store.StatusCompleted}, nil
}

// sessionAt is a stored session in phase with metadata.
func sessionAt(phase, metadata string) *store.TurnSession {
	return &store.TurnSession{
		Session: store.Session{ID: "s1", UserID: "u1", Locale: "zh", Phase: phase, Status: StatusActive,
			Artifacts: store.JSON(`{"strategy":{"summary":"kept"}}`), Metadata: store.JSON(metadata)},
		Seen: store.Seen{History: true},
	}
}

// TestBegin: what step 1 prepares from the session as read, before anything is written.
func TestBegin(t *testing.T) {
	waiting := `{"turn_counts":{"stress_test":2},"carryover":{"from":"strategy","to":"stress_test","text":"the strategy was confirmed\n"}}`
	cases := []struct {
		name    string
		req     Request
		read    *store.TurnSession
		readErr error
		// want
		err           error
		duplicate     bool
		phase, locale string
		count         int    // the phase's turn count in the new metadata
		carried       string // the carryover block taken
		newSession    bool
	}{
		{name: "a new session, made without a read", req: Request{UserID: "u1", Locale: "zh-CN", Text: "hi"},
			phase: "strategy", locale: "zh", count: 1, newSession: true},
		{name: "an existing session counts the turn", req: Request{UserID: "u1", SessionID: "s1", Text: "hi"},
			read: sessionAt("strategy", `{"turn_counts":{"strategy":4}}`), phase: "strategy", locale: "zh", count: 5},
		{name: "a waiting carryover block is taken once", req: Request{UserID: "u1", SessionID: "s1", Text: "hi"},
			read: sessionAt("stress_test", waiting), phase: "stress_test", locale: "zh", count: 3, carried: "the strategy was confirmed\n"},
		{name: "a repeated client_request_id answers the earlier turn", req: Request{UserID: "u1", SessionID: "s1", ClientRequestID: "c1"},
			readErr: &store.DuplicateRequestError{AssistantMessageID: "a0", SessionID: "s0"}, duplicate: true},
		{name: "a new session's repeated client_request_id answers the earlier turn", req: Request{UserID: "u1", ClientRequestID: "c1"},
			readErr: &store.DuplicateRequestError{AssistantMessageID: "a0", SessionID: "s0"}, duplicate: true},
		{name: "a running generation stops it", req: Request{UserID: "u1", SessionID: "s1"},
			readErr: &store.GenerationRunningError{MessageID: "a9"}, err: &store.GenerationRunningError{}},
		{name: "another user's session is not found", req: Request{UserID: "u2", SessionID: "s1"},
			readErr: store.ErrNotFound, err: store.ErrNotFound},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{read: tc.read, readErr: tc.readErr}
			b, err := New(st, nil).Begin(context.Background(), tc.req)
			if tc.err != nil {
				var running *store.GenerationRunningError
				if !errors.Is(err, tc.err) && !(errors.As(tc.err, &running) && errors.As(err, &running)) {
					t.Fatalf("Begin = %v, want %v", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.Duplicate != tc.duplicate {
				t.Fatalf("Duplicate = %v, want %v", b.Duplicate, tc.duplicate)
			}
			if tc.duplicate {
				if b.Assistant.ID != "a0" || b.Session.ID != "s0" {
					t.Fatalf("the earlier turn is %s in %s, want a0 in s0", b.Assistant.ID, b.Session.ID)
				}
				return
			}
			if st.written != nil {
				t.Fatal("Begin wrote: only Commit may")
			}
			if b.Session.Phase != tc.phase || b.Session.Locale != tc.locale || (b.newSession != nil) != tc.newSession {
				t.Fatalf("session %s/%s (new %v), want %s/%s (new %v)", b.Session.Phase, b.Session.Locale, b.newSession != nil, tc.phase, tc.locale, tc.newSession)
			}
			if n := b.Metadata.TurnCounts[tc.phase]; n != tc.count {
				t.Fatalf("turn count %d, want %d", n, tc.count)
			}
			if b.Carryover != tc.carried {
				t.Fatalf("carryover %q, want %q", b.Carryover, tc.carried)
			}
			var stored Metadata
			if err := json.Unmarshal(b.Session.Metadata, &stored); err != nil {
				t.Fatal(err)
			}
			if stored.TurnCounts[tc.phase] != tc.count || (tc.carried != "" && !stored.Carryover.Used) {
				t.Fatalf("the metadata to write %s does not count the turn or mark the block used", b.Session.Metadata)
			}
			checkRows(t, b, tc.req)
		})
	}
}

// checkRows checks the turn's two messages and its first event.
func checkRows(t *testing.T, b *Begun, req Request) {
	t.Helper()
	if b.User.Role != store.RoleUser || b.User.Content != req.Text || b.User.Phase != b.Session.Phase {
		t.Fatalf("user message %+v", b.User)
	}
	if b.Assistant.Role != store.RoleAssistant || b.Assistant.Status != store.StatusPending || !b.Assistant.CreatedAt.After(b.User.CreatedAt) {
		t.Fatalf("assistant message %+v: want a pending reply stamped after the user's", b.Assistant)
	}
	if len(b.Events) != 1 || b.Events[0].Seq != 1 || b.Events[0].MessageID != b.Assistant.ID {
		t.Fatalf("first events %+v, want status queued at seq 1", b.Events)
	}
	var queued struct{ State, Phase string }
	if err := json.Unmarshal(b.Events[0].Data, &queued); err != nil || queued.State != "queued" || queued.Phase != b.Session.Phase {
		t.Fatalf("first event %s (%v), want queued in %s", b.Events[0].Data, err, b.Session.Phase)
	}
}

// TestCommit: what the write is asked for and how its answers reach the turn.
func TestCommit(t *testing.T) {
	cases := []struct {
		name      string
		writeErr  error
		err       error
		duplicate bool
	}{
		{name: "written"},
		{name: "the session changed since the read", writeErr: store.ErrSessionChanged, err: ErrChanged},
		{name: "a new session's repeated request", writeErr: &store.DuplicateRequestError{AssistantMessageID: "a0", SessionID: "s0"}, duplicate: true},
		{name: "the database failed", writeErr: errors.New("connection reset"), err: errors.New("connection reset")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := &fakeStore{read: sessionAt("strategy", `{}`), writeErr: tc.writeErr}
			c := New(st, nil)
			ctx := context.Background()
			b, err := c.Begin(ctx, Request{UserID: "u1", SessionID: "s1", Text: "hi"})
			if err != nil {
				t.Fatal(err)
			}
			lease := store.Lease{Owner: "replica-1", TTL: time.Minute}
			got, err := c.Commit(ctx, b, lease)
			switch {
			case tc.err != nil && (err == nil || (errors.Is(tc.err, ErrChanged) != errors.Is(err, ErrChanged))):
				t.Fatalf("Commit = %v, want %v", err, tc.err)
			case tc.err == nil && err != nil:
				t.Fatalf("Commit = %v", err)
			case tc.err == nil && got.Duplicate != tc.duplicate:
				t.Fatalf("Duplicate = %v, want %v", got.Duplicate, tc.duplicate)
			}
			w := st.written
			if w.Lease != lease || w.Read != b.read || string(w.Metadata) != string(b.Session.Metadata) || len(w.Events) != 1 || st.user != b.User {
				t.Fatalf("the write was asked for %+v, not the turn Begin prepared", w)
			}
		})
	}
}

// The block a move leaves is what a later Begin takes: the two steps agree on its shape.
func TestBeginTakesTheBlockAMoveLeft(t *testing.T) {
	meta := Metadata{Carryover: &carryover.Block{From: "strategy", To: "stress_test", Text: "moved\n"}}
	raw, err := meta.Encode()
	if err != nil {
		t.Fatal(err)
	}
	st := &fakeStore{read: sessionAt("stress_test", string(raw))}
	b, err := New(st, nil).Begin(context.Background(), Request{UserID: "u1", SessionID: "s1"})
	if err != nil || b.Carryover != "moved\n" {
		t.Fatalf("Begin took %q (%v), want the block", b.Carryover, err)
	}
}
