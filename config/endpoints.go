package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strconv"
	"strings"
)

// Wire is the API an upstream endpoint speaks.
type Wire string

// The wires accepted in an endpoint's "wire" and by --upstream-wire.
const (
	// WireResponses is the OpenAI Responses API (POST {url}/responses).
	WireResponses Wire = "responses"
	// WireChat is the Chat Completions API (POST {url}/chat/completions); Phaseflow runs
	// the MCP tools itself.
	WireChat Wire = "chat"
)

// JSONMode is how an endpoint is asked for a JSON skill's object (docs/json-skills.md).
type JSONMode string

// The modes accepted in an endpoint's "json_mode" and by --upstream-json-mode.
const (
	// JSONModeAuto picks by provider: structured for OpenAI, text_json for the others.
	JSONModeAuto JSONMode = "auto"
	// JSONModeStructured sends the output schema as response_format / text.format.
	JSONModeStructured JSONMode = "structured"
	// JSONModeTextJSON sends no format and puts the skill's hard rules in the prompt.
	JSONModeTextJSON JSONMode = "text_json"
)

// parseJSONMode checks a mode; empty means auto.
func parseJSONMode(v string) (JSONMode, error) {
	switch m := JSONMode(v); m {
	case "":
		return JSONModeAuto, nil
	case JSONModeAuto, JSONModeStructured, JSONModeTextJSON:
		return m, nil
	}
	return JSONModeAuto, fmt.Errorf("unknown JSON mode %q (want auto, structured or text_json)", v)
}

// Endpoint is one upstream the router may send turns to, from PHASEFLOW_UPSTREAMS_FILE or
// from the single-endpoint shorthand (PHASEFLOW_UPSTREAM_URL, _API_KEY, _MODEL, _WIRE).
type Endpoint struct {
	// ID names the endpoint in status: routed and completed (endpoint_id).
	ID int
	// URL is the API's base URL without a trailing slash.
	URL string
	// APIKey is the bearer key, read from the file or from the variable it names.
	APIKey Secret
	// Model is the model name sent to this endpoint.
	Model string
	// Wire is the API the endpoint speaks.
	Wire Wire
	// Priority orders the endpoints: lower first; equal priorities share the load.
	Priority int
	// JSONMode is how JSON skills ask this endpoint for their object.
	JSONMode JSONMode
}

// LogValue logs the endpoint with its key redacted.
func (e Endpoint) LogValue() slog.Value {
	return slog.GroupValue(
		slog.Int("id", e.ID), slog.String("url", RedactURL(e.URL)), slog.String("api_key", e.APIKey.String()),
		slog.String("model", e.Model), slog.String("wire", string(e.Wire)), slog.Int("priority", e.Priority),
		slog.String("json_mode", string(e.JSONMode)),
	)
}

// String prints the endpoint with its key and any credential in its URL redacted, so
// %v is as safe as the log.
func (e Endpoint) String() string {
	return fmt.Sprintf("{id:%d url:%s api_key:%s model:%s wire:%s priority:%d json_mode:%s}", e.ID, RedactURL(e.URL), e.APIKey, e.Model, e.Wire, e.Priority, e.JSONMode)
}

// endpointsValue logs a list of endpoints as one group per endpoint (slog does not call
// LogValue on the elements of a slice, which would print the URLs unredacted).
func endpointsValue(eps []Endpoint) slog.Value {
	attrs := make([]slog.Attr, len(eps))
	for i, e := range eps {
		attrs[i] = slog.Attr{Key: strconv.Itoa(e.ID), Value: e.LogValue()}
	}
	return slog.GroupValue(attrs...)
}

// endpointsFile is the shape of PHASEFLOW_UPSTREAMS_FILE; deployments write it, so these
// names are fixed.
type endpointsFile struct {
	Endpoints []fileEndpoint `json:"endpoints"`
}

// fileEndpoint is one endpoint as written in the file.
type fileEndpoint struct {
	ID        int    `json:"id"`
	URL       string `json:"url"`
	APIKey    string `json:"api_key"`
	APIKeyEnv string `json:"api_key_env"`
	Model     string `json:"model"`
	Wire      Wire   `json:"wire"`
	Priority  int    `json:"priority"`
	JSONMode  string `json:"json_mode"`
}

