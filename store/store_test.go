package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.uber.org/goleak"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newSession(t *testing.T, s *store.Store, userID string) *store.Session {
	t.Helper()
	sess := &store.Session{UserID: userID, Title: "t", Locale: "en", Phase: "strategy", Status: "active"}
	if err := s.CreateSession(t.Context(), sess); err != nil {
		t.Fatalf("CreateSession: %v", err)
	}
	return sess
}

// turn is the user/assistant pair CreateTurn takes.
func turn(sess *store.Session, text, clientRequestID string) (*store.Message, *store.Message) {
	return &store.Message{SessionID: sess.ID, UserID: sess.UserID, Content: text, Phase: sess.Phase,
			RequestID: "req-" + text, ClientRequestID: clientRequestID},
		&store.Message{}
}

// testOwner is the replica id the tests' generations are owned by.
const testOwner = "replica-test"

// testStart claims a new turn for testOwner with a lease that outlives any test.
var testStart = store.TurnStart{Lease: store.Lease{Owner: testOwner, TTL: time.Hour}}

func createTurn(t *testing.T, s *store.Store, sess *store.Session, text, clientRequestID string) (*store.Message, *store.Message) {
	t.Helper()
	u, a := turn(sess, text, clientRequestID)
	if err := s.CreateTurn(t.Context(), u, a, testStart); err != nil {
		t.Fatalf("CreateTurn(%q): %v", text, err)
	}
	return u, a
}

// lostOf is CommitEvents' answer as the messages it lost.
func lostOf(u store.Unwritten, err error) ([]string, error) { return u.Lost, err }

// commitEvents is CommitEvents for testOwner, with a message it did not write reported as
// an error.
func commitEvents(ctx context.Context, s *store.Store, evs []store.Event) error {
	un, err := s.CommitEvents(ctx, testOwner, evs)
	if err == nil && len(un.Lost)+len(un.Refused) > 0 {
		err = fmt.Errorf("CommitEvents: lost %v, refused %v", un.Lost, un.Refused)
	}
	return err
}

// finish ends m's generation with a terminal event carrying its outcome, as a turn does.
func finish(t *testing.T, s *store.Store, m *store.Message, status string) {
	t.Helper()
	m.Status = status
	m.Content = "reply to " + m.ReplyTo
	m.LastEventID++
	ev := store.Event{MessageID: m.ID, Seq: m.LastEventID, Name: "completed", Data: store.JSON(`{}`), Finish: m}
	if err := commitEvents(t.Context(), s, []store.Event{ev}); err != nil {
		t.Fatalf("finish: %v", err)
	}
}

