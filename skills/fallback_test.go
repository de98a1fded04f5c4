package skills

import (
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// The fallback replies stand in for the model's, so they must pass the same checks.
func TestFallbackRepliesAreValid(t *testing.T) {
	lib := New()
	for _, locale := range Locales {
		t.Run(locale, func(t *testing.T) {
			text, err := lib.Text("fallback/empty", locale)
			if err != nil {
				t.Fatal(err)
			}
			if res := thinkingml.Validate(text, thinkingml.Options{}); !res.Valid {
				t.Fatalf("fallback/empty (%s) is not valid ThinkingML: %+v", locale, res.Errors)
			}
			if lang := thinkingml.CheckLanguage(text, locale); !lang.OK {
				t.Fatalf("fallback/empty (%s) fails the language check: %s", locale, lang.Reason)
			}
		})
	}
}
