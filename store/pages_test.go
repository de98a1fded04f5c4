package store_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

// collect walks a paged list with page size n until a short page, checking that no page is
// longer than n, and returns every row's id.
func collect[T any](t *testing.T, n int, page func(after *T, limit int) ([]T, error), key func(T) (T, string)) []string {
	t.Helper()
	var ids []string
	var after *T
	for range 100 {
		rows, err := page(after, n)
		if err != nil {
			t.Fatal(err)
		}
		if len(rows) > n {
			t.Fatalf("page of %d rows, limit %d", len(rows), n)
		}
		for _, r := range rows {
			_, id := key(r)
			ids = append(ids, id)
		}
		if len(rows) < n {
			return ids
		}
		last, _ := key(rows[len(rows)-1])
		after = &last
	}
	t.Fatal("paging did not end")
	return nil
}

func TestPages(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		// Seven sessions of alice, three of them at the same instant so the id breaks ties.
		same := time.Now().Add(-time.Hour).UTC().Truncate(time.Microsecond)
		for i := range 7 {
			sess := &store.Session{UserID: "alice", Title: "t", Locale: "en", Phase: "strategy", Status: "active"}
			if i < 3 {
				sess.CreatedAt = same
			}
			if err := s.CreateSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
		}
		newSession(t, s, "bob")
		all, err := s.ListSessions(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		sessionKey := func(x store.Session) (store.Session, string) { return x, x.ID }
		for _, n := range []int{1, 2, 3, 7, 50} {
			got := collect(t, n, func(after *store.Session, limit int) ([]store.Session, error) {
				var k *store.TimeKey
				if after != nil {
					k = &store.TimeKey{CreatedAt: after.CreatedAt, ID: after.ID}
				}
				return s.ListSessionsPage(ctx, "alice", k, limit)
			}, sessionKey)
			want := make([]string, len(all))
			for i, x := range all {
				want[i] = x.ID
			}
			if !slices.Equal(got, want) {
				t.Fatalf("sessions in pages of %d = %v, want %v (ListSessions' order)", n, got, want)
			}
		}

		sess := newSession(t, s, "alice")
		for range 5 {
			_, a := createTurn(t, s, sess, "hello", "")
			finish(t, s, a, store.StatusCompleted)
		}
		msgs, err := s.ListMessages(ctx, sess.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		got := collect(t, 3, func(after *store.Message, limit int) ([]store.Message, error) {
			var k *store.TimeKey
			if after != nil {
				k = &store.TimeKey{CreatedAt: after.CreatedAt, ID: after.ID}
			}
			return s.ListMessagesPage(ctx, sess.ID, "alice", k, limit)
		}, func(m store.Message) (store.Message, string) { return m, m.ID })
		if !slices.Equal(got, ids(ptrs(msgs)...)) || len(got) != 10 {
			t.Fatalf("messages in pages = %v, want %v", got, ids(ptrs(msgs)...))
		}
		if _, err := s.ListMessagesPage(ctx, sess.ID, "bob", nil, 10); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another user's messages: %v, want ErrNotFound", err)
		}
		if _, err := s.ListTransitionsPage(ctx, sess.ID, "bob", nil, 10); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("another user's transitions: %v, want ErrNotFound", err)
		}
		cur := sess
		for _, to := range []string{"stress_test", "strategy", "stress_test"} {
			next := moved(cur, to)
			if err := s.MovePhase(ctx, next, &store.Transition{FromPhase: cur.Phase, ToPhase: to, Reason: "test"}); err != nil {
				t.Fatal(err)
			}
			cur = next
		}
		moves, err := s.ListTransitions(ctx, sess.ID, "alice")
		if err != nil {
			t.Fatal(err)
		}
		got = collect(t, 2, func(after *store.Transition, limit int) ([]store.Transition, error) {
			var k *store.TimeKey
			if after != nil {
				k = &store.TimeKey{CreatedAt: after.CreatedAt, ID: after.ID}
			}
			return s.ListTransitionsPage(ctx, sess.ID, "alice", k, limit)
		}, func(x store.Transition) (store.Transition, string) { return x, x.ID })
		want := make([]string, len(moves))
		for i, m := range moves {
			want[i] = m.ID
		}
		if !slices.Equal(got, want) || len(got) != 3 {
			t.Fatalf("transitions in pages = %v, want %v", got, want)
		}

		for _, name := range []string{"b", "a"} {
			for _, loc := range []string{"zh", "en"} {
				createPrompt(t, s, name, loc, "v1")
				createPrompt(t, s, name, loc, "v2")
			}
		}
		prompts, err := s.ListPrompts(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = collect(t, 3, func(after *store.Prompt, limit int) ([]store.Prompt, error) {
			var k *store.PromptKey
			if after != nil {
				k = &store.PromptKey{Name: after.Name, Locale: after.Locale, Version: after.Version}
			}
			return s.ListPromptsPage(ctx, k, limit)
		}, func(p store.Prompt) (store.Prompt, string) { return p, p.ID })
		want = want[:0]
		for _, p := range prompts {
			want = append(want, p.ID)
		}
		if !slices.Equal(got, want) || len(got) != 8 {
			t.Fatalf("prompts in pages = %v, want %v", got, want)
		}
		if rows, err := s.ListSessionsPage(ctx, "alice", nil, 1_000_000); err != nil || len(rows) > store.MaxPage {
			t.Fatalf("a huge limit: %d rows, %v", len(rows), err)
		}
	})
}
