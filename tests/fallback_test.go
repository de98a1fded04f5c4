package tests

import (
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// checkFallback checks an error event's fallback: a valid ThinkingML reply in the session's
// locale that says the answer was cut off, and the stored message keeping it apart from the
// partial text.
func checkFallback(t *testing.T, last sseEvent, msg map[string]any, partial, locale string) {
	t.Helper()
	fb, _ := last.Data["fallback"].(string)
	if fb == "" {
		t.Fatalf("error event %v carries no fallback", last.Data)
	}
	if res := thinkingml.Validate(fb, thinkingml.Options{}); !res.Valid {
		t.Fatalf("the fallback is not valid ThinkingML: %+v", res.Errors)
	}
	if lang := thinkingml.CheckLanguage(fb, locale); !lang.OK {
		t.Fatalf("the fallback is not in %s: %s", locale, lang.Reason)
	}
	meta, _ := msg["metadata"].(map[string]any)
	if msg["content"] != partial || meta["fallback_reply"] != fb {
		t.Fatalf("stored content %q and metadata %v, want the partial text %q and the fallback apart", msg["content"], meta, partial)
	}
}

// TestFallbackWhenTheStreamBreaks: a stream cut after partial text ends with an error whose
// fallback tells the user, in the session's locale, that the answer was cut off.
func TestFallbackWhenTheStreamBreaks(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("yuri")
		for _, locale := range []string{"en", "zh"} {
			t.Run(locale, func(t *testing.T) {
				a := s.post(tok, s.newSession(tok, locale), "answer this [[fault:mid_stream_error]]")
				evs := s.follow(a)
				logs := logged(evs)
				last := logs[len(logs)-1]
				if last.Name != "error" || last.Data["code"] != "provider_error" {
					t.Fatalf("turn ended with %s %v", last.Name, last.Data)
				}
				partial := reply(evs)
				if partial == "" {
					t.Fatal("no partial text before the break: the case tests nothing")
				}
				checkFallback(t, last, waitFinished(t, s, tok, a.MessageID), partial, locale)
				if locale == "en" && !strings.Contains(last.Data["fallback"].(string), "cut off") {
					t.Fatalf("the en fallback does not say the answer was cut off: %s", last.Data["fallback"])
				}
			})
		}
		t.Run("no fallback before any text", func(t *testing.T) {
			a := s.post(tok, s.newSession(tok, "en"), "fail early [[fault:http_500]]")
			logs := logged(s.follow(a))
			if last := logs[len(logs)-1]; last.Name != "error" || last.Data["fallback"] != nil {
				t.Fatalf("an error before any text = %v, want no fallback", last.Data)
			}
		})
	})
}