func TestSessions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		alice := newSession(t, s, "alice")
		time.Sleep(time.Millisecond) // distinct created_at for the ordering check
		alice2 := newSession(t, s, "alice")
		bob := newSession(t, s, "bob")

		t.Run("defaults", func(t *testing.T) {
			got, err := s.GetSession(ctx, alice.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(alice, got); diff != "" {
				t.Errorf("GetSession (-created +got):\n%s", diff)
			}
			if string(got.Artifacts) != "{}" || string(got.Metadata) != "{}" {
				t.Errorf("artifacts %s metadata %s, want {} {}", got.Artifacts, got.Metadata)
			}
			if got.CreatedAt.IsZero() || got.CreatedAt.Location() != time.UTC {
				t.Errorf("CreatedAt = %v, want a UTC time", got.CreatedAt)
			}
		})

		getCases := []struct {
			name, id, user string
			wantErr        error
		}{
			{"owner", alice.ID, "alice", nil},
			{"other user", alice.ID, "bob", store.ErrNotFound},
			{"missing id", "no-such-id", "alice", store.ErrNotFound},
			{"empty user", bob.ID, "", store.ErrNotFound},
		}
		for _, tc := range getCases {
			t.Run("get/"+tc.name, func(t *testing.T) {
				_, err := s.GetSession(ctx, tc.id, tc.user)
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("GetSession err = %v, want %v", err, tc.wantErr)
				}
			})
		}

		t.Run("list newest first, own only", func(t *testing.T) {
			got, err := s.ListSessions(ctx, "alice")
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, x := range got {
				ids = append(ids, x.ID)
			}
			if diff := cmp.Diff([]string{alice2.ID, alice.ID}, ids); diff != "" {
				t.Errorf("ListSessions ids (-want +got):\n%s", diff)
			}
			none, err := s.ListSessions(ctx, "carol")
			if err != nil || len(none) != 0 {
				t.Errorf("ListSessions(carol) = %v, %v; want empty", none, err)
			}
		})

		t.Run("create without a user", func(t *testing.T) {
			if err := s.CreateSession(ctx, &store.Session{Title: "orphan"}); err == nil {
				t.Error("CreateSession without UserID = nil, want an error")
			}
		})

		t.Run("update", func(t *testing.T) {
			upd := *alice
			upd.Title, upd.Phase, upd.Status, upd.Locale = "renamed", "stress_test", "active", "zh"
			upd.Artifacts = store.JSON(`{"strategy": {"strategy_id": "s1"}, "stress_test": {}}`)
			upd.Metadata = store.JSON(`{"turns": {"strategy": 3}}`)
			upd.PreviousResponseID = "resp_1"
			before := upd.UpdatedAt
			if err := s.UpdateSession(ctx, &upd); err != nil {
				t.Fatal(err)
			}
			if !upd.UpdatedAt.After(before) {
				t.Errorf("UpdatedAt %v not after %v", upd.UpdatedAt, before)
			}
			got, err := s.GetSession(ctx, alice.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&upd, got); diff != "" {
				t.Errorf("after UpdateSession (-want +got):\n%s", diff)
			}
		})

		t.Run("update other user's session", func(t *testing.T) {
			stolen := *alice
			stolen.UserID = "bob"
			stolen.Title = "mine now"
			if err := s.UpdateSession(ctx, &stolen); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("UpdateSession err = %v, want ErrNotFound", err)
			}
			got, _ := s.GetSession(ctx, alice.ID, "alice")
			if got.Title == "mine now" {
				t.Error("another user's update was written")
			}
		})
	})
}

