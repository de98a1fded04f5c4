package session

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Title lengths of a short form of the user's first message, per locale: Chinese says in
// 16 characters what English says in 48.
const (
	titleRunesEN = 48
	titleRunesZH = 16
)

// titleAuto marks, in the session metadata, a title the server set; any other non-empty
// title is the user's and is never overwritten.
const titleAuto = "auto"

// AutoTitle is the title a session gets after a completed turn (docs/turn.md):
// the strategy's name when there is one, else, for an untitled session, a short form of
// the user's message in the session's locale. A title the user set (any title the server
// did not) is kept: ok is false, as it is when the title stays as it was. Setting one marks
// it the server's in meta.
func AutoTitle(current string, meta *Metadata, strategyName, userText, locale string) (string, bool) {
	if current != "" && meta.TitleSource != titleAuto {
		return "", false
	}
	title := strings.TrimSpace(strategyName)
	if title == "" && current == "" {
		title = ShortTitle(userText, locale)
	}
	if title == "" || title == current {
		return "", false
	}
	meta.TitleSource = titleAuto
	return title, true
}

// ShortTitle is a short form of a message for a title: its first line, cut to the
// locale's length (at a word boundary in English) with an ellipsis.
func ShortTitle(text, locale string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	line = strings.Join(strings.Fields(line), " ")
	limit := titleRunesEN
	if locale == "zh" {
		limit = titleRunesZH
	}
	if utf8.RuneCountInString(line) <= limit {
		return line
	}
	r := []rune(line)[:limit]
	if locale != "zh" {
		if i := strings.LastIndexFunc(string(r), unicode.IsSpace); i > limit/2 {
			return strings.TrimRightFunc(string(r)[:i], unicode.IsPunct) + "…"
		}
	}
	return strings.TrimSpace(string(r)) + "…"
}
