package events

import "testing"

func TestStatusJSON(t *testing.T) {
	base := Base{MessageID: "0194f0c2-msg", RequestID: "req-1"}
	zero, three := 0, 3
	cases := []struct {
		name string
		d    StatusData
	}{
		{"queued", StatusData{Base: base, State: StateQueued, Phase: "strategy"}},
		{"working", StatusData{Base: base, State: StateWorking, Phase: "stress_test"}},
		{"routed", StatusData{Base: base, State: StateRouted, Provider: "openai", ResolvedModel: "gpt-5.1", EndpointID: 2, UpstreamRequestID: "req_abc"}},
		{"tool call", StatusData{Base: base, State: StateToolCall, Tool: &ToolState{ServerLabel: "quant", Name: "run_backtest", State: "started"}}},
		{"retrying before any delta", StatusData{Base: base, State: StateRetrying, Attempt: 2, Reason: "reply_invalid", DiscardThroughSeq: &zero}},
		{"retrying after deltas", StatusData{Base: base, State: StateRetrying, Attempt: 3, Reason: "x", DiscardThroughSeq: &three}},
		{"phase changed", StatusData{Base: base, State: StatePhaseChanged, From: "strategy", To: "stress_test", Reason: "<ready> & \"confirmed\""}},
		{"escapes and negative numbers", StatusData{Base: Base{MessageID: "\u2028", RequestID: "\xff"}, State: "\n", EndpointID: -1, Attempt: -2, Tool: &ToolState{}}},
		{"empty", StatusData{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAsEncodingJSON(t, &tc.d)
		})
	}
}

// A status is encoded without reflection: one allocation, its bytes.
func TestStatusEncodesInOneAllocation(t *testing.T) {
	d := StatusData{Base: Base{MessageID: "m", RequestID: "r"}, State: StateRouted, Provider: "openai", EndpointID: 1}
	if n := testing.AllocsPerRun(100, func() { mustEncode(t, &d) }); n != 1 {
		t.Fatalf("Encode(status) made %v allocations, want 1", n)
	}
}

// FuzzStatusJSON holds the status encoder to encoding/json's bytes.
func FuzzStatusJSON(f *testing.F) {
	f.Add("m", "r", "routed", "openai", "gpt", 2, "req", "strategy", "quant", "run", "started", true, 1, "why", 4, true, "a", "b")
	f.Add("\u2028", "\xff", "", "", "", 0, "", "", "", "", "", false, 0, "", 0, false, "", "")
	f.Fuzz(func(t *testing.T, msg, req, state, provider, model string, endpoint int, upstreamID, phase, label, name, toolState string,
		hasTool bool, attempt int, reason string, through int, hasThrough bool, from, to string) {
		d := StatusData{Base: Base{MessageID: msg, RequestID: req}, State: state, Provider: provider, ResolvedModel: model,
			EndpointID: endpoint, UpstreamRequestID: upstreamID, Phase: phase, Attempt: attempt, Reason: reason, From: from, To: to}
		if hasTool {
			d.Tool = &ToolState{ServerLabel: label, Name: name, State: toolState}
		}
		if hasThrough {
			d.DiscardThroughSeq = &through
		}
		checkAsEncodingJSON(t, &d)
	})
}

func BenchmarkEncodeStatus(b *testing.B) {
	d := StatusData{Base: Base{MessageID: "0194f0c2-7a3e-7c1d-9b2a-3f4e5d6c7b8a", RequestID: "req-0194f0c2"},
		State: StateRouted, Provider: "openai", ResolvedModel: "gpt-5.1-2026-09", EndpointID: 1, UpstreamRequestID: "req_abc"}
	benchEncode(b, &d)
}
