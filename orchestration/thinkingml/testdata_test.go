package thinkingml

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the .golden files of testdata/replies")

func readReply(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "replies", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestTestdataReplies validates whole replies, English and Chinese: valid_* must be valid
// without warnings, invalid_* must be invalid, and every reply's issues must equal its
// .golden file ("go test -run TestTestdataReplies -update" rewrites them after a review).
func TestTestdataReplies(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "replies", "*.xml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no replies in testdata/replies: %v", err)
	}
	for _, path := range files {
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			res := Validate(readReply(t, name), Options{})
			switch {
			case strings.HasPrefix(name, "valid_") && (!res.Valid || len(res.Warnings) > 0):
				t.Errorf("want valid without warnings, got %+v", res)
			case strings.HasPrefix(name, "invalid_") && res.Valid:
				t.Errorf("want invalid, got valid")
			}
			got := listing(res)
			golden := strings.TrimSuffix(path, ".xml") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("issues (-golden +got):\n%s", diff)
			}
		})
	}
}

// listing renders issues the way "phaseflow validate" does, warnings marked.
func listing(res Result) string {
	var b strings.Builder
	for _, e := range res.Errors {
		fmt.Fprintf(&b, "%d:%d %s %s\n", e.Line, e.Column, e.Code, e.Message)
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "warning: %d:%d %s %s\n", w.Line, w.Column, w.Code, w.Message)
	}
	fmt.Fprintf(&b, "summary: phases=%d think=%v serp=%v queries=%q final_chars=%d\n", res.Summary.Phases,
		res.Summary.HasThink, res.Summary.HasSerp, res.Summary.SerpQueries, res.Summary.FinalChars)
	return b.String()
}