func TestCreateTurn(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()

		t.Run("fills the pair", func(t *testing.T) {
			sess := newSession(t, s, "alice")
			u, a := createTurn(t, s, sess, "hello", "c1")
			want := []struct{ field, got, want string }{
				{"user role", u.Role, "user"},
				{"user status", u.Status, store.StatusCompleted},
				{"assistant role", a.Role, "assistant"},
				{"assistant status", a.Status, store.StatusPending},
				{"assistant session", a.SessionID, sess.ID},
				{"assistant user", a.UserID, "alice"},
				{"assistant phase", a.Phase, "strategy"},
				{"assistant request id", a.RequestID, "req-hello"},
				{"assistant client request id", a.ClientRequestID, "c1"},
				{"assistant reply_to", a.ReplyTo, u.ID},
			}
			for _, w := range want {
				if w.got != w.want {
					t.Errorf("%s = %q, want %q", w.field, w.got, w.want)
				}
			}
			if u.ID == "" || a.ID == "" || !a.CreatedAt.After(u.CreatedAt) {
				t.Errorf("ids %q %q, times %v %v: want ids and assistant after user", u.ID, a.ID, u.CreatedAt, a.CreatedAt)
			}
			got, err := s.ListMessages(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]store.Message{*u, *a}, got); diff != "" {
				t.Errorf("stored turn (-want +got):\n%s", diff)
			}
		})

		// Each case runs its steps in a new session of alice's; client ids are prefixed with
		// the case's name, since one names a single turn per user.
		type step struct {
			text, clientRequestID string
			finishFirst           bool // finish every running assistant message before this step
			wantErr               string
		}
		cases := []struct {
			name  string
			steps []step
		}{
			{"duplicate client_request_id while running", []step{
				{text: "a", clientRequestID: "same"},
				{text: "b", clientRequestID: "same", wantErr: "duplicate"},
			}},
			{"duplicate client_request_id after finishing", []step{
				{text: "a", clientRequestID: "same"},
				{text: "b", clientRequestID: "same", finishFirst: true, wantErr: "duplicate"},
			}},
			{"second running generation", []step{
				{text: "a", clientRequestID: "c1"},
				{text: "b", clientRequestID: "c2", wantErr: "running"},
			}},
			{"second running generation without client ids", []step{
				{text: "a"},
				{text: "b", wantErr: "running"},
			}},
			{"new turn after the terminal event", []step{
				{text: "a", clientRequestID: "c1"},
				{text: "b", clientRequestID: "c2", finishFirst: true},
				{text: "c", finishFirst: true},
			}},
			{"empty client ids never collide", []step{
				{text: "a"},
				{text: "b", finishFirst: true},
			}},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				sess := newSession(t, s, "alice")
				var users, assistants []*store.Message
				for i, st := range tc.steps {
					if st.finishFirst {
						for _, a := range assistants {
							if a.Status == store.StatusPending {
								finish(t, s, a, store.StatusCompleted)
							}
						}
					}
					crid := st.clientRequestID
					if crid != "" {
						crid = tc.name + "/" + crid
					}
					u, a := turn(sess, st.text, crid)
					err := s.CreateTurn(ctx, u, a, testStart)
					checkTurnErr(t, i, err, st.wantErr, users, assistants, crid)
					if err == nil {
						users, assistants = append(users, u), append(assistants, a)
					}
				}
				got, err := s.ListMessages(ctx, sess.ID, "alice")
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 2*len(users) {
					t.Errorf("%d messages stored, want %d: refused turns must write nothing", len(got), 2*len(users))
				}
			})
		}

		t.Run("same client_request_id in another session of the user", func(t *testing.T) {
			first := newSession(t, s, "alice")
			u1, a1 := createTurn(t, s, first, "a", "shared")
			u, a := turn(newSession(t, s, "alice"), "a", "shared")
			var dup *store.DuplicateRequestError
			if err := s.CreateTurn(ctx, u, a, testStart); !errors.As(err, &dup) ||
				*dup != (store.DuplicateRequestError{UserMessageID: u1.ID, AssistantMessageID: a1.ID, SessionID: first.ID}) {
				t.Fatalf("CreateTurn = %v, want the first turn and its session", err)
			}
			createTurn(t, s, newSession(t, s, "bob"), "a", "shared") // another user's ids are theirs
		})

		t.Run("a turn that starts its session", func(t *testing.T) {
			fresh := &store.Session{ID: "fresh-1", UserID: "carol", Title: "", Locale: "en", Phase: "strategy", Status: "active"}
			u, a := turn(fresh, "hello", "mobile-1")
			start := testStart
			start.NewSession = fresh
			if err := s.CreateTurn(ctx, u, a, start); err != nil {
				t.Fatal(err)
			}
			again := &store.Session{ID: "fresh-2", UserID: "carol", Locale: "en", Phase: "strategy", Status: "active"}
			u2, a2 := turn(again, "hello", "mobile-1")
			start.NewSession = again
			var dup *store.DuplicateRequestError
			if err := s.CreateTurn(ctx, u2, a2, start); !errors.As(err, &dup) || dup.SessionID != "fresh-1" || dup.AssistantMessageID != a.ID {
				t.Fatalf("a repeated post without a session = %v, want the first turn in fresh-1", err)
			}
			sessions, err := s.ListSessions(ctx, "carol")
			if err != nil || len(sessions) != 1 || sessions[0].ID != "fresh-1" {
				t.Fatalf("carol's sessions %+v (%v), want fresh-1 alone: a repeat leaves no session behind", sessions, err)
			}
		})

		ownerCases := []struct {
			name    string
			sessID  func(*store.Session) string
			user    string
			running bool // alice has a generation running there: bob must not learn it
		}{
			{"other user's session", func(x *store.Session) string { return x.ID }, "bob", false},
			{"other user's session with a generation running", func(x *store.Session) string { return x.ID }, "bob", true},
			{"missing session", func(*store.Session) string { return "no-such-session" }, "alice", false},
		}
		for _, tc := range ownerCases {
			t.Run(tc.name, func(t *testing.T) {
				sess := newSession(t, s, "alice")
				if tc.running {
					mine := &store.Message{SessionID: sess.ID, UserID: "alice", Content: "x"}
					if err := s.CreateTurn(ctx, mine, &store.Message{}, testStart); err != nil {
						t.Fatal(err)
					}
				}
				u := &store.Message{SessionID: tc.sessID(sess), UserID: tc.user, Content: "x"}
				if err := s.CreateTurn(ctx, u, &store.Message{}, testStart); !errors.Is(err, store.ErrNotFound) {
					t.Fatalf("CreateTurn err = %v, want ErrNotFound", err)
				}
			})
		}
	})
}

