package tests

import (
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

func TestReplyPolicyRetry(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("judy")
		cases := []struct {
			name, text, locale string
			wantEnd            string // completed or error
			reason             string // in the retrying status
		}{
			{"a valid reply passes at once", "plain question", "en", "completed", ""},
			{"broken XML is fixed by the retry", "fix me [[fault:broken_xml_once]]", "en", "completed", "malformed_xml"},
			{"the wrong language is fixed by the retry", "请回答 [[fault:wrong_language_once]]", "zh", "completed", "reply_language"},
			// A Chinese draft full of tool names, tickers and ids is still Chinese: only prose counts.
			{"a Chinese draft in an en session is fixed by the retry", "Draft a BTC momentum strategy [[fault:wrong_language_once]]", "en", "completed", "reply_language"},
			{"broken XML twice fails the turn", "always broken [[fault:broken_xml]]", "en", "error", "malformed_xml"},
		}
		for _, tc := range cases {
			t.Run(tc.name, func(t *testing.T) {
				sid := s.newSession(tok, tc.locale)
				a := s.post(tok, sid, tc.text)
				evs := s.follow(a)
				logs := checkStream(t, evs, 1, a.MessageID, a.RequestID)
				last := logs[len(logs)-1]
				if last.Name != tc.wantEnd {
					t.Fatalf("turn ended with %s %v, want %s", last.Name, last.Data, tc.wantEnd)
				}
				var retry *sseEvent
				for i, ev := range logs {
					if ev.Name == "status" && ev.Data["state"] == "retrying" {
						retry = &logs[i]
					}
				}
				if tc.reason == "" {
					if retry != nil {
						t.Fatalf("a valid reply was retried: %v", retry.Data)
					}
					return
				}
				if retry == nil || retry.Data["attempt"] != 2.0 || !strings.Contains(retry.Data["reason"].(string), tc.reason) {
					t.Fatalf("retrying status = %v, want attempt 2 with reason %s", retry, tc.reason)
				}
				refusedText := checkSecondAttemptDeltas(t, evs)
				msg := waitFinished(t, s, tok, a.MessageID)
				if tc.wantEnd == "completed" {
					text := reply(evs)
					if res := thinkingml.Validate(text, thinkingml.Options{}); !res.Valid {
						t.Fatalf("the reply after the retry is invalid: %+v", res.Errors)
					}
					meta := last.Data["metadata"].(map[string]any)
					if meta["attempts"] != 2.0 {
						t.Fatalf("completed.metadata.attempts = %v, want 2", meta["attempts"])
					}
					if msg["content"] != text {
						t.Fatal("the persisted reply is not the one a client honouring discard_through_seq assembled")
					}
					if plainReply(evs) != refusedText+text {
						t.Fatal("a client ignoring status did not get both attempts in seq order, the refused one first")
					}
					checkRefusedAttempts(t, meta, tc.reason)
					checkRefusedAttempts(t, msg["metadata"].(map[string]any), tc.reason)
					return
				}
				if last.Data["code"] != "reply_invalid" || msg["status"] != "failed" {
					t.Fatalf("error %v / status %v, want reply_invalid / failed", last.Data["code"], msg["status"])
				}
				meta, _ := msg["metadata"].(map[string]any)
				if problems, _ := meta["problems"].([]any); len(problems) == 0 || !strings.Contains(problems[0].(string), tc.reason) {
					t.Fatalf("message metadata = %v, want the reasons (%s)", msg["metadata"], tc.reason)
				}
				checkRefusedAttempts(t, meta, tc.reason)
			})
		}
	})
}

// checkRefusedAttempts checks that metadata keeps why the first attempt was refused: its
// problems by code, with a message.
func checkRefusedAttempts(t *testing.T, meta map[string]any, code string) {
	t.Helper()
	refused, _ := meta["refused_attempts"].([]any)
	if len(refused) == 0 {
		t.Fatalf("metadata %v keeps no refused attempt", meta)
	}
	first, _ := refused[0].(map[string]any)
	problems, _ := first["problems"].([]any)
	if first["attempt"] != 1.0 || len(problems) == 0 {
		t.Fatalf("refused_attempts[0] = %v, want attempt 1 with its problems", first)
	}
	p, _ := problems[0].(map[string]any)
	if p["code"] != code || p["message"] == "" {
		t.Fatalf("refused_attempts[0].problems[0] = %v, want code %s with a message", p, code)
	}
}

