package scripted

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
)

// postFields are the parts of a post_views prompt the scripted model reads: the template's
// context lines, its two JSON blocks and the post itself. The labels are the template's in
// either locale.
type postFields struct {
	url, postedAt, content string
	assets                 []postAsset
	aliases                map[string]string
}

// postAsset is one reference asset of the prompt.
type postAsset struct {
	Symbol string `json:"symbol"`
	Name   string `json:"name"`
	Market string `json:"market"`
}

// readPost reads a post_views prompt.
func readPost(prompt string) postFields {
	f := postFields{aliases: map[string]string{}}
	lines := strings.Split(prompt, "\n")
	for i, line := range lines {
		switch {
		case strings.HasPrefix(line, "- url: "):
			f.url = strings.TrimPrefix(line, "- url: ")
		case strings.HasPrefix(line, "- posted_at: "):
			f.postedAt = strings.TrimPrefix(line, "- posted_at: ")
		case i+1 < len(lines) && (strings.HasPrefix(line, "Reference Assets") || strings.HasPrefix(line, "参考资产")):
			_ = json.Unmarshal([]byte(lines[i+1]), &f.assets) // an empty block reads as none
		case i+1 < len(lines) && (strings.HasPrefix(line, "Alias -> Symbol") || strings.HasPrefix(line, "别名 -> 代码")):
			_ = json.Unmarshal([]byte(lines[i+1]), &f.aliases)
		}
	}
	f.content = between(prompt, []string{"Post Content:\n", "帖子内容：\n"}, []string{"\n\nOutput contract:", "\n\n输出约定："})
	return f
}

// between returns the text after the first of starts and before the first of ends.
func between(s string, starts, ends []string) string {
	for _, st := range starts {
		if _, rest, ok := strings.Cut(s, st); ok {
			for _, e := range ends {
				if body, _, ok := strings.Cut(rest, e); ok {
					return body
				}
			}
			return rest
		}
	}
	return ""
}

// postAnswer is the scripted extraction: the reference assets (or aliases, or $cashtags)
// the post names, a stance from its bullish and bearish words, reasoning in Chinese (in
// English with english_reasoning), and as_of from posted_at.
func postAnswer(prompt string, sf skillFaults) map[string]any {
	f := readPost(prompt)
	symbols := mentioned(f)
	stance := stanceOf(f.content)
	var views, assets []map[string]any
	for _, sym := range symbols {
		reason := "帖子提到 " + sym + "，作者的语气" + stanceZH(stance) + "。"
		views = append(views, map[string]any{"symbol": sym, "stance": stance, "horizon": "1w", "confidence": 60,
			"reasoning": reason, "summary": summaryOf(f.content), "drivers": []string{}})
		assets = append(assets, map[string]any{"symbol": sym, "name": nameOf(f, sym), "market": marketOf(f, sym)})
	}
	reasoning := "帖子" + mentionZH(symbols) + "，整体语气" + stanceZH(stance) + "。"
	if sf.englishReasoning {
		reasoning = "The post " + mentionEN(symbols) + " and its tone is " + stance + " overall, so the view follows the author."
	}
	if sf.schemaViolation {
		stance = "moon"
	}
	return map[string]any{
		"reasoning": reasoning, "asset_views": orEmpty(views), "assets": orEmpty(assets), "event_tags": eventTags(f.content),
		"stance": stance, "horizon": "1w", "confidence": 60, "summary": summaryOf(f.content),
		"source_url": nullIfEmpty(f.url), "as_of": dateOf(f.postedAt),
	}
}

