package api

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzCheckJSONText: whatever the body, a body checkJSONText lets through never decodes to
// a string (key or value) holding NUL, and is UTF-8.
func FuzzCheckJSONText(f *testing.F) {
	for _, seed := range []string{`{"text":"hi"}`, `{"text":"\u0000"}`, `{"te\u0000xt":1}`, `{"a":"\\u0000"}`, "{\"a\":\"\xff\"}", `["\u0000"]`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if checkJSONText(b) != nil {
			return
		}
		if !utf8.Valid(b) {
			t.Fatalf("invalid UTF-8 let through: %q", b)
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return
		}
		if s := findNUL(v); s != "" {
			t.Fatalf("%q decodes to a string with NUL: %q", b, s)
		}
	})
}

// findNUL returns a string in v (keys included) that holds NUL, or "".
func findNUL(v any) string {
	switch x := v.(type) {
	case string:
		if strings.ContainsRune(x, 0) {
			return x
		}
	case []any:
		for _, e := range x {
			if s := findNUL(e); s != "" {
				return s
			}
		}
	case map[string]any:
		for k, e := range x {
			if strings.ContainsRune(k, 0) {
				return k
			}
			if s := findNUL(e); s != "" {
				return s
			}
		}
	}
	return ""
}
