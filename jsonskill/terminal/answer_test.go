package terminal

import (
	"reflect"
	"strings"
	"testing"
)

func TestOptionKeys(t *testing.T) {
	cases := []struct {
		read []string
		n    int
		want []Key
	}{
		{[]string{"2"}, 1, []Key{{Name: "2"}}},
		{[]string{"y", "Enter"}, 0, []Key{{Name: "y"}, {Name: "Enter"}}},
		{nil, 2, []Key{{Name: "3"}}},                                 // no keys read: the option's number
		{[]string{"C-c", "\x1b[A", "rm -rf"}, 0, []Key{{Name: "1"}}}, // nothing that is not one key
	}
	for _, tc := range cases {
		if got := OptionKeys(tc.read, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("OptionKeys(%q, %d) = %v, want %v", tc.read, tc.n, got, tc.want)
		}
	}
}

func TestCleanText(t *testing.T) {
	cases := map[string]string{
		"  use the second one \n":             "use the second one",
		"a\x1b[31mred\x1b[0m\x07 bell\x00nul": "ared bellnul",
		"line one\nline two\r\n\ttab":         "line one line two   tab",
		"\x1b]0;title\x07":                    "",
		strings.Repeat("é", MaxAnswerText+10): strings.Repeat("é", MaxAnswerText),
	}
	for in, want := range cases {
		if got := CleanText(in); got != want {
			t.Errorf("CleanText(%q) = %q, want %q", in, got, want)
		}
	}
	if got := TextKeys("ok\x03"); !reflect.DeepEqual(got, []Key{{Text: "ok"}, {Name: "Enter"}}) {
		t.Errorf("TextKeys = %v", got)
	}
	if got := CleanKeys([]Key{{Name: "C-c"}, {Name: "Enter"}, {Text: "\x1b[2Jhi"}, {Name: "x", Text: "both"}}); !reflect.DeepEqual(got, []Key{{Name: "Enter"}, {Text: "hi"}}) {
		t.Errorf("CleanKeys = %v", got)
	}
}
