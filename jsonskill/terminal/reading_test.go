package terminal

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// approval is Claude Code's bash dialog for command, as in the corpus.
func approval(command string) string {
	return "⏺ Bash(" + command + ")\n\nBash command\n\n  " + command + "\n  Run it\n\nDo you want to proceed?\n" +
		"❯ 1. Yes\n  2. No, and tell Claude what to do differently (esc)\n\nEsc to cancel · Tab to amend"
}

func TestAQuestionIsItsSubject(t *testing.T) {
	read := func(screen string) Question {
		t.Helper()
		r := Read(Prepare(screen, typingMask, 800))
		if r.State != Asking {
			t.Fatalf("not read as a question:\n%s", screen)
		}
		return r.Question
	}
	ls, find := read(approval("ls -la")), read(approval("find . -name '*.go'"))
	if ls.Fingerprint() == find.Fingerprint() {
		t.Errorf("two approvals of two commands share the fingerprint %q", ls.Fingerprint())
	}
	if again := read("some output scrolled by\n" + approval("ls -la")); again.Fingerprint() != ls.Fingerprint() {
		t.Errorf("the same question on screen again: %q, then %q", ls.Fingerprint(), again.Fingerprint())
	}
	for _, fp := range []string{ls.Fingerprint(), find.Fingerprint()} {
		if !fingerprintForm(fp) || len(fp) > 200 {
			t.Errorf("fingerprint %q is not English keywords joined by hyphens", fp)
		}
	}
}

func fingerprintForm(fp string) bool {
	for _, part := range strings.Split(fp, "-") {
		if part == "" || strings.Trim(part, "abcdefghijklmnopqrstuvwxyz0123456789") != "" {
			return false
		}
	}
	return true
}

func TestMessage(t *testing.T) {
	h := Hints{Choice: "Reply with a letter/number to choose", Confirmation: "Reply y/n", Open: "Reply with your answer"}
	cases := []struct {
		name string
		q    Question
		want string
	}{
		{"a choice names its subject and options", Question{Kind: KindChoice, Text: "Do you want to proceed?", Subject: "npm test",
			Options: []Option{{Label: "Yes"}, {Label: "No"}}}, "Do you want to proceed?\nnpm test\n1. Yes\n2. No\n\nReply with a letter/number to choose"},
		{"a confirmation lists no options", Question{Kind: KindConfirmation, Text: "Continue?", Options: []Option{{Label: "Yes"}, {Label: "No"}}},
			"Continue?\n\nReply y/n"},
		{"an open question", Question{Kind: KindOpen, Text: "What should we name this component?"},
			"What should we name this component?\n\nReply with your answer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.q.Message(h); got != tc.want {
				t.Errorf("Message = %q, want %q", got, tc.want)
			}
		})
	}
	long := Question{Kind: KindChoice, Text: strings.Repeat("why ", 100) + "?", Subject: strings.Repeat("x", 400)}
	for range 20 {
		long.Options = append(long.Options, Option{Label: strings.Repeat("option ", 20)})
	}
	if got := long.Message(h); utf8.RuneCountInString(got) > messageLimit || !strings.HasSuffix(got, h.Choice) {
		t.Errorf("a long question's message is %d characters, or lost its hint", utf8.RuneCountInString(got))
	}
}

// FuzzRead holds the rules to any screen: no panic, a question always has a text and a
// fingerprint of the skill's form.
func FuzzRead(f *testing.F) {
	for _, s := range loadScreens(f) {
		f.Add(s.body)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		r := Read(Prepare(raw, typingMask, 800))
		if r.State == Asking {
			if r.Question.Text == "" || !fingerprintForm(r.Question.Fingerprint()) {
				t.Errorf("question %+v, fingerprint %q", r.Question, r.Question.Fingerprint())
			}
		}
	})
}
