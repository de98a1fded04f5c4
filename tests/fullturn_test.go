package tests

import (
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/skills"
)

// The end-to-end checks of a full turn (docs/turn.md): MCP records, GenUI, state
// patches, strategies, the x-mcp-context tokens and the [SESSION STATE] block the upstream
// receives, and admin prompt versions. Everything is observed through the public API and
// through what the scripted upstream recorded, as a client or an MCP server would see it.

// mcpLabels are the server labels of testMCPServers.
var mcpLabels = []string{"strategy_engine", "risk_lab", "deployer"}

// localeTexts are the user texts of one locale's conversation.
type localeTexts struct {
	draft, backtest, badPatch, genUI string
}

var fullTurnLocales = map[string]localeTexts{
	"en": {
		draft:    "Draft a momentum strategy for BTC",
		backtest: "Backtest it on 2023 to 2025 data",
		badPatch: "Note where we stand [[scenario:bad_patch]]",
		genUI:    "How would this go live later? [[scenario:genui_not_allowed]]",
	},
	"zh": {
		draft:    "帮我设计一个比特币动量策略",
		backtest: "用2023到2025年的数据回测一下",
		badPatch: "记下目前的进展 [[scenario:bad_patch]]",
		genUI:    "这个策略以后怎么上线？[[scenario:genui_not_allowed]]",
	},
}

