package prompt

import (
	"strings"
	"testing"
)

func TestFill(t *testing.T) {
	values := map[string]string{"a": "1", "turn_limit": "8", "artifacts": `{"note":"{{a}}"}`}
	cases := []struct {
		name, text, want string
	}{
		{"no placeholder", "plain text", "plain text"},
		{"one", "limit {{turn_limit}}.", "limit 8."},
		{"repeated", "{{a}}{{a}} and {{a}}", "11 and 1"},
		{"unknown stays", "{{b}} and {{a}}", "{{b}} and 1"},
		{"unclosed", "{{a}} then {{a", "1 then {{a"},
		{"brace before", "{{{a}}", "{1"},
		{"braces around", "{{{{a}}}}", "{{1}}"},
		{"empty name", "{{}}", "{{}}"},
		{"a value is not read again", "state {{artifacts}}", `state {"note":"{{a}}"}`},
		{"at both ends", "{{a}}middle{{a}}", "1middle1"},
		{"multibyte around", "你好{{a}}世界", "你好1世界"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Fill(tc.text, values); got != tc.want {
				t.Errorf("Fill(%q) = %q, want %q", tc.text, got, tc.want)
			}
		})
	}
}

// FuzzFill holds Fill to what replacing each placeholder in turn gives, wherever the order
// of replacing cannot matter: names of letters, values of digits and never empty, so no value
// can complete a placeholder.
func FuzzFill(f *testing.F) {
	f.Add("x {{a}} {{b}} {{{c}}} {{a", "12", "3")
	f.Add("{{{{b}}}}{{}}{{a}}", "6", "45")
	f.Fuzz(func(t *testing.T, text, va, vb string) {
		if va == "" || vb == "" || strings.ContainsAny(va+vb, "{}abc") {
			return
		}
		values := map[string]string{"a": va, "b": vb}
		want := strings.ReplaceAll(strings.ReplaceAll(text, "{{a}}", va), "{{b}}", vb)
		if got := Fill(text, values); got != want {
			t.Fatalf("Fill(%q) = %q, want %q", text, got, want)
		}
	})
}

func BenchmarkFill(b *testing.B) {
	text := strings.Repeat("Rules of the phase, with a {{turn_limit}} and a list of {{allowed_genui}}. ", 50)
	values := map[string]string{"allowed_genui": "strategy_card, choice_prompt", "missing_fields": "", "turn_limit": "8"}
	b.ReportAllocs()
	for b.Loop() {
		Fill(text, values)
	}
}
