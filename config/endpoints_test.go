package config

import (
	"errors"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// writeFile writes an upstreams file and returns its path.
func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "upstreams.json")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// issueExample is the file of issue 12, with a key for the second endpoint.
const issueExample = `{"endpoints": [
  {"id": 1, "url": "https://api.openai.com/v1", "api_key_env": "OPENAI_API_KEY", "model": "gpt-4o-mini", "wire": "responses", "priority": 1},
  {"id": 2, "url": "https://openrouter.ai/api/v1/", "api_key": "sk-or-file", "model": "meta-llama/llama-3.3-70b-instruct", "wire": "chat", "priority": 2, "json_mode": "structured"}
]}`

func TestLoadEndpoints(t *testing.T) {
	tests := []struct {
		name string
		file string // written to a temp file and named by PHASEFLOW_UPSTREAMS_FILE when set
		env  map[string]string
		want []Endpoint
	}{
		{name: "the issue's two endpoints", file: issueExample, env: map[string]string{"OPENAI_API_KEY": "sk-env"},
			want: []Endpoint{
				{ID: 1, URL: "https://api.openai.com/v1", APIKey: "sk-env", Model: "gpt-4o-mini", Wire: WireResponses, Priority: 1, JSONMode: JSONModeAuto},
				{ID: 2, URL: "https://openrouter.ai/api/v1", APIKey: "sk-or-file", Model: "meta-llama/llama-3.3-70b-instruct", Wire: WireChat, Priority: 2, JSONMode: JSONModeStructured},
			}},
		{name: "wire defaults to responses and a key is optional", file: `{"endpoints":[{"id":7,"url":"http://127.0.0.1:11434/v1","model":"qwen3:8b"}]}`,
			want: []Endpoint{{ID: 7, URL: "http://127.0.0.1:11434/v1", Model: "qwen3:8b", Wire: WireResponses, JSONMode: JSONModeAuto}}},
		{name: "the shorthand on the chat wire", env: map[string]string{"PHASEFLOW_UPSTREAM_URL": "http://ollama:11434/v1", "PHASEFLOW_UPSTREAM_WIRE": "chat", "PHASEFLOW_UPSTREAM_MODEL": "qwen3:8b", "PHASEFLOW_UPSTREAM_JSON_MODE": "text_json"},
			want: []Endpoint{{ID: 1, URL: "http://ollama:11434/v1", Model: "qwen3:8b", Wire: WireChat, Priority: 1, JSONMode: JSONModeTextJSON}}},
		{name: "nothing configured means the built-in upstream", want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = v
			}
			if tt.file != "" {
				e["PHASEFLOW_UPSTREAMS_FILE"] = writeFile(t, tt.file)
			}
			c, err := Load(nil, env(e))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, c.Endpoints); diff != "" {
				t.Errorf("endpoints (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLoadEndpointsErrors(t *testing.T) {
	ep := func(fields string) string { return `{"endpoints":[{` + fields + `}]}` }
	good := `"id":1,"url":"https://api.openai.com/v1","model":"m"`
	tests := []struct {
		name    string
		file    string
		env     map[string]string
		wantErr string
	}{
		{name: "not JSON", file: "endpoints:", wantErr: "not the endpoints JSON"},
		{name: "unknown field", file: ep(good + `,"api-key":"x"`), wantErr: `unknown field "api-key"`},
		{name: "trailing data", file: ep(good) + ` {}`, wantErr: "data after the object"},
		{name: "unknown JSON mode", file: ep(good + `,"json_mode":"xml"`), wantErr: `json_mode: unknown JSON mode "xml"`},
		{name: "no endpoint", file: `{"endpoints":[]}`, wantErr: `"endpoints" lists no endpoint`},
		{name: "id missing", file: ep(`"url":"https://a.example/v1","model":"m"`), wantErr: "endpoint 1 (id 0): id: must be a positive integer"},
		{name: "relative url", file: ep(`"id":3,"url":"api.openai.com/v1","model":"m"`), wantErr: "endpoint 1 (id 3): url: want an absolute http or https URL"},
		{name: "model missing", file: ep(`"id":3,"url":"https://a.example/v1"`), wantErr: "endpoint 1 (id 3): model: must not be empty"},
		{name: "unknown wire", file: ep(good + `,"wire":"grpc"`), wantErr: `endpoint 1 (id 1): wire: "grpc" is not responses or chat`},
		{name: "both keys", file: ep(good + `,"api_key":"a","api_key_env":"K"`), wantErr: "api_key and api_key_env: give one, not both"},
		{name: "key variable unset", file: ep(good + `,"api_key_env":"NOT_SET_KEY"`), wantErr: "api_key_env: variable NOT_SET_KEY is not set"},
		{name: "duplicate id", file: `{"endpoints":[{` + good + `},{` + good + `}]}`, wantErr: "endpoint 2: id 1 is used twice"},
		{name: "file and URL", file: ep(good), env: map[string]string{"PHASEFLOW_UPSTREAM_URL": "https://a.example/v1"}, wantErr: "PHASEFLOW_UPSTREAMS_FILE and PHASEFLOW_UPSTREAM_URL are both set"},
		{name: "chain with two endpoints", file: `{"endpoints":[{` + good + `},{"id":2,"url":"https://b.example/v1","model":"m"}]}`, env: map[string]string{"PHASEFLOW_UPSTREAM_CHAIN": "true"}, wantErr: "PHASEFLOW_UPSTREAM_CHAIN needs a single endpoint"},
		{name: "chain on the chat wire", env: map[string]string{"PHASEFLOW_UPSTREAM_URL": "https://a.example/v1", "PHASEFLOW_UPSTREAM_WIRE": "chat", "PHASEFLOW_UPSTREAM_CHAIN": "1"}, wantErr: "PHASEFLOW_UPSTREAM_CHAIN needs a single endpoint on the responses wire"},
		{name: "unknown shorthand wire", env: map[string]string{"PHASEFLOW_UPSTREAM_WIRE": "soap"}, wantErr: `PHASEFLOW_UPSTREAM_WIRE: unknown wire "soap"`},
		{name: "missing file", env: map[string]string{"PHASEFLOW_UPSTREAMS_FILE": "/nonexistent/upstreams.json"}, wantErr: "PHASEFLOW_UPSTREAMS_FILE /nonexistent/upstreams.json: open"},
		{name: "zero tool rounds", env: map[string]string{"PHASEFLOW_MAX_TOOL_ROUNDS": "0"}, wantErr: "PHASEFLOW_MAX_TOOL_ROUNDS: must be positive, got 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := map[string]string{}
			for k, v := range tt.env {
				e[k] = v
			}
			if tt.file != "" {
				e["PHASEFLOW_UPSTREAMS_FILE"] = writeFile(t, tt.file)
			}
			_, err := Load(nil, env(e))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
			}
			if errors.Is(err, flag.ErrHelp) {
				t.Fatal("a bad file claims to be a help request")
			}
		})
	}
}

