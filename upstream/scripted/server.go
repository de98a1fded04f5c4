// Package scripted is a stand-in for the LLM upstream: an http.Handler that speaks the same
// streaming wire formats as the real services (docs/upstreams.md), the Responses API and
// Chat Completions, and answers every request with a canned ThinkingML reply.
//
// It exists so Phaseflow runs on a bare machine (it is the default upstream when none is
// configured, and `phaseflow mock-upstream` serves it alone) and so end-to-end tests can
// drive failures through the real server: markers such as [[fault:http_429]] or
// [[fault:stall]] in the latest user message select a fault ([Server.ServeHTTP] lists
// them). Every request is recorded so tests can check what the orchestrator actually sent.
//
// # Scenarios
//
// It plays a conversation through the three phases. The scenario of a request is the one
// named by a [[scenario:NAME]] marker in the latest user message; without one, the default
// of the phase and stage read from the [SESSION STATE] block of the instructions (phase:,
// stage:, and artifacts:, whose ids the replies reuse); without that block, a generic
// reply. Defaults per phase/stage:
//
//	strategy     draft → strategy_draft, backtest → strategy_backtest, confirm → strategy_confirm
//	stress_test  bootstrap → stress_bootstrap, scenario → stress_scenario, feedback → stress_feedback_pass
//	deployment   prepare → deploy_prepare, rollout → deploy_rollout, monitor → deploy_monitor_completed
//
// and, by marker only: stress_feedback_revise, deploy_monitor_blocked, bad_patch (a patch
// setting strategy_status to "bogus") and genui_not_allowed (a deployment_summary card in
// the strategy phase). An unknown stage plays its phase's first; an unknown name is ignored.
//
// A scenario's reply is valid ThinkingML followed, after </final>, by <AGENT_UI_JSON> (a
// JSON array of GenUI objects) and <AGENT_STATE_PATCH> (a merge patch on the phase's
// artifacts) blocks, which the server's stream filter withholds. Before the reply, a
// scenario may run MCP calls, streamed as the real API does (transcripts B and C): one
// mcp_list_tools item per server, then each mcp_call item, then the message, each at its
// own output_index. strategy_draft's validate_strategy call on strategy_engine fails once
// (an mcp_tool_execution_error) and is retried with the same arguments; the other tools
// are run_backtest (strategy_engine), run_stress_scenarios (risk_lab), check_risk_guard
// and deploy_strategy (deployer). Calls are played whatever tools the request lists.
//
// # Chat Completions and MCP servers
//
// POST /chat/completions plays the same scenarios, but as a model that cannot reach MCP
// servers: each scenario call is asked for as a tool_call (one per round, only when the
// request offers that function), the caller runs it and sends the result back, and the
// round after the last call streams the reply, written with the ids the results carried.
// The mock also serves the MCP servers those calls go to, built with the official SDK, at
// /mcp/strategy_engine, /mcp/risk_lab and /mcp/deployer (streamable HTTP): they answer as
// the scenarios do, validate_strategy failing every other call from one x-mcp-context
// with the same arguments, so a draft turn records the failure and the mended retry.
//
// A path prefix /fault/NAME applies [[fault:NAME]] to every request under it, so several
// endpoints with different behaviours can point at one mock: …/fault/http_429/v1 always
// answers 429 while …/v1 answers normally.
//
// The reply is in Chinese when the request's instructions or latest user message contain
// CJK characters or the instructions say "locale: zh", and in English otherwise.
//
// # JSON skills
//
// A JSON skill's request (docs/json-skills.md) is answered with one JSON object instead, on
// both wires and in both output modes, decided from the prompt alone: terminal_state's
// (a snapshot between <terminal> lines) with the state a reader of docs/json-skills.md's rules sees
// (busy, the last question with no ⏺ reply after it and the options below it, or idle),
// post_views's (the extract_v1 header) with the reference assets, aliases or $cashtags the
// post names, a stance from its bullish and bearish words and Chinese reasoning. The
// markers of docs/json-skills.md choose faults: [[fault:json_fenced]], [[fault:json_invalid]],
// [[fault:schema_violation]], [[fault:english_reasoning]] (each also as _once),
// [[fault:context_incomplete_below:N]] (context_complete false while fewer than N lines
// were sent) and [[fault:stall]].
package scripted

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Options tune the pace of the scripted stream. Zero values pick the defaults.
type Options struct {
	// ChunkSize is the number of runes (not bytes, so no delta splits a UTF-8 sequence)
	// per response.output_text.delta. Default 24.
	ChunkSize int
	// Pace is the delay between two deltas; it makes the stream look like generation and
	// gives tests time to act mid-stream. Default 2ms; negative means none.
	Pace time.Duration
	// Logger receives one line per request; nil discards.
	Logger *slog.Logger
}

