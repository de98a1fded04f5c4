package phases

import (
	"errors"
	"testing"
)

func TestCheckMove(t *testing.T) {
	cases := []struct {
		name     string
		from, to Phase
		ok       bool
	}{
		{"strategy to stress test", Strategy, StressTest, true},
		{"stress test passes to deployment", StressTest, Deployment, true},
		{"stress test asks for revision", StressTest, Strategy, true},
		{"deployment completes", Deployment, Completed, true},
		{"deployment blocked goes back", Deployment, Strategy, true},
		{"strategy cannot skip to deployment", Strategy, Deployment, false},
		{"strategy cannot complete", Strategy, Completed, false},
		{"completed is final", Completed, Strategy, false},
		{"no move to itself", Strategy, Strategy, false},
		{"deployment cannot go back to stress test", Deployment, StressTest, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMove(tc.from, tc.to)
			if tc.ok && err != nil {
				t.Fatalf("CheckMove(%s, %s) = %v, want nil", tc.from, tc.to, err)
			}
			if !tc.ok && !errors.Is(err, ErrForbiddenMove) {
				t.Fatalf("CheckMove(%s, %s) = %v, want ErrForbiddenMove", tc.from, tc.to, err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	for _, s := range []string{"strategy", "stress_test", "deployment", "completed"} {
		if _, err := Parse(s); err != nil {
			t.Errorf("Parse(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "Strategy", "stress-test", "done"} {
		if _, err := Parse(s); !errors.Is(err, ErrUnknown) {
			t.Errorf("Parse(%q) = %v, want ErrUnknown", s, err)
		}
	}
}
