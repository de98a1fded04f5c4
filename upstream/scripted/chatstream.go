package scripted

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"time"
)

// chatWriter writes a Chat Completions stream: data-only events, each a
// chat.completion.chunk, the usage chunk, then data: [DONE]; a flush after each.
type chatWriter struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	id      string
	model   string
	created int64
	started bool
}

func newChatWriter(w http.ResponseWriter, model string) *chatWriter {
	return &chatWriter{w: w, rc: http.NewResponseController(w), id: "chatcmpl-" + newID(), model: model, created: chatCreated()}
}

// Wire shapes of the chunks (docs/upstreams.md).
type (
	chatChunk struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"`
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   *chatUsage   `json:"usage"`
	}
	chatChoice struct {
		Index        int       `json:"index"`
		Delta        chatDelta `json:"delta"`
		Logprobs     *string   `json:"logprobs"`
		FinishReason *string   `json:"finish_reason"`
	}
	chatDelta struct {
		Role      string          `json:"role,omitempty"`
		Content   *string         `json:"content,omitempty"`
		ToolCalls []chatCallDelta `json:"tool_calls,omitempty"`
	}
	chatCallDelta struct {
		Index    int    `json:"index"`
		ID       string `json:"id,omitempty"`
		Type     string `json:"type,omitempty"`
		Function struct {
			Name      string `json:"name,omitempty"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	}
	chatUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
)

// data writes one event whose data is payload as JSON (tags written as themselves).
func (c *chatWriter) data(payload any) error {
	if !c.started {
		c.started = true
		c.w.Header().Set("Content-Type", "text/event-stream")
		c.w.Header().Set("Cache-Control", "no-cache")
		_ = c.rc.SetWriteDeadline(time.Time{})
		c.w.WriteHeader(http.StatusOK)
	}
	var b bytes.Buffer
	b.WriteString("data: ")
	je := json.NewEncoder(&b)
	je.SetEscapeHTML(false)
	if err := je.Encode(payload); err != nil {
		return fmt.Errorf("encode chunk: %w", err)
	}
	b.WriteString("\n") // Encode ended the line; the blank line ends the event
	return c.write(b.Bytes())
}

// write sends raw bytes and flushes; an error means the client is gone.
func (c *chatWriter) write(p []byte) error {
	if _, err := c.w.Write(p); err != nil {
		return fmt.Errorf("write chunk: %w", err)
	}
	if err := c.rc.Flush(); err != nil {
		return fmt.Errorf("flush chunk: %w", err)
	}
	return nil
}

// chunk writes one chunk with delta and, when given, a finish reason.
func (c *chatWriter) chunk(d chatDelta, finish string) error {
	ch := chatChoice{Delta: d}
	if finish != "" {
		ch.FinishReason = &finish
	}
	return c.data(chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []chatChoice{ch}})
}

// end writes the finish chunk, the usage chunk and [DONE].
func (c *chatWriter) end(finish string, in, out int) error {
	if err := c.chunk(chatDelta{}, finish); err != nil {
		return err
	}
	usage := &chatUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}
	if err := c.data(chatChunk{ID: c.id, Object: "chat.completion.chunk", Created: c.created, Model: c.model, Choices: []chatChoice{}, Usage: usage}); err != nil {
		return err
	}
	return c.write([]byte("data: [DONE]\n\n"))
}

// toolCall streams a round in which the model calls function with arguments: the call's
// first fragment with its id and name, the arguments in pieces, finish_reason tool_calls.
func (c *chatWriter) toolCall(ctx context.Context, function, arguments string, chunkSize int) error {
	first := chatCallDelta{ID: "call_" + newID()[:24], Type: "function"}
	first.Function.Name = function
	if err := c.chunk(chatDelta{Role: "assistant", ToolCalls: []chatCallDelta{first}}, ""); err != nil {
		return err
	}
	for _, piece := range chunks(arguments, chunkSize) {
		if err := ctx.Err(); err != nil {
			return err
		}
		var d chatCallDelta
		d.Function.Arguments = piece
		if err := c.chunk(chatDelta{ToolCalls: []chatCallDelta{d}}, ""); err != nil {
			return err
		}
	}
	return c.end("tool_calls", estimateTokens(arguments), estimateTokens(arguments))
}

// runChat streams p's reply as the last round of a chat request, with p's faults: a
// mid-stream error is a top-level error chunk (as OpenRouter sends after HTTP 200), a
// stall holds the stream until the client leaves, an abrupt close drops the connection.
func (p *plan) runChat(ctx context.Context, cw *chatWriter) error {
	empty := ""
	if err := cw.chunk(chatDelta{Role: "assistant", Content: &empty}, ""); err != nil {
		return err
	}
	if err := p.sendText(ctx, func(piece string) error { return cw.chunk(chatDelta{Content: &piece}, "") }); err != nil {
		return err
	}
	switch p.ending {
	case endError:
		return cw.data(map[string]apiError{"error": {Type: "server_error", Code: "server_error",
			Message: "The scripted upstream failed in the middle of the stream ([[fault:mid_stream_error]])."}})
	case endStall:
		<-ctx.Done()
		return ctx.Err()
	case endAbruptClose:
		panic(http.ErrAbortHandler)
	}
	return cw.end("stop", p.inputTokens, estimateTokens(p.text))
}

// placeholderRE finds the placeholders of a tool output template.
var placeholderRE = regexp.MustCompile(`\{(uuid|id|scenario_set_id|stress_report_id|deployment_id)\}`)

// recoverVars reads back the placeholder values the tool results carry: each call's
// output template is matched against the result the caller sent for it, so the reply can
// name the strategy, report or deployment the tools really created.
func recoverVars(calls []toolCall, results []string) map[string]string {
	known := map[string]string{}
	for i, c := range calls {
		if i >= len(results) || c.output == "" {
			continue
		}
		names, re := templateRE(c.output)
		m := re.FindStringSubmatch(results[i])
		for j, name := range names {
			if m != nil && known[name] == "" {
				known[name] = m[j+1]
			}
		}
	}
	return known
}

// templateRE turns an output template into a regular expression that captures each
// placeholder, returned with the placeholders' names in order.
func templateRE(tmpl string) ([]string, *regexp.Regexp) {
	var names []string
	var b bytes.Buffer
	b.WriteString("^")
	last := 0
	for _, loc := range placeholderRE.FindAllStringSubmatchIndex(tmpl, -1) {
		b.WriteString(regexp.QuoteMeta(tmpl[last:loc[0]]))
		b.WriteString(`([A-Za-z0-9_.-]+)`)
		names = append(names, tmpl[loc[2]:loc[3]])
		last = loc[1]
	}
	b.WriteString(regexp.QuoteMeta(tmpl[last:]))
	b.WriteString("$")
	return names, regexp.MustCompile(b.String())
}