// checkTurnErr checks the outcome of step i of a CreateTurn case: the typed errors must name
// the earlier pair (duplicate) or the running assistant message.
func checkTurnErr(t *testing.T, i int, err error, want string, users, assistants []*store.Message, clientRequestID string) {
	t.Helper()
	var dup *store.DuplicateRequestError
	var running *store.GenerationRunningError
	switch want {
	case "":
		if err != nil {
			t.Fatalf("step %d: CreateTurn: %v", i, err)
		}
	case "duplicate":
		if !errors.As(err, &dup) {
			t.Fatalf("step %d: err = %v, want DuplicateRequestError", i, err)
		}
		for j, u := range users {
			if u.ClientRequestID == clientRequestID {
				wantDup := store.DuplicateRequestError{UserMessageID: u.ID, AssistantMessageID: assistants[j].ID, SessionID: u.SessionID}
				if *dup != wantDup {
					t.Errorf("step %d: %+v, want %+v", i, *dup, wantDup)
				}
			}
		}
	case "running":
		if !errors.As(err, &running) {
			t.Fatalf("step %d: err = %v, want GenerationRunningError", i, err)
		}
		if last := assistants[len(assistants)-1]; running.MessageID != last.ID {
			t.Errorf("step %d: running message %q, want %q", i, running.MessageID, last.ID)
		}
	}
}

// atOnce runs start(i) for i in 0..n-1 on n goroutines released together, and returns
// what each returned: writers racing for the same rows.
func atOnce(n int, start func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-gate
			errs[i] = start(i)
		})
	}
	close(gate)
	wg.Wait()
	return errs
}

// onlyWinner returns the index of the one nil error in errs, failing the test when there is
// none or more than one.
func onlyWinner(t *testing.T, errs []error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both started a turn", winner, i)
			}
			winner = i
		}
	}
	if winner < 0 {
		t.Fatalf("no writer succeeded: %v", errs)
	}
	return winner
}

func TestCreateTurnConcurrent(t *testing.T) {
	const writers = 8
	cases := []struct {
		name          string
		clientRequest func(i int) string
		wantLoserErr  string
	}{
		{"distinct client ids", func(i int) string { return fmt.Sprint("c", i) }, "running"},
		{"same client id", func(int) string { return "same" }, "duplicate"},
	}
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				sess := newSession(t, s, "alice")
				pairs := make([][2]*store.Message, writers)
				for i := range pairs {
					u, a := turn(sess, fmt.Sprint("m", i), tc.clientRequest(i))
					pairs[i] = [2]*store.Message{u, a}
				}
				errs := atOnce(writers, func(i int) error {
					return s.CreateTurn(t.Context(), pairs[i][0], pairs[i][1], testStart)
				})
				winner := onlyWinner(t, errs)
				for i, err := range errs {
					if i == winner {
						continue
					}
					checkTurnErr(t, i, err, tc.wantLoserErr,
						[]*store.Message{pairs[winner][0]}, []*store.Message{pairs[winner][1]}, tc.clientRequest(i))
				}
				msgs, err := s.ListMessages(t.Context(), sess.ID, "alice")
				if err != nil || len(msgs) != 2 {
					t.Fatalf("ListMessages = %d messages, %v; want 2", len(msgs), err)
				}
			})
		}
	})
}