func TestEndpointKeysAreNeverPrinted(t *testing.T) {
	path := writeFile(t, `{"endpoints":[{"id":1,"url":"https://gw.example/v1?key=urlkey123","api_key":"sk-filekey123","model":"m"}]}`)
	c, err := Load(nil, env(map[string]string{"PHASEFLOW_UPSTREAMS_FILE": path}))
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	c.Logger(&b).Info("config", "config", c, "endpoint", c.Endpoints[0])
	b.WriteString(c.Endpoints[0].String())
	for _, secret := range []string{"urlkey123", "sk-filekey123"} {
		if strings.Contains(b.String(), secret) {
			t.Fatalf("output holds %q:\n%s", secret, b.String())
		}
	}
}

// FuzzParseEndpoints checks the upstreams file parser: it must never panic, and whatever
// it accepts has positive unique ids, an absolute http(s) URL, a model and a known wire.
func FuzzParseEndpoints(f *testing.F) {
	f.Add([]byte(issueExample))
	f.Add([]byte(`{"endpoints":[{"id":1,"url":"http://h/v1","model":"m","wire":"chat","priority":-3}]}`))
	f.Add([]byte(`{"endpoints":null}`))
	f.Add([]byte(`{"endpoints":[{"id":1e3,"url":"http://[::1]:9/","model":" "}]}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		eps, err := parseEndpoints(raw, func(string) string { return "k" })
		if err != nil {
			return
		}
		seen := map[int]bool{}
		for _, e := range eps {
			u, perr := url.Parse(e.URL)
			if e.ID <= 0 || seen[e.ID] || perr != nil || u.Host == "" || strings.TrimSpace(e.Model) == "" || (e.Wire != WireResponses && e.Wire != WireChat) {
				t.Fatalf("accepted a bad endpoint %+v", e)
			}
			seen[e.ID] = true
		}
	})
}
