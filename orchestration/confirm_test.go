package orchestration

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// TestConfirmLeavesConsistentState: after the confirm route, the session's artifacts, the
// carryover the model will read and the strategy row all say the same thing, whatever
// phase the session is in.
func TestConfirmLeavesConsistentState(t *testing.T) {
	ready := `{"strategy":{"strategy_id":"s-1","strategy_status":"validated","backtest_status":"completed","advance_to_stress_test":false}}`
	cases := []struct {
		name      string
		phase     string
		artifacts string
		advance   bool
		wantPhase string
		moveFirst string // a manual move before the confirm, leaving a carryover waiting
	}{
		{"confirm and advance from strategy", "strategy", ready, true, "stress_test", ""},
		{"confirm without advancing", "strategy", ready, false, "strategy", ""},
		{"confirm before the backtest completed", "strategy",
			`{"strategy":{"strategy_id":"s-1","strategy_status":"validated","backtest_status":"none","advance_to_stress_test":false}}`, true, "strategy", ""},
		{"confirm while the session is in another phase", "stress_test",
			`{"strategy":{"strategy_id":"s-1","strategy_status":"validated","backtest_status":"completed","advance_to_stress_test":false},"stress_test":{"stress_test_decision":"pending"}}`, true, "stress_test", ""},
		{"confirm after a manual move renders the waiting carryover again", "strategy", ready, true, "stress_test", "stress_test"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}})
			ctx := context.Background()
			sess, err := h.orch.CreateSession(ctx, "u1", "t", "en")
			if err != nil {
				t.Fatal(err)
			}
			sess.Phase, sess.Artifacts = tc.phase, store.JSON(tc.artifacts)
			if err := h.st.UpdateSession(ctx, sess); err != nil {
				t.Fatal(err)
			}
			if err := h.st.UpsertStrategy(ctx, &store.Strategy{ID: "s-1", UserID: "u1", SessionID: sess.ID, Name: "BTC", Status: "validated", BacktestStatus: "completed"}); err != nil {
				t.Fatal(err)
			}
			if tc.moveFirst != "" {
				if _, err := h.orch.MovePhase(ctx, "u1", sess.ID, tc.moveFirst, ""); err != nil {
					t.Fatal(err)
				}
			}
			st, err := h.orch.ConfirmStrategy(ctx, "u1", "s-1", tc.advance)
			if err != nil {
				t.Fatal(err)
			}
			got, _ := h.st.GetSession(ctx, sess.ID, "u1")
			arts, _ := session.DecodeArtifacts(got.Artifacts)
			block := arts["strategy"]
			if got.Phase != tc.wantPhase || st.Status != "confirmed" || block["strategy_status"] != st.Status ||
				block["strategy_id"] != st.ID || block["advance_to_stress_test"] != tc.advance {
				t.Fatalf("after confirm: phase %s, strategy row %s, artifacts.strategy %v; want phase %s and the block saying what the row says (advance %v)",
					got.Phase, st.Status, block, tc.wantPhase, tc.advance)
			}
			meta, _ := session.DecodeMetadata(got.Metadata)
			if got.Phase != tc.phase || tc.moveFirst != "" {
				if meta.Carryover == nil {
					t.Fatal("the move left no carryover")
				}
				var shown map[string]any
				text := meta.Carryover.Text
				line := text[strings.Index(text, "{"):]
				if err := json.Unmarshal([]byte(line[:strings.Index(line, "\n")]), &shown); err != nil {
					t.Fatalf("carryover %q: %v", text, err)
				}
				if shown["strategy_status"] != "confirmed" || shown["advance_to_stress_test"] != true {
					t.Fatalf("the carryover shows the model %v, not the confirmed strategy", shown)
				}
			}
		})
	}
}

// TestSessionsStartWithEveryBlock: a new session holds every phase's block with its
// defaults from the start (docs/turn.md), so the model and the front end see the same keys
// before the first turn.
func TestSessionsStartWithEveryBlock(t *testing.T) {
	h := newHarness(t, &fakeUpstream{scripts: []script{{deltas: []string{reply("")}}}})
	sess, err := h.orch.CreateSession(context.Background(), "u1", "", "en")
	if err != nil {
		t.Fatal(err)
	}
	got, _ := h.st.GetSession(context.Background(), sess.ID, "u1")
	arts, _ := session.DecodeArtifacts(got.Artifacts)
	for _, want := range []struct{ phase, field string }{
		{"strategy", "strategy_status"}, {"stress_test", "stress_test_decision"}, {"deployment", "deployment_status"},
	} {
		if arts[want.phase][want.field] == nil {
			t.Errorf("a new session's artifacts %v lack %s.%s", arts, want.phase, want.field)
		}
	}
}
