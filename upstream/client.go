// Package upstream is the streaming client for the LLM behind Phaseflow: any server that
// speaks the OpenAI Responses API or Chat Completions with "stream": true, per endpoint
// (docs/upstreams.md); the responses*.go files are the first wire's, chat*.go the second's.
//
// [Client.Stream] POSTs one request and returns the response as an iter.Seq2 of typed
// [Event] values: created, text deltas, MCP call start and end, completed. Everything else
// the API streams is read and dropped. Failures, before or during the stream, arrive as one
// *[Error] whose Kind says what failed; the stream handler maps kinds to client error codes.
//
// The client never retries: a retry in the middle of a generation would duplicate text the
// user has already seen, and whether to retry a request that failed before the stream
// (using [Error.RetryAfter]) is the orchestrator's call.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"mime"
	"net/http"
	"time"
)

// Config says where the upstream is and how to reach it.
type Config struct {
	// BaseURL is the API root, such as https://api.openai.com/v1; "/responses" is
	// appended. A trailing slash is ignored.
	BaseURL string
	// APIKey is sent as a bearer token when set; local servers often need none.
	APIKey string
	// Transport replaces the default transport ([NewTransport]). The client calls its
	// RoundTrip itself, as a reverse proxy does, with no http.Client around it: no redirect
	// is followed and no overall timeout applies (a generation may stream for minutes).
	// That also keeps the stack a waiting generation holds small: http.Client's layers are
	// a kilobyte of it (docs/performance.md).
	Transport http.RoundTripper
}

// Client streams responses from one upstream. It is safe for concurrent use.
type Client struct {
	endpoint string
	apiKey   string
	rt       http.RoundTripper
	parsers  parserPool // shared by the client's streams, a frame at a time
}

// New returns a client for cfg. Without cfg.Transport it uses a transport tuned for
// streams: see [NewTransport].
func New(cfg Config) *Client {
	return &Client{
		endpoint: endpointURL(cfg.BaseURL, "/responses"),
		apiKey:   cfg.APIKey,
		rt:       transportOr(cfg.Transport),
	}
}

// transportOr is rt, or a new [NewTransport] when rt is nil.
func transportOr(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		return NewTransport()
	}
	return rt
}

// NewTransport returns the transport the default client uses: http.DefaultTransport's
// settings (proxy from the environment, dial timeouts, HTTP/2) with more idle connections
// per host, since every chat turn goes to the same host; no transparent gzip, which would
// buffer small SSE frames behind the decompressor; a limit on waiting for response
// headers, so an upstream that accepts the connection and never answers fails as
// upstream_timeout instead of hanging until the turn's own limit; and 1 KiB read and write
// buffers instead of 4: each connection keeps its buffers while its response streams for the
// whole turn. A request (headers, then a body of kilobytes that bypasses a full buffer) takes
// two writes with either size; a response streams frames of a few hundred bytes each, one
// or a few per read. When frames come in bursts (a fast upstream) the connection reads
// ahead, a burst at a time, into a buffer it keeps only until the burst is read
// (readAheadConn), so the small buffer does not cost a system call a kilobyte.
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DialContext = readingAhead(t.DialContext)
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	t.DisableCompression = true
	t.ResponseHeaderTimeout = 60 * time.Second
	t.WriteBufferSize = 1 << 10
	t.ReadBufferSize = 1 << 10
	return t
}

// CloseIdleConnections closes the kept-alive connections of the client's transport; call it
// when the client is no longer needed so their goroutines end.
func (c *Client) CloseIdleConnections() { closeIdle(c.rt) }

