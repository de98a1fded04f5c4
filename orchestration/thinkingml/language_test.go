package thinkingml

import (
	"strings"
	"testing"
)

func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

// TestCheckLanguage covers the thresholds one by one, with made-up text.
func TestCheckLanguage(t *testing.T) {
	tests := []struct {
		name         string
		reply        string
		locale       string
		ok           bool
		cjk, english int
	}{
		{name: "zh two CJK characters pass", reply: "中文 " + words(2), locale: "zh", ok: true, cjk: 2, english: 2},
		{name: "zh no CJK five words pass as too little", reply: words(5), locale: "zh", ok: true, english: 5},
		{name: "zh no CJK six words fail", reply: words(6), locale: "zh", ok: false, english: 6},
		{name: "zh one CJK five words pass", reply: "中 " + words(5), locale: "zh", ok: true, cjk: 1, english: 5},
		{name: "zh one CJK twelve words fail", reply: "中 " + words(12), locale: "zh", ok: false, cjk: 1, english: 12},
		{name: "zh more English words than CJK characters fail", reply: "中文中文中文 " + words(7), locale: "zh", ok: false, cjk: 6, english: 7},
		{name: "zh as many English words as CJK characters pass", reply: "中文中文中文中 " + words(7), locale: "zh", ok: true, cjk: 7, english: 7},
		{name: "zh apostrophe joins a word", reply: "don't can't won't it's we're they'd", locale: "zh", ok: false, english: 6},
		{name: "zh digits, symbols and identifiers are not words", reply: "2024 100% 5x5 @ # ... SMA20 run_backtest", locale: "zh", ok: true},
		{name: "zh CJK range edges", reply: "\u3400\u9fff\u33ff\ua000", locale: "zh", ok: true, cjk: 2},
		{name: "en two words pass", reply: "中文字符 okay then", locale: "en", ok: true, cjk: 4, english: 2},
		{name: "en no words six CJK fail", reply: "六个中文字符", locale: "en", ok: false, cjk: 6},
		{name: "en one word twelve CJK fail", reply: "rsi 十二个中文字符十二个中文", locale: "en", ok: false, cjk: 12, english: 1},
		{name: "en more than four CJK characters per word fail", reply: "很多中文字符很多中文字符很多中文字符 okay then", locale: "en", ok: false, cjk: 18, english: 2},
		{name: "en four CJK characters per word pass", reply: "很多中文字符很多 okay then", locale: "en", ok: true, cjk: 8, english: 2},
		{name: "other locale is not checked", reply: words(40), locale: "fr", ok: true, english: 40},
		// "&lt;final&gt;" is prose mentioning <final>: the entities go, the word stays.
		{name: "tags, comments and entities do not count", locale: "zh", ok: true, cjk: 4, english: 1,
			reply: "<thinking><phase id=\"1\"><title>理解</title>&lt;final&gt;</phase></thinking><final>需求\n" + okBlock + "</final>"},
		{name: "only thinking and final count", locale: "zh", ok: true, cjk: 2, english: 0,
			reply: "<think>" + words(20) + "</think><thinking>中文</thinking><final></final>"},
		{name: "whole reply when the elements are missing", reply: "<think>" + words(20) + "</think>", locale: "zh", ok: false, english: 20},
		{name: "code spans and fences do not count", locale: "zh", ok: true, cjk: 4,
			reply: "调用 `run the backtest now please` 工具\n```\nall of this is code and not prose\n```\n"},
		{name: "acronyms, tickers, URLs and addresses do not count", locale: "en", ok: false, cjk: 6,
			reply: "BTC-USD RSI ETH https://example.com/some/path www.example.org ops@example.com 六个中文字符"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckLanguage(tc.reply, tc.locale)
			if got.OK != tc.ok || got.CJK != tc.cjk || got.EnglishWords != tc.english {
				t.Errorf("CheckLanguage = %+v, want ok=%v cjk=%d english=%d", got, tc.ok, tc.cjk, tc.english)
			}
			if got.Reason == "" {
				t.Errorf("no reason given")
			}
		})
	}
}

// realReply wraps a title|thinking and final text in a valid ThinkingML reply, the way the model
// writes one, serp block included.
func realReply(thinking, final, queries string) string {
	return "<thinking>\n<phase id=\"1\"><title>" + thinking[:strings.IndexByte(thinking, '|')] + "</title>\n" +
		thinking[strings.IndexByte(thinking, '|')+1:] + "\n</phase>\n</thinking>\n<final>\n" + final +
		"\n\n<!-- <serp_queries>\n" + queries + "\n</serp_queries> -->\n</final>"
}

