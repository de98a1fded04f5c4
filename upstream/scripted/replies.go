package scripted

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// The replies below are mock fixtures, not prompts: they are what a well-behaved model would
// answer, in ThinkingML (docs/thinkingml.md), so that the real server can be run and tested end
// to end without an LLM.

// language is the language a reply is written in.
type language string

const (
	english language = "en"
	chinese language = "zh"
)

// other returns the language a wrong_language fault answers in.
func (l language) other() language {
	if l == chinese {
		return english
	}
	return chinese
}

// phase is one step of a reply's <thinking>.
type phase struct {
	title, text string
}

// reply is one canned answer in one language. final is Markdown. quote is a Markdown line
// in which "{user}" stands for a short, escaped quote of the user's message, so tests can
// see their text arrived; it goes before final. ui and patch are JSON texts (a GenUI array
// and a merge patch on the phase's artifacts) written after </final> in <AGENT_UI_JSON>
// and <AGENT_STATE_PATCH> blocks; empty means no block. final, ui and patch may hold the
// placeholders of [vars].
type reply struct {
	phases  []phase
	quote   string
	final   string
	queries []string
	ui      string
	patch   string
}

// scenario is one scripted turn: the MCP calls the upstream makes before answering, in
// order, and the same answer in each language. phase is the phase the scenario is written
// for ("" for the default reply).
type scenario struct {
	phase   string
	calls   []toolCall
	replies map[language]reply
}

// defaultScenario is the scenario used when a request names none or an unknown one and
// carries no [SESSION STATE] block.
const defaultScenario = "default"

// The quote lines every reply starts its <final> with.
const (
	quoteEN = "You wrote: \"{user}\""
	quoteZH = "你写道：“{user}”"
)

// scenarios returns the reply table, keyed by scenario name: the default reply and the
// scenarios of each phase. It is a function, not a package variable, so nothing can change
// the table at run time.
func scenarios() map[string]scenario {
	table := map[string]scenario{defaultScenario: defaultReply()}
	for _, part := range []map[string]scenario{strategyScenarios(), stressScenarios(), deploymentScenarios()} {
		for name, sc := range part {
			table[name] = sc
		}
	}
	return table
}

// defaultReply is the answer to a request without a [SESSION STATE] block: a generic
// reply that calls no tools.
func defaultReply() scenario {
	return scenario{replies: map[language]reply{
		english: {
			phases: []phase{
				{"Understand the request", "Restate what the user asked and what a useful answer must cover."},
				{"Plan the answer", "List the steps: define the goal, check the constraints, propose a first draft to refine together."},
			},
			quote: quoteEN,
			final: "This reply comes from the scripted upstream, so it is the same for every question. A real model would now:\n\n" +
				"1. restate your goal in one sentence;\n" +
				"2. name the constraints that matter (capital, risk, time horizon);\n" +
				"3. propose a first draft and ask what to change.\n",
			queries: []string{"trading strategy design basics", "backtesting a trading strategy"},
		},
		chinese: {
			phases: []phase{
				{"理解问题", "复述用户的问题，明确一个有用的回答需要覆盖哪些内容。"},
				{"规划回答", "列出步骤：明确目标，核对约束条件，给出初稿再一起完善。"},
			},
			quote: quoteZH,
			final: "这条回复来自脚本化的上游服务，所以对每个问题都相同。真实的模型接下来会：\n\n" +
				"1. 用一句话复述你的目标；\n" +
				"2. 说明关键的约束条件（资金、风险、投资期限）；\n" +
				"3. 给出初稿并询问需要修改的地方。\n",
			queries: []string{"交易策略设计入门", "交易策略回测方法"},
		},
	}}
}

// lookupScenario returns the named scenario and whether the table has it.
func lookupScenario(name string) (scenario, bool) {
	sc, ok := scenarios()[name]
	return sc, ok
}