// The defaults of Options.
const (
	DefaultChunkSize = 24
	DefaultPace      = 2 * time.Millisecond
)

// maxRecorded is how many requests [Server.Requests] keeps.
const maxRecorded = 100

// maxRequestBody bounds a request body; real ones are a few KiB.
const maxRequestBody = 4 << 20

// RecordedRequest is one request the scripted upstream received.
type RecordedRequest struct {
	// Path is the request path, such as /v1/responses.
	Path string `json:"path"`
	// Headers are the request headers as received.
	Headers http.Header `json:"headers"`
	// Body is the JSON body, or a JSON string holding the body when it was not JSON. It is
	// kept whole, so the MCP tools of a request are there as sent, each with its
	// "headers" (the server's x-mcp-context JWT) and "allowed_tools".
	Body json.RawMessage `json:"body"`
}

// Server is the scripted upstream. It is safe for concurrent use; create it with [New].
type Server struct {
	chunkSize int
	pace      time.Duration
	log       *slog.Logger
	mux       *http.ServeMux
	once      onceTracker
	mcpOnce   onceTracker // the MCP servers' fail-once calls
	hints     hintTable   // which scenario asked for which tool call (chat wire)

	mu       sync.Mutex
	requests []RecordedRequest
}

// New returns a scripted upstream with opts applied.
func New(opts Options) *Server {
	s := &Server{chunkSize: opts.ChunkSize, pace: opts.Pace, log: opts.Logger}
	if s.chunkSize <= 0 {
		s.chunkSize = DefaultChunkSize
	}
	switch {
	case s.pace == 0:
		s.pace = DefaultPace
	case s.pace < 0:
		s.pace = 0
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	s.mux = http.NewServeMux()
	s.mux.HandleFunc("POST /responses", s.handleResponses)
	s.mux.HandleFunc("POST /v1/responses", s.handleResponses)
	s.mux.HandleFunc("POST /chat/completions", s.handleChat)
	s.mux.HandleFunc("POST /v1/chat/completions", s.handleChat)
	s.mux.HandleFunc("GET /_scripted/requests", s.handleRequests)
	s.mux.HandleFunc("GET /v1/_scripted/requests", s.handleRequests)
	s.mountMCP()
	return s
}

// ServeHTTP serves POST /responses and /v1/responses (the Responses stream), POST
// /chat/completions and /v1/chat/completions (the Chat Completions stream), the MCP
// servers at /mcp/LABEL, and GET /_scripted/requests (the record, also under /v1); any of
// them under /fault/NAME/ with that fault.
//
// Markers in the latest user message change the reply:
//
//	[[fault:slow_first_token]]  wait 2s before the first delta ([[first_token_ms:N]] sets the wait)
//	[[fault:mid_stream_error]]  some deltas, then an error event (nested shape)
//	[[fault:http_429]]          HTTP 429, Retry-After: 1, JSON error body
//	[[fault:http_500]]          HTTP 500, JSON error body
//	[[fault:stall]]             some deltas, then silence until the client leaves
//	[[fault:abrupt_close]]      some deltas, then the connection drops, no terminal event
//	[[fault:broken_xml]]        a reply with a mismatched closing tag
//	[[fault:wrong_language]]    a reply in the other language
//	[[fault:broken_xml_once]], [[fault:wrong_language_once]]
//	                            bad on the first request with this message, good on the next
//	[[fault:no_genui]]          the scenario's reply without its AGENT_UI_JSON block
//	[[fault:no_patch]]          the scenario's reply without its AGENT_STATE_PATCH block
//	[[pace_ms:N]]               N ms between deltas for this reply
//	[[scenario:NAME]]           play scenario NAME (see the package documentation)
//
// Faults apply on top of any scenario: its MCP calls are played, then the faulty text.
//
// When several stream faults are given, mid_stream_error wins over abrupt_close, which
// wins over stall. A stall ends only with the request's context, so a host http.Server
// must cancel its BaseContext on shutdown ([Listen] does).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, withPathFault(r))
}