func TestFullTurnStrategyPhase(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		for _, locale := range []string{"en", "zh"} {
			texts := fullTurnLocales[locale]
			t.Run(locale, func(t *testing.T) {
				user := "trader-" + locale
				tok, other := s.token(user), s.token("mallory-"+locale)
				sid := s.newSession(tok, locale)

				// Turn 1: strategy/draft (scenario strategy_draft).
				a1, evs1, meta1 := fullTurn(t, s, tok, sid, texts.draft)
				req1 := lastRecorded(t, s)
				var strategyID string

				t.Run("draft: the failed validate_strategy retried with the same arguments is dropped", func(t *testing.T) {
					calls := listOf(t, meta1, "tool_calls")
					if len(calls) != 1 {
						t.Fatalf("completed.metadata.tool_calls has %d records, want exactly one validate_strategy success (the failure that was retried is dropped): %v", len(calls), calls)
					}
					c := calls[0]
					if c["server_label"] != "strategy_engine" || c["name"] != "validate_strategy" || c["status"] != "success" {
						t.Fatalf("tool call record = %v, want strategy_engine/validate_strategy success", c)
					}
					if args, _ := c["arguments"].(map[string]any); args == nil || args["name"] != "BTC momentum" {
						t.Fatalf("tool call arguments = %v, want the JSON object the model sent (name BTC momentum)", c["arguments"])
					}
					if c["error"] != nil && c["error"] != "" {
						t.Fatalf("a successful tool call record carries an error: %v", c["error"])
					}
					if got := toolStates(evs1, "validate_strategy"); !slices.Equal(got, []string{"started", "failed", "started", "completed"}) {
						t.Fatalf("status: tool_call states for validate_strategy = %v, want [started failed started completed] (the failure and the retry are both announced)", got)
					}
					for _, ev := range toolEvents(evs1) {
						if tool, _ := ev.Data["tool"].(map[string]any); tool["server_label"] != "strategy_engine" {
							t.Fatalf("status: tool_call event lacks its server label: %v", ev.Data)
						}
					}
					if meta1["stage"] != "draft" || meta1["phase"] != "strategy" {
						t.Fatalf("metadata phase/stage = %v/%v, want strategy/draft", meta1["phase"], meta1["stage"])
					}
				})

				t.Run("draft: GenUI holds the model's strategy_card and an auto-filled strategy_ref", func(t *testing.T) {
					calls := listOf(t, meta1, "tool_calls")
					if len(calls) == 0 {
						t.Fatal("no tool call to take the strategy id from")
					}
					var out struct {
						StrategyID string `json:"strategy_id"`
					}
					if o, _ := calls[0]["output"].(string); json.Unmarshal([]byte(o), &out) != nil || out.StrategyID == "" {
						t.Fatalf("validate_strategy output %v carries no strategy_id", calls[0]["output"])
					}
					genui := listOf(t, meta1, "genui")
					card := genuiOfType(genui, "strategy_card")
					if card == nil || card["name"] != "BTC momentum" {
						t.Fatalf("metadata.genui lacks the model's strategy_card for BTC momentum: %v", genui)
					}
					ref := genuiOfType(genui, "strategy_ref")
					if ref == nil {
						t.Fatalf("metadata.genui lacks the auto-filled strategy_ref: %v", genui)
					}
					if ref["source"] != "auto" || ref["strategy_id"] != out.StrategyID {
						t.Fatalf("strategy_ref = %v, want source auto and strategy_id %s (from the tool output)", ref, out.StrategyID)
					}
					strategyID = out.StrategyID
				})
				if strategyID == "" {
					t.Fatal("no strategy id after the draft turn; the later checks depend on it")
				}

				t.Run("draft: the session's artifacts and the strategy row", func(t *testing.T) {
					sess := sessionOf(t, s, tok, sid)
					st := strategyArtifacts(t, sess)
					draft, _ := st["strategy_draft"].(map[string]any)
					if draft == nil || draft["name"] != "BTC momentum" {
						t.Fatalf("artifacts.strategy.strategy_draft = %v, want name BTC momentum (the patch applied)", st["strategy_draft"])
					}
					if st["strategy_id"] != strategyID {
						t.Fatalf("artifacts.strategy.strategy_id = %v, want the strategy_ref's %s", st["strategy_id"], strategyID)
					}
					if st["strategy_status"] != "draft" {
						t.Fatalf("artifacts.strategy.strategy_status = %v, want draft (from the patch)", st["strategy_status"])
					}
					if meta1["state_patch"] == nil {
						t.Fatal("metadata.state_patch is null although the patch was applied")
					}
					var strat map[string]any
					code := apiGet(t, s, tok, "/api/v1/strategies/"+strategyID, &strat)
					if code != http.StatusOK || strat["id"] != strategyID || strat["name"] != "BTC momentum" || strat["session_id"] != sid {
						t.Fatalf("GET /strategies/%s as its owner = %d %v, want 200 BTC momentum of session %s", strategyID, code, strat, sid)
					}
					if code := apiGet(t, s, other, "/api/v1/strategies/"+strategyID, nil); code != http.StatusNotFound {
						t.Fatalf("GET /strategies/%s as another user = %d, want 404", strategyID, code)
					}
				})

				t.Run("draft: the persisted message has the same tool calls and GenUI", func(t *testing.T) {
					var msg map[string]any
					if code := apiGet(t, s, tok, "/api/v1/messages/"+a1.MessageID, &msg); code != http.StatusOK {
						t.Fatalf("GET /messages/%s = %d", a1.MessageID, code)
					}
					if !reflect.DeepEqual(msg["tool_calls"], meta1["tool_calls"]) {
						t.Fatalf("persisted tool_calls differ from completed.metadata:\n%v\n%v", msg["tool_calls"], meta1["tool_calls"])
					}
					if !reflect.DeepEqual(msg["genui"], meta1["genui"]) {
						t.Fatalf("persisted genui differs from completed.metadata:\n%v\n%v", msg["genui"], meta1["genui"])
					}
				})

				t.Run("draft: the upstream got an x-mcp-context per MCP server", func(t *testing.T) {
					checkMCPContext(t, s, req1, user, sid, "", map[string][]string{"strategy_engine": {"validate_strategy"}})
				})

				t.Run("draft: the [SESSION STATE] block names phase, stage and locale", func(t *testing.T) {
					checkSessionState(t, req1, "strategy", "draft", locale)
				})

				// Turn 2: strategy/backtest (scenario strategy_backtest).
				_, _, meta2 := fullTurn(t, s, tok, sid, texts.backtest)
				req2 := lastRecorded(t, s)

				t.Run("backtest: an auto-filled backtest_charts card with the series", func(t *testing.T) {
					if meta2["stage"] != "backtest" {
						t.Fatalf("metadata.stage = %v, want backtest", meta2["stage"])
					}
					calls := listOf(t, meta2, "tool_calls")
					if len(calls) != 1 || calls[0]["name"] != "run_backtest" || calls[0]["status"] != "success" {
						t.Fatalf("tool_calls = %v, want one run_backtest success", calls)
					}
					var out struct {
						Series any `json:"series"`
					}
					if o, _ := calls[0]["output"].(string); json.Unmarshal([]byte(o), &out) != nil || out.Series == nil {
						t.Fatalf("run_backtest output %v has no series", calls[0]["output"])
					}
					genui := listOf(t, meta2, "genui")
					charts := genuiOfType(genui, "backtest_charts")
					if charts == nil || charts["source"] != "auto" {
						t.Fatalf("metadata.genui lacks an auto-filled backtest_charts card: %v", genui)
					}
					if !reflect.DeepEqual(charts["series"], out.Series) {
						t.Fatalf("backtest_charts.series = %v, want the tool's series %v", charts["series"], out.Series)
					}
					if genuiOfType(genui, "metric_table") == nil {
						t.Fatalf("metadata.genui lost the model's metric_table: %v", genui)
					}
				})

				t.Run("backtest: artifacts and the strategy show the completed backtest", func(t *testing.T) {
					st := strategyArtifacts(t, sessionOf(t, s, tok, sid))
					if st["backtest_status"] != "completed" || st["strategy_status"] != "validated" || st["strategy_id"] != strategyID {
						t.Fatalf("artifacts.strategy = %v, want backtest_status completed, strategy_status validated, strategy_id %s", st, strategyID)
					}
					var strat map[string]any
					if code := apiGet(t, s, tok, "/api/v1/strategies/"+strategyID, &strat); code != http.StatusOK || strat["backtest_status"] != "completed" {
						t.Fatalf("GET /strategies/%s = %d %v, want backtest_status completed", strategyID, code, strat)
					}
				})

				t.Run("backtest: x-mcp-context carries the strategy", func(t *testing.T) {
					checkMCPContext(t, s, req2, user, sid, strategyID, map[string][]string{"strategy_engine": {"run_backtest", "validate_strategy"}})
				})

				t.Run("backtest: the [SESSION STATE] block names phase, stage and locale", func(t *testing.T) {
					checkSessionState(t, req2, "strategy", "backtest", locale)
				})

				// Turn 3: a patch the phase refuses (strategy/confirm, scenario bad_patch).
				a3, _, meta3 := fullTurn(t, s, tok, sid, texts.badPatch)
				req3 := lastRecorded(t, s)

				t.Run("bad patch: recorded as rejected and not applied", func(t *testing.T) {
					rej, _ := meta3["rejected_patch"].(map[string]any)
					if rej == nil {
						t.Fatalf("metadata.rejected_patch missing for a patch setting strategy_status to bogus: %v", meta3)
					}
					reasons, _ := rej["reasons"].([]any)
					if !slices.ContainsFunc(reasons, func(r any) bool { s, _ := r.(string); return strings.Contains(s, "strategy_status") }) {
						t.Fatalf("rejected_patch.reasons = %v, want one naming strategy_status", rej["reasons"])
					}
					if p, _ := rej["patch"].(map[string]any); p == nil || p["strategy_status"] != "bogus" {
						t.Fatalf("rejected_patch.patch = %v, want the refused patch", rej["patch"])
					}
					if meta3["state_patch"] != nil {
						t.Fatalf("metadata.state_patch = %v, want null for a rejected patch", meta3["state_patch"])
					}
					if st := strategyArtifacts(t, sessionOf(t, s, tok, sid)); st["strategy_status"] != "validated" {
						t.Fatalf("artifacts.strategy.strategy_status = %v after a rejected patch, want validated (unchanged)", st["strategy_status"])
					}
					var msg map[string]any
					apiGet(t, s, tok, "/api/v1/messages/"+a3.MessageID, &msg)
					if msg["state_patch"] != nil {
						t.Fatalf("persisted message state_patch = %v, want null", msg["state_patch"])
					}
				})

				t.Run("confirm: no MCP tools are offered and the state block says so", func(t *testing.T) {
					if meta3["stage"] != "confirm" {
						t.Fatalf("metadata.stage = %v, want confirm", meta3["stage"])
					}
					if tools, _ := req3.Body["tools"].([]any); len(tools) != 0 {
						t.Fatalf("the confirm stage offers no tool, but the upstream got %d tools: %v", len(tools), tools)
					}
					checkSessionState(t, req3, "strategy", "confirm", locale)
				})

				// Turn 4: a GenUI type the strategy phase does not allow.
				_, _, meta4 := fullTurn(t, s, tok, sid, texts.genUI)

				t.Run("genui not allowed: deployment_summary is dropped and listed", func(t *testing.T) {
					if card := genuiOfType(listOf(t, meta4, "genui"), "deployment_summary"); card != nil {
						t.Fatalf("metadata.genui carries a deployment_summary in the strategy phase: %v", meta4["genui"])
					}
					dropped := anyList(meta4["dropped_genui"])
					if !slices.ContainsFunc(dropped, func(d any) bool { s, _ := d.(string); return strings.Contains(s, "deployment_summary") }) {
						t.Fatalf("metadata.dropped_genui = %v, want an entry naming deployment_summary", meta4["dropped_genui"])
					}
				})
			})
		}

		t.Run("x-mcp-context tokens are not logged", func(t *testing.T) {
			log := s.proc.stderr.String()
			if !strings.Contains(log, "/api/v1/sessions/") {
				t.Fatalf("the server's log holds no request line, so it cannot be checked:\n%s", log)
			}
			for _, rec := range allRecorded(t, s) {
				for _, tool := range anyList(rec.Body["tools"]) {
					h, _ := tool.(map[string]any)["headers"].(map[string]any)
					if tok, _ := h["x-mcp-context"].(string); tok != "" && strings.Contains(log, tok) {
						t.Fatal("an x-mcp-context token appears in the server's log")
					}
				}
			}
		})
	})
}

