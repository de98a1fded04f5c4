package tests

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The Chat Completions wire end to end: the mock upstream asks for the scenario's MCP calls
// as tool_calls, the server under test runs them on the mock's MCP servers, and everything
// a client sees is what the Responses wire gives.

// mockMCPServers is PHASEFLOW_MCP_SERVERS for the MCP servers the mock at mockURL serves.
func mockMCPServers(mockURL string) string {
	base := strings.TrimSuffix(mockURL, "/v1")
	parts := make([]string, len(mcpLabels))
	for i, label := range mcpLabels {
		parts[i] = label + "=" + base + "/mcp/" + label
	}
	return strings.Join(parts, ",")
}

// startChatServer starts a server whose one upstream speaks Chat Completions, with the
// mock's MCP servers configured.
func startChatServer(t *testing.T, extraEnv ...string) *server {
	t.Helper()
	return startServerWith(t, func(mockURL string) []string {
		return append([]string{"PHASEFLOW_UPSTREAM_WIRE=chat", "PHASEFLOW_MCP_SERVERS=" + mockMCPServers(mockURL)}, extraEnv...)
	})
}

func TestPhasesWalkOnTheChatWire(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		walkPhases(t, startChatServer(t), "en")
	})
}

// uuidRE matches the strategy ids tools hand out, which differ between runs.
var uuidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// ledger is what a client sees of a turn's MCP calls.
type ledger struct {
	Completed []any      // completed.metadata.tool_calls
	Persisted []any      // GET /api/v1/messages/{id} tool_calls
	Events    [][]string // status: tool_call events: server, tool, state
	Routed    map[string]any
}

func TestMCPRoundTripIsRecordedAlikeOnBothWires(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		wires := map[string]*server{"responses": startServer(t), "chat": startChatServer(t)}
		got := map[string][]ledger{}
		for wire, s := range wires {
			tok := s.token("ledger-" + wire)
			sid := s.newSession(tok, "en")
			for _, text := range []string{"Draft a momentum strategy for BTC", "Backtest it on 2023 to 2025 data"} {
				a, evs, meta := fullTurn(t, s, tok, sid, text)
				var msg map[string]any
				apiGet(t, s, tok, "/api/v1/messages/"+a.MessageID, &msg)
				l := ledger{Completed: normalizeCalls(t, meta["tool_calls"]), Persisted: normalizeCalls(t, msg["tool_calls"])}
				for _, ev := range toolEvents(evs) {
					tool := ev.Data["tool"].(map[string]any)
					l.Events = append(l.Events, []string{tool["server_label"].(string), tool["name"].(string), tool["state"].(string)})
				}
				for _, ev := range logged(evs) {
					if ev.Name == "status" && ev.Data["state"] == "routed" {
						l.Routed = map[string]any{"provider": ev.Data["provider"], "endpoint_id": ev.Data["endpoint_id"], "resolved_model": ev.Data["resolved_model"]}
					}
				}
				got[wire] = append(got[wire], l)
			}
		}
		if len(got["responses"][0].Completed) != 1 || len(got["responses"][0].Events) != 4 {
			t.Fatalf("the Responses draft turn recorded %+v; the comparison needs its one validate_strategy and four events", got["responses"][0])
		}
		if diff := cmp.Diff(got["responses"], got["chat"]); diff != "" {
			t.Errorf("the wires record MCP calls differently (-responses +chat):\n%s", diff)
		}
		for _, l := range got["chat"] {
			if diff := cmp.Diff(l.Completed, l.Persisted); diff != "" {
				t.Errorf("chat wire: persisted tool_calls differ from completed.metadata (-completed +persisted):\n%s", diff)
			}
		}

		t.Run("a zh session's failed tool call reads in zh", func(t *testing.T) {
			s := wires["chat"]
			tok := s.token("ledger-zh")
			fullTurn(t, s, tok, s.newSession(tok, "zh"), "帮我设计一个比特币动量策略")
			var results []string
			for _, rec := range allRecorded(t, s) {
				msgs := anyList(rec.Body["messages"])
				if len(msgs) == 0 || !strings.Contains(fmt.Sprint(msgs[0].(map[string]any)["content"]), "locale: zh") {
					continue // another session's request
				}
				for _, m := range msgs {
					if msg, _ := m.(map[string]any); msg["role"] == "tool" {
						results = append(results, fmt.Sprint(msg["content"]))
					}
				}
			}
			if !slices.ContainsFunc(results, func(c string) bool { return strings.HasPrefix(c, "工具出错：") }) ||
				slices.ContainsFunc(results, func(c string) bool { return strings.HasPrefix(c, "Tool error:") }) {
				t.Fatalf("the zh session's tool results %q: want the failed validate_strategy written in zh", results)
			}
		})
	})
}

// normalizeCalls checks each tool-call record's duration and returns the records without
// it and with strategy ids written <uuid>, so two runs compare equal.
func normalizeCalls(t *testing.T, v any) []any {
	t.Helper()
	calls, ok := v.([]any)
	if !ok {
		t.Fatalf("tool_calls = %v, want a list", v)
	}
	out := make([]any, len(calls))
	for i, c := range calls {
		rec := map[string]any{}
		for k, val := range c.(map[string]any) {
			rec[k] = val
		}
		if d, ok := rec["duration_ms"].(float64); !ok || d < 0 {
			t.Fatalf("tool call record %v has no duration_ms", rec)
		}
		delete(rec, "duration_ms")
		if s, ok := rec["output"].(string); ok {
			rec["output"] = uuidRE.ReplaceAllString(s, "<uuid>")
		}
		out[i] = rec
	}
	return out
}
