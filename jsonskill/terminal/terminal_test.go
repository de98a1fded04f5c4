package terminal

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPrepare(t *testing.T) {
	cases := []struct {
		name, raw string
		max       int
		want      []string
	}{
		{"CRLF to LF, trailing blank lines dropped", "a\r\nb\r\n\r\n  \r\n", 800, []string{"a", "b"}},
		{"a lone CR keeps what was written after it", "50%\r100% done\nnext", 800, []string{"100% done", "next"}},
		{"colours, cursor moves, a window title and a charset", "\x1b[1;32mok\x1b[0m \x1b[2K\x1b]0;title\x07done\x1b(B\n\x1b]8;;https://x\x1b\\link\x1b]8;;\x1b\\", 800,
			[]string{"ok done", "link"}},
		{"other control characters go, tabs stay", "a\x07b\x00c\td", 800, []string{"abc\td"}},
		{"only the last lines are kept", "1\n2\n3\n4", 2, []string{"3", "4"}},
		{"typing on the last line is masked", "⏺ Which one?\n❯ I want a simple", 800, []string{"⏺ Which one?", "❯ [user is typing...]"}},
		{"typing in an input box, with a footer", "q?\n╭────╮\n│ > hello world │\n╰────╯\n  ? for shortcuts", 800,
			[]string{"q?", "╭────╮", "│ > [user is typing...] │", "╰────╯", "  ? for shortcuts"}},
		{"an empty prompt is left alone", "done\n❯", 800, []string{"done", "❯"}},
		{"a selected menu option is not typing", "Proceed?\n❯ 1. Yes\n  2. No", 800, []string{"Proceed?", "❯ 1. Yes", "  2. No"}},
		{"a > quote in the agent's text is not the input line", "> a quoted line\nthe agent's answer", 800, []string{"> a quoted line", "the agent's answer"}},
		{"invalid UTF-8", "a\xffb", 800, []string{"a\uFFFDb"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := Prepare(tc.raw, "[user is typing...]", tc.max).Lines
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWindows(t *testing.T) {
	sizes := []int{80, 150, 300, 500, 800}
	cases := []struct {
		n    int
		want []int
	}{
		{213, []int{80, 150, 213}},
		{60, []int{60}},
		{80, []int{80}},
		{800, []int{80, 150, 300, 500, 800}},
		{0, []int{0}},
	}
	for _, tc := range cases {
		if got := Windows(tc.n, sizes); !cmp.Equal(got, tc.want) {
			t.Errorf("Windows(%d) = %v, want %v", tc.n, got, tc.want)
		}
	}
}

func TestLast(t *testing.T) {
	s := Snapshot{Lines: []string{"a", "b", "c"}}
	if got := s.Last(2); got != "b\nc" {
		t.Errorf("Last(2) = %q", got)
	}
	if got := s.Last(9); got != "a\nb\nc" {
		t.Errorf("Last(9) = %q", got)
	}
}

// The rules run on every changed snapshot of `phaseflow watch`; they must stay far below
// a model call.
func BenchmarkRead800Lines(b *testing.B) {
	var sb strings.Builder
	for i := range 800 {
		fmt.Fprintf(&sb, "⏺ line %d of the agent's long answer, with some words in it\n", i)
	}
	s := Prepare(sb.String(), "[user is typing...]", 800)
	b.ResetTimer()
	for b.Loop() {
		Read(s)
	}
}

func BenchmarkPrepare800Lines(b *testing.B) {
	var sb strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&sb, "\x1b[32m⏺\x1b[0m line %d of the agent's long answer, with some words in it\r\n", i)
	}
	raw := sb.String()
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		Prepare(raw, "[user is typing...]", 800)
	}
}