func TestFullTurnPromptVersions(t *testing.T) {
	eachStore(t, func(t *testing.T) {
		s := startServer(t)
		admin, userTok := s.adminToken("root"), s.token("pat")
		enSID, zhSID := s.newSession(userTok, "en"), s.newSession(userTok, "zh")
		ctx := ctxFor(t, 2*time.Minute)

		const markerV1, markerV2, markerZH = "UNIQUE-MARKER-123", "UNIQUE-MARKER-456", "UNIQUE-MARKER-ZH-789"
		body := func(locale, marker string) string {
			text, err := skills.New().Text("tools", locale)
			if err != nil {
				t.Fatal(err)
			}
			note := "**House rule (" + marker + ").** Keep tool results short when you report them."
			if locale == "zh" {
				note = "**内部规则（" + marker + "）。** 报告工具结果时要简洁。"
			}
			return text + "\n\n" + note + "\n"
		}
		instructionsOf := func(t *testing.T, sid, text string) string {
			t.Helper()
			fullTurn(t, s, userTok, sid, text)
			ins, _ := lastRecorded(t, s).Body["instructions"].(string)
			if !strings.Contains(ins, "[SESSION STATE]") {
				t.Fatalf("recorded instructions lack the [SESSION STATE] block:\n%s", ins)
			}
			return ins
		}
		create := func(t *testing.T, locale, marker string, version int) map[string]any {
			t.Helper()
			var p map[string]any
			resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts", admin, map[string]string{"name": "tools", "locale": locale, "body": body(locale, marker)}, &p)
			if resp.StatusCode != http.StatusCreated || p["id"] == "" || p["version"] != float64(version) || p["active"] != false || p["name"] != "tools" || p["locale"] != locale {
				t.Fatalf("admin POST /llm/prompts = %d %v, want 201 version %d inactive", resp.StatusCode, p, version)
			}
			return p
		}
		activate := func(t *testing.T, id string) {
			t.Helper()
			var p map[string]any
			resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts/"+id+"/activate", admin, nil, &p)
			if resp.StatusCode != http.StatusOK || p["id"] != id || p["active"] != true {
				t.Fatalf("admin activate %s = %d %v, want 200 active", id, resp.StatusCode, p)
			}
		}
		listed := func(t *testing.T) map[string]map[string]any {
			t.Helper()
			var list struct {
				Prompts []map[string]any `json:"prompts"`
			}
			if resp := s.call(ctx, http.MethodGet, "/api/v1/llm/prompts", admin, nil, &list); resp.StatusCode != http.StatusOK {
				t.Fatalf("admin GET /llm/prompts = %d", resp.StatusCode)
			}
			out := map[string]map[string]any{}
			for _, p := range list.Prompts {
				out[p["id"].(string)] = p
			}
			return out
		}

		var v1 map[string]any
		t.Run("a non-admin is refused with 403", func(t *testing.T) {
			var e errorBody
			if resp := s.call(ctx, http.MethodGet, "/api/v1/llm/prompts", userTok, nil, &e); resp.StatusCode != http.StatusForbidden || e.Error.Code == "" {
				t.Fatalf("non-admin GET /llm/prompts = %d %+v, want 403 with a JSON error", resp.StatusCode, e)
			}
			resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts", userTok, map[string]string{"name": "tools", "locale": "en", "body": body("en", "NOPE")}, nil)
			if resp.StatusCode != http.StatusForbidden {
				t.Fatalf("non-admin POST /llm/prompts = %d, want 403", resp.StatusCode)
			}
			if len(listed(t)) != 0 {
				t.Fatal("a refused non-admin POST stored a prompt version")
			}
		})

		t.Run("a stored version stays inactive until activated", func(t *testing.T) {
			v1 = create(t, "en", markerV1, 1)
			if ins := instructionsOf(t, enSID, "Draft a momentum strategy for BTC"); strings.Contains(ins, markerV1) {
				t.Fatalf("the upstream saw %s before the version was activated", markerV1)
			}
			if p := listed(t)[v1["id"].(string)]; p == nil || p["active"] != false {
				t.Fatalf("GET /llm/prompts lists %v, want the new version inactive", p)
			}
		})
		if v1 == nil {
			t.Fatal("no prompt version to go on with")
		}

		t.Run("a non-admin cannot activate", func(t *testing.T) {
			if resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts/"+v1["id"].(string)+"/activate", userTok, nil, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("non-admin activate = %d, want 403", resp.StatusCode)
			}
			if p := listed(t)[v1["id"].(string)]; p["active"] != false {
				t.Fatal("a refused activation activated the version")
			}
		})

		t.Run("an activated version changes what the upstream receives, in its locale only", func(t *testing.T) {
			activate(t, v1["id"].(string))
			ins := instructionsOf(t, enSID, "Backtest it on 2023 to 2025 data")
			if !strings.Contains(ins, markerV1) {
				t.Fatalf("after activation the upstream's instructions lack %s:\n%s", markerV1, ins)
			}
			checkStateBlock(t, ins, "strategy", "", "en")
			if p := listed(t)[v1["id"].(string)]; p == nil || p["active"] != true || p["version"] != float64(1) {
				t.Fatalf("GET /llm/prompts lists %v, want version 1 active", p)
			}
			if zh := instructionsOf(t, zhSID, "帮我设计一个比特币动量策略"); strings.Contains(zh, markerV1) {
				t.Fatalf("an en prompt version reached a zh session's instructions")
			}
		})

		var v2 map[string]any
		t.Run("a newer version replaces the active one", func(t *testing.T) {
			v2 = create(t, "en", markerV2, 2)
			activate(t, v2["id"].(string))
			ins := instructionsOf(t, enSID, "What should we look at next?")
			if !strings.Contains(ins, markerV2) || strings.Contains(ins, markerV1) {
				t.Fatalf("after activating version 2 the instructions should carry %s and not %s:\n%s", markerV2, markerV1, ins)
			}
			list := listed(t)
			if list[v1["id"].(string)]["active"] != false || list[v2["id"].(string)]["active"] != true {
				t.Fatalf("GET /llm/prompts: v1 active=%v, v2 active=%v; want only v2 active", list[v1["id"].(string)]["active"], list[v2["id"].(string)]["active"])
			}
		})

		t.Run("a zh version reaches zh sessions", func(t *testing.T) {
			zh := create(t, "zh", markerZH, 1)
			activate(t, zh["id"].(string))
			ins := instructionsOf(t, zhSID, "用2023到2025年的数据回测一下")
			if !strings.Contains(ins, markerZH) {
				t.Fatalf("after activating the zh version the zh instructions lack %s:\n%s", markerZH, ins)
			}
			checkStateBlock(t, ins, "strategy", "", "zh")
			if en := instructionsOf(t, enSID, "Fine, thanks."); strings.Contains(en, markerZH) || !strings.Contains(en, markerV2) {
				t.Fatalf("en instructions should keep %s and not carry %s", markerV2, markerZH)
			}
		})

		nudge, err := skills.New().Text("strategy/nudge", "en")
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct{ name, skill, locale, body, want string }{
			{"an unknown name", "tool", "en", body("en", "X"), `no skill "tool"`},
			{"CJK in an en text", "tools", "en", body("en", "X") + "请简洁。", "CJK characters in an en text"},
			{"English in a zh text", "tools", "zh", body("zh", "X") + "\nAlways answer in English from now on.", "English prose in a zh text"},
			{"a contract without ThinkingML", "contract", "en", "Answer briefly.", "missing the tag <final>"},
			{"a nudge without its placeholders", "strategy/nudge", "en", strings.ReplaceAll(nudge, "{{turn_limit}}", "ten"), "placeholders"},
		} {
			t.Run(tc.name+" is refused with 422", func(t *testing.T) {
				before := len(listed(t))
				var e struct {
					Error struct {
						Code     string   `json:"code"`
						Problems []string `json:"problems"`
					} `json:"error"`
				}
				resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts", admin, map[string]string{"name": tc.skill, "locale": tc.locale, "body": tc.body}, &e)
				if resp.StatusCode != http.StatusUnprocessableEntity || e.Error.Code != "invalid_prompt" || !strings.Contains(strings.Join(e.Error.Problems, "; "), tc.want) {
					t.Fatalf("POST /llm/prompts = %d %+v, want 422 invalid_prompt naming %q", resp.StatusCode, e.Error, tc.want)
				}
				if len(listed(t)) != before {
					t.Fatal("a refused version was stored")
				}
			})
		}

		t.Run("deactivating brings the embedded text back", func(t *testing.T) {
			var p map[string]any
			if resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts/"+v2["id"].(string)+"/deactivate", userTok, nil, nil); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("non-admin deactivate = %d, want 403", resp.StatusCode)
			}
			resp := s.call(ctx, http.MethodPost, "/api/v1/llm/prompts/"+v2["id"].(string)+"/deactivate", admin, nil, &p)
			if resp.StatusCode != http.StatusOK || p["active"] != false {
				t.Fatalf("admin deactivate = %d %v, want 200 inactive", resp.StatusCode, p)
			}
			ins := instructionsOf(t, enSID, "And now?")
			if strings.Contains(ins, markerV2) || strings.Contains(ins, markerV1) {
				t.Fatalf("after deactivating, the instructions still carry a stored version")
			}
			if zh := instructionsOf(t, zhSID, "然后呢？"); !strings.Contains(zh, markerZH) {
				t.Fatalf("deactivating the en version changed the zh one")
			}
		})
	})
}

