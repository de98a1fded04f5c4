package skills_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/phaseflow/phaseflow/skills"
)

func TestNames(t *testing.T) {
	cases := []struct {
		name    string
		locale  string
		want    []string // a few that must be listed
		wantErr bool
	}{
		{"english", "en", []string{"contract", "tools", "strategy/skills", "strategy/stages/draft", "deployment/nudge"}, false},
		{"chinese", "zh", []string{"correction", "stress_test/stages/feedback"}, false},
		{"unknown locale", "fr", nil, true},
		{"no fallback for listing", "", nil, true},
	}
	lib := skills.New()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := lib.Names(tc.locale)
			if tc.wantErr {
				if !errors.Is(err, skills.ErrUnknown) {
					t.Fatalf("Names(%q) error = %v, want ErrUnknown", tc.locale, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.IsSorted(got) {
				t.Errorf("Names(%q) not sorted: %v", tc.locale, got)
			}
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("Names(%q) lacks %q: %v", tc.locale, w, got)
				}
				if _, err := lib.Text(w, tc.locale); err != nil {
					t.Errorf("listed %q cannot be read: %v", w, err)
				}
			}
		})
	}
}

// BenchmarkText is one text as a turn reads it (several per turn): no copy of the text.
func BenchmarkText(b *testing.B) {
	lib := skills.New()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lib.Text("contract", "en"); err != nil {
			b.Fatal(err)
		}
	}
}