// Requests returns the last requests received, oldest first (at most 100). GET
// /_scripted/requests answers the same as {"requests":[…]}; a test reads the headers the
// server attached to each MCP tool at requests[i].body.tools[j].headers.
func (s *Server) Requests() []RecordedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]RecordedRequest(nil), s.requests...)
}

// record keeps r with its body, dropping the oldest beyond maxRecorded. The path is the
// one the client asked for, a /fault/NAME prefix included.
func (s *Server) record(r *http.Request, body []byte) {
	rec := RecordedRequest{Path: originalPath(r), Headers: r.Header.Clone(), Body: body}
	if !json.Valid(body) {
		rec.Body, _ = json.Marshal(string(body)) // a string always marshals
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.requests) >= maxRecorded {
		s.requests = append(s.requests[:0:0], s.requests[len(s.requests)-maxRecorded+1:]...)
	}
	s.requests = append(s.requests, rec)
}

// handleRequests answers the record as {"requests":[…]}.
func (s *Server) handleRequests(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Requests []RecordedRequest `json:"requests"`
	}{s.Requests()})
}

// handleResponses answers one Responses request.
func (s *Server) handleResponses(w http.ResponseWriter, r *http.Request) {
	log := s.requestLog(w)
	var req incoming
	if _, ok := s.readRequest(w, r, &req, &req.Stream); !ok {
		return
	}
	userText := latestUserText(req.Input)
	f, ok := s.faultsOf(w, r, userText, log)
	if !ok {
		return
	}
	var p *plan
	if answer, ok := s.skillAnswer(userText, f); ok {
		p = s.newSkillPlan(req.Model, answer, estimateTokens(req.Instructions, userText), f)
	} else {
		p = s.newPlan(req, userText, f, nil)
	}
	log.Info("scripted upstream: reply", "response_id", p.respID, "chars", len(p.text), "ending", p.ending)
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Time{}) // a server WriteTimeout would cut the stream
	w.WriteHeader(http.StatusOK)
	if err := p.run(r.Context(), &eventWriter{w: w, rc: rc}); err != nil {
		log.Info("scripted upstream: stream ended early", "err", err)
	}
}

// requestLog gives the request its X-Request-Id and returns the logger that names it.
func (s *Server) requestLog(w http.ResponseWriter) *slog.Logger {
	requestID := "req_" + newID()
	w.Header().Set("X-Request-Id", requestID)
	return s.log.With("request_id", requestID)
}

// readRequest reads, records and decodes a request body into v; stream is v's "stream"
// field, which must be true. It answers 400 itself when it cannot (ok false). Reading the
// whole body first also lets net/http notice a client that goes away (golang/go#23262),
// which the stall fault relies on.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, v any, stream *bool) (body []byte, ok bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", "Could not read the request body.")
		return nil, false
	}
	s.record(r, body)
	if err := json.Unmarshal(body, v); err != nil {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", "The request body is not valid JSON.")
		return nil, false
	}
	if !*stream {
		writeAPIError(w, http.StatusBadRequest, "invalid_request_error", "", "The scripted upstream only streams: send \"stream\": true.")
		return nil, false
	}
	return body, true
}

// faultsOf reads the faults of a request from the user's text and its path, and answers
// an HTTP fault itself (ok false).
func (s *Server) faultsOf(w http.ResponseWriter, r *http.Request, userText string, log *slog.Logger) (f faults, ok bool) {
	f = parseFaults(userText)
	f.setFault(pathFault(r))
	if status := httpFault(f); status != 0 {
		log.Info("scripted upstream: HTTP fault", "status", status)
		writeHTTPFault(w, status)
		return f, false
	}
	return f, true
}