// closeIdle closes rt's idle connections when it keeps any (an *http.Transport does).
func closeIdle(rt http.RoundTripper) {
	if c, ok := rt.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// Request is one call to the Responses API. Zero fields are left out of the JSON body so the
// upstream applies its own defaults.
type Request struct {
	Model        string
	Instructions string
	Input        []InputItem
	// Tools are tool definitions as JSON (MCP servers, functions), passed through as is.
	Tools []json.RawMessage
	// ToolChoice is "auto", "required", "none" or a tool object; nil leaves it out.
	ToolChoice         any
	MaxOutputTokens    int
	PreviousResponseID string
	// Temperature, when set, is sent as is (JSON skills send 0); nil leaves the
	// provider's default.
	Temperature *float64
	// JSON, when set, asks for one JSON object in the endpoint's output mode (see
	// [JSONOutput]); nil asks for prose.
	JSON *JSONOutput
	// Headers are extra request headers. Content-Type and Accept, and Authorization when
	// the client has an API key, are set after them and win.
	Headers http.Header
	// Say, when set, renders a text a client writes to the model itself, in the session's
	// locale: on the chat wire the result of a failed tool call (key "tool_failed" with
	// {{error}}) and the failures Phaseflow decides (ReasonUnknownTool, ReasonBadArguments,
	// ReasonTimeout). ok false, or no Say, keeps the English default. It is called only
	// when such a text is needed, never on the happy path.
	Say func(key string, values map[string]string) (text string, ok bool)
	// Owner is the user the call is made for, for per-user accounting (package userlimit);
	// it is never sent.
	Owner string
}

// InputItem is one message of the conversation sent as input.
type InputItem struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// wireRequest is the JSON body of POST /responses.
type wireRequest struct {
	Model              string            `json:"model,omitempty"`
	Instructions       string            `json:"instructions,omitempty"`
	Input              []InputItem       `json:"input,omitempty"`
	Tools              []json.RawMessage `json:"tools,omitempty"`
	ToolChoice         any               `json:"tool_choice,omitempty"`
	MaxOutputTokens    int               `json:"max_output_tokens,omitempty"`
	PreviousResponseID string            `json:"previous_response_id,omitempty"`
	Temperature        *float64          `json:"temperature,omitempty"`
	Text               *responsesText    `json:"text,omitempty"`
	Stream             bool              `json:"stream"`
}

// Stream sends req and returns the response's events. The request is sent when iteration
// starts (each iteration sends it again) and the response body is closed when iteration
// ends, however it ends.
//
// The sequence holds zero or more events with a nil error, then either ends after
// EventCompleted or yields exactly one non-nil error and ends. That error is an *[Error]
// (or, for a Request whose ToolChoice cannot be encoded as JSON, a plain error), except
// when ctx ends first: then it is ctx.Err() itself (context.Canceled or
// context.DeadlineExceeded, not wrapped), yielded once, so a caller can tell its own
// cancellation from an upstream failure. When the consumer breaks out of the loop nothing
// more is yielded and the connection is released at once. No text in an event holds a NUL
// character: each is replaced by U+FFFD (see storable).
func (c *Client) Stream(ctx context.Context, req Request) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		yield = storable(yield)
		err := c.stream(ctx, req, yield)
		if err == nil {
			return
		}
		if ctxErr := ctx.Err(); ctxErr != nil {
			err = ctxErr
		}
		yield(Event{}, err)
	}
}

// stream runs one request. It returns nil when the response completed or the consumer
// stopped, and the failure otherwise (not yet yielded).
func (c *Client) stream(ctx context.Context, req Request, yield func(Event, error) bool) error {
	out, err := c.newRequest(ctx, req)
	if err != nil {
		return err
	}
	a, err := openStream(c.rt, out)
	if err != nil {
		return err
	}
	if a.whole {
		err = readWholeResponse(a.body, a.requestID, yield)
	} else {
		err = readEvents(a.body, a.requestID, &c.parsers, yield)
	}
	release(a.body, err == nil)
	if errors.Is(err, errStopped) {
		return nil
	}
	return err
}

// Draining a finished response: see release.
const (
	drainWait  = 10 * time.Millisecond
	drainLimit = 4 << 10
)

