package thinkingml

import (
	"strings"
	"testing"
)

func words(n int) string { return strings.TrimSpace(strings.Repeat("word ", n)) }

func TestCheckLanguage(t *testing.T) {
	tests := []struct {
		name         string
		reply        string
		locale       string
		ok           bool
		cjk, english int
	}{
		{name: "zh two CJK characters pass", reply: "中文 " + words(30), locale: "zh", ok: true, cjk: 2, english: 30},
		{name: "zh no CJK five words pass as too little", reply: words(5), locale: "zh", ok: true, english: 5},
		{name: "zh no CJK six words fail", reply: words(6), locale: "zh", ok: false, english: 6},
		{name: "zh one CJK eleven words pass", reply: "中 " + words(11), locale: "zh", ok: true, cjk: 1, english: 11},
		{name: "zh one CJK twelve words fail", reply: "中 " + words(12), locale: "zh", ok: false, cjk: 1, english: 12},
		{name: "zh apostrophe joins a word", reply: "don't can't won't it's we're they'd", locale: "zh", ok: false, english: 6},
		{name: "zh digits and symbols are not words", reply: "2024 100% 5x5 @ # ...", locale: "zh", ok: true, english: 1},
		{name: "zh CJK range edges", reply: "\u3400\u9fff\u33ff\ua000", locale: "zh", ok: true, cjk: 2},
		{name: "en two words pass", reply: "很多中文字符很多中文字符很多中文字符 OK then", locale: "en", ok: true, cjk: 18, english: 2},
		{name: "en no words six CJK fail", reply: "六个中文字符", locale: "en", ok: false, cjk: 6},
		{name: "en one word twelve CJK fail", reply: "RSI 十二个中文字符十二个中文", locale: "en", ok: false, cjk: 12, english: 1},
		{name: "en one word eleven CJK pass", reply: "RSI 十一个中文字符十一个中", locale: "en", ok: true, cjk: 11, english: 1},
		{name: "other locale is not checked", reply: words(40), locale: "fr", ok: true, english: 40},
		// "&lt;final&gt;" is prose mentioning <final>: the entities go, the word stays.
		{name: "tags, comments and entities do not count", locale: "zh", ok: true, cjk: 4, english: 1,
			reply: "<thinking><phase id=\"1\"><title>理解</title>&lt;final&gt;</phase></thinking><final>需求\n" + okBlock + "</final>"},
		{name: "only thinking and final count", locale: "zh", ok: true, cjk: 2, english: 0,
			reply: "<think>" + words(20) + "</think><thinking>中文</thinking><final></final>"},
		{name: "whole reply when the elements are missing", reply: "<think>" + words(20) + "</think>", locale: "zh", ok: false, english: 20},
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