// fullTurn posts text into session sid, follows the stream to its end and returns the
// answer, the frames and completed.metadata; a turn ending otherwise fails the test.
func fullTurn(t *testing.T, s *server, token, sid, text string) (turnAnswer, []sseEvent, map[string]any) {
	t.Helper()
	a := s.post(token, sid, text)
	evs := s.openEvents(ctxFor(t, 60*time.Second), a.eventsURL(), 0).readAll(t)
	checkStream(t, evs, 1, a.MessageID, a.RequestID)
	return a, evs, completedMeta(t, evs)
}

// completedMeta returns the metadata of the stream's terminal completed event.
func completedMeta(t *testing.T, evs []sseEvent) map[string]any {
	t.Helper()
	logs := logged(evs)
	if len(logs) == 0 {
		t.Fatal("the stream carried no event")
	}
	last := logs[len(logs)-1]
	if last.Name != "completed" {
		t.Fatalf("the turn ended with %s %v, want completed", last.Name, last.Data)
	}
	meta, _ := last.Data["metadata"].(map[string]any)
	if meta == nil {
		t.Fatalf("completed event has no metadata: %v", last.Data)
	}
	return meta
}

// recorded is one request the scripted upstream received, its body decoded.
type recorded struct {
	Path    string              `json:"path"`
	Headers map[string][]string `json:"headers"`
	Body    map[string]any      `json:"body"`
}

