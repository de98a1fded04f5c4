package scripted

import (
	"encoding/json"
	"net/http"
	"strings"
	"time"
)

// incomingChat is the part of a Chat Completions request the scripted upstream reads.
type incomingChat struct {
	Model    string        `json:"model"`
	Messages []chatMessage `json:"messages"`
	Tools    []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	Stream bool `json:"stream"`
}

// chatMessage is one message of a chat request; content is a string or a list of parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// chatTurnView is what the chat handler reads from a request: the instructions (the
// system messages), the user's latest text, the tool results that followed it (one per
// tool round, in order) and the functions offered.
type chatTurnView struct {
	instructions string
	userText     string
	results      []string
	offered      map[string]bool
}

// view reads a chat request.
func (req incomingChat) view() chatTurnView {
	v := chatTurnView{offered: map[string]bool{}}
	var system []string
	lastUser := -1
	for i, m := range req.Messages {
		switch m.Role {
		case "system", "developer":
			system = append(system, contentText(m.Content))
		case "user":
			lastUser = i
		}
	}
	v.instructions = strings.Join(system, "\n\n")
	if lastUser >= 0 {
		v.userText = afterCarryover(contentText(req.Messages[lastUser].Content))
		for _, m := range req.Messages[lastUser+1:] {
			if m.Role == "tool" {
				v.results = append(v.results, contentText(m.Content))
			}
		}
	}
	for _, t := range req.Tools {
		v.offered[t.Function.Name] = true
	}
	return v
}

// functionFor returns the offered function name that runs c ("" when not offered): the
// tool's own name, or label__tool when Phaseflow had to qualify it.
func (v chatTurnView) functionFor(c toolCall) string {
	for _, name := range []string{c.name, c.server + "__" + c.name} {
		if v.offered[name] {
			return name
		}
	}
	return ""
}

// handleChat answers one Chat Completions request (docs/upstreams.md). The scenario is
// chosen as for the Responses wire. Its MCP calls are asked for as tool_calls, one per
// round and only when the request offers the function, so the caller must run them (on
// the MCP servers at /mcp/LABEL, which answer them as the scenario says) and send the
// results back; the round after the last call streams the reply, written with the ids the
// results carried, and the faults apply to that round.
func (s *Server) handleChat(w http.ResponseWriter, r *http.Request) {
	log := s.requestLog(w)
	var req incomingChat
	body, ok := s.readRequest(w, r, &req, &req.Stream)
	if !ok {
		return
	}
	v := req.view()
	f, ok := s.faultsOf(w, r, v.userText, log)
	if !ok {
		return
	}
	if answer, ok := s.skillAnswer(v.userText, f); ok {
		p := s.newSkillPlan(req.Model, answer, estimateTokens(v.instructions, v.userText), f)
		log.Info("scripted upstream: chat skill answer", "chars", len(p.text), "ending", p.ending)
		if err := p.runChat(r.Context(), newChatWriter(w, firstNonEmpty(req.Model, "scripted"))); err != nil {
			log.Info("scripted upstream: stream ended early", "err", err)
		}
		return
	}
	st, hasState := parseSessionState(v.instructions)
	name := chooseScenario(f.scenario, st, hasState)
	sc, _ := lookupScenario(name)
	calls := offeredCalls(sc.calls, v)
	cw := newChatWriter(w, firstNonEmpty(req.Model, "scripted"))
	if n := len(v.results); n < len(calls) {
		call := withVars([]toolCall{calls[n]}, varsWith(st.artifacts, nil))[0]
		s.hints.set(call.name, call.arguments, name)
		log.Info("scripted upstream: tool call", "scenario", name, "tool", call.name)
		if err := cw.toolCall(r.Context(), v.functionFor(call), call.arguments, s.chunkSize); err != nil {
			log.Info("scripted upstream: stream ended early", "err", err)
		}
		return
	}
	in := incoming{Model: req.Model, Instructions: v.instructions, Input: body}
	p := s.newPlan(in, v.userText, f, recoverVars(calls, v.results))
	log.Info("scripted upstream: chat reply", "scenario", name, "chars", len(p.text), "ending", p.ending)
	if err := p.runChat(r.Context(), cw); err != nil {
		log.Info("scripted upstream: stream ended early", "err", err)
	}
}

// offeredCalls keeps the calls whose function the request offers: a model calls only the
// tools it was given.
func offeredCalls(calls []toolCall, v chatTurnView) []toolCall {
	var out []toolCall
	for _, c := range calls {
		if v.functionFor(c) != "" {
			out = append(out, c)
		}
	}
	return out
}

// chatCreated is the created time of chat chunks, seconds since the epoch.
func chatCreated() int64 { return time.Now().Unix() }
