package tests

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestToolResultsReachTheFrontEnd: when the model's reply leaves out its cards and its
// patch, the stress run's and the deployer's results still fill the phase's artifacts and
// become the cards the phase allows (a stress report, a deployment summary), and a new
// draft without a card gets a strategy card built from the draft.
func TestToolResultsReachTheFrontEnd(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		const bare = " [[fault:no_genui]] [[fault:no_patch]]"
		w := &walk{t: t, s: s, tok: s.token("zoe")}
		w.sid = s.newSession(w.tok, "en")

		meta, _ := w.say("Draft a BTC momentum strategy [[fault:no_genui]]")
		card := genuiOfType(listOf(t, meta, "genui"), "strategy_card")
		if card == nil || card["source"] != "auto" || card["name"] != "BTC momentum" || card["spec"] == nil {
			t.Fatalf("genui %v: want the server's strategy_card built from the draft", meta["genui"])
		}
		strategyID, _ := w.field("strategy", "strategy_id").(string)
		w.say("Run the backtest")
		w.confirm(strategyID)
		w.expectPhase("stress_test")
		w.say("Set up the stress scenarios")

		meta, _ = w.say("Run them" + bare)
		report := genuiOfType(listOf(t, meta, "genui"), "stress_report")
		id, _ := w.field("stress_test", "stress_report_id").(string)
		if report == nil || report["source"] != "auto" || id == "" || report["stress_report_id"] != id || report["worst_drawdown"] != 0.19 {
			t.Fatalf("genui %v, artifacts.stress_test.stress_report_id %q: want the run's report as a card and in the block", meta["genui"], id)
		}
		if rows := anyList(report["rows"]); len(rows) != 5 {
			t.Fatalf("stress_report rows %v, want one per scenario", report["rows"])
		}
		w.say("Accepted")
		w.expectPhase("deployment")

		meta, _ = w.say("Prepare the deployment" + bare)
		summary := genuiOfType(listOf(t, meta, "genui"), "deployment_summary")
		if summary == nil || summary["source"] != "auto" || summary["target"] != "paper" || summary["risk_guard_status"] != "armed" {
			t.Fatalf("genui %v: want the guard's result as a deployment_summary", meta["genui"])
		}
		if w.field("deployment", "deployment_target") != "paper" || w.field("deployment", "risk_guard_status") != "armed" {
			t.Fatalf("artifacts.deployment target %v guard %v: want them from check_risk_guard", w.field("deployment", "deployment_target"), w.field("deployment", "risk_guard_status"))
		}
		meta, _ = w.say("Roll it out" + bare)
		if w.field("deployment", "deployment_status") != "deployed" || w.field("deployment", "deployment_id") == nil {
			t.Fatalf("artifacts.deployment after the rollout: status %v id %v, want them from deploy_strategy",
				w.field("deployment", "deployment_status"), w.field("deployment", "deployment_id"))
		}
		if summary := genuiOfType(listOf(t, meta, "genui"), "deployment_summary"); summary == nil || summary["deployment_status"] != "deployed" {
			t.Fatalf("genui %v: want a deployment_summary saying deployed", meta["genui"])
		}
		checkMissingQuestion(t, meta, "en") // the reply left the rollout unfinished and asked nothing
	})
}

// TestSessionsStartWithEveryBlock: a session holds every phase's artifact block with its
// defaults from the moment it exists, whichever route made it, and the first request the
// model gets shows the same block the front end reads.
func TestSessionsStartWithEveryBlock(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("abe")
		want := map[string]map[string]any{
			"strategy":    {"strategy_status": "draft", "backtest_status": "none", "advance_to_stress_test": false},
			"stress_test": {"stress_test_decision": "pending"},
			"deployment":  {"deployment_status": "ready", "risk_guard_status": "pending", "rollout_status": "pending"},
		}
		check := func(t *testing.T, sid string) map[string]any {
			t.Helper()
			arts := sessionOf(t, s, tok, sid)["artifacts"].(map[string]any)
			for phase, fields := range want {
				block, _ := arts[phase].(map[string]any)
				for k, v := range fields {
					if block[k] != v {
						t.Fatalf("artifacts.%s.%s = %v, want %v (artifacts %v)", phase, k, block[k], v, arts)
					}
				}
			}
			return arts
		}
		t.Run("POST /sessions", func(t *testing.T) {
			check(t, s.newSession(tok, "en"))
		})
		t.Run("POST /messages without a session", func(t *testing.T) {
			var a turnAnswer
			s.call(ctxFor(t, 10*time.Second), http.MethodPost, "/api/v1/messages", tok, map[string]string{"text": "hello [[pace_ms:20]]"}, &a)
			arts := check(t, a.SessionID) // while the first turn runs
			waitFinished(t, s, tok, a.MessageID)
			state := lastRecorded(t, s).Body["instructions"].(string)
			block, _ := json.Marshal(arts["strategy"])
			if !strings.Contains(state, "artifacts: "+string(block)) {
				t.Fatalf("the model's state block does not show the strategy block the front end read (%s):\n%s", block, state)
			}
		})
	})
}
