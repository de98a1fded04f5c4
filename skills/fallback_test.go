package skills

import (
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// The fallback replies stand in for the model's (an empty reply, one the stream cut off),
// so every one must pass the same checks in its locale.
func TestFallbackRepliesAreValid(t *testing.T) {
	lib := New()
	names, err := lib.Names("en")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, name := range names {
		if !strings.HasPrefix(name, "fallback/") {
			continue
		}
		n++
		for _, locale := range Locales {
			t.Run(name+"/"+locale, func(t *testing.T) {
				text, err := lib.Text(name, locale)
				if err != nil {
					t.Fatal(err)
				}
				if res := thinkingml.Validate(text, thinkingml.Options{}); !res.Valid {
					t.Fatalf("%s (%s) is not valid ThinkingML: %+v", name, locale, res.Errors)
				}
				if lang := thinkingml.CheckLanguage(text, locale); !lang.OK {
					t.Fatalf("%s (%s) fails the language check: %s", name, locale, lang.Reason)
				}
			})
		}
	}
	if n < 2 {
		t.Fatalf("%d fallback replies, want at least the empty and the interrupted one", n)
	}
}
