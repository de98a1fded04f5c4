package postprocess

import (
	"encoding/json"
	"testing"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

func TestSettle(t *testing.T) {
	strategy, _ := handlers.New(handlers.Criteria{}).For(phases.Strategy)
	patchBlock := func(body string) []thinkingml.Block {
		return []thinkingml.Block{{Name: thinkingml.BlockStatePatch, Body: body}}
	}
	invalid := stream.Check{Issues: []thinkingml.Issue{{Code: thinkingml.CodeMalformedXML}}}
	ready := handlers.Artifacts{"strategy_id": "s-1", "strategy_status": "validated", "backtest_status": "completed", "advance_to_stress_test": false}
	failedThenOK := []store.ToolCall{
		{Name: "validate_strategy", Arguments: store.JSON(`{"a":1}`), Status: store.ToolFailure, Error: "timeout"},
		{Name: "validate_strategy", Arguments: store.JSON(`{ "a": 1 }`), Status: store.ToolSuccess, Output: `{"strategy_id":"s-1"}`},
	}
	cases := []struct {
		name         string
		block        handlers.Artifacts
		blocks       []thinkingml.Block
		check        stream.Check
		calls        []store.ToolCall
		wantStatus   any // the block's strategy_status after the turn
		wantMove     bool
		wantRejected bool
		wantRecord   bool
		wantCalls    int
	}{
		{"an accepted patch is applied", ready, patchBlock(`{"strategy_status":"confirmed"}`), stream.Check{}, nil, "confirmed", false, false, true, 0},
		{"a patch that breaks the field rules is refused", ready, patchBlock(`{"strategy_status":"shipped"}`), stream.Check{}, nil, "validated", false, true, true, 0},
		{"an invalid reply applies nothing and records nothing", ready, patchBlock(`{"strategy_status":"confirmed","advance_to_stress_test":true}`), invalid, nil, "validated", false, false, false, 0},
		{"a completed phase asks for its move", ready, patchBlock(`{"strategy_status":"confirmed","advance_to_stress_test":true}`), stream.Check{}, nil, "confirmed", true, false, true, 0},
		{"a mended failure is not shown", handlers.Artifacts{}, nil, stream.Check{}, failedThenOK, nil, false, false, true, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out := stream.Outcome{Result: stream.Result{Blocks: tc.blocks, ToolCalls: tc.calls}, Calls: tc.calls, Check: tc.check, Attempts: 1}
			s := Settle(Input{Handler: strategy, Phase: phases.Strategy, Block: tc.block, Outcome: out, Policy: stream.PolicyReport})
			if s.Block["strategy_status"] != tc.wantStatus || s.Move != tc.wantMove || (s.Metadata.RejectedPatch != nil) != tc.wantRejected ||
				(s.Strategy != nil) != tc.wantRecord || len(s.Metadata.ToolCalls) != tc.wantCalls {
				b, _ := json.Marshal(s.Metadata)
				t.Fatalf("block %v move %v strategy %+v metadata %s", s.Block, s.Move, s.Strategy, b)
			}
			if ready["strategy_status"] != "validated" {
				t.Fatal("Settle changed the plan's block")
			}
		})
	}
}
