package store_test

import (
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// TestUniqueIndexes checks that both drivers report violations of the indexes the typed
// errors rest on under the same names, bypassing the checks CreateTurn makes first.
func TestUniqueIndexes(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		sess := newSession(t, s, "alice")
		u, _ := createTurn(t, s, sess, "one", "crid")
		base := store.Message{SessionID: sess.ID, UserID: "alice", CreatedAt: time.Now()}

		cases := []struct {
			name    string
			msg     func() store.Message
			wantIdx string
		}{
			{"repeated client_request_id", func() store.Message {
				m := base
				m.ID, m.Role, m.Status, m.ClientRequestID = "dup-user", "user", store.StatusCompleted, "crid"
				return m
			}, store.IdxClientRequestID},
			{"second running assistant", func() store.Message {
				m := base
				m.ID, m.Role, m.Status, m.ReplyTo = "second-running", "assistant", store.StatusStreaming, u.ID
				return m
			}, store.IdxOneRunning},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				m := tc.msg()
				err := s.InsertMessage(t.Context(), &m)
				idx, ok := store.UniqueViolation(err)
				if !ok || idx != tc.wantIdx {
					t.Fatalf("InsertMessage err = %v → index %q (%v), want %q", err, idx, ok, tc.wantIdx)
				}
			})
		}

		t.Run("assistant reply may repeat the client_request_id", func(t *testing.T) {
			m := base
			m.ID, m.Role, m.Status, m.ClientRequestID = "done-reply", "assistant", store.StatusCompleted, "crid"
			if err := s.InsertMessage(t.Context(), &m); err != nil {
				t.Fatal(err)
			}
		})

	})
}