func TestMessages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		u1, a1 := createTurn(t, s, sess, "one", "")

		t.Run("null JSON columns", func(t *testing.T) {
			got, err := s.GetMessage(ctx, a1.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			for name, j := range map[string]store.JSON{"tool_calls": got.ToolCalls, "genui": got.GenUI,
				"state_patch": got.StatePatch, "validation": got.Validation, "usage": got.Usage,
				"error": got.Error, "metadata": got.Metadata} {
				if j != nil {
					t.Errorf("%s = %q, want nil", name, j)
				}
			}
			if got.CompletedAt != nil || got.ReplyTo != u1.ID {
				t.Errorf("CompletedAt %v ReplyTo %q, want nil and %q", got.CompletedAt, got.ReplyTo, u1.ID)
			}
			b, _ := json.Marshal(got)
			var wire map[string]any
			_ = json.Unmarshal(b, &wire)
			if v, ok := wire["genui"]; !ok || v != nil {
				t.Errorf("genui on the wire = %v (present %v), want null", v, ok)
			}
		})

		t.Run("status moves with its event", func(t *testing.T) {
			working := store.Event{MessageID: a1.ID, Seq: 1, Name: "status", Data: store.JSON(`{"state":"working"}`), Status: store.StatusStreaming}
			if err := commitEvents(ctx, s, []store.Event{working}); err != nil {
				t.Fatal(err)
			}
			got, _ := s.GetMessage(ctx, a1.ID, "alice")
			if got.Status != store.StatusStreaming || got.LastEventID != 1 {
				t.Errorf("status %q last_event_id %d, want streaming and 1", got.Status, got.LastEventID)
			}
			bad := store.Event{MessageID: a1.ID, Seq: 2, Name: "status", Data: store.JSON(`{}`), Status: store.StatusPending}
			if err := commitEvents(ctx, s, []store.Event{bad}); err == nil {
				t.Error("an event moving a message back to pending was accepted")
			}
		})

		t.Run("finish round-trips JSON and NULLs", func(t *testing.T) {
			before := time.Now().Add(-time.Second)
			a1.Status = store.StatusCompleted
			a1.Content = "<final>你好</final>"
			a1.ResponseID = "resp_1"
			a1.ToolCalls = store.JSON(`[{"name": "validate_strategy", "arguments": {"a": [1, 2]}, "status": "success"}]`)
			a1.GenUI = store.JSON(`[{"type":"strategy_ref","strategy_id":"s1"}]`)
			a1.StatePatch = store.JSON(`{"strategy": {"name": null}}`)
			a1.Validation = store.JSON(`{"valid": true, "errors": []}`)
			a1.Usage = store.JSON(`{"input_tokens": 10, "output_tokens": 20, "total_tokens": 30}`)
			a1.Error = nil
			a1.Metadata = store.JSON("null") // the literal null is stored as NULL
			done := store.Event{MessageID: a1.ID, Seq: 2, Name: "completed", Data: store.JSON(`{}`), Finish: a1}
			if err := commitEvents(ctx, s, []store.Event{done}); err != nil {
				t.Fatal(err)
			}
			got, err := s.GetMessage(ctx, a1.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if got.CompletedAt == nil || got.CompletedAt.Before(before) || got.CompletedAt.After(time.Now().Add(time.Second)) {
				t.Fatalf("CompletedAt = %v, want the time of the terminal event", got.CompletedAt)
			}
			want := *a1
			want.Metadata, want.LastEventID, want.CompletedAt = nil, 2, got.CompletedAt
			if diff := cmp.Diff(&want, got); diff != "" {
				t.Errorf("after the terminal event (-want +got):\n%s", diff)
			}
		})

		t.Run("nothing is written after the terminal event", func(t *testing.T) {
			lost, err := lostOf(s.CommitEvents(ctx, testOwner, events(a1.ID, 3, 3)))
			if err != nil || len(lost) != 1 || lost[0] != a1.ID {
				t.Fatalf("CommitEvents after the end = %v, %v; want the message reported lost", lost, err)
			}
			if got, _ := s.ListEvents(ctx, a1.ID, 2, 0); len(got) != 0 {
				t.Errorf("events %v written after the terminal event", seqs(got))
			}
		})

		t.Run("invalid JSON is refused", func(t *testing.T) {
			_, other := createTurn(t, s, newSession(t, s, "alice"), "json", "")
			other.Status = store.StatusFailed
			other.GenUI = store.JSON(`{"broken"`)
			done := store.Event{MessageID: other.ID, Seq: 1, Name: "error", Data: store.JSON(`{}`), Finish: other}
			if err := commitEvents(ctx, s, []store.Event{done}); err == nil {
				t.Error("a finish with invalid JSON = nil, want an error")
			}
		})

		u2, a2 := createTurn(t, s, sess, "two", "")
		finish(t, s, a2, store.StatusFailed)
		u3, a3 := createTurn(t, s, sess, "three", "")
		finish(t, s, a3, store.StatusCompleted)
		u4, a4 := createTurn(t, s, sess, "four", "")

		t.Run("list oldest first", func(t *testing.T) {
			got, err := s.ListMessages(ctx, sess.ID, "alice")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(ids(u1, a1, u2, a2, u3, a3, u4, a4), ids(ptrs(got)...)); diff != "" {
				t.Errorf("ListMessages order (-want +got):\n%s", diff)
			}
		})

		// Completed, in order: u1 a1 u2 u3 a3 u4 (a2 failed, a4 still pending).
		latestCases := []struct {
			name string
			n    int
			want []string
		}{
			{"last three completed", 3, ids(u3, a3, u4)},
			{"more than there are", 100, ids(u1, a1, u2, u3, a3, u4)},
			{"zero", 0, nil},
		}
		for _, tc := range latestCases {
			t.Run("latest/"+tc.name, func(t *testing.T) {
				got, err := s.LatestMessages(ctx, sess.ID, tc.n)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tc.want, ids(ptrs(got)...)); diff != "" {
					t.Errorf("LatestMessages(%d) (-want +got):\n%s", tc.n, diff)
				}
			})
		}

		ownerCases := []struct {
			name      string
			get       func() error
			wantError error
		}{
			{"get message of another user", func() error { _, err := s.GetMessage(ctx, a1.ID, "bob"); return err }, store.ErrNotFound},
			{"get missing message", func() error { _, err := s.GetMessage(ctx, "nope", "alice"); return err }, store.ErrNotFound},
			{"list another user's session", func() error { _, err := s.ListMessages(ctx, sess.ID, "bob"); return err }, store.ErrNotFound},
			{"list missing session", func() error { _, err := s.ListMessages(ctx, "nope", "alice"); return err }, store.ErrNotFound},
		}
		for _, tc := range ownerCases {
			t.Run(tc.name, func(t *testing.T) {
				if err := tc.get(); !errors.Is(err, tc.wantError) {
					t.Errorf("err = %v, want %v", err, tc.wantError)
				}
			})
		}
	})
}