// allRecorded reads every request the scripted upstream recorded, oldest first.
func allRecorded(t *testing.T, s *server) []recorded {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 10*time.Second), http.MethodGet, s.mockURL+"/_scripted/requests", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("read the scripted upstream's requests: %v", err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var out struct {
		Requests []recorded `json:"requests"`
	}
	if resp.StatusCode != http.StatusOK || json.Unmarshal(raw, &out) != nil {
		t.Fatalf("GET %s/_scripted/requests = %d %s", s.mockURL, resp.StatusCode, raw)
	}
	return out.Requests
}

// lastRecorded is the last request the scripted upstream received.
func lastRecorded(t *testing.T, s *server) recorded {
	t.Helper()
	reqs := allRecorded(t, s)
	if len(reqs) == 0 {
		t.Fatal("the scripted upstream recorded no request")
	}
	return reqs[len(reqs)-1]
}

// checkMCPContext checks the MCP tools of a recorded request: exactly the servers of
// offered, each with the stage's tools it serves and an x-mcp-context token that verifies
// for its own label only and names the user, session, phase and strategy.
func checkMCPContext(t *testing.T, s *server, rec recorded, user, sid, strategyID string, offered map[string][]string) {
	t.Helper()
	tokens := map[string]string{}
	for _, raw := range anyList(rec.Body["tools"]) {
		tool, _ := raw.(map[string]any)
		if tool["type"] != "mcp" {
			continue
		}
		label, _ := tool["server_label"].(string)
		var got []string
		for _, n := range anyList(tool["allowed_tools"]) {
			name, _ := n.(string)
			got = append(got, name)
		}
		slices.Sort(got)
		want, ok := offered[label]
		if !ok {
			t.Errorf("MCP server %s was offered %v, though it serves none of this stage's tools", label, got)
			continue
		}
		if want = slices.Sorted(slices.Values(want)); !slices.Equal(got, want) {
			t.Errorf("MCP tool %s: allowed_tools = %v, want %v (this stage's tools it serves)", label, got, want)
		}
		h, _ := tool["headers"].(map[string]any)
		tok, _ := h["x-mcp-context"].(string)
		if tok == "" {
			t.Errorf("MCP tool %s has no x-mcp-context header: %v", label, tool)
			continue
		}
		tokens[label] = tok
	}
	verifier := s.mcpVerifier()
	for label := range offered {
		tok, ok := tokens[label]
		if !ok {
			t.Errorf("the upstream got no MCP tool with an x-mcp-context for server %s (got %v)", label, labelsOf(tokens))
			continue
		}
		c, err := verifier.Verify(tok, label)
		if err != nil {
			t.Errorf("x-mcp-context for %s does not verify for its own label: %v", label, err)
			continue
		}
		if c.Subject != user || c.SessionID != sid || c.Phase != "strategy" || c.StrategyID != strategyID {
			t.Errorf("x-mcp-context for %s says sub=%q sid=%q phase=%q strategy_id=%q, want %q %q strategy %q",
				label, c.Subject, c.SessionID, c.Phase, c.StrategyID, user, sid, strategyID)
		}
		if !slices.Equal([]string(c.Audience), []string{label}) {
			t.Errorf("x-mcp-context for %s has audience %v, want [%s]", label, c.Audience, label)
		}
		if c.ExpiresAt == nil || time.Until(c.ExpiresAt.Time) > 10*time.Minute {
			t.Errorf("x-mcp-context for %s expires at %v, want a short-lived token", label, c.ExpiresAt)
		}
		for _, otherLabel := range mcpLabels {
			if otherLabel == label {
				continue
			}
			if _, err := verifier.Verify(tok, otherLabel); err == nil {
				t.Errorf("the x-mcp-context given to %s verifies for %s too; a token must be useless at another server", label, otherLabel)
			}
		}
	}
}

