package manual_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/manual"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

type texts struct{ s handlers.Skills }

func (t texts) For(context.Context) handlers.Skills { return t.s }

type moves []string

func (m *moves) record(from, to string) { *m = append(*m, from+"→"+to) }

func setup(t *testing.T, artifacts string) (*store.Store, *store.Session, *manual.Routes, *moves) {
	t.Helper()
	st := storetest.SQLite(t)
	sess := &store.Session{UserID: "lin", Title: "t", Locale: "en", Phase: "strategy", Status: "active", Artifacts: store.JSON(artifacts)}
	if err := st.CreateSession(t.Context(), sess); err != nil {
		t.Fatal(err)
	}
	var made moves
	return st, sess, manual.New(st, handlers.New(handlers.Criteria{}), texts{skills.New()}, made.record), &made
}

func transitions(t *testing.T, st *store.Store, sess *store.Session) []store.Transition {
	t.Helper()
	trs, err := st.ListTransitions(t.Context(), sess.ID, "lin")
	if err != nil {
		t.Fatal(err)
	}
	return trs
}

// A user's move follows the phase graph: a skip is refused and nothing is written; an
// allowed move writes the session and its audit row, and is counted.
func TestMovePhaseFollowsTheGraph(t *testing.T) {
	st, sess, r, made := setup(t, `{}`)
	ctx := t.Context()
	if _, err := r.MovePhase(ctx, "lin", sess.ID, "deployment", ""); !errors.Is(err, phases.ErrForbiddenMove) {
		t.Fatalf("strategy → deployment = %v, want a forbidden move", err)
	}
	if _, err := r.MovePhase(ctx, "lin", sess.ID, "nowhere", ""); !errors.Is(err, phases.ErrForbiddenMove) {
		t.Fatalf("a move to an unknown phase = %v, want a forbidden move", err)
	}
	if n := len(transitions(t, st, sess)); n != 0 || len(*made) != 0 {
		t.Fatalf("refused moves left %d transitions and counted %v", n, *made)
	}
	moved, err := r.MovePhase(ctx, "lin", sess.ID, "stress_test", "")
	if err != nil || moved.Phase != "stress_test" {
		t.Fatalf("strategy → stress_test = %+v, %v", moved, err)
	}
	got, err := st.GetSession(ctx, sess.ID, "lin")
	if err != nil || got.Phase != "stress_test" {
		t.Fatalf("the stored session is in %q (%v)", got.Phase, err)
	}
	trs := transitions(t, st, sess)
	if len(trs) != 1 || trs[0].FromPhase != "strategy" || trs[0].ToPhase != "stress_test" || trs[0].Reason == "" {
		t.Fatalf("transitions = %+v, want one strategy → stress_test with a reason", trs)
	}
	if len(*made) != 1 || (*made)[0] != "strategy→stress_test" {
		t.Fatalf("moves counted = %v", *made)
	}
}

// Neither route runs while a generation does in the session: the client learns which
// message holds it, and the session stays where it was.
func TestNoManualRouteDuringAGeneration(t *testing.T) {
	st, sess, r, _ := setup(t, `{}`)
	ctx := t.Context()
	u := &store.Message{SessionID: sess.ID, UserID: "lin", Content: "go", RequestID: "r1"}
	a := &store.Message{SessionID: sess.ID, UserID: "lin", RequestID: "r1"}
	if err := st.CreateTurn(ctx, u, a, store.TurnStart{Lease: store.Lease{Owner: "here", TTL: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	var running *store.GenerationRunningError
	if _, err := r.MovePhase(ctx, "lin", sess.ID, "stress_test", ""); !errors.As(err, &running) || running.MessageID != a.ID {
		t.Fatalf("a move during a generation = %v, want generation running on %s", err, a.ID)
	}
	strat := &store.Strategy{UserID: "lin", SessionID: sess.ID, Name: "s", Spec: store.JSON(`{}`), Status: phases.StrategyDraft}
	if err := st.UpsertStrategy(ctx, strat); err != nil {
		t.Fatal(err)
	}
	if _, err := r.ConfirmStrategy(ctx, "lin", strat.ID, true); !errors.As(err, &running) {
		t.Fatalf("a confirm during a generation = %v, want generation running", err)
	}
	if got, _ := st.GetStrategy(ctx, strat.ID, "lin"); got.Status != phases.StrategyDraft {
		t.Fatalf("the strategy is %q after a refused confirm", got.Status)
	}
}

// Confirming with advance moves the session on when the backtest has completed; without a
// completed backtest the strategy is confirmed and the session stays, its block saying so.
func TestConfirmStrategy(t *testing.T) {
	for _, tc := range []struct {
		name      string
		artifacts string
		wantPhase string
	}{
		{"backtest done", `{"strategy":{"backtest_status":"completed"}}`, "stress_test"},
		{"no backtest yet", `{}`, "strategy"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, sess, r, _ := setup(t, tc.artifacts)
			ctx := t.Context()
			strat := &store.Strategy{UserID: "lin", SessionID: sess.ID, Name: "s", Spec: store.JSON(`{}`), Status: phases.StrategyDraft}
			if err := st.UpsertStrategy(ctx, strat); err != nil {
				t.Fatal(err)
			}
			c, err := r.ConfirmStrategy(ctx, "lin", strat.ID, true)
			if err != nil || c.Status != "confirmed" {
				t.Fatalf("confirm = %+v, %v", c, err)
			}
			got, err := st.GetSession(ctx, sess.ID, "lin")
			if err != nil || got.Phase != tc.wantPhase {
				t.Fatalf("the session is in %q (%v), want %s", got.Phase, err, tc.wantPhase)
			}
			var arts map[string]map[string]any
			if err := json.Unmarshal(got.Artifacts, &arts); err != nil {
				t.Fatal(err)
			}
			if b := arts["strategy"]; b["strategy_status"] != "confirmed" || b["strategy_id"] != strat.ID {
				t.Fatalf("the strategy block = %v, want it confirmed with id %s", b, strat.ID)
			}
			if stored, _ := st.GetStrategy(ctx, strat.ID, "lin"); stored.Status != "confirmed" {
				t.Fatalf("the strategy row is %q", stored.Status)
			}
		})
	}
}