func ids(ms ...*store.Message) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.ID)
	}
	return out
}

func ptrs(ms []store.Message) []*store.Message {
	out := make([]*store.Message, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}

// TestConcurrentWriters runs many writers at once: on SQLite none may see SQLITE_BUSY (the
// single writer connection queues them), on PostgreSQL the pool absorbs them.
func TestConcurrentWriters(t *testing.T) {
	const writers, rounds = 16, 10
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		var wg sync.WaitGroup
		errs := make(chan error, writers*rounds)
		for w := range writers {
			sess := newSession(t, s, fmt.Sprint("user", w)) // t.Fatal only on the test goroutine
			wg.Go(func() {
				for r := range rounds {
					u, a := turn(sess, fmt.Sprint(r), "")
					if err := s.CreateTurn(t.Context(), u, a, testStart); err != nil {
						errs <- err
						return
					}
					if err := commitEvents(t.Context(), s, events(a.ID, 1, 5)); err != nil {
						errs <- err
						return
					}
					if _, err := s.ListEvents(t.Context(), a.ID, 0, 0); err != nil {
						errs <- err
						return
					}
					a.Status = store.StatusCompleted
					done := store.Event{MessageID: a.ID, Seq: 6, Name: "completed", Data: store.JSON(`{}`), Finish: a}
					if err := commitEvents(t.Context(), s, []store.Event{done}); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	})
}

// TestCreateTurnConcurrentNewSessions: a mobile client that repeats POST /api/v1/messages
// without a session (a lost answer, a retry) from several connections at once gets one
// turn in one session; the others are told which.
func TestCreateTurnConcurrentNewSessions(t *testing.T) {
	const writers = 6
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		pairs := make([][2]*store.Message, writers)
		starts := make([]store.TurnStart, writers)
		for i := range pairs {
			fresh := &store.Session{ID: fmt.Sprint("mobile-", i), UserID: "dora", Locale: "en", Phase: "strategy", Status: "active"}
			u, a := turn(fresh, "hello", "retry-me")
			pairs[i] = [2]*store.Message{u, a}
			starts[i] = testStart
			starts[i].NewSession = fresh
		}
		errs := atOnce(writers, func(i int) error {
			return s.CreateTurn(t.Context(), pairs[i][0], pairs[i][1], starts[i])
		})
		winner := onlyWinner(t, errs)
		for i, err := range errs {
			if i == winner {
				continue
			}
			var dup *store.DuplicateRequestError
			if !errors.As(err, &dup) || dup.AssistantMessageID != pairs[winner][1].ID || dup.SessionID != pairs[winner][0].SessionID {
				t.Errorf("writer %d: %v, want the winner's turn and session", i, err)
			}
		}
		if sessions, err := s.ListSessions(t.Context(), "dora"); err != nil || len(sessions) != 1 {
			t.Fatalf("dora has %d sessions (%v), want 1", len(sessions), err)
		}
	})
}

// TestColdBurstOfTurns: a replica's first moments under load. Three times as many turns as
// the PostgreSQL pool has connections start at once on a store that has prepared nothing
// yet; every one must begin. A transaction that waited for a second connection (to prepare
// a statement) while holding its own used to hang them all until their deadline.
func TestColdBurstOfTurns(t *testing.T) {
	const turns = 60
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		sessions := make([]*store.Session, turns)
		for i := range sessions {
			sessions[i] = newSession(t, s, fmt.Sprint("user", i))
		}
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		errs := atOnce(turns, func(i int) error {
			u, a := turn(sessions[i], fmt.Sprint("m", i), "")
			return s.CreateTurn(ctx, u, a, testStart)
		})
		if err := errors.Join(errs...); err != nil {
			t.Fatalf("a cold burst of %d turns: %v", turns, err)
		}
	})
}

