package postprocess

import (
	"encoding/json"
	"slices"
	"strings"
)

// GenUIContext is what the GenUI step needs besides the model's own objects.
type GenUIContext struct {
	Allowed       []string     // the phase's allowed GenUI types
	ToolCalls     []ToolRecord // this turn's MCP calls
	MissingFields []string     // what the phase handler still needs
	Reply         string       // the reply text, to see whether the model asked something
}

// GenUIResult is the GenUI a turn sends, with what was refused and why.
type GenUIResult struct {
	Items   []json.RawMessage
	Dropped []string
}

// FinishGenUI fills in the cards the model left out and drops the types the phase does not
// allow. Filled in: a strategy_ref card when validate_strategy returned a strategy_id, a
// backtest_charts card when a backtest tool returned series, and a choice_prompt when the
// phase still misses fields and the model asked nothing.
func FinishGenUI(items []json.RawMessage, c GenUIContext) GenUIResult {
	items = slices.Clone(items)
	if !hasType(items, "strategy_ref") {
		items = appendIf(items, strategyRef(c.ToolCalls))
	}
	if !hasType(items, "backtest_charts") {
		items = appendIf(items, backtestCharts(c.ToolCalls))
	}
	if len(c.MissingFields) > 0 && !hasType(items, "choice_prompt") && !asksSomething(c.Reply) {
		items = append(items, mustRaw(map[string]any{"type": "choice_prompt", "missing_fields": c.MissingFields, "source": "auto"}))
	}
	var res GenUIResult
	for _, it := range items {
		if typ := typeOf(it); slices.Contains(c.Allowed, typ) {
			res.Items = append(res.Items, it)
		} else {
			res.Dropped = append(res.Dropped, "genui type "+typ+" is not allowed in this phase")
		}
	}
	if res.Items == nil {
		res.Items = []json.RawMessage{}
	}
	return res
}

func strategyRef(calls []ToolRecord) json.RawMessage {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Name != "validate_strategy" || c.Status != "success" {
			continue
		}
		var out struct {
			StrategyID string `json:"strategy_id"`
			Status     string `json:"status"`
		}
		if json.Unmarshal([]byte(c.Output), &out) == nil && out.StrategyID != "" {
			return mustRaw(map[string]any{"type": "strategy_ref", "strategy_id": out.StrategyID, "status": out.Status, "source": "auto"})
		}
	}
	return nil
}

func backtestCharts(calls []ToolRecord) json.RawMessage {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if !strings.Contains(c.Name, "backtest") || c.Status != "success" {
			continue
		}
		var out struct {
			Series  json.RawMessage `json:"series"`
			Metrics json.RawMessage `json:"metrics"`
		}
		if json.Unmarshal([]byte(c.Output), &out) == nil && len(out.Series) > 0 && string(out.Series) != "null" {
			card := map[string]any{"type": "backtest_charts", "series": out.Series, "source": "auto"}
			if len(out.Metrics) > 0 {
				card["metrics"] = out.Metrics
			}
			return mustRaw(card)
		}
	}
	return nil
}

// StrategyFromTools returns the strategy id a successful validate_strategy call returned.
func StrategyFromTools(calls []ToolRecord) string {
	var id string
	if ref := strategyRef(calls); ref != nil {
		var v struct {
			StrategyID string `json:"strategy_id"`
		}
		_ = json.Unmarshal(ref, &v)
		id = v.StrategyID
	}
	return id
}

// asksSomething reports whether the reply's final answer ends by putting a question to the
// user: a question mark in its last paragraph. Earlier paragraphs may quote the user's own
// question, which is not the model asking.
func asksSomething(reply string) bool {
	if i := strings.LastIndex(reply, "<final>"); i >= 0 {
		reply = reply[i+len("<final>"):]
	}
	if i := strings.Index(reply, "<!--"); i >= 0 {
		reply = reply[:i]
	}
	reply = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(reply), "</final>"))
	paragraphs := strings.Split(strings.ReplaceAll(reply, "\r\n", "\n"), "\n\n")
	return strings.ContainsAny(paragraphs[len(paragraphs)-1], "?？")
}

func hasType(items []json.RawMessage, typ string) bool {
	return slices.ContainsFunc(items, func(it json.RawMessage) bool { return typeOf(it) == typ })
}

func typeOf(it json.RawMessage) string {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(it, &head)
	return head.Type
}

func appendIf(items []json.RawMessage, it json.RawMessage) []json.RawMessage {
	if it == nil {
		return items
	}
	return append(items, it)
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}
