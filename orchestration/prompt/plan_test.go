package prompt

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
)

// planStore is planning's store: a session's history and strategies, and no stored
// prompt versions; it counts the reads, so a case can say which the plan skipped.
type planStore struct {
	history    []store.Message
	strategies map[string]*store.Strategy
	reads      atomic.Int64
}

func (p *planStore) LatestMessages(context.Context, string, int) ([]store.Message, error) {
	p.reads.Add(1)
	return p.history, nil
}

func (p *planStore) GetStrategy(_ context.Context, id, _ string) (*store.Strategy, error) {
	p.reads.Add(1)
	if s, ok := p.strategies[id]; ok {
		return s, nil
	}
	return nil, store.ErrNotFound
}

func (p *planStore) LatestStrategy(context.Context, string, string) (*store.Strategy, error) {
	p.reads.Add(1)
	return nil, store.ErrNotFound
}

func (p *planStore) ActivePrompts(context.Context, string) (map[string]string, error) {
	p.reads.Add(1)
	return nil, nil
}

// signer signs every x-mcp-context as "token-<audience>".
type signer struct{}

func (signer) SignMCPContext(_ mcpcontext.Context, audience string, _ time.Duration) (string, error) {
	return "token-" + audience, nil
}

// begun is a turn begun in phase with the given artifacts (JSON) and turn count.
func begun(phase, artifacts string, turns int, seen store.Seen) *session.Begun {
	arts, err := session.DecodeArtifacts(store.JSON(artifacts))
	if err != nil {
		panic(err)
	}
	return &session.Begun{
		Session:   &store.Session{ID: "s1", UserID: "u1", Locale: "en", Phase: phase, PreviousResponseID: "resp_prev"},
		User:      &store.Message{ID: "m-user"},
		Assistant: &store.Message{ID: "m-reply", UserID: "u1"},
		Artifacts: arts,
		Metadata:  session.Metadata{TurnCounts: map[string]int{phase: turns}},
		Seen:      seen,
	}
}