// TestKeyedReadsUseTheKey checks the plans PostgreSQL keeps for the reads that find a row
// by its key and check its user, a turn's begin and the owner check of the list methods,
// when it plans them generically on tables without statistics, as on a fresh database or
// with autovacuum off, where two indexes that both match a condition look alike: the
// session must be found by its primary key, and the begin's strategy by the index on
// session and user. A plan that took a user's index read every session, or every
// strategy, of the user at each call, for as long as its connection lived.
func TestKeyedReadsUseTheKey(t *testing.T) {
	s := storetest.Postgres(t)
	cases := []struct {
		name    string
		explain func(context.Context) (string, error)
		want    []string
		avoid   []string // the begin's check for a repeated request reads the user's index, rightly
	}{
		{"begin", s.ExplainBeginPlan,
			[]string{"using sessions_pkey on sessions", "using strategies_session_user_idx on strategies"},
			[]string{"sessions_user_created_idx", "strategies_user_idx", "Seq Scan"}},
		{"owner of a session", func(ctx context.Context) (string, error) { return s.ExplainOwnedPlan(ctx, "sessions") },
			[]string{"using sessions_pkey on sessions"}, []string{"sessions_user_created_idx", "Seq Scan"}},
		{"owner of a message", func(ctx context.Context) (string, error) { return s.ExplainOwnedPlan(ctx, "messages") },
			[]string{"using messages_pkey on messages"}, []string{"messages_client_request_id_idx", "Seq Scan"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := tc.explain(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range tc.want {
				if !strings.Contains(plan, want) {
					t.Errorf("the generic plan does not read %q:\n%s", want, plan)
				}
			}
			for _, avoid := range tc.avoid {
				if strings.Contains(plan, avoid) {
					t.Errorf("the generic plan reads %s:\n%s", avoid, plan)
				}
			}
		})
	}
}

// TestTurnSeesWhatThePlanWouldRead: a turn's read tells its plan whether the session has
// history, a strategy and stored prompts for its locale; the plan skips the reads it says
// are empty, so a wrong "no" would drop the conversation or the strategy from the prompt.
func TestTurnSeesWhatThePlanWouldRead(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		seenBy := func(sess *store.Session, text string) store.Seen {
			t.Helper()
			read, err := s.ReadTurn(t.Context(), sess.ID, sess.UserID, "")
			if err != nil {
				t.Fatalf("ReadTurn: %v", err)
			}
			_, a := createTurn(t, s, sess, text, "")
			finish(t, s, a, "completed")
			return read.Seen
		}
		en, other := newSession(t, s, "alice"), newSession(t, s, "bob")
		zh := &store.Session{UserID: "alice", Title: "t", Locale: "zh", Phase: "strategy", Status: "active"}
		if err := s.CreateSession(t.Context(), zh); err != nil {
			t.Fatal(err)
		}
		if got := seenBy(en, "first"); got != (store.Seen{}) {
			t.Errorf("a new session's first turn saw %+v, want nothing", got)
		}
		if got := seenBy(en, "second"); got != (store.Seen{History: true}) {
			t.Errorf("the second turn saw %+v, want the history only", got)
		}
		upsert(t, s, &store.Strategy{UserID: "alice", SessionID: en.ID, Name: "momentum"})
		if _, err := s.ActivatePrompt(t.Context(), createPrompt(t, s, "contract", "en", "stored contract").ID); err != nil {
			t.Fatal(err)
		}
		if got := seenBy(en, "third"); got != (store.Seen{History: true, Strategy: true, Prompts: true}) {
			t.Errorf("with a strategy and an active en prompt the turn saw %+v, want all three", got)
		}
		if got := seenBy(zh, "first"); got != (store.Seen{}) {
			t.Errorf("a zh session saw %+v; the stored prompt is en, the strategy another session's", got)
		}
		if got := seenBy(other, "first"); got.Strategy || got.History {
			t.Errorf("bob's session saw %+v of alice's rows", got)
		}
	})
}

