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

func TestCheckLoosening(t *testing.T) {
	pol := func(s stream.Policy) *stream.Policy { return &s }
	yes, no := true, false
	tests := []struct {
		name         string
		p            *prompt.RuntimePolicy
		server       stream.Policy
		serpOptional bool
		admin        bool
		refused      bool
	}{
		{"no policy", nil, stream.PolicyRetry, false, false, false},
		{"retry on a report server is stricter", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyRetry)}, stream.PolicyReport, false, false, false},
		{"report on an off server is stricter", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyReport)}, stream.PolicyOff, false, false, false},
		{"the server's own policy", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyRetry)}, stream.PolicyRetry, false, false, false},
		{"off on a retry server", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyOff)}, stream.PolicyRetry, false, false, true},
		{"report on a retry server", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyReport)}, stream.PolicyRetry, false, false, true},
		{"off on a report server", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyOff)}, stream.PolicyReport, false, false, true},
		{"an admin may switch it off", &prompt.RuntimePolicy{ReplyPolicy: pol(stream.PolicyOff)}, stream.PolicyRetry, false, true, false},
		{"serp optional where the server requires it", &prompt.RuntimePolicy{SerpOptional: &yes}, stream.PolicyRetry, false, false, true},
		{"serp required where the server lets it go", &prompt.RuntimePolicy{SerpOptional: &no}, stream.PolicyRetry, true, false, false},
		{"serp optional where it already is", &prompt.RuntimePolicy{SerpOptional: &yes}, stream.PolicyRetry, true, false, false},
		{"a lower token cap is never loosening", &prompt.RuntimePolicy{MaxOutputTokens: new(int)}, stream.PolicyRetry, false, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkLoosening(tc.p, tc.server, tc.serpOptional, tc.admin)
			if got := errors.Is(err, errPolicyNotAllowed); got != tc.refused {
				t.Fatalf("checkLoosening = %v, refused %v want %v", err, got, tc.refused)
			}
			if got := toHTTP(err); tc.refused && (got.Status != 403 || got.Code != "policy_not_allowed") {
				t.Fatalf("answered %d %s, want 403 policy_not_allowed", got.Status, got.Code)
			}
		})
	}
}