// checkSessionState checks the [SESSION STATE] block of a recorded request's instructions.
func checkSessionState(t *testing.T, rec recorded, phase, stage, locale string) {
	t.Helper()
	ins, _ := rec.Body["instructions"].(string)
	checkStateBlock(t, ins, phase, stage, locale)
}

// checkStateBlock checks the last [SESSION STATE] block of instructions; an empty stage is
// not checked.
func checkStateBlock(t *testing.T, ins, phase, stage, locale string) {
	t.Helper()
	i := strings.LastIndex(ins, "[SESSION STATE]")
	j := strings.LastIndex(ins, "[/SESSION STATE]")
	if i < 0 || j < i {
		t.Fatalf("the instructions the upstream received have no [SESSION STATE] block:\n%s", ins)
	}
	got := map[string]string{}
	for line := range strings.Lines(ins[i+len("[SESSION STATE]") : j]) {
		if k, v, ok := strings.Cut(line, ":"); ok {
			got[strings.TrimSpace(k)] = strings.TrimSpace(v)
		}
	}
	if got["phase"] != phase || got["locale"] != locale || (stage != "" && got["stage"] != stage) {
		t.Fatalf("[SESSION STATE] says phase=%q stage=%q locale=%q, want %q %q %q", got["phase"], got["stage"], got["locale"], phase, stage, locale)
	}
}

