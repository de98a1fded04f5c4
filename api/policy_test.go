package api

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/orchestration/stream"
)

func TestParseRuntimePolicy(t *testing.T) {
	cases := []struct {
		name, raw string
		wantErr   string // a part of the error; "" for none
		check     func(*prompt.RuntimePolicy) bool
	}{
		{"absent", ``, "", func(p *prompt.RuntimePolicy) bool { return p == nil }},
		{"null", `null`, "", func(p *prompt.RuntimePolicy) bool { return p == nil }},
		{"every known key", `{"reply_policy":"report","serp_optional":true,"max_output_tokens":300}`, "", func(p *prompt.RuntimePolicy) bool {
			return *p.ReplyPolicy == stream.PolicyReport && *p.SerpOptional && *p.MaxOutputTokens == 300
		}},
		{"an unknown key is named", `{"reply_policy":"retry","temperature":0.2}`, `unknown key "temperature"`, nil},
		{"a bad reply policy", `{"reply_policy":"maybe"}`, `"reply_policy" must be`, nil},
		{"serp_optional as a string", `{"serp_optional":"yes"}`, `"serp_optional" must be true or false`, nil},
		{"zero tokens", `{"max_output_tokens":0}`, `"max_output_tokens" must be`, nil},
		{"fractional tokens", `{"max_output_tokens":1.5}`, `"max_output_tokens" must be`, nil},
		{"not an object", `["reply_policy"]`, "must be an object", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p, err := parseRuntimePolicy(json.RawMessage(tc.raw))
			if tc.wantErr != "" {
				if !errors.Is(err, errBadPolicy) || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || !tc.check(p) {
				t.Fatalf("ParseRuntimePolicy = %+v, %v", p, err)
			}
		})
	}
}

// FuzzParseRuntimePolicy: whatever a client sends, the parser either refuses it with
// errBadPolicy or returns only known keys with allowed values, and never panics.
func FuzzParseRuntimePolicy(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"reply_policy":"report","serp_optional":true,"max_output_tokens":300}`,
		`{"x":1}`, `{"max_output_tokens":-1}`, `[1]`, `"retry"`, `{"reply_policy":null}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		p, err := parseRuntimePolicy(json.RawMessage(raw))
		if err != nil {
			if !errors.Is(err, errBadPolicy) {
				t.Fatalf("error %v does not wrap errBadPolicy", err)
			}
			return
		}
		if p == nil {
			return
		}
		if p.ReplyPolicy != nil && *p.ReplyPolicy != stream.PolicyRetry && *p.ReplyPolicy != stream.PolicyReport && *p.ReplyPolicy != stream.PolicyOff {
			t.Fatalf("accepted reply_policy %q", *p.ReplyPolicy)
		}
		if p.MaxOutputTokens != nil && (*p.MaxOutputTokens < 1 || *p.MaxOutputTokens > maxRequestOutputTokens) {
			t.Fatalf("accepted max_output_tokens %d", *p.MaxOutputTokens)
		}
	})
}
