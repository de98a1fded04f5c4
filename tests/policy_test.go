package tests

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestRuntimePolicyFromTheRequest: a message request's runtime_policy (known keys only)
// is merged over the phase's defaults and the server's settings for its turn, and the
// merged policy is recorded on the message; only an admin may relax the server's checks.
func TestRuntimePolicyFromTheRequest(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t) // reply policy retry (the default)
		tok, admin := s.token("bea"), s.adminToken("ops")
		ctx := ctxFor(t, 60*time.Second)
		postAs := func(t *testing.T, tok, path string, body map[string]any) (*http.Response, turnAnswer, errorBody) {
			t.Helper()
			var answer struct {
				turnAnswer
				errorBody
			}
			resp := s.call(ctx, http.MethodPost, path, tok, body, &answer)
			return resp, answer.turnAnswer, answer.errorBody
		}
		postWith := func(t *testing.T, path string, body map[string]any) (*http.Response, turnAnswer, errorBody) {
			t.Helper()
			return postAs(t, tok, path, body)
		}

		t.Run("an admin's report instead of the server's retry, and a lower token cap", func(t *testing.T) {
			sid := s.newSession(admin, "en")
			resp, a, _ := postAs(t, admin, "/api/v1/sessions/"+sid+"/messages", map[string]any{
				"text":           "broken please [[fault:broken_xml]]",
				"runtime_policy": map[string]any{"reply_policy": "report", "max_output_tokens": 300},
			})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("post = %d", resp.StatusCode)
			}
			logs := logged(s.follow(a))
			last := logs[len(logs)-1]
			if last.Name != "completed" {
				t.Fatalf("turn ended %s %v, want completed: the report policy keeps an invalid reply", last.Name, last.Data)
			}
			if got := lastRecorded(t, s).Body["max_output_tokens"]; got != 300.0 {
				t.Fatalf("the upstream got max_output_tokens %v, want 300", got)
			}
			msg := waitFinished(t, s, admin, a.MessageID)
			p, _ := msg["metadata"].(map[string]any)["runtime_policy"].(map[string]any)
			if p["reply_policy"] != "report" || p["max_output_tokens"] != 300.0 || p["serp_optional"] != false ||
				strings.Join(strs(anyList(p["requested"])), ",") != "reply_policy,max_output_tokens" {
				t.Fatalf("the message records runtime_policy %v", p)
			}
		})

		t.Run("a cap above the phase's is not raised", func(t *testing.T) {
			resp, a, _ := postWith(t, "/api/v1/messages", map[string]any{"text": "hello", "runtime_policy": map[string]any{"max_output_tokens": 90000}})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("post = %d", resp.StatusCode)
			}
			msg := waitFinished(t, s, tok, a.MessageID)
			p, _ := msg["metadata"].(map[string]any)["runtime_policy"].(map[string]any)
			if got := lastRecorded(t, s).Body["max_output_tokens"]; got != 2000.0 || p["max_output_tokens"] != 2000.0 || p["reply_policy"] != "retry" {
				t.Fatalf("upstream cap %v, recorded %v; want the phase's 2000 and the server's retry", got, p)
			}
		})

		loosening := []struct {
			name   string
			policy map[string]any
		}{
			{"switching the checks off", map[string]any{"reply_policy": "off"}},
			{"report instead of retry", map[string]any{"reply_policy": "report"}},
			{"leaving out the serp queries", map[string]any{"serp_optional": true}},
		}
		for _, tc := range loosening {
			t.Run("a user "+tc.name+" is 403", func(t *testing.T) {
				sid := s.newSession(tok, "en")
				before := len(allRecorded(t, s))
				resp, _, e := postWith(t, "/api/v1/sessions/"+sid+"/messages", map[string]any{
					"text": "broken please [[fault:broken_xml]]", "runtime_policy": tc.policy})
				if resp.StatusCode != http.StatusForbidden || e.Error.Code != "policy_not_allowed" {
					t.Fatalf("post = %d %+v, want 403 policy_not_allowed", resp.StatusCode, e)
				}
				if len(allRecorded(t, s)) != before {
					t.Fatal("a refused request reached the upstream")
				}
			})
		}

		t.Run("a user may ask for what the server already does", func(t *testing.T) {
			resp, a, _ := postWith(t, "/api/v1/messages", map[string]any{"text": "hello",
				"runtime_policy": map[string]any{"reply_policy": "retry", "serp_optional": false}})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("post = %d", resp.StatusCode)
			}
			waitFinished(t, s, tok, a.MessageID)
		})

		bad := []struct {
			name   string
			policy map[string]any
			want   string
		}{
			{"an unknown key", map[string]any{"reply_policy": "retry", "temperature": 0.2}, `unknown key "temperature"`},
			{"a bad value", map[string]any{"serp_optional": "yes"}, `"serp_optional"`},
			{"a bad reply policy", map[string]any{"reply_policy": "sometimes"}, `"reply_policy"`},
		}
		for _, tc := range bad {
			t.Run(tc.name+" is 400", func(t *testing.T) {
				before := len(allRecorded(t, s))
				resp, _, e := postWith(t, "/api/v1/messages", map[string]any{"text": "hello", "runtime_policy": tc.policy})
				if resp.StatusCode != http.StatusBadRequest || e.Error.Code != "bad_request" || !strings.Contains(e.Error.Message, tc.want) {
					t.Fatalf("post = %d %+v, want 400 naming %s", resp.StatusCode, e, tc.want)
				}
				if len(allRecorded(t, s)) != before {
					t.Fatal("a refused request reached the upstream")
				}
			})
		}
	})
}

func strs(vs []any) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i], _ = v.(string)
	}
	return out
}
