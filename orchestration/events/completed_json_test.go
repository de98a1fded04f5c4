package events

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/store"
)

func TestCompletedJSON(t *testing.T) {
	base := Base{MessageID: "0194f0c2-msg", RequestID: "req-1"}
	model, upstreamID := "gpt-5.1-2026-09", "req_abc"
	meta := mustEncode(t, &Metadata{
		Phase:     "strategy",
		GenUI:     []json.RawMessage{json.RawMessage(`{"type":"strategy_card","title":"<BTC> & co"}`)},
		ToolCalls: []store.ToolCall{{ServerLabel: "quant", Name: "run_backtest", Arguments: store.JSON(`{"symbol":"BTC"}`)}},
		Attempts:  1,
	})
	cases := []struct {
		name string
		d    CompletedData
	}{
		{"a whole route and metadata", CompletedData{Base: base, Route: Route{Provider: "openai", ResolvedModel: &model, EndpointID: 2, UpstreamRequestID: &upstreamID}, ReplyLen: 1234, Metadata: meta}},
		{"no resolved model: null", CompletedData{Base: base, Route: Route{Provider: "openai", EndpointID: 1}, ReplyLen: 7, Metadata: meta}},
		{"no provider, no upstream request id: left out", CompletedData{Base: base, Route: Route{ResolvedModel: &model}, Metadata: json.RawMessage(`{}`)}},
		{"no metadata: null", CompletedData{Base: base, ReplyLen: 1}},
		{"escapes in every text", CompletedData{Base: Base{MessageID: "a\"b", RequestID: "\u2028\xff"}, Route: Route{Provider: "<p>", ResolvedModel: &upstreamID, UpstreamRequestID: &model}, Metadata: mustEncode(t, "x\ny")}},
		{"empty", CompletedData{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			checkAsEncodingJSON(t, &tc.d)
		})
	}
}

// The completed event is encoded without reflection: one allocation, its bytes.
// encoding/json takes two and scans the metadata again.
func TestCompletedEncodesInOneAllocation(t *testing.T) {
	d := CompletedData{Base: Base{MessageID: "m", RequestID: "r"}, ReplyLen: 3,
		Metadata: mustEncode(t, &Metadata{Phase: "strategy", MissingFields: []string{"symbol"}})}
	if n := testing.AllocsPerRun(100, func() { mustEncode(t, &d) }); n != 1 {
		t.Fatalf("Encode(completed) made %v allocations, want 1", n)
	}
}

// FuzzCompletedJSON holds the completed encoder to encoding/json's bytes, for metadata
// as Encode writes it (the only metadata a turn has).
func FuzzCompletedJSON(f *testing.F) {
	f.Add("m", "r", "openai", "gpt", true, 3, "req", true, 120, "<final>\"x\"</final>", true)
	f.Add("\u2028", "\xff", "", "", false, -1, "", false, 0, "", false)
	f.Fuzz(func(t *testing.T, msg, req, provider, model string, hasModel bool, endpoint int, upstreamID string, hasUpstreamID bool, replyLen int, metaText string, hasMeta bool) {
		d := CompletedData{Base: Base{MessageID: msg, RequestID: req}, Route: Route{Provider: provider, EndpointID: endpoint}, ReplyLen: replyLen}
		if hasModel {
			d.ResolvedModel = &model
		}
		if hasUpstreamID {
			d.UpstreamRequestID = &upstreamID
		}
		if hasMeta {
			d.Metadata = mustEncode(t, &Metadata{Phase: metaText, MissingFields: []string{metaText}, Problems: strings.Fields(metaText)})
		}
		checkAsEncodingJSON(t, &d)
	})
}

func BenchmarkEncodeCompleted(b *testing.B) {
	model, upstreamID := "gpt-5.1-2026-09", "req_0194f0c2"
	cards := make([]json.RawMessage, 3)
	for i := range cards {
		cards[i] = json.RawMessage(`{"type":"strategy_card","title":"BTC momentum","rules":` + `["` + strings.Repeat("enter on a 20-day high; ", 20) + `"]}`)
	}
	d := CompletedData{
		Base:     Base{MessageID: "0194f0c2-7a3e-7c1d-9b2a-3f4e5d6c7b8a", RequestID: "req-0194f0c2"},
		Route:    Route{Provider: "openai", ResolvedModel: &model, EndpointID: 1, UpstreamRequestID: &upstreamID},
		ReplyLen: 4000,
		Metadata: mustEncode(b, &Metadata{Phase: "strategy", GenUI: cards, Attempts: 1}),
	}
	benchEncode(b, &d)
}