// mentioned lists the symbols the post names, in the order of the reference assets, then
// through aliases, then as $cashtags when nothing else matched.
func mentioned(f postFields) []string {
	lower := strings.ToLower(f.content)
	var out []string
	add := func(sym string) {
		if sym != "" && !slices.Contains(out, sym) {
			out = append(out, sym)
		}
	}
	for _, a := range f.assets {
		if wordIn(lower, strings.ToLower(a.Symbol)) || (a.Name != "" && strings.Contains(lower, strings.ToLower(a.Name))) {
			add(a.Symbol)
		}
	}
	for alias, sym := range sortedAliases(f.aliases) {
		if strings.Contains(lower, strings.ToLower(alias)) {
			add(sym)
		}
	}
	if len(out) == 0 {
		for _, m := range regexp.MustCompile(`\$([A-Za-z]{2,6})\b`).FindAllStringSubmatch(f.content, -1) {
			add(strings.ToUpper(m[1]))
		}
	}
	return out
}

// sortedAliases yields aliases in alias order, so the answer does not depend on map order.
func sortedAliases(m map[string]string) func(func(string, string) bool) {
	return func(yield func(string, string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}

// wordIn reports whether word stands alone in text (or as a $cashtag).
func wordIn(text, word string) bool {
	if word == "" {
		return false
	}
	return regexp.MustCompile(`(^|[^a-z0-9])\$?` + regexp.QuoteMeta(word) + `([^a-z0-9]|$)`).MatchString(text)
}

// stanceOf weighs the post's bullish words against its bearish ones.
func stanceOf(content string) string {
	lower := strings.ToLower(content)
	count := func(words ...string) int {
		n := 0
		for _, w := range words {
			n += strings.Count(lower, w)
		}
		return n
	}
	bull := count("bull", "buy", "long", "moon", "breakout", "rally", "看多", "上涨", "买入", "突破")
	bear := count("bear", "sell", "short", "dump", "crash", "drop", "看空", "下跌", "卖出", "暴跌")
	switch {
	case bull > bear:
		return "bull"
	case bear > bull:
		return "bear"
	}
	return "neutral"
}

// stanceZH says a stance in Chinese, as the reasoning is written.
func stanceZH(stance string) string {
	switch stance {
	case "bull":
		return "偏多"
	case "bear":
		return "偏空"
	}
	return "中性"
}

func mentionZH(symbols []string) string {
	if len(symbols) == 0 {
		return "没有提到具体资产"
	}
	return "提到 " + strings.Join(symbols, "、")
}

func mentionEN(symbols []string) string {
	if len(symbols) == 0 {
		return "names no asset"
	}
	return "mentions " + strings.Join(symbols, ", ")
}

// eventTags tags the events a post is about, from a few telling words.
func eventTags(content string) []string {
	lower := strings.ToLower(content)
	tags := []string{}
	for tag, words := range map[string][]string{
		"earnings": {"earnings", "财报"}, "etf": {"etf"}, "regulation": {"sec", "regulat", "监管"}, "hack": {"hack", "exploit", "黑客"},
	} {
		for _, w := range words {
			if strings.Contains(lower, w) {
				tags = append(tags, tag)
				break
			}
		}
	}
	slices.Sort(tags)
	return tags
}

// summaryOf is the post's first line, at most 80 characters.
func summaryOf(content string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(content), "\n")
	if r := []rune(first); len(r) > 80 {
		return string(r[:80])
	}
	return first
}

func nameOf(f postFields, sym string) any {
	for _, a := range f.assets {
		if a.Symbol == sym && a.Name != "" {
			return a.Name
		}
	}
	return nil
}

func marketOf(f postFields, sym string) string {
	for _, a := range f.assets {
		if a.Symbol == sym && a.Market != "" {
			return a.Market
		}
	}
	return "AUTO"
}

// dateOf is the YYYY-MM-DD that posted_at starts with, or null.
func dateOf(postedAt string) any {
	if regexp.MustCompile(`^[0-9]{4}-[0-9]{2}-[0-9]{2}`).MatchString(postedAt) {
		return postedAt[:10]
	}
	return nil
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func orEmpty(s []map[string]any) []map[string]any {
	if s == nil {
		return []map[string]any{}
	}
	return s
}
