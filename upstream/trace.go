package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// MaxTraceBody caps the body a [Sent] keeps (256 KiB): enough for the instructions, the
// history and the tools of a turn, bounded so one trace cannot grow without limit.
const MaxTraceBody = 256 << 10

// Redacted replaces every secret in a [Sent].
const Redacted = "[redacted]"

// Sent is one HTTP request sent to the upstream, as [WithTrace] reports it. It holds the
// request as sent, unexported: [Sent.Redacted] gives the redacted copy, the only form of it
// that leaves this package, so no caller ever holds an API key or an x-mcp-context token
// from it. Redacting parses the whole body, so a caller does it off the path from the turn
// to the upstream's first token (the orchestrator: on a goroutine of its own, while the
// request is on the wire).
type Sent struct {
	method string
	url    url.URL
	header http.Header
	body   []byte // the request's own body, never changed after it was built
	at     time.Time
}

// Trace is a [Sent] redacted. The Authorization header keeps its scheme ("Bearer
// [redacted]"), other headers that carry credentials are replaced whole, secret query
// parameters and URL credentials too, and in the JSON body every value of a "headers"
// object (the MCP tools' x-mcp-context tokens) and of a key that names a credential. The
// body is otherwise the bytes sent, cut at MaxTraceBody (Truncated).
type Trace struct {
	Method    string
	URL       string
	Header    http.Header
	Body      string
	Truncated bool
	At        time.Time
}

// Redacted is the trace of s, secrets replaced.
func (s Sent) Redacted() Trace {
	t := Trace{Method: s.method, URL: redactURL(&s.url), Header: redactHeader(s.header), At: s.at}
	t.Body, t.Truncated = capBody(redactBody(s.body))
	return t
}

type traceKey struct{}

// WithTrace returns a context under which every request a client of this package sends is
// reported to fn before it goes out (each failover endpoint and each round of a chat tool
// loop is one request). fn must not block and must be safe to call from another goroutine
// than the one consuming the stream.
func WithTrace(ctx context.Context, fn func(Sent)) context.Context {
	return context.WithValue(ctx, traceKey{}, fn)
}

// trace reports hreq with its body to the context's trace function, if any.
func trace(ctx context.Context, hreq *http.Request, body []byte) {
	fn, ok := ctx.Value(traceKey{}).(func(Sent))
	if !ok {
		return
	}
	fn(Sent{method: hreq.Method, url: *hreq.URL, header: hreq.Header.Clone(), body: body, at: time.Now().UTC()})
}

// secretName reports a header, query parameter or JSON key that carries a credential.
func secretName(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"authorization", "api-key", "api_key", "apikey", "x-mcp-context", "token", "secret", "password", "cookie"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return n == "key"
}

func redactHeader(h http.Header) http.Header {
	out := h.Clone()
	for name, vs := range out {
		if !secretName(name) {
			continue
		}
		for i, v := range vs {
			if scheme, _, ok := strings.Cut(v, " "); ok && strings.EqualFold(name, "Authorization") {
				vs[i] = scheme + " " + Redacted
			} else {
				vs[i] = Redacted
			}
		}
	}
	return out
}

func redactURL(u *url.URL) string {
	c := *u
	if c.User != nil {
		c.User = url.User(Redacted)
	}
	q := c.Query()
	changed := false
	for name := range q {
		if secretName(name) {
			q.Set(name, Redacted)
			changed = true
		}
	}
	if changed {
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// redactBody replaces, in a JSON body, the string values of every "headers" object and of
// every key naming a credential, byte for byte in place: the rest stays exactly as sent.
// A body whose secrets are written in another form than encoding/json's (escapes it would
// not use) cannot be patched in place; it is encoded again with the values replaced.
func redactBody(body []byte) []byte {
	if !holdsSecrets(body) {
		return body // every request unless MCP servers are configured
	}
	var v any
	if json.Unmarshal(body, &v) != nil {
		return body
	}
	var secrets []string
	collectSecrets(v, false, &secrets)
	if !slices.ContainsFunc(secrets, func(s string) bool { return s != Redacted }) {
		return body // nothing to hide: the check below would parse the same body again
	}
	out := body
	for _, s := range secrets {
		quoted, err := json.Marshal(s)
		if err != nil || s == Redacted {
			continue
		}
		out = bytes.ReplaceAll(out, quoted, []byte(`"`+Redacted+`"`))
	}
	if left := secretsIn(out); len(left) == 0 {
		return out
	}
	redactValues(v, false)
	again, err := json.Marshal(v)
	if err != nil {
		return []byte(`"` + Redacted + `"`)
	}
	return again
}

// secretsIn lists the secret values a JSON body still holds (nil for a body that is not
// JSON: redactBody had parsed it, so that cannot happen).
func secretsIn(body []byte) []string {
	var v any
	if json.Unmarshal(body, &v) != nil {
		return nil
	}
	var left []string
	collectSecrets(v, false, &left)
	return slices.DeleteFunc(left, func(s string) bool { return s == Redacted })
}

// holdsSecrets reports whether body may hold a value redactBody would replace. It parses
// with fastjson, which builds no Go maps: a turn's request body (its instructions are
// kilobytes) cost encoding/json a full decode into an any, for nothing on the usual
// request. It sees every string collectSecrets would (duplicate keys included, which a Go
// map would keep one of), so false is safe; a body fastjson cannot parse says true and goes
// the careful way.
func holdsSecrets(body []byte) bool {
	var p fastjson.Parser
	v, err := p.ParseBytes(body)
	if err != nil {
		return true
	}
	return anySecret(v, false)
}

// anySecret reports whether v holds a string other than Redacted where collectSecrets
// would collect it.
func anySecret(v *fastjson.Value, under bool) bool {
	switch v.Type() {
	case fastjson.TypeObject:
		found := false
		v.GetObject().Visit(func(k []byte, x *fastjson.Value) {
			found = found || anySecret(x, under || string(k) == "headers" || secretName(string(k)))
		})
		return found
	case fastjson.TypeArray:
		for _, x := range v.GetArray() {
			if anySecret(x, under) {
				return true
			}
		}
	case fastjson.TypeString:
		return under && string(v.GetStringBytes()) != Redacted
	}
	return false
}

// redactValues replaces, in a decoded JSON value, what collectSecrets would collect.
func redactValues(v any, under bool) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			secret := under || k == "headers" || secretName(k)
			if _, isString := x.(string); isString && secret {
				t[k] = Redacted
				continue
			}
			redactValues(x, secret)
		}
	case []any:
		for i, x := range t {
			if _, isString := x.(string); isString && under {
				t[i] = Redacted
				continue
			}
			redactValues(x, under)
		}
	}
}

// collectSecrets gathers the secret strings of v; under is true inside a "headers" object
// or the value of a credential key, to any depth.
func collectSecrets(v any, under bool, out *[]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			collectSecrets(x, under || k == "headers" || secretName(k), out)
		}
	case []any:
		for _, x := range t {
			collectSecrets(x, under, out)
		}
	case string:
		if under {
			*out = append(*out, t)
		}
	}
}

// capBody cuts b to MaxTraceBody bytes, at a UTF-8 boundary.
func capBody(b []byte) (string, bool) {
	if len(b) <= MaxTraceBody {
		return string(b), false
	}
	cut := MaxTraceBody
	for cut > 0 && !utf8.RuneStart(b[cut]) {
		cut--
	}
	return string(b[:cut]), true
}