// resolveEndpoints fills c.Endpoints from the upstreams file or the shorthand, once all
// settings are read; none means the built-in scripted upstream. Keys named by api_key_env
// are read through getenv here, so nothing else reads the environment.
func resolveEndpoints(c *Config, getenv func(string) string) error {
	switch {
	case c.UpstreamsFile != "" && c.UpstreamURL != "":
		return errors.New("PHASEFLOW_UPSTREAMS_FILE and PHASEFLOW_UPSTREAM_URL are both set: list every endpoint in the file, or use the URL alone")
	case c.UpstreamsFile != "":
		eps, err := readEndpoints(c.UpstreamsFile, getenv)
		if err != nil {
			return fmt.Errorf("PHASEFLOW_UPSTREAMS_FILE %s: %w", c.UpstreamsFile, err)
		}
		c.Endpoints = eps
	case c.UpstreamURL != "":
		c.Endpoints = []Endpoint{{ID: 1, URL: c.UpstreamURL, APIKey: c.UpstreamAPIKey, Model: c.UpstreamModel, Wire: c.UpstreamWire, Priority: 1, JSONMode: c.UpstreamJSONMode}}
	}
	if c.UpstreamChain && (len(c.Endpoints) > 1 || (len(c.Endpoints) == 1 && c.Endpoints[0].Wire != WireResponses)) {
		return errors.New("PHASEFLOW_UPSTREAM_CHAIN needs a single endpoint on the responses wire: a response id is known only to the endpoint that made it")
	}
	return nil
}

// readEndpoints reads and checks the upstreams file. Unknown fields are refused, so a
// misspelt "api-key" is an error rather than a missing key; so is anything after the
// object.
func readEndpoints(path string, getenv func(string) string) ([]Endpoint, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return parseEndpoints(raw, getenv)
}

// parseEndpoints decodes and checks the upstreams file's content.
func parseEndpoints(raw []byte, getenv func(string) string) ([]Endpoint, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	var f endpointsFile
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("not the endpoints JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("not the endpoints JSON: data after the object")
	}
	if len(f.Endpoints) == 0 {
		return nil, errors.New(`"endpoints" lists no endpoint`)
	}
	seen := map[int]bool{}
	out := make([]Endpoint, 0, len(f.Endpoints))
	for i, fe := range f.Endpoints {
		e, err := fe.check(getenv)
		if err != nil {
			return nil, fmt.Errorf("endpoint %d (id %d): %w", i+1, fe.ID, err)
		}
		if seen[e.ID] {
			return nil, fmt.Errorf("endpoint %d: id %d is used twice", i+1, e.ID)
		}
		seen[e.ID] = true
		out = append(out, e)
	}
	return out, nil
}

// check validates one endpoint of the file, naming the field at fault.
func (fe fileEndpoint) check(getenv func(string) string) (Endpoint, error) {
	e := Endpoint{ID: fe.ID, Model: fe.Model, Wire: fe.Wire, Priority: fe.Priority}
	if fe.ID <= 0 {
		return e, fmt.Errorf("id: must be a positive integer, got %d", fe.ID)
	}
	u, err := endpointURL(fe.URL)
	if err != nil {
		return e, fmt.Errorf("url: %w", err)
	}
	e.URL = u
	if strings.TrimSpace(fe.Model) == "" {
		return e, errors.New("model: must not be empty")
	}
	switch fe.Wire {
	case "":
		e.Wire = WireResponses
	case WireResponses, WireChat:
	default:
		return e, fmt.Errorf("wire: %q is not responses or chat", fe.Wire)
	}
	if e.JSONMode, err = parseJSONMode(fe.JSONMode); err != nil {
		return e, fmt.Errorf("json_mode: %w", err)
	}
	key, err := fe.key(getenv)
	if err != nil {
		return e, err
	}
	e.APIKey = key
	return e, nil
}

// key returns the endpoint's key: api_key as written, or the variable api_key_env names,
// which must then be set. Neither is fine (local servers need no key); both is an error.
func (fe fileEndpoint) key(getenv func(string) string) (Secret, error) {
	switch {
	case fe.APIKey != "" && fe.APIKeyEnv != "":
		return "", errors.New("api_key and api_key_env: give one, not both")
	case fe.APIKeyEnv != "":
		v := ""
		if getenv != nil {
			v = getenv(fe.APIKeyEnv)
		}
		if v == "" {
			return "", fmt.Errorf("api_key_env: variable %s is not set", fe.APIKeyEnv)
		}
		return Secret(v), nil
	}
	return Secret(fe.APIKey), nil
}

// endpointURL checks an absolute http(s) URL and drops its trailing slash. Errors never
// quote the URL whole, which may hold a key in its query.
func endpointURL(v string) (string, error) {
	u, err := url.Parse(v)
	if err != nil {
		return "", errors.New("not a valid URL")
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return "", fmt.Errorf("want an absolute http or https URL, got %q", RedactURL(v))
	}
	return strings.TrimRight(v, "/"), nil
}

// setWire accepts one of the Wire constants.
func setWire(c *Config, v string) error {
	w := Wire(v)
	if w != WireResponses && w != WireChat {
		return fmt.Errorf("unknown wire %q (want responses or chat)", v)
	}
	c.UpstreamWire = w
	return nil
}
