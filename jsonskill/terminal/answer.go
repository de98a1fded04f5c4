package terminal

import (
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Key is one thing typed into an agent's pane to answer it: a key by its tmux name (a
// digit, a letter, y, Enter, Escape), or text to type as it is.
type Key struct {
	Name string `json:"key,omitempty"`
	Text string `json:"text,omitempty"`
}

// MaxAnswerText is the longest text answer typed, in characters.
const MaxAnswerText = 500

// keyNames are the named keys an option may be chosen with, besides one printable
// character: nothing that quits, interrupts or reaches the shell.
func keyNames() map[string]bool {
	return map[string]bool{"Enter": true, "Escape": true, "Tab": true, "Up": true, "Down": true, "Left": true, "Right": true, "Space": true}
}

// OptionKeys are the keys that choose option n (from 0) of a question: the keys the rules
// read on the agent's screen, else the option's number. Keys that are not one printable
// character or a named key of keyNames are dropped, so nothing read off a screen can type
// a control sequence.
func OptionKeys(read []string, n int) []Key {
	names := keyNames()
	var out []Key
	for _, k := range read {
		if names[k] || (utf8.RuneCountInString(k) == 1 && unicode.IsPrint([]rune(k)[0]) && k != " ") {
			out = append(out, Key{Name: k})
		}
	}
	if len(out) == 0 {
		out = []Key{{Name: strconv.Itoa(n + 1)}}
	}
	return out
}

// TextKeys type text, cleaned (CleanText), then Enter; none for text that cleans to
// nothing.
func TextKeys(text string) []Key {
	text = CleanText(text)
	if text == "" {
		return nil
	}
	return []Key{{Text: text}, {Name: "Enter"}}
}

// CleanText is text as it may be typed into a pane: escape sequences and every control
// character gone (line breaks become spaces), trimmed, at most MaxAnswerText characters.
func CleanText(text string) string {
	text = strings.Map(func(r rune) rune {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			return ' '
		case unicode.IsControl(r) || r == utf8.RuneError:
			return -1
		}
		return r
	}, stripEscapes(text))
	text = strings.TrimSpace(text)
	if utf8.RuneCountInString(text) > MaxAnswerText {
		text = string([]rune(text)[:MaxAnswerText])
	}
	return text
}

// CleanKeys are keys as the watcher may type them, whatever sent them: named keys of
// keyNames or one printable character, and text cleaned; anything else is dropped.
func CleanKeys(keys []Key) []Key {
	var out []Key
	for _, k := range keys {
		switch {
		case k.Text != "" && k.Name == "":
			if t := CleanText(k.Text); t != "" {
				out = append(out, Key{Text: t})
			}
		case k.Text == "":
			if kept := OptionKeys([]string{k.Name}, -1); kept[0].Name == k.Name {
				out = append(out, kept[0])
			}
		}
	}
	return out
}
