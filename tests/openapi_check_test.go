package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"
)

// apiDoc is the served OpenAPI document (api/openapi.yaml), loaded once for checkingClient.
var apiDoc struct {
	once   sync.Once
	doc    *openapi3.T
	router routers.Router
	err    error
}

// loadAPIDoc loads and validates the document and builds its router.
func loadAPIDoc() (*openapi3.T, routers.Router, error) {
	apiDoc.once.Do(func() {
		doc, err := openapi3.NewLoader().LoadFromFile("../api/openapi.yaml")
		if err == nil {
			err = doc.Validate(context.Background())
		}
		if err != nil {
			apiDoc.err = fmt.Errorf("load api/openapi.yaml: %w", err)
			return
		}
		apiDoc.doc = doc
		apiDoc.router, apiDoc.err = gorillamux.NewRouter(doc)
	})
	return apiDoc.doc, apiDoc.router, apiDoc.err
}

// checkingTransport checks every answer the end-to-end tests receive against the OpenAPI
// document, as a client generated from it would read them: the status must be one the
// operation lists, a JSON body must match its schema, and every event of an event stream
// must be one the response's x-events names, its data matching that event's schema. A
// mismatch is the request's error (or, inside a stream, the read's), so the test that met
// it fails with what did not match. Requests to routes the document does not describe
// (the bad-input tests' probes) are not checked: TestOpenAPIMatchesRoutes keeps the
// document's routes and the server's the same.
type checkingTransport struct{ base http.RoundTripper }

// RoundTrip implements http.RoundTripper.
func (c checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	if err := check(req, resp); err != nil {
		resp.Body.Close()
		return nil, fmt.Errorf("openapi: %s %s answered %d: %w", req.Method, req.URL.Path, resp.StatusCode, err)
	}
	return resp, nil
}

// check validates resp against the operation req matched; it wraps an event stream's body.
func check(req *http.Request, resp *http.Response) error {
	_, router, err := loadAPIDoc()
	if err != nil {
		return err
	}
	route, params, err := router.FindRoute(req)
	if err != nil || resp.StatusCode == http.StatusRequestHeaderFieldsTooLarge {
		// Not a documented operation, or refused before any route was chosen: 431 is the
		// answer of every route (docs/api.md) and the document does not repeat it on each.
		return nil
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	in := &openapi3filter.ResponseValidationInput{
		RequestValidationInput: &openapi3filter.RequestValidationInput{
			Request: req, PathParams: params, Route: route,
			Options: &openapi3filter.Options{AuthenticationFunc: openapi3filter.NoopAuthenticationFunc},
		},
		Status: resp.StatusCode, Header: resp.Header,
		Options: &openapi3filter.Options{IncludeResponseStatus: true, ExcludeResponseBody: media != "application/json"},
	}
	if media == "application/json" {
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		in.SetBodyBytes(body)
	}
	if err := openapi3filter.ValidateResponse(req.Context(), in); err != nil {
		return err
	}
	if media == "text/event-stream" {
		events, err := streamEvents(route.Operation, resp.StatusCode)
		if err != nil {
			return err
		}
		resp.Body = &checkedStream{body: resp.Body, events: events}
	}
	return nil
}

// streamEvents is the x-events map of an operation's event-stream answer: event name to
// the schema its data must match.
func streamEvents(op *openapi3.Operation, status int) (map[string]*openapi3.Schema, error) {
	r := op.Responses.Status(status)
	if r == nil || r.Value == nil || r.Value.Content["text/event-stream"] == nil {
		return nil, errors.New("an event stream where the document has none")
	}
	raw, ok := r.Value.Content["text/event-stream"].Extensions["x-events"]
	if !ok {
		return nil, errors.New("the event stream lists no x-events")
	}
	b, err := json.Marshal(raw)
	if err != nil {
		return nil, err
	}
	var refs map[string]struct {
		Ref string `json:"$ref"`
	}
	if err := json.Unmarshal(b, &refs); err != nil {
		return nil, fmt.Errorf("x-events: %w", err)
	}
	doc, _, _ := loadAPIDoc()
	out := map[string]*openapi3.Schema{}
	for name, ref := range refs {
		s := doc.Components.Schemas[strings.TrimPrefix(ref.Ref, "#/components/schemas/")]
		if s == nil || s.Value == nil {
			return nil, fmt.Errorf("x-events %s names %q, no schema", name, ref.Ref)
		}
		out[name] = s.Value
	}
	return out, nil
}

// checkedStream is an event stream's body that checks each event as the test reads it.
type checkedStream struct {
	body    io.ReadCloser
	events  map[string]*openapi3.Schema
	pending []byte // bytes read, not yet split into whole lines
	name    string // the current frame's event name
	data    strings.Builder
	err     error
}

// Read implements io.Reader: it hands on what it read, after checking the frames it ended.
func (c *checkedStream) Read(p []byte) (int, error) {
	if c.err != nil {
		return 0, c.err
	}
	n, err := c.body.Read(p)
	c.pending = append(c.pending, p[:n]...)
	if cerr := c.lines(); cerr != nil {
		c.err = cerr
		return 0, cerr
	}
	return n, err
}

// lines takes the whole lines read so far and checks each frame they end.
func (c *checkedStream) lines() error {
	used := 0
	for {
		i := bytes.IndexByte(c.pending[used:], '\n')
		if i < 0 {
			break
		}
		line := strings.TrimSuffix(string(c.pending[used:used+i]), "\r")
		used += i + 1
		if err := c.line(line); err != nil {
			return err
		}
	}
	c.pending = append(c.pending[:0], c.pending[used:]...)
	return nil
}

// line takes one line of the stream; a blank one ends a frame.
func (c *checkedStream) line(line string) error {
	field, value, _ := strings.Cut(line, ":")
	value = strings.TrimPrefix(value, " ")
	switch {
	case line == "":
		defer func() { c.name = ""; c.data.Reset() }()
		return c.frame()
	case field == "event":
		c.name = value
	case field == "data":
		c.data.WriteString(value)
	}
	return nil
}

// frame checks one frame's data against its event's schema.
func (c *checkedStream) frame() error {
	if c.name == "" && c.data.Len() == 0 {
		return nil // a frame of retry: or id: alone
	}
	schema, ok := c.events[c.name]
	if !ok {
		return fmt.Errorf("event %q is not among the stream's x-events", c.name)
	}
	var v any
	if err := json.Unmarshal([]byte(c.data.String()), &v); err != nil {
		return fmt.Errorf("event %s: data is not JSON: %w", c.name, err)
	}
	if err := schema.VisitJSON(v, openapi3.EnableJSONSchema2020()); err != nil {
		return fmt.Errorf("event %s does not match its schema: %w\n%s", c.name, err, c.data.String())
	}
	return nil
}

// Close implements io.Closer.
func (c *checkedStream) Close() error { return c.body.Close() }