// release closes a response body, reading it to its end first when the response completed
// (its terminal event read), so that the connection goes back to the transport's pool. An
// HTTP/1 body closed before its end closes its connection, and the chunked stream's last
// bytes (the zero-length chunk) usually come in a write of their own after the terminal
// event: closed at once, many turns opened a new connection to the upstream, with a dial
// and two goroutines of the transport's each time. The drain reads at most
// drainLimit bytes and waits at most drainWait (a closing body stops the read), so an
// upstream that keeps talking after its terminal event costs a turn no more than that.
func release(body io.ReadCloser, complete bool) {
	if complete {
		stop := time.AfterFunc(drainWait, func() { body.Close() })
		_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
		stop.Stop()
	}
	body.Close()
}

// openStream sends out and returns the response's body and the upstream's request id once
// it is a 2xx event stream; any other answer becomes its *Error (the body closed). The
// request's body is let go of once sent, and the response's headers once read: the body
// streams for the whole turn, and a provider answers with a dozen headers or more (rate
// limits, tracing, cookies) that nothing reads after this.
func openStream(rt http.RoundTripper, out *outgoing) (answer, error) {
	resp, err := rt.RoundTrip(out.req)
	out.body.release()
	if err != nil {
		return answer{}, transportError(err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		defer resp.Body.Close()
		return answer{}, httpError(resp)
	}
	whole, err := checkEventStream(resp)
	if err != nil {
		resp.Body.Close()
		return answer{}, err
	}
	a := answer{body: resp.Body, requestID: resp.Header.Get("X-Request-Id"), whole: whole}
	resp.Header = nil
	return a, nil
}

// answer is an open response: its body, the provider's request id, and whether it is one
// whole JSON answer rather than an event stream.
type answer struct {
	body      io.ReadCloser
	requestID string
	whole     bool
}

// newRequest builds the HTTP request for req.
func (c *Client) newRequest(ctx context.Context, req Request) (*outgoing, error) {
	body, err := json.Marshal(wireRequest{
		Model:              req.Model,
		Instructions:       req.JSON.instructions(req.Instructions),
		Input:              req.Input,
		Tools:              req.Tools,
		ToolChoice:         req.ToolChoice,
		MaxOutputTokens:    req.MaxOutputTokens,
		PreviousResponseID: req.PreviousResponseID,
		Temperature:        req.Temperature,
		Text:               req.JSON.responsesText(),
		Stream:             true,
	})
	if err != nil {
		return nil, fmt.Errorf("upstream: encode request: %w", err)
	}
	return newPost(ctx, c.endpoint, c.apiKey, req.Headers, body)
}

// newPost builds a streaming POST of body to endpoint, on either wire: the request's own
// headers first, then the ones Phaseflow decides (JSON in, an event stream out, the
// endpoint's key), so a caller's header can never replace the key or the content type. The
// request is traced (redacted) for the turn's records.
func newPost(ctx context.Context, endpoint, apiKey string, headers http.Header, body []byte) (*outgoing, error) {
	out := &outgoing{body: newReplayBody(body)}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, &onceReader{b: body})
	if err != nil {
		return nil, fmt.Errorf("upstream: build request: %w", err)
	}
	hreq.ContentLength, hreq.GetBody = int64(len(body)), out.body.reopen
	for k, vs := range headers {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+apiKey)
	}
	trace(ctx, hreq, body)
	out.req = hreq
	return out, nil
}

// checkEventStream takes a 2xx response that is an event stream, or one JSON answer from a
// server that ignored "stream": true (whole is true then), and refuses anything else, such
// as a proxy's HTML page; the body's start goes into the message to make the
// misconfiguration visible.
func checkEventStream(resp *http.Response) (whole bool, err error) {
	ct := resp.Header.Get("Content-Type")
	mt, _, perr := mime.ParseMediaType(ct)
	switch {
	case perr == nil && mt == "text/event-stream":
		return false, nil
	case perr == nil && mt == "application/json":
		return true, nil
	}
	e := httpError(resp)
	e.Kind = KindProvider
	e.Message = fmt.Sprintf("upstream answered %q instead of text/event-stream: %s", ct, e.Message)
	return false, e
}
