package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Kind says what kind of failure an upstream call had. The stream handler maps each kind
// to the error code clients are told, in one place; this package does not speak the
// client vocabulary.
type Kind int

// The failure kinds.
const (
	// KindProvider: the provider refused the request (4xx) or the stream failed: an error
	// event, response.failed, response.incomplete, a stream cut before its terminal event,
	// or a response that is not an event stream.
	KindProvider Kind = iota
	// KindRateLimited: HTTP 429. RetryAfter says how long the provider asked us to wait.
	KindRateLimited
	// KindUnavailable: the provider could not be reached or answered 5xx.
	KindUnavailable
	// KindTimeout: a network timeout (response headers too slow, dial or read timeout).
	KindTimeout
	// KindRefused: the model declined to answer (a refusal on either wire); Message is the
	// model's refusal, which it wrote for the user.
	KindRefused
	// KindTruncated: the output limit cut the answer (finish_reason length, or an
	// incomplete response for max_output_tokens); the text so far was delivered.
	KindTruncated
)

// Kinds lists every failure kind.
func Kinds() []Kind {
	return []Kind{KindProvider, KindRateLimited, KindUnavailable, KindTimeout, KindRefused, KindTruncated}
}

// String names the kind for logs.
func (k Kind) String() string {
	switch k {
	case KindRateLimited:
		return "rate_limited"
	case KindUnavailable:
		return "unavailable"
	case KindTimeout:
		return "timeout"
	case KindRefused:
		return "refused"
	case KindTruncated:
		return "truncated"
	}
	return "provider"
}

// Sentinels for errors.Is, one per kind: errors.Is(err, ErrRateLimited) holds for every
// *Error whose Kind is KindRateLimited.
var (
	ErrRateLimited = errors.New("upstream: rate limited")
	ErrUnavailable = errors.New("upstream: unavailable")
	ErrTimeout     = errors.New("upstream: timeout")
	ErrProvider    = errors.New("upstream: provider error")
	ErrRefused     = errors.New("upstream: the model refused")
	ErrTruncated   = errors.New("upstream: the output limit cut the answer")
)

// Error is a failed upstream call, before or during the stream. Kind decides what the client
// is told; the other fields are for logs and for retry decisions, never for clients (a
// provider's message can name its internals or echo a key).
type Error struct {
	// Kind is the kind of failure.
	Kind Kind
	// HTTPStatus is the response status when the failure was an HTTP error, else 0.
	HTTPStatus int
	// UpstreamCode is the provider's own code (rate_limit_exceeded, server_error,
	// previous_response_not_found, max_output_tokens, …), or its error type when it sent
	// no code.
	UpstreamCode string
	// Message is the provider's message, or ours when the provider gave none.
	Message string
	// RetryAfter is the wait the provider asked for (Retry-After or retry-after-ms), 0
	// when it asked for none.
	RetryAfter time.Duration

	err error // the transport or read error behind it, if any
}

// Error formats the failure for logs: code, status, provider code and message.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("upstream: ")
	b.WriteString(e.Kind.String())
	if e.HTTPStatus != 0 {
		fmt.Fprintf(&b, " (HTTP %d)", e.HTTPStatus)
	}
	if e.UpstreamCode != "" {
		fmt.Fprintf(&b, " [%s]", e.UpstreamCode)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.err != nil {
		b.WriteString(": ")
		b.WriteString(e.err.Error())
	}
	return b.String()
}

// Unwrap returns the transport or read error behind e, so errors.Is(err, io.ErrUnexpectedEOF)
// and similar checks see through it.
func (e *Error) Unwrap() error { return e.err }

// Is matches the sentinel of e's Kind.
func (e *Error) Is(target error) bool {
	switch target {
	case ErrRateLimited:
		return e.Kind == KindRateLimited
	case ErrUnavailable:
		return e.Kind == KindUnavailable
	case ErrTimeout:
		return e.Kind == KindTimeout
	case ErrProvider:
		return e.Kind == KindProvider
	case ErrRefused:
		return e.Kind == KindRefused
	case ErrTruncated:
		return e.Kind == KindTruncated
	}
	return false
}

// maxErrorBody bounds how much of a non-2xx body is read: enough for any JSON error, not
// enough for a misconfigured proxy's HTML page to matter.
const maxErrorBody = 64 << 10