// TestPlan: step 2's decision from the turn as begun, through the planner's inputs (the
// begun turn, the request's policy, the store's reads) and its output (the plan and the
// request of its first attempt).
func TestPlan(t *testing.T) {
	earlier := []store.Message{{ID: "m0", Role: store.RoleUser, Content: "an earlier question"}, {ID: "m-user"}, {ID: "m-reply"}}
	confirmed := `{"strategy":{"strategy_id":"st1","strategy_status":"confirmed","backtest_status":"completed"}}`
	three := 300
	cases := []struct {
		name   string
		cfg    Config
		turn   Turn
		stored *planStore
		check  func(t *testing.T, pl *Plan, reads int64, instructions string, input []string, prev string)
	}{
		{name: "a first turn reads nothing the begin saw is not there",
			turn: Turn{Begun: begun("strategy", `{}`, 1, store.Seen{}), UserText: "Draft a momentum strategy"},
			check: func(t *testing.T, pl *Plan, reads int64, _ string, input []string, _ string) {
				if reads != 0 {
					t.Errorf("%d reads, want none", reads)
				}
				if pl.Stage != "draft" || pl.Handler == nil || len(pl.History) != 0 {
					t.Errorf("stage %q, history %d", pl.Stage, len(pl.History))
				}
				if input[len(input)-1] != "Draft a momentum strategy" {
					t.Errorf("the last input is %q, want the user's text", input[len(input)-1])
				}
			}},
		{name: "the history leaves out the turn's own messages",
			turn:   Turn{Begun: begun("strategy", `{}`, 2, store.Seen{History: true}), UserText: "and now?"},
			stored: &planStore{history: earlier},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, input []string, _ string) {
				if len(pl.History) != 1 || pl.History[0].ID != "m0" || !slices.Contains(input, "an earlier question") {
					t.Errorf("history %+v, input %q", pl.History, input)
				}
			}},
		{name: "the strategy in play is hydrated from the block",
			turn:   Turn{Begun: begun("strategy", confirmed, 3, store.Seen{Strategy: true}), UserText: "advance"},
			stored: &planStore{strategies: map[string]*store.Strategy{"st1": {ID: "st1", Name: "Momentum"}}},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, _ []string, _ string) {
				if pl.StrategyID != "st1" || pl.StrategyName != "Momentum" || pl.Stage != "confirm" {
					t.Errorf("strategy %q %q, stage %q", pl.StrategyID, pl.StrategyName, pl.Stage)
				}
			}},
		{name: "the carryover block goes before the user's text",
			turn: Turn{Begun: func() *session.Begun {
				b := begun("stress_test", `{}`, 1, store.Seen{})
				b.Carryover = "CARRIED FROM STRATEGY\n"
				return b
			}(), UserText: "run the scenarios"},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, input []string, _ string) {
				last := input[len(input)-1]
				if !strings.HasPrefix(last, "CARRIED FROM STRATEGY") || !strings.HasSuffix(last, "run the scenarios") {
					t.Errorf("the last input is %q", last)
				}
			}},
		{name: "a request's policy lowers the cap and is recorded",
			cfg:  Config{MaxOutputTokens: 4000},
			turn: Turn{Begun: begun("strategy", `{}`, 1, store.Seen{}), Policy: &RuntimePolicy{MaxOutputTokens: &three}},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, _ []string, _ string) {
				if pl.MaxOutputTokens != 300 || pl.Policy.MaxOutputTokens != 300 || !slices.Equal(pl.Policy.Requested, []string{"max_output_tokens"}) {
					t.Errorf("cap %d, policy %+v", pl.MaxOutputTokens, pl.Policy)
				}
			}},
		{name: "past the turn limit the handler nudges",
			cfg:  Config{TurnLimit: 2},
			turn: Turn{Begun: begun("strategy", `{}`, 3, store.Seen{}), UserText: "again"},
			check: func(t *testing.T, pl *Plan, _ int64, instructions string, _ []string, _ string) {
				nudge, err := skills.New().Text("strategy/nudge", "en")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(instructions, strings.TrimSpace(Fill(nudge, map[string]string{"turn_limit": "2"}))[:40]) {
					t.Errorf("the instructions do not carry the nudge")
				}
			}},
		{name: "MCP servers get the stage's tools and a token each",
			cfg:  Config{MCPServers: []MCPServer{{Label: "strategy_engine", URL: "http://mcp/se"}}},
			turn: Turn{Begun: begun("strategy", `{}`, 1, store.Seen{}), UserText: "draft"},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, _ []string, _ string) {
				req, err := pl.Request(nil)
				if err != nil {
					t.Fatal(err)
				}
				if len(req.Tools) != 1 || !strings.Contains(string(req.Tools[0]), `"x-mcp-context":"token-strategy_engine"`) || len(pl.AllowedTools) == 0 {
					t.Errorf("tools %s, allowed %v", req.Tools, pl.AllowedTools)
				}
			}},
		{name: "chained responses send the previous id instead of the history",
			cfg:    Config{ChainResponses: true},
			turn:   Turn{Begun: begun("strategy", `{}`, 2, store.Seen{History: true}), UserText: "next"},
			stored: &planStore{history: earlier},
			check: func(t *testing.T, _ *Plan, _ int64, _ string, input []string, prev string) {
				if prev != "resp_prev" || slices.Contains(input, "an earlier question") {
					t.Errorf("previous_response_id %q, input %q", prev, input)
				}
			}},
		{name: "a completed session has no handler and no tools",
			cfg:  Config{MCPServers: []MCPServer{{Label: "deployer", URL: "http://mcp/d"}}},
			turn: Turn{Begun: begun("completed", `{}`, 1, store.Seen{}), UserText: "thanks"},
			check: func(t *testing.T, pl *Plan, _ int64, _ string, _ []string, _ string) {
				if pl.Handler != nil || pl.Stage != "" || len(pl.AllowedTools) != 0 {
					t.Errorf("handler %v, stage %q, tools %v", pl.Handler, pl.Stage, pl.AllowedTools)
				}
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := tc.stored
			if st == nil {
				st = &planStore{}
			}
			embedded := skills.New()
			reg := handlers.New(handlers.Criteria{})
			p := NewPlanner(tc.cfg, reg, st, signer{}, NewTexts(st, embedded))
			pl, err := p.Plan(context.Background(), tc.turn)
			if err != nil {
				t.Fatal(err)
			}
			req, err := pl.Request(nil)
			if err != nil {
				t.Fatal(err)
			}
			var input []string
			for _, it := range req.Input {
				input = append(input, it.Content)
			}
			tc.check(t, pl, st.reads.Load(), req.Instructions, input, req.PreviousResponseID)
		})
	}
}