// A turn writes only if the session is still as it read it: a session changed between the
// read and the write (here by UpdateSession) refuses the write with ErrSessionChanged and
// writes nothing; read again, the turn is written on the new session, the concurrent change
// kept and the turn's own on top.
func TestTurnBeginsAgainOnAMovedSession(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		sess := newSession(t, s, "alice")
		read, err := s.ReadTurn(ctx, sess.ID, "alice", "")
		if err != nil {
			t.Fatal(err)
		}
		moved := *sess
		moved.Metadata = store.JSON(`{"moved":true}`)
		if err := s.UpdateSession(ctx, &moved); err != nil {
			t.Fatal(err)
		}
		u, a := turn(sess, "hello", "")
		w := store.TurnWrite{Lease: testStart.Lease, Read: read, Metadata: store.JSON(`{"turn_1":true}`)}
		if err := s.WriteTurn(ctx, u, a, w); !errors.Is(err, store.ErrSessionChanged) {
			t.Fatalf("a write on a moved session: %v, want ErrSessionChanged", err)
		}
		if msgs, _ := s.ListMessages(ctx, sess.ID, "alice"); len(msgs) != 0 {
			t.Fatalf("the refused write left %d messages", len(msgs))
		}
		if w.Read, err = s.ReadTurn(ctx, sess.ID, "alice", ""); err != nil {
			t.Fatal(err)
		}
		w.Metadata = store.JSON(`{"moved":true,"turn_2":true}`)
		if err := s.WriteTurn(ctx, u, a, w); err != nil {
			t.Fatalf("the write on the new read: %v", err)
		}
		got, err := s.GetSession(ctx, sess.ID, "alice")
		if err != nil || string(got.Metadata) != `{"moved":true,"turn_2":true}` {
			t.Fatalf("session metadata %s (%v), want the concurrent change with the turn's on top", got.Metadata, err)
		}
		if msgs, _ := s.ListMessages(ctx, sess.ID, "alice"); len(msgs) != 2 {
			t.Fatalf("the session has %d messages, want the turn's two, written once", len(msgs))
		}
	})
}
