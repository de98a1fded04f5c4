package scripted

import (
	"context"
	"net/http"
	"strings"
)

// faultPrefix starts a path that applies a fault to every request made under it:
// POST /fault/http_500/v1/responses is POST /v1/responses with [[fault:http_500]]. A test
// gives each of several endpoints its own base URL on one mock (…/fault/http_429/v1 and
// …/v1), so one answers 429 to every request while the other is healthy, whatever the
// user wrote.
const faultPrefix = "/fault/"

// pathFaultKey is the context key of a request's path fault.
type pathFaultKey struct{}

// pathFaultValue is the fault a path named and the path the client asked for.
type pathFaultValue struct {
	name, original string
}

// withPathFault strips a /fault/NAME prefix from r's path and keeps NAME (and the path as
// asked) in its context; other requests are returned as they are.
func withPathFault(r *http.Request) *http.Request {
	rest, ok := strings.CutPrefix(r.URL.Path, faultPrefix)
	if !ok {
		return r
	}
	name, tail, _ := strings.Cut(rest, "/")
	ctx := context.WithValue(r.Context(), pathFaultKey{}, pathFaultValue{name: name, original: r.URL.Path})
	r2 := r.Clone(ctx)
	r2.URL.Path, r2.URL.RawPath = "/"+tail, ""
	return r2
}

// pathFault returns the fault named by the request's path, "" for none.
func pathFault(r *http.Request) string {
	v, _ := r.Context().Value(pathFaultKey{}).(pathFaultValue)
	return v.name
}

// originalPath returns the path the client asked for.
func originalPath(r *http.Request) string {
	if v, ok := r.Context().Value(pathFaultKey{}).(pathFaultValue); ok {
		return v.original
	}
	return r.URL.Path
}