// TestCheckLanguageOnRealReplies: replies as a model writes them, full of tool names,
// tickers, numbers, code and links, in the right and the wrong language for each locale.
// A reply in the wrong language must fail in both directions, however many identifiers it
// carries; one in the right language must pass, however many English names it quotes.
func TestCheckLanguageOnRealReplies(t *testing.T) {
	zhDraft := realReply(
		"起草策略|用户想要一个 BTC-USD 的动量策略。先用 `validate_strategy` 在 strategy_engine 上校验，参数 SMA20/SMA50，止损 5%。",
		"我起草了 **BTC momentum** 策略：\n\n- 入场：4 小时 K 线收盘价上穿 SMA50，且 RSI(14) 高于 55。\n"+
			"- 出场：跌破 SMA20 或移动止损 5%。\n- 仓位：每笔 10%。\n\n已调用 run_backtest 之前的校验，strategy_id 为 `s-1`。"+
			"详见 https://example.com/docs/momentum 。要现在回测吗？",
		`["比特币 动量策略 回测","SMA 均线 交叉 策略"]`)
	zhTerms := realReply(
		"分析回测|回测结果：Sharpe 1.4，最大回撤 12%，momentum 因子在 2023 年表现最好。",
		"回测完成：夏普比率（Sharpe）为 1.4，最大回撤 12%，年化收益 38%。趋势跟踪（trend following）在震荡市里会反复止损，"+
			"这是动量策略的典型弱点。你可以确认策略，或者让我调整参数后再回测。",
		`["动量策略 最大回撤"]`)
	enDraft := realReply(
		"Draft the strategy|The user wants a BTC-USD momentum strategy. Validate it with `validate_strategy` on strategy_engine; SMA20/SMA50, a 5% stop.",
		"I drafted **BTC momentum**:\n\n- Entry: the 4-hour close crosses above SMA50 while RSI(14) is above 55.\n"+
			"- Exit: a close under SMA20, or a 5% trailing stop.\n- Size: 10% per trade.\n\nShall I backtest it now?",
		`["bitcoin momentum strategy backtest"]`)
	enQuote := realReply(
		"Answer the question|The user asks about 贵州茅台 (Kweichow Moutai), a large Chinese stock, and its ticker 600519.",
		"Kweichow Moutai (贵州茅台, 600519.SS) trades on the Shanghai exchange. A momentum strategy on it works like the one "+
			"we drafted for BTC, but with daily candles, since the market is open only a few hours a day.",
		`["Kweichow Moutai momentum strategy"]`)
	toolsOnly := realReply(
		"Plan|run_backtest → validate_strategy (strategy_engine): SMA20, RSI14, BTC-USD, 2023-2025.",
		"`run_backtest`: ok — strategy_id s-1, https://example.com/r/1",
		`["btc"]`)
	tests := []struct {
		name, reply, locale string
		ok                  bool
	}{
		{"a Chinese draft with tool names, tickers and a link passes zh", zhDraft, "zh", true},
		{"the same Chinese draft fails en", zhDraft, "en", false},
		{"a Chinese reply quoting English finance terms passes zh", zhTerms, "zh", true},
		{"the same Chinese reply fails en", zhTerms, "en", false},
		{"an English draft passes en", enDraft, "en", true},
		{"the same English draft fails zh", enDraft, "zh", false},
		{"an English reply quoting a Chinese name passes en", enQuote, "en", true},
		{"the same English reply fails zh", enQuote, "zh", false},
		{"a reply of tool names and tickers alone is too little to judge (zh)", toolsOnly, "zh", true},
		{"a reply of tool names and tickers alone is too little to judge (en)", toolsOnly, "en", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CheckLanguage(tc.reply, tc.locale); got.OK != tc.ok {
				t.Errorf("CheckLanguage = %+v, want ok=%v", got, tc.ok)
			}
		})
	}
}

func TestCheckLanguageOnTestdata(t *testing.T) {
	tests := []struct {
		file   string
		locale string
		ok     bool
	}{
		{"valid_en.xml", "en", true},
		{"valid_en.xml", "zh", false},
		{"valid_zh.xml", "zh", true},
		{"valid_zh.xml", "en", false},
	}
	for _, tc := range tests {
		t.Run(tc.file+" "+tc.locale, func(t *testing.T) {
			if got := CheckLanguage(readReply(t, tc.file), tc.locale); got.OK != tc.ok {
				t.Errorf("CheckLanguage = %+v, want ok=%v", got, tc.ok)
			}
		})
	}
}

func TestStripCode(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"inline span", "a `b c` d", "a   d"},
		{"fenced block", "a\n```go\nx := 1\n```\nb", "a\n \nb"},
		{"unclosed backtick stays", "a ` b", "a ` b"},
		{"a span does not cross lines", "a `b\nc` d", "a `b\nc` d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := stripCode(tc.in); got != tc.want {
				t.Errorf("stripCode(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

// FuzzCheckLanguage: the rule never panics, always gives a reason, and counts no more
// words than the text has letters runs nor more CJK characters than it has code points.
func FuzzCheckLanguage(f *testing.F) {
	f.Add("<thinking><phase id=\"1\"><title>t</title>`run_backtest` 中文</phase></thinking><final>x</final>", "zh")
	f.Add("https://a.b/c SMA20 BTC-USD don't <b>x</b> &amp; ```code```", "en")
	f.Fuzz(func(t *testing.T, reply, locale string) {
		res := CheckLanguage(reply, locale)
		if res.Reason == "" || res.CJK < 0 || res.EnglishWords < 0 || res.CJK > len([]rune(reply)) || res.EnglishWords > len(reply) {
			t.Fatalf("CheckLanguage(%q, %q) = %+v", reply, locale, res)
		}
	})
}