// errorBody is the provider's error JSON, {"error":{"message","type","param","code"}}.
// code is a string in OpenAI's answers but null or a number elsewhere, hence RawMessage.
type errorBody struct {
	Error struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	} `json:"error"`
}

// httpError builds the *Error of a response that is not a 2xx event stream: it reads the
// (bounded) body for the provider's message and the retry headers for the wait.
func httpError(resp *http.Response) *Error {
	body, readErr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	e := &Error{
		Kind:       statusCode(resp.StatusCode),
		HTTPStatus: resp.StatusCode,
		RetryAfter: retryAfter(resp.Header),
	}
	var eb errorBody
	if json.Unmarshal(body, &eb) == nil && (eb.Error.Message != "" || eb.Error.Type != "") {
		e.Message = eb.Error.Message
		e.UpstreamCode = firstNonEmpty(rawString(eb.Error.Code), eb.Error.Type)
		if billingStop(e.UpstreamCode) || billingStop(eb.Error.Type) {
			e.Kind = KindProvider // a 429 that waiting will not end
		}
	} else {
		e.Message = firstNonEmpty(truncate(string(bytes.TrimSpace(body)), 300), http.StatusText(resp.StatusCode))
		if readErr != nil {
			e.err = fmt.Errorf("read error body: %w", readErr)
		}
	}
	return e
}

// statusCode maps an HTTP status to an error code.
func statusCode(status int) Kind {
	switch {
	case status == http.StatusTooManyRequests:
		return KindRateLimited
	case status >= 500:
		return KindUnavailable
	default:
		return KindProvider
	}
}

// codeKind is the one table from a provider's error code, reported inside a stream on either
// wire (a Responses error event or response.failed, a Chat Completions error chunk), to
// the failure kind, so the same failure gets the same client code whichever wire brought
// it: an HTTP status given as the code (OpenRouter's chunks) maps as statusCode does, a
// named rate limit is a rate limit, and any other code is the provider's failure (a
// stream that has begun is not retried elsewhere because the provider called its own
// failure a server error). A billing or quota stop is the provider's failure, not a rate
// limit: retrying in a moment, as a rate limit tells clients to, will not lift it.
func codeKind(code string) Kind {
	if n, err := strconv.Atoi(code); err == nil {
		return statusCode(n)
	}
	switch strings.ToLower(code) {
	case "rate_limit_exceeded", "rate_limited", "rate_limit_error", "too_many_requests":
		return KindRateLimited
	}
	return KindProvider
}

// billingStop reports a provider's code for an account that cannot pay for the call:
// OpenAI's insufficient_quota (sent with HTTP 429) and billing codes, the credit and
// balance codes of OpenRouter and DeepSeek (HTTP 402).
func billingStop(code string) bool {
	switch strings.ToLower(code) {
	case "insufficient_quota", "billing_hard_limit_reached", "billing_not_active", "insufficient_balance",
		"insufficient_credits", "payment_required":
		return true
	}
	return false
}

// retryAfter reads the wait the provider asked for. retry-after-ms is finer than
// Retry-After and wins when both are present, as in openai-go; Retry-After may be seconds or
// an HTTP date.
func retryAfter(h http.Header) time.Duration {
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s > 0 {
			return time.Duration(s * float64(time.Second))
		}
		return 0
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d
		}
	}
	return 0
}

// transportError classifies a failure of the request itself (no response): timeouts are
// upstream_timeout, everything else (refused, DNS, TLS, reset) upstream_unavailable.
func transportError(err error) *Error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: KindTimeout, Message: "no response from the upstream in time", err: err}
	}
	return &Error{Kind: KindUnavailable, Message: "cannot reach the upstream", err: err}
}

// readError classifies a failure while reading the stream body.
func readError(err error) *Error {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &Error{Kind: KindTimeout, Message: "upstream stream timed out", err: err}
	}
	return &Error{Kind: KindProvider, Message: "upstream stream broke off", err: err}
}

// rawString renders a JSON scalar as text: a string without its quotes, a number as
// written, null as "".
func rawString(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(raw)
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

// truncate shortens s to at most n bytes without splitting a UTF-8 sequence.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
