package store_test

import (
	"errors"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

func newQuestion(user, source, fingerprint string, ttl time.Duration) *store.Question {
	return &store.Question{UserID: user, SourceID: source, Fingerprint: fingerprint, Kind: "reply_choice",
		Message: "Pick one", Options: store.JSON(`[{"label":"One","keys":["1"]}]`), Locale: "en", ExpiresAt: time.Now().Add(ttl)}
}

// A question's life: recorded once while live, answered once, delivered or stale once;
// expired past its expiry, and a new one of the same key may be asked then.
func TestQuestions(t *testing.T) {
	storetest.Each(t, func(t *testing.T, s *store.Store) {
		ctx := t.Context()
		q, isNew, err := s.RecordQuestion(ctx, newQuestion("ann", "pane-1", "f1", time.Hour))
		if err != nil || !isNew || q.State != store.QuestionOpen {
			t.Fatalf("RecordQuestion = %+v, %v, %v", q, isNew, err)
		}
		again, isNew, err := s.RecordQuestion(ctx, newQuestion("ann", "pane-1", "f1", time.Hour))
		if err != nil || isNew || again.ID != q.ID {
			t.Fatalf("the same live question recorded twice: %+v, %v, %v", again, isNew, err)
		}
		if _, isNew, _ := s.RecordQuestion(ctx, newQuestion("bob", "pane-1", "f1", time.Hour)); !isNew {
			t.Error("another user's question of the same source is not another question")
		}
		if _, err := s.GetQuestion(ctx, q.ID, "bob"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("another user reads the question: %v", err)
		}

		answered, err := s.AnswerQuestion(ctx, q.ID, "ann", "One", store.JSON(`["1"]`))
		if err != nil || answered.State != store.QuestionAnswered || answered.Answer != "One" || answered.AnsweredAt == nil {
			t.Fatalf("AnswerQuestion = %+v, %v", answered, err)
		}
		if got, err := s.AnswerQuestion(ctx, q.ID, "ann", "Two", nil); !errors.Is(err, store.ErrQuestionClosed) || got.Answer != "One" {
			t.Fatalf("a second answer = %+v, %v; want ErrQuestionClosed and the first answer kept", got, err)
		}
		pending, _, err := s.AnsweredQuestions(ctx, "ann")
		if err != nil || len(pending) != 1 || pending[0].ID != q.ID || string(pending[0].AnswerKeys) != `["1"]` {
			t.Fatalf("AnsweredQuestions = %+v, %v", pending, err)
		}
		if _, isNew, _ := s.RecordQuestion(ctx, newQuestion("ann", "pane-1", "f1", time.Hour)); isNew {
			t.Error("an answered question was asked again before its answer was typed")
		}
		delivered, err := s.EndQuestion(ctx, q.ID, "ann", store.QuestionDelivered)
		if err != nil || delivered.State != store.QuestionDelivered || delivered.EndedAt == nil {
			t.Fatalf("EndQuestion delivered = %+v, %v", delivered, err)
		}
		if _, err := s.EndQuestion(ctx, q.ID, "ann", store.QuestionStale); !errors.Is(err, store.ErrQuestionClosed) {
			t.Fatalf("a delivered question went stale: %v", err)
		}
		if _, isNew, _ := s.RecordQuestion(ctx, newQuestion("ann", "pane-1", "f1", time.Hour)); !isNew {
			t.Error("the agent asking again after the answer was typed is not a new question")
		}

		short, _, _ := s.RecordQuestion(ctx, newQuestion("ann", "pane-2", "f2", time.Millisecond))
		time.Sleep(20 * time.Millisecond)
		if got, err := s.AnswerQuestion(ctx, short.ID, "ann", "One", nil); !errors.Is(err, store.ErrQuestionClosed) || got.State != store.QuestionExpired {
			t.Fatalf("answering an expired question = %+v, %v", got, err)
		}
		stale, _, _ := s.RecordQuestion(ctx, newQuestion("ann", "pane-3", "f3", time.Hour))
		if got, err := s.EndQuestion(ctx, stale.ID, "ann", store.QuestionStale); err != nil || got.State != store.QuestionStale {
			t.Fatalf("an open question going stale = %+v, %v", got, err)
		}
		if got, err := s.AnswerQuestion(ctx, stale.ID, "ann", "One", nil); !errors.Is(err, store.ErrQuestionClosed) || got.State != store.QuestionStale {
			t.Fatalf("answering a stale question = %+v, %v", got, err)
		}
	})
}