// checkSecondAttemptDeltas checks the retry rule of docs/api.md: seq goes on across
// the attempts (never reused), retrying carries discard_through_seq (the refused attempt's
// last seq) and the new attempt's deltas carry attempt 2. It returns the refused attempt's
// text, as a client that honours the rule drops it.
func checkSecondAttemptDeltas(t *testing.T, evs []sseEvent) string {
	t.Helper()
	var refused strings.Builder
	seenRetry, want, through := false, 1.0, -1.0
	for _, ev := range evs {
		if ev.Name == "status" && ev.Data["state"] == "retrying" {
			seenRetry = true
			d, ok := ev.Data["discard_through_seq"].(float64)
			if !ok || d != want-1 {
				t.Fatalf("retrying %v, want discard_through_seq %v (the refused attempt's last seq)", ev.Data, want-1)
			}
			through = d
			continue
		}
		if ev.Name != "content_delta" {
			continue
		}
		if ev.Data["seq"] != want {
			t.Fatalf("delta %v, want seq %v: seq goes on by one across the whole message", ev.Data, want)
		}
		if seenRetry && ev.Data["attempt"] != 2.0 {
			t.Fatalf("second-attempt delta %v lacks attempt 2", ev.Data)
		}
		if !seenRetry {
			refused.WriteString(ev.Data["delta"].(string))
		}
		want++
	}
	if !seenRetry || want-1 == through {
		t.Fatal("no deltas after the retry")
	}
	return refused.String()
}

func TestReplyPolicyReportKeepsAnInvalidReply(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t, "PHASEFLOW_REPLY_POLICY=report")
		tok := s.token("kim")
		a := s.post(tok, s.newSession(tok, "en"), "broken [[fault:broken_xml]]")
		logs := logged(s.follow(a))
		last := logs[len(logs)-1]
		meta, _ := last.Data["metadata"].(map[string]any)
		v, _ := meta["validation"].(map[string]any)
		if last.Name != "completed" || v == nil || v["valid"] != false || meta["attempts"] != 1.0 {
			t.Fatalf("report policy: %s %v, want completed with validation.valid=false after 1 attempt", last.Name, meta)
		}
	})
}

func TestValidateRouteAndCommand(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("lee")
		good := "<thinking><phase id=\"1\"><title>t</title>x</phase></thinking><final>ok\n<!-- <serp_queries>\n[\"q\"]\n</serp_queries> -->\n</final>"
		bad := "<thinking><phase id=\"1\"><title>t</title>x</phase></thinking><final><div>no</div></final>"
		ctx := ctxFor(t, 10*time.Second)

		var res struct {
			Valid  bool
			Errors []struct{ Code string }
		}
		resp := s.call(ctx, http.MethodPost, "/api/v1/validate", tok, map[string]string{"reply": bad}, &res)
		if resp.StatusCode != http.StatusOK || res.Valid || len(res.Errors) == 0 || res.Errors[0].Code != "tag_not_allowed" {
			t.Fatalf("POST /validate (JSON) = %d %+v", resp.StatusCode, res)
		}
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.base+"/api/v1/validate", strings.NewReader(good))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "text/plain")
		plain, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer plain.Body.Close()
		if plain.StatusCode != http.StatusOK || !strings.Contains(readAllString(t, plain), `"valid":true`) {
			t.Fatalf("POST /validate (text) = %d", plain.StatusCode)
		}

		dir := t.TempDir()
		cases := []struct {
			name  string
			reply string
			args  []string
			code  int
			out   string
		}{
			{"valid file", good, nil, 0, ""},
			{"invalid file lists LINE:COL CODE", bad, nil, 1, "1:68 tag_not_allowed"},
			{"json output", bad, []string{"--json"}, 1, `"valid":false`},
			{"missing file", "", []string{filepath.Join(dir, "nope.txt")}, 2, ""},
		}
		for _, tc := range cases {
			t.Run("command "+tc.name, func(t *testing.T) {
				args := append([]string{"validate"}, tc.args...)
				if tc.reply != "" {
					f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".xml")
					if err := os.WriteFile(f, []byte(tc.reply), 0o600); err != nil {
						t.Fatal(err)
					}
					args = append(args, f)
				}
				out, err := exec.Command(binary, args...).Output()
				code := 0
				if ee, ok := err.(*exec.ExitError); ok {
					code = ee.ExitCode()
				}
				if code != tc.code || !strings.Contains(string(out), tc.out) {
					t.Fatalf("phaseflow %v: exit %d, output %q; want exit %d containing %q", args, code, out, tc.code, tc.out)
				}
			})
		}
	})
}

func TestEmptyReplyIsReplacedByTheFallback(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		tok := s.token("mia")
		for _, locale := range []string{"en", "zh"} {
			t.Run(locale, func(t *testing.T) {
				a := s.post(tok, s.newSession(tok, locale), "say nothing [[fault:empty_reply]]")
				evs := s.follow(a)
				logs := logged(evs)
				last := logs[len(logs)-1]
				text := reply(evs)
				if last.Name != "completed" || text == "" {
					t.Fatalf("empty reply: %s with %q, want completed with the fallback text", last.Name, text)
				}
				if res := thinkingml.Validate(text, thinkingml.Options{}); !res.Valid {
					t.Fatalf("the fallback is invalid: %+v", res.Errors)
				}
				if lang := thinkingml.CheckLanguage(text, locale); !lang.OK {
					t.Fatalf("the fallback is not in %s: %s", locale, lang.Reason)
				}
				if meta := last.Data["metadata"].(map[string]any); meta["fallback"] != true {
					t.Fatalf("completed.metadata.fallback = %v, want true", meta["fallback"])
				}
			})
		}
	})
}
