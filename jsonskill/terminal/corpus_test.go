package terminal

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

// screen is one screen of testdata/screens: a real agent screen, its source, and what a
// person reads on it.
type screen struct {
	path, source, agent, state, kind, question, subject, typing, tier string
	options                                                           []string
	body                                                              string
}

// loadScreens reads testdata/screens/<agent>/*.screen: "key: value" lines, "---", the screen.
func loadScreens(t testing.TB) []screen {
	t.Helper()
	var out []screen
	err := filepath.WalkDir("testdata/screens", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(p) != ".screen" {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		head, body, ok := strings.Cut(string(b), "\n---\n")
		if !ok {
			return fmt.Errorf("%s: no --- line", p)
		}
		s := screen{path: p, body: body}
		for _, line := range strings.Split(head, "\n") {
			k, v, _ := strings.Cut(line, ": ")
			switch k {
			case "source":
				s.source = v
			case "agent":
				s.agent = v
			case "state":
				s.state = v
			case "type":
				s.kind = v
			case "question":
				s.question = v
			case "subject":
				s.subject = v
			case "options":
				s.options = strings.Split(v, " | ")
			case "typing":
				s.typing = v
			case "tier":
				s.tier = v
			case "note":
			default:
				return fmt.Errorf("%s: unknown key %q", p, k)
			}
		}
		if s.source == "" || s.agent == "" || s.state == "" {
			return fmt.Errorf("%s: source, agent and state are required", p)
		}
		out = append(out, s)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

const typingMask = "[user is typing...]"

// TestCorpus reads every real screen by the rules: busy screens and questions with one
// certain reading decided with no model call (options and subject as a person reads
// them), every other screen left to the model, and typed input masked. It prints the
// agreement by agent and state.
func TestCorpus(t *testing.T) {
	screens := loadScreens(t)
	if len(screens) < 80 {
		t.Fatalf("the corpus holds %d screens, want at least 80", len(screens))
	}
	type tally struct{ total, agree, named int }
	table := map[[2]string]*tally{}
	agents := map[string]bool{}
	for _, s := range screens {
		key := [2]string{s.agent, s.state}
		if table[key] == nil {
			table[key] = &tally{}
		}
		agents[s.agent] = true
		table[key].total++
		t.Run(strings.TrimSuffix(strings.TrimPrefix(s.path, "testdata/screens/"), ".screen"), func(t *testing.T) {
			if Read(Prepare(s.body, typingMask, 800)).Agent != "" {
				table[key].named++
			}
			if problems := check(s); len(problems) > 0 {
				t.Errorf("%s (%s):\n  %s", s.path, s.source, strings.Join(problems, "\n  "))
				return
			}
			table[key].agree++
		})
	}
	if len(agents) < 5 {
		t.Errorf("the corpus covers %d agents, want 5", len(agents))
	}
	keys := make([][2]string, 0, len(table))
	for k := range table {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0]+keys[i][1] < keys[j][0]+keys[j][1] })
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-12s %-7s %7s %6s %12s\n", "agent", "state", "screens", "agree", "agent named")
	for _, k := range keys {
		fmt.Fprintf(&b, "%-12s %-7s %7d %6d %12d\n", k[0], k[1], table[k].total, table[k].agree, table[k].named)
	}
	t.Log(b.String())
}

// check returns how the rules' reading of s differs from its labels.
func check(s screen) []string {
	snap := Prepare(s.body, typingMask, 800)
	r := Read(snap)
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch {
	case s.state == "busy" && r.State != Busy:
		bad("want busy by the rules, got state %d", r.State)
	case s.state == "asking" && s.tier == "rules":
		problems = append(problems, checkQuestion(s, r)...)
	case s.state != "busy" && !(s.state == "asking" && s.tier == "rules") && r.State != Unknown:
		bad("want it left to the model, got state %d (busy line %q, question %q)", r.State, r.Line, r.Question.Text)
	}
	if r.Agent != "" && string(r.Agent) != s.agent {
		bad("agent read as %s", r.Agent)
	}
	if s.typing != "" {
		text := strings.Join(snap.Lines, "\n")
		if strings.Contains(text, s.typing) || !strings.Contains(text, typingMask) {
			bad("typed text %q not masked:\n%s", s.typing, text)
		}
	}
	return problems
}

func checkQuestion(s screen, r Reading) []string {
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if r.State != Asking {
		return []string{fmt.Sprintf("want a question read by the rules, got state %d (busy line %q)", r.State, r.Line)}
	}
	q := r.Question
	if q.Text != s.question {
		bad("question %q, want %q", q.Text, s.question)
	}
	if string(q.Kind) != s.kind {
		bad("type %s, want %s", q.Kind, s.kind)
	}
	if q.Subject != s.subject {
		bad("subject %q, want %q", q.Subject, s.subject)
	}
	var labels []string
	for _, o := range q.Options {
		labels = append(labels, o.Label)
		if len(o.Keys) == 0 {
			bad("option %q has no keys", o.Label)
		}
	}
	if !slices.Equal(labels, s.options) {
		bad("options %q, want %q", labels, s.options)
	}
	return problems
}
