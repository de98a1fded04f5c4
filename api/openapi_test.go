package api_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/genui"
)

// loadOpenAPI loads openapi.yaml as clients do, with a maintained OpenAPI library, and
// validates it whole: YAML that does not parse, a $ref that names nothing, a schema or an
// example that breaks the specification fail here, as they would in a client generator.
func loadOpenAPI(t *testing.T) *openapi3.T {
	t.Helper()
	raw, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := openapi3.NewLoader().LoadFromData(raw)
	if err != nil {
		t.Fatalf("openapi.yaml does not load: %v", err)
	}
	if err := doc.Validate(context.Background(), openapi3.EnableExamplesValidation()); err != nil {
		t.Fatalf("openapi.yaml is not a valid OpenAPI document: %v", err)
	}
	return doc
}

// TestOpenAPIIsValid loads and validates the served document.
func TestOpenAPIIsValid(t *testing.T) {
	doc := loadOpenAPI(t)
	if doc.Paths.Len() < 10 || doc.Components == nil || len(doc.Components.Schemas) < 10 {
		t.Fatalf("openapi.yaml loaded with %d paths, want the whole API", doc.Paths.Len())
	}
}

// documentedRoutes lists the "METHOD /path" pairs of the document.
func documentedRoutes(doc *openapi3.T) map[string]bool {
	routes := map[string]bool{}
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			routes[method+" "+path] = true
		}
	}
	return routes
}

var echoParam = regexp.MustCompile(`:([A-Za-z0-9_]+)`)

// registeredRoutes lists the "METHOD /path" pairs echo serves, with ":id" written "{id}".
// The catch-all entries echo adds for groups with middleware are not routes.
func registeredRoutes(t *testing.T, e *echo.Echo) map[string]bool {
	t.Helper()
	routes := map[string]bool{}
	for _, r := range e.Routes() {
		if r.Method == echo.RouteNotFound {
			continue
		}
		if strings.Contains(r.Path, "*") {
			t.Errorf("route %s %s has a wildcard, which the drift check cannot map to OpenAPI", r.Method, r.Path)
		}
		routes[r.Method+" "+echoParam.ReplaceAllString(r.Path, "{$1}")] = true
	}
	return routes
}

// routeDrift returns the routes only one side has, sorted, with what is missing where.
func routeDrift(documented, registered map[string]bool) []string {
	var drift []string
	for r := range registered {
		if !documented[r] {
			drift = append(drift, "registered but not in openapi.yaml: "+r)
		}
	}
	for r := range documented {
		if !registered[r] {
			drift = append(drift, "in openapi.yaml but not registered: "+r)
		}
	}
	slices.Sort(drift)
	return drift
}

func newDocServer(t *testing.T) *api.Server {
	t.Helper()
	return api.New(api.Deps{
		Auth:   auth.New([]byte("openapi-test-secret-0123456789abcdef"), "", ""),
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
}

// TestOpenAPIMatchesRoutes keeps openapi.yaml in step with routes(): every registered route
// is documented and every documented operation is registered.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	documented := documentedRoutes(loadOpenAPI(t))
	e, ok := newDocServer(t).Handler().(*echo.Echo)
	if !ok {
		t.Fatalf("Handler() is %T, want *echo.Echo", newDocServer(t).Handler())
	}
	registered := registeredRoutes(t, e)
	if len(registered) < 10 {
		t.Fatalf("only %d routes registered: %v", len(registered), registered)
	}
	for _, d := range routeDrift(documented, registered) {
		t.Error(d)
	}

	// The check itself must notice an undocumented route.
	registered["GET /api/v1/undocumented"] = true
	if d := routeDrift(documented, registered); !slices.Contains(d, "registered but not in openapi.yaml: GET /api/v1/undocumented") {
		t.Errorf("drift with an extra route = %v, want that route reported", d)
	}
}

// TestDocumentsServed checks the two documents served without a token: each with its
// content type, byte for byte the embedded file.
func TestDocumentsServed(t *testing.T) {
	openapi, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path, contentType string
		want                    []byte
	}{
		{"OpenAPI", "/api/v1/openapi.yaml", "application/yaml", openapi},
		{"GenUI schema", "/api/v1/genui/schema.json", "application/schema+json", genui.Schema()},
	}
	srv := httptest.NewServer(newDocServer(t).Handler())
	defer srv.Close()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := get(t, srv, tc.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status = %d, body %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != tc.contentType {
				t.Errorf("Content-Type = %q, want %s", ct, tc.contentType)
			}
			if !bytes.Equal([]byte(body), tc.want) {
				t.Errorf("served %s differs from the embedded file", tc.path)
			}
		})
	}
}