// newPlan decides the whole reply of one request; known holds placeholder values earlier
// tool results fixed (the chat wire's last round), nil for fresh ones.
func (s *Server) newPlan(req incoming, userText string, f faults, known map[string]string) *plan {
	lang := pickLanguage(req.Instructions, userText)
	brokenXML, wrongLanguage := f.brokenXML, f.wrongLanguage
	for _, marker := range f.once {
		if s.once.bad(marker, userText) {
			brokenXML = brokenXML || marker == "broken_xml_once"
			wrongLanguage = wrongLanguage || marker == "wrong_language_once"
		}
	}
	if wrongLanguage {
		lang = lang.other()
	}
	st, hasState := parseSessionState(req.Instructions)
	sc, _ := lookupScenario(chooseScenario(f.scenario, st, hasState))
	vars := varsWith(st.artifacts, known)
	r := sc.replies[lang].with(vars)
	if f.noGenUI {
		r.ui = ""
	}
	if f.noPatch {
		r.patch = ""
	}
	text := render(r, userText, !wrongLanguage)
	if brokenXML {
		text = breakXML(text)
	}
	if f.emptyReply {
		text = ""
	}
	if f.flood > 0 { // before the answer's end, so that the reply stays whole
		i := max(strings.LastIndex(text, "</final>"), 0)
		text = text[:i] + strings.Repeat("a", f.flood) + text[i:]
	}
	p := &plan{
		respID:      "resp_" + newID(),
		msgID:       "msg_" + newID(),
		calls:       withVars(sc.calls, vars),
		model:       firstNonEmpty(req.Model, "scripted"),
		createdAt:   time.Now().Unix(),
		text:        text,
		chunkSize:   s.chunkSize,
		pace:        s.pace,
		firstToken:  f.firstToken,
		inputTokens: estimateTokens(req.Instructions, string(req.Input)),
	}
	if f.flood > 0 { // as fast as one-byte deltas go
		p.chunkSize, p.pace = 1, 0
	}
	p.applyStreamFaults(f)
	return p
}

// applyStreamFaults sets the pace and the ending the markers ask for.
func (p *plan) applyStreamFaults(f faults) {
	if f.pace > 0 {
		p.pace = f.pace
	}
	switch {
	case f.midStream:
		p.ending = endError
	case f.abruptClose:
		p.ending = endAbruptClose
	case f.stall:
		p.ending = endStall
	}
}

// httpFault returns the status an HTTP fault asks for, 0 for none.
func httpFault(f faults) int {
	switch {
	case f.http429:
		return http.StatusTooManyRequests
	case f.http500:
		return http.StatusInternalServerError
	}
	return 0
}

// writeHTTPFault answers with the error the real API gives for status.
func writeHTTPFault(w http.ResponseWriter, status int) {
	if status == http.StatusTooManyRequests {
		w.Header().Set("Retry-After", "1")
		writeAPIError(w, status, "requests", "rate_limit_exceeded",
			"Rate limit reached for the scripted upstream on requests per min (RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.")
		return
	}
	writeAPIError(w, status, "server_error", "server_error",
		"The server had an error while processing your request. Sorry about that!")
}

// writeAPIError writes the API's JSON error body, {"error":{message,type,param,code}}.
func writeAPIError(w http.ResponseWriter, status int, typ, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	body := struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}{}
	body.Error.Message, body.Error.Type = msg, typ
	if code != "" {
		body.Error.Code = &code
	}
	_ = json.NewEncoder(w).Encode(body)
}

// newID returns 32 hex digits for response, message and request ids.
func newID() string {
	return strings.ReplaceAll(uuid.NewString(), "-", "")
}

// firstNonEmpty returns the first of vs that is not empty.
func firstNonEmpty(vs ...string) string {
	for _, v := range vs {
		if v != "" {
			return v
		}
	}
	return ""
}

// newUUID returns a fresh UUID in its usual form, for ids a tool hands out.
func newUUID() string { return uuid.NewString() }