// apiGet GETs path with token, decodes the answer into out (when non-nil) and returns the
// status.
func apiGet(t *testing.T, s *server, token, path string, out any) int {
	t.Helper()
	return s.call(ctxFor(t, 10*time.Second), http.MethodGet, path, token, nil, out).StatusCode
}

func sessionOf(t *testing.T, s *server, token, sid string) map[string]any {
	t.Helper()
	var sess map[string]any
	if code := apiGet(t, s, token, "/api/v1/sessions/"+sid, &sess); code != http.StatusOK {
		t.Fatalf("GET /sessions/%s = %d", sid, code)
	}
	return sess
}

// strategyArtifacts returns artifacts.strategy of a session.
func strategyArtifacts(t *testing.T, sess map[string]any) map[string]any {
	t.Helper()
	arts, _ := sess["artifacts"].(map[string]any)
	st, _ := arts["strategy"].(map[string]any)
	if st == nil {
		t.Fatalf("session has no artifacts.strategy: %v", sess["artifacts"])
	}
	return st
}

// listOf returns meta[key] as a list of objects; a missing or null list fails the test.
func listOf(t *testing.T, meta map[string]any, key string) []map[string]any {
	t.Helper()
	raw, ok := meta[key].([]any)
	if !ok {
		t.Fatalf("completed.metadata.%s = %v, want a list", key, meta[key])
	}
	out := make([]map[string]any, 0, len(raw))
	for _, it := range raw {
		obj, _ := it.(map[string]any)
		out = append(out, obj)
	}
	return out
}

func anyList(v any) []any {
	l, _ := v.([]any)
	return l
}

func genuiOfType(items []map[string]any, typ string) map[string]any {
	for _, it := range items {
		if it["type"] == typ {
			return it
		}
	}
	return nil
}

// toolEvents returns the status: tool_call events.
func toolEvents(evs []sseEvent) []sseEvent {
	var out []sseEvent
	for _, ev := range logged(evs) {
		if ev.Name == "status" && ev.Data["state"] == "tool_call" {
			out = append(out, ev)
		}
	}
	return out
}

// toolStates lists the states of the status: tool_call events of the named tool, in order.
func toolStates(evs []sseEvent, name string) []string {
	var out []string
	for _, ev := range toolEvents(evs) {
		if tool, _ := ev.Data["tool"].(map[string]any); tool["name"] == name {
			st, _ := tool["state"].(string)
			out = append(out, st)
		}
	}
	return out
}

func labelsOf(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