// with returns r with the placeholders of its phases, final text, GenUI and patch filled
// in.
func (r reply) with(vars *strings.Replacer) reply {
	phases := make([]phase, len(r.phases))
	for i, p := range r.phases {
		phases[i] = phase{title: vars.Replace(p.title), text: vars.Replace(p.text)}
	}
	r.phases = phases
	r.final, r.ui, r.patch = vars.Replace(r.final), vars.Replace(r.ui), vars.Replace(r.patch)
	return r
}

// withVars returns a copy of calls with the placeholders of their arguments, output and
// failure filled in.
func withVars(calls []toolCall, vars *strings.Replacer) []toolCall {
	out := make([]toolCall, len(calls))
	for i, c := range calls {
		c.arguments, c.output, c.failure = vars.Replace(c.arguments), vars.Replace(c.output), vars.Replace(c.failure)
		out[i] = c
	}
	return out
}

// maxEcho bounds the quote of the user's message in a reply.
const maxEcho = 80

// render writes r as a ThinkingML document. It quotes userText unless quote is false: a
// reply in the wrong language must not quote the user, or the quote alone (in the session's
// language) could pass the orchestrator's language check and hide the fault.
func render(r reply, userText string, quote bool) string {
	var b strings.Builder
	b.WriteString("<thinking>\n")
	for i, p := range r.phases {
		b.WriteString(`<phase id="`)
		b.WriteString(strconv.Itoa(i + 1))
		b.WriteString(`"><title>`)
		b.WriteString(escapeText(p.title))
		b.WriteString("</title>\n")
		b.WriteString(escapeText(p.text))
		b.WriteString("\n</phase>\n")
	}
	b.WriteString("</thinking>\n<final>\n")
	if quote && r.quote != "" {
		b.WriteString(strings.ReplaceAll(r.quote, "{user}", escapeText(echo(userText))))
		b.WriteString("\n\n")
	}
	b.WriteString(r.final)
	b.WriteString("\n<!-- <serp_queries>\n")
	q, _ := json.Marshal(r.queries) // a []string always marshals
	b.Write(q)
	b.WriteString("\n</serp_queries> -->\n</final>\n")
	writeBlock(&b, "AGENT_UI_JSON", r.ui)
	writeBlock(&b, "AGENT_STATE_PATCH", r.patch)
	return b.String()
}

// writeBlock writes a withheld block after </final>: the JSON body on one line between the
// tags. An empty body writes nothing.
func writeBlock(b *strings.Builder, name, body string) {
	if body == "" {
		return
	}
	var line bytes.Buffer
	if json.Compact(&line, []byte(body)) != nil {
		line.Reset()
		line.WriteString(body) // the fixture tests catch this; send it as written
	}
	b.WriteString("<" + name + ">")
	b.Write(line.Bytes())
	b.WriteString("</" + name + ">\n")
}

// breakXML damages a rendered reply the way a model sometimes does: the first phase is
// closed with the wrong tag, which leaves a stray </title> and an unclosed <phase>.
func breakXML(doc string) string {
	return strings.Replace(doc, "</phase>", "</title>", 1)
}

// echo shortens the user's text for quoting: markers removed, white space collapsed, at
// most maxEcho runes.
func echo(userText string) string {
	s := strings.Join(strings.Fields(markerRE.ReplaceAllString(userText, " ")), " ")
	if utf8.RuneCountInString(s) <= maxEcho {
		return s
	}
	return string([]rune(s)[:maxEcho]) + "…"
}

// escapeText makes s safe as ThinkingML text: no character of it can open a tag or an
// entity.
func escapeText(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// pickLanguage chooses the reply language from the request: Chinese when the instructions
// or the latest user message contain CJK characters, or the instructions say "locale: zh";
// English otherwise.
func pickLanguage(instructions, userText string) language {
	if hasCJK(instructions) || hasCJK(userText) || strings.Contains(strings.ToLower(instructions), "locale: zh") {
		return chinese
	}
	return english
}

// hasCJK reports whether s holds a Chinese, Japanese or Korean character.
func hasCJK(s string) bool {
	for _, r := range s {
		if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
			return true
		}
	}
	return false
}
