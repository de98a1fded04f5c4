package api_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api"
	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/genui"
)

// httpMethods are the operation keys of an OpenAPI path item.
var httpMethods = []string{"get", "put", "post", "delete", "options", "head", "patch", "trace"}

// pathItemFields are the other keys a path item may hold besides operations.
var pathItemFields = []string{"summary", "description", "servers", "parameters"}

// documentedRoutes lists the "METHOD /path" pairs of an OpenAPI document written in the
// layout openapi.yaml promises: under the top-level "paths:" key, a path is a line
// "  /path:" and an operation a line "    get:". Anything else at those two indents is an
// error, so a layout change cannot hide a path from the scan.
func documentedRoutes(doc string) (map[string]bool, error) {
	routes := map[string]bool{}
	inPaths, path := false, ""
	sc := bufio.NewScanner(strings.NewReader(doc))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " ")
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		indent := len(line) - len(trimmed)
		if indent == 0 {
			inPaths, path = line == "paths:", ""
			continue
		}
		if !inPaths {
			continue
		}
		key, isKey := strings.CutSuffix(trimmed, ":")
		switch indent {
		case 2:
			if !isKey || !strings.HasPrefix(key, "/") || strings.ContainsAny(key, " \"'") {
				return nil, &layoutError{n, line, `a path line "  /path:"`}
			}
			path = key
		case 4:
			switch {
			case isKey && slices.Contains(httpMethods, key):
				routes[strings.ToUpper(key)+" "+path] = true
			case slices.Contains(pathItemFields, strings.SplitN(trimmed, ":", 2)[0]):
			default:
				return nil, &layoutError{n, line, `an operation line "    get:" or a path item field`}
			}
		}
	}
	return routes, sc.Err()
}

type layoutError struct {
	line int
	text string
	want string
}

func (e *layoutError) Error() string {
	return fmt.Sprintf("openapi.yaml line %d: want %s, got %q", e.line, e.want, strings.TrimSpace(e.text))
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
	doc, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	documented, err := documentedRoutes(string(doc))
	if err != nil {
		t.Fatal(err)
	}
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

// TestOpenAPIRefsResolve checks that every local $ref names a component the document
// defines, since no YAML library is at hand to load the document whole.
func TestOpenAPIRefsResolve(t *testing.T) {
	doc, err := os.ReadFile("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defined := map[string]bool{}
	inComponents, kind := false, ""
	for _, line := range strings.Split(string(doc), "\n") {
		trimmed := strings.TrimLeft(line, " ")
		if trimmed == "" || strings.HasPrefix(trimmed, "#") {
			continue
		}
		switch indent := len(line) - len(trimmed); {
		case indent == 0:
			inComponents = line == "components:"
		case inComponents && indent == 2:
			kind = strings.TrimSuffix(trimmed, ":")
		case inComponents && indent == 4 && strings.HasSuffix(trimmed, ":"):
			defined["#/components/"+kind+"/"+strings.TrimSuffix(trimmed, ":")] = true
		}
	}
	refs := regexp.MustCompile(`\$ref: "(#/[^"]+)"`).FindAllStringSubmatch(string(doc), -1)
	if len(refs) == 0 {
		t.Fatal("no $ref found; has the quoting changed?")
	}
	for _, m := range refs {
		if !defined[m[1]] {
			t.Errorf("$ref %s is not defined", m[1])
		}
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
