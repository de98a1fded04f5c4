package phaseflow

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestTheRepositoryStandsOnItsOwn fails on anything that points outside the clone: a
// relative link of a Markdown page that does not resolve, a docs page cited in code that is
// not there, or any path into a folder beside the repository. The contracts are pages of
// docs/; anything else is cited by a public address.
func TestTheRepositoryStandsOnItsOwn(t *testing.T) {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	cited := regexp.MustCompile(`\bdocs/[\w-]+\.md`)
	outside := regexp.MustCompile(`\.\./shared\b|\bshared/(spec|seeds|tools)/`)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != "." && (strings.HasPrefix(name, ".") || name == "node_modules" || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		ext := filepath.Ext(path)
		if ext != ".md" && ext != ".go" && ext != ".js" && ext != ".mjs" && ext != ".yaml" && ext != ".jsx" && ext != ".sh" && path != "Dockerfile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := string(b)
		if path != "links_test.go" && outside.MatchString(text) {
			t.Errorf("%s points outside the repository: %q", path, outside.FindString(text))
		}
		for _, c := range cited.FindAllString(text, -1) {
			if _, err := os.Stat(c); err != nil {
				t.Errorf("%s cites %s, which is not in the repository", path, c)
			}
		}
		if ext != ".md" {
			return nil
		}
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "#") || strings.HasPrefix(target, "mailto:") || target == "…" {
				continue
			}
			target, _, _ = strings.Cut(target, "#")
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s links to %s, which does not resolve", path, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
