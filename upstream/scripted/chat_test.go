package scripted_test

import (
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/upstream"
	"github.com/phaseflow/phaseflow/upstream/mcptools"
	"github.com/phaseflow/phaseflow/upstream/scripted"
)

// chatClient returns a Chat Completions client for run whose MCP tools Phaseflow's own
// tool host runs against the mock's MCP servers.
func chatClient(t *testing.T, run *scripted.Running, base string) *upstream.ChatClient {
	t.Helper()
	host := mcptools.New(mcptools.Options{})
	c := upstream.NewChat(upstream.ChatConfig{BaseURL: base, Tools: host})
	t.Cleanup(func() { c.CloseIdleConnections(); host.CloseIdleConnections() })
	return c
}

// mcpTools are the Responses-style MCP tool objects of the mock's three servers, each
// allowing every tool, as the prompt builder writes them.
func mcpTools(run *scripted.Running, caller string) []json.RawMessage {
	var out []json.RawMessage
	for _, label := range []string{"strategy_engine", "risk_lab", "deployer"} {
		b, _ := json.Marshal(map[string]any{
			"type": "mcp", "server_label": label, "server_url": run.MCPURL(label), "require_approval": "never",
			"allowed_tools": []string{"validate_strategy", "run_backtest", "run_stress_scenarios", "check_risk_guard", "deploy_strategy"},
			"headers":       map[string]string{"x-mcp-context": caller},
		})
		out = append(out, b)
	}
	return out
}

// askChat streams one chat request through the tool loop.
func askChat(t *testing.T, c *upstream.ChatClient, tools []json.RawMessage, instructions, userText string) turn {
	t.Helper()
	var tr turn
	req := upstream.Request{Model: "scripted-test", Instructions: instructions, Tools: tools,
		Input: []upstream.InputItem{{Role: "user", Content: "an earlier question"}, {Role: "assistant", Content: "an answer"}, {Role: "user", Content: userText}}}
	for ev, err := range c.Stream(t.Context(), req) {
		if err != nil {
			tr.err = err
			break
		}
		tr.events = append(tr.events, ev)
		if ev.Kind == upstream.EventTextDelta {
			tr.deltas++
			tr.text += ev.Delta
			tr.chunks = append(tr.chunks, ev.Delta)
		}
	}
	return tr
}

// TestChatScenarios plays every scenario over the Chat Completions wire, with the MCP
// calls run by Phaseflow's tool host on the mock's MCP servers: the same calls (the draft's
// failed validate_strategy and its retry included), GenUI and patches as on the Responses
// wire, and ids in the reply that agree with the tool results.
func TestChatScenarios(t *testing.T) {
	run, _ := start(t, scripted.Options{Pace: -1, ChunkSize: 7})
	c := chatClient(t, run, run.URL())
	for _, want := range scenarioWants() {
		for _, locale := range []string{"en", "zh"} {
			t.Run(want.name+"/"+locale, func(t *testing.T) {
				t.Parallel()
				stage, user := want.stage, userTexts()[locale]
				if stage == "" {
					user += " [[scenario:" + want.name + "]]"
				}
				// Each subtest has its own deployment id: the mock tells which scenario an
				// MCP call belongs to by its tool and arguments, and the two monitor
				// scenarios, run in parallel, would otherwise make the same call.
				artifacts := strings.ReplaceAll(phaseArtifacts()[want.phase], "dep-fixture", "dep-fixture-"+want.name+"-"+locale)
				tr := askChat(t, c, mcpTools(run, "ctx-"+want.name+"-"+locale), stateInstructions(want.phase, stage, locale, artifacts), user)
				checkScenarioTurn(t, tr, want, locale)
				checkIDsAgree(t, tr)
				if want.name == "deploy_monitor_blocked" && !strings.Contains(lastOutput(tr), `"status":"tripped"`) {
					t.Errorf("check_risk_guard answered %s, want the blocked scenario's tripped guard", lastOutput(tr))
				}
			})
		}
	}
}

// checkIDsAgree checks that every fresh id a tool result created and the reply mentions
// is the one the tool returned: the reply was written after the results.
func checkIDsAgree(t *testing.T, tr turn) {
	t.Helper()
	fresh := regexp.MustCompile(`\b(rep|dep)-[0-9a-f]{12}\b`)
	var fromTools []string
	for _, ev := range tr.events {
		if ev.Kind == upstream.EventToolCallDone && !ev.Tool.Failed {
			fromTools = append(fromTools, fresh.FindAllString(ev.Tool.Output, -1)...)
		}
	}
	for _, id := range fresh.FindAllString(tr.text, -1) {
		if len(fromTools) > 0 && !slices.Contains(fromTools, id) {
			t.Errorf("the reply names %s, which no tool result returned (%v)", id, fromTools)
		}
	}
}

func TestChatFaults(t *testing.T) {
	run, _ := start(t, scripted.Options{Pace: -1, ChunkSize: 40})
	base := strings.TrimSuffix(run.URL(), "/v1")
	tests := []struct {
		name, base, marker string
		code               upstream.Kind
		partial            bool
	}{
		{"429 by marker", run.URL(), "[[fault:http_429]]", upstream.KindRateLimited, false},
		{"500 by path", base + "/fault/http_500/v1", "", upstream.KindUnavailable, false},
		{"429 by path, whatever the user wrote", base + "/fault/http_429/v1", "", upstream.KindRateLimited, false},
		{"error chunk after 200", run.URL(), "[[fault:mid_stream_error]]", upstream.KindProvider, true},
		{"abrupt close", run.URL(), "[[fault:abrupt_close]]", upstream.KindProvider, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tr := askChat(t, chatClient(t, run, tt.base), nil, "", "hello "+tt.marker)
			var ue *upstream.Error
			if !errors.As(tr.err, &ue) || ue.Kind != tt.code {
				t.Fatalf("err = %v, want %s", tr.err, tt.code)
			}
			if tt.partial != (tr.text != "") {
				t.Fatalf("text %q, want partial = %v", tr.text, tt.partial)
			}
		})
	}
	var paths []string
	for _, r := range run.Server().Requests() {
		paths = append(paths, r.Path)
	}
	if !slices.Contains(paths, "/fault/http_500/v1/chat/completions") {
		t.Errorf("recorded paths %v lack the fault prefix as asked", paths)
	}
}

// lastOutput is the output of the turn's last tool call.
func lastOutput(tr turn) string {
	out := ""
	for _, ev := range tr.events {
		if ev.Kind == upstream.EventToolCallDone {
			out = ev.Tool.Output
		}
	}
	return out
}
