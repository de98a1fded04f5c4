package postprocess

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/phaseflow/phaseflow/genui"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/store"
)

// GenUIContext is what the GenUI step needs besides the model's own objects.
type GenUIContext struct {
	Allowed   []string         // the phase's allowed GenUI types
	ToolCalls []store.ToolCall // this turn's MCP calls
	Ask       []string         // what the phase handler still needs from the user
	Reply     string           // the reply text, to see whether the model asked something
	// Schema checks the cards; nil compiles the GenUI schema for this call (far dearer
	// than checking a card), so a long-lived caller keeps one genui.Validator and passes it.
	Schema *genui.Validator
	// Question says what the missing fields are, in the session's locale, for the
	// choice_prompt the server adds (nil, or no question: the card carries the fields
	// alone).
	Question func(missing []string) handlers.Missing
	// Cards are the phase handler's cards from the turn's tool results and block (a stress
	// report, a deployment summary, a new draft's strategy card), each added when the
	// model sent none of its type.
	Cards []json.RawMessage
}

// GenUIResult is the GenUI a turn sends, with what was refused and why.
type GenUIResult struct {
	Items   []json.RawMessage
	Dropped []string
}

// FinishGenUI fills in the cards the model left out and drops the types the phase does not
// allow and the cards that break the GenUI schema (package genui), each with its reason.
// Filled in: the phase's own cards (Cards), a strategy_ref card when validate_strategy
// returned a strategy_id, a backtest_charts card when a backtest tool returned series, and
// a choice_prompt when the phase still misses fields and the model asked nothing, its
// question saying in the session's locale what is missing and its options labelled in
// words (a front end shows the labels, never the field names).
func FinishGenUI(items []json.RawMessage, c GenUIContext) GenUIResult {
	cards := newTypedCards(items)
	for _, card := range c.Cards {
		cards.addNew(card, typeOf(card))
	}
	if !cards.has("strategy_ref") {
		cards.addNew(strategyRef(c.ToolCalls), "strategy_ref")
	}
	if !cards.has("backtest_charts") {
		cards.addNew(backtestCharts(c.ToolCalls), "backtest_charts")
	}
	if len(c.Ask) > 0 && !cards.has("choice_prompt") && !asksSomething(c.Reply) {
		cards.addNew(mustRaw(missingPrompt(c)), "choice_prompt")
	}
	var res GenUIResult
	schema, schemaErr := c.Schema, error(nil)
	if schema == nil {
		schema, schemaErr = genui.NewValidator()
	}
	for i, it := range cards.items {
		typ := cards.types[i]
		switch {
		case !slices.Contains(c.Allowed, typ):
			res.Dropped = append(res.Dropped, "genui type "+typ+" is not allowed in this phase")
		case schemaErr != nil:
			res.Dropped = append(res.Dropped, schemaErr.Error())
		default:
			if err := schema.Validate(it); err != nil {
				res.Dropped = append(res.Dropped, err.Error())
				continue
			}
			res.Items = append(res.Items, it)
		}
	}
	if res.Items == nil {
		res.Items = []json.RawMessage{}
	}
	return res
}

func strategyRef(calls []store.ToolCall) json.RawMessage {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if c.Name != "validate_strategy" || c.Status != store.ToolSuccess {
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

func backtestCharts(calls []store.ToolCall) json.RawMessage {
	for i := len(calls) - 1; i >= 0; i-- {
		c := calls[i]
		if !strings.Contains(c.Name, "backtest") || c.Status != store.ToolSuccess {
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

// typedCards are cards with their types, each read once: every "is there a card of this
// type" asked of the bare cards decoded them all again with encoding/json.
type typedCards struct {
	items []json.RawMessage
	types []string
}

func newTypedCards(items []json.RawMessage) *typedCards {
	c := &typedCards{items: slices.Clone(items), types: make([]string, len(items))}
	for i, it := range items {
		c.types[i] = typeOf(it)
	}
	return c
}

// has reports a card of type typ.
func (c *typedCards) has(typ string) bool { return slices.Contains(c.types, typ) }

// addNew adds it, of type typ, unless it is nil or a card of its type is there already.
func (c *typedCards) addNew(it json.RawMessage, typ string) {
	if it == nil || c.has(typ) {
		return
	}
	c.items, c.types = append(c.items, it), append(c.types, typ)
}

func typeOf(it json.RawMessage) string {
	var head struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(it, &head)
	return head.Type
}

func mustRaw(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		return json.RawMessage(`null`)
	}
	return b
}

// maxChoiceOptions is the GenUI schema's limit on a choice_prompt's options; fields past it
// stay in missing_fields and the question.
const maxChoiceOptions = 8

// missingPrompt is the choice_prompt the server adds for what the user can still settle: the fields,
// and with the phase's words, the question and one option a field, labelled.
func missingPrompt(c GenUIContext) map[string]any {
	card := map[string]any{"type": "choice_prompt", "missing_fields": c.Ask, "source": "auto"}
	if c.Question == nil {
		return card
	}
	m := c.Question(c.Ask)
	if m.Question == "" {
		return card
	}
	card["question"] = m.Text()
	options := make([]map[string]string, 0, len(m.Labels))
	for i, label := range m.Labels {
		if i < len(m.Fields) && i < maxChoiceOptions {
			options = append(options, map[string]string{"id": m.Fields[i], "label": label})
		}
	}
	if len(options) > 0 {
		card["options"] = options
	}
	return card
}
