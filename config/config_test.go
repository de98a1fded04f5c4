package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env turns a map into a getenv function.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func defaults() Config {
	return Config{
		Addr:          "127.0.0.1:8080",
		DataDir:       "./data",
		UpstreamModel: "gpt-4o-mini",
		UpstreamWire:  WireResponses,

		UpstreamJSONMode:    JSONModeAuto,
		SkillCallTimeout:    10 * time.Second,
		SkillDedupWindow:    10 * time.Minute,
		SkillJobConcurrency: 4,
		AnswerTTL:           time.Hour,

		UpstreamMaxAttempts:      4,
		UpstreamFirstByteTimeout: 30 * time.Second,
		UpstreamRetryAfterCap:    10 * time.Second,
		UpstreamBreakerFailures:  3,
		UpstreamBreakerCooldown:  30 * time.Second,
		MaxToolRounds:            8,
		MCPCallTimeout:           45 * time.Second,

		HeartbeatInterval:  15 * time.Second,
		ShutdownGrace:      30 * time.Second,
		LeaseTTL:           15 * time.Second,
		OutageGrace:        30 * time.Second,
		TurnTimeout:        5 * time.Minute,
		IdleTimeout:        60 * time.Second,
		MaxConcurrentTurns: 64,
		MaxBodyBytes:       1048576,
		MaxReplyBytes:      1 << 20,
		MaxTurnEvents:      100000,
		PhaseTurnLimit:     12,
		JWTMaxTTL:          24 * time.Hour,
		JWTJWKSRefresh:     5 * time.Minute,
		MaxHeaderBytes:     16384,
		HeaderTimeout:      10 * time.Second,
		BodyTimeout:        30 * time.Second,
		MaxTurnsPerUser:    0,
		UserMessageRate:    0,
		UserMessageBurst:   20,
		ReplyPolicy:        ReplyPolicyRetry,
		LogLevel:           slog.LevelInfo,
		LogFormat:          LogFormatText,
	}
}

func TestLoad(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want func(c *Config)
	}{
		{name: "defaults", want: func(*Config) {}},
		{name: "MCP servers", env: map[string]string{"PHASEFLOW_MCP_SERVERS": "strategy_engine=https://mcp.example/se, risk_lab=http://127.0.0.1:9/rl"},
			want: func(c *Config) {
				c.MCPServers = []MCPServer{{Label: "strategy_engine", URL: "https://mcp.example/se"}, {Label: "risk_lab", URL: "http://127.0.0.1:9/rl"}}
			}},
		{name: "nil env map reads nothing", env: nil, want: func(*Config) {}},
		{
			name: "every variable",
			env: map[string]string{
				"PHASEFLOW_ADDR":                  ":9000",
				"PHASEFLOW_DATA_DIR":              "/var/lib/phaseflow",
				"PHASEFLOW_DATABASE_URL":          "postgres://u:p@db:5432/pf?sslmode=disable",
				"PHASEFLOW_JWT_SECRET":            "s3cret",
				"PHASEFLOW_JWT_ISSUER":            "iss",
				"PHASEFLOW_JWT_AUDIENCE":          "aud",
				"PHASEFLOW_UPSTREAM_URL":          "https://api.openai.com/v1/",
				"PHASEFLOW_UPSTREAM_API_KEY":      "sk-123",
				"PHASEFLOW_UPSTREAM_MODEL":        "gpt-5",
				"PHASEFLOW_HEARTBEAT_INTERVAL":    "100ms",
				"PHASEFLOW_SHUTDOWN_GRACE":        "5s",
				"PHASEFLOW_TURN_TIMEOUT":          "2m",
				"PHASEFLOW_IDLE_TIMEOUT":          "10s",
				"PHASEFLOW_MAX_TURNS":             "8",
				"PHASEFLOW_MAX_BODY_BYTES":        "2048",
				"PHASEFLOW_REPLY_POLICY":          "report",
				"PHASEFLOW_SERP_OPTIONAL":         "true",
				"PHASEFLOW_LOG_LEVEL":             "DEBUG",
				"PHASEFLOW_LOG_FORMAT":            "json",
				"PHASEFLOW_JWT_JWKS_URL":          "https://idp.example/.well-known/jwks.json",
				"PHASEFLOW_JWT_MAX_TTL":           "1h",
				"PHASEFLOW_MCP_KEY_FILE":          "/etc/pf/mcp.pem",
				"PHASEFLOW_MCP_PUBLISHED_KEYS":    "/etc/pf/old.pem, /etc/pf/next.pem",
				"PHASEFLOW_CORS_ORIGINS":          "https://app.example, http://127.0.0.1:5173",
				"PHASEFLOW_MAX_HEADER_BYTES":      "8192",
				"PHASEFLOW_HEADER_TIMEOUT":        "5s",
				"PHASEFLOW_BODY_TIMEOUT":          "20s",
				"PHASEFLOW_MAX_TURNS_PER_USER":    "2",
				"PHASEFLOW_USER_MESSAGE_RATE":     "0.5",
				"PHASEFLOW_USER_MESSAGE_BURST":    "3",
				"PHASEFLOW_METRICS_TOKEN":         "m3trics",
				"PHASEFLOW_DEBUG_ADDR":            "127.0.0.1:6060",
				"PHASEFLOW_LEASE_TTL":             "3s",
				"PHASEFLOW_DB_OUTAGE_GRACE":       "45s",
				"PHASEFLOW_UPSTREAM_JSON_MODE":    "structured",
				"PHASEFLOW_SKILL_CALL_TIMEOUT":    "3s",
				"PHASEFLOW_SKILL_DEDUP_WINDOW":    "1h",
				"PHASEFLOW_SKILL_JOB_CONCURRENCY": "2",
			},
			want: func(c *Config) {
				c.Addr = ":9000"
				c.DataDir = "/var/lib/phaseflow"
				c.DatabaseURL = "postgres://u:p@db:5432/pf?sslmode=disable"
				c.JWTSecret = "s3cret"
				c.JWTIssuer, c.JWTAudience = "iss", "aud"
				c.UpstreamURL = "https://api.openai.com/v1"
				c.UpstreamAPIKey = "sk-123"
				c.UpstreamModel = "gpt-5"
				c.UpstreamJSONMode = JSONModeStructured
				c.Endpoints = []Endpoint{{ID: 1, URL: "https://api.openai.com/v1", APIKey: "sk-123", Model: "gpt-5", Wire: WireResponses, Priority: 1, JSONMode: JSONModeStructured}}
				c.SkillCallTimeout, c.SkillDedupWindow, c.SkillJobConcurrency = 3*time.Second, time.Hour, 2
				c.HeartbeatInterval = 100 * time.Millisecond
				c.ShutdownGrace = 5 * time.Second
				c.TurnTimeout = 2 * time.Minute
				c.IdleTimeout = 10 * time.Second
				c.MaxConcurrentTurns = 8
				c.MaxBodyBytes = 2048
				c.ReplyPolicy = ReplyPolicyReport
				c.SerpQueriesOptional = true
				c.LogLevel = slog.LevelDebug
				c.LogFormat = LogFormatJSON
				c.JWTJWKSURL = "https://idp.example/.well-known/jwks.json"
				c.JWTMaxTTL = time.Hour
				c.MCPKeyFile = "/etc/pf/mcp.pem"
				c.MCPPublishedKeys = []string{"/etc/pf/old.pem", "/etc/pf/next.pem"}
				c.CORSOrigins = []string{"https://app.example", "http://127.0.0.1:5173"}
				c.MaxHeaderBytes = 8192
				c.HeaderTimeout = 5 * time.Second
				c.BodyTimeout = 20 * time.Second
				c.MaxTurnsPerUser = 2
				c.UserMessageRate = 0.5
				c.UserMessageBurst = 3
				c.MetricsToken = "m3trics"
				c.DebugAddr = "127.0.0.1:6060"
				c.LeaseTTL, c.OutageGrace = 3*time.Second, 45*time.Second
			},
		},
		{
			name: "empty variable counts as unset",
			env:  map[string]string{"PHASEFLOW_ADDR": "", "PHASEFLOW_MAX_TURNS": ""},
			want: func(*Config) {},
		},
		{
			name: "flag overrides env",
			env:  map[string]string{"PHASEFLOW_ADDR": ":9000", "PHASEFLOW_REPLY_POLICY": "off", "PHASEFLOW_SERP_OPTIONAL": "1"},
			args: []string{"--addr", ":7000", "-reply-policy=report", "--serp-optional=false"},
			want: func(c *Config) {
				c.Addr = ":7000"
				c.ReplyPolicy = ReplyPolicyReport
			},
		},
		{
			name: "bare bool flag",
			args: []string{"--serp-optional", "--log-level", "warn"},
			want: func(c *Config) { c.SerpQueriesOptional = true; c.LogLevel = slog.LevelWarn },
		},
		{
			name: "sqlite and file database URLs",
			args: []string{"--database-url", "file:pf.db?_pragma=busy_timeout(5000)"},
			want: func(c *Config) { c.DatabaseURL = "file:pf.db?_pragma=busy_timeout(5000)" },
		},
		{
			name: "sqlite URL",
			env:  map[string]string{"PHASEFLOW_DATABASE_URL": "sqlite:///tmp/x.db"},
			want: func(c *Config) { c.DatabaseURL = "sqlite:///tmp/x.db" },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var getenv func(string) string
			if tt.env != nil {
				getenv = env(tt.env)
			}
			got, err := Load(tt.args, getenv)
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			want := defaults()
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Load =\n%+v\nwant\n%+v", got, want)
			}
		})
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{name: "MCP server without a URL", env: map[string]string{"PHASEFLOW_MCP_SERVERS": "strategy_engine"},
			wantErr: `PHASEFLOW_MCP_SERVERS: "strategy_engine" is not label=url`},
		{name: "env bad duration", env: map[string]string{"PHASEFLOW_HEARTBEAT_INTERVAL": "x"},
			wantErr: `PHASEFLOW_HEARTBEAT_INTERVAL: time: invalid duration "x"`},
		{name: "flag bad duration", args: []string{"--heartbeat-interval", "x"},
			wantErr: `invalid value "x" for flag --heartbeat-interval: time: invalid duration "x"`},
		{name: "public url not http", env: map[string]string{"PHASEFLOW_PUBLIC_URL": "ftp://x"},
			wantErr: `PHASEFLOW_PUBLIC_URL: "ftp://x" is not an http or https URL (want scheme://host[:port][/path])`},
		{name: "answer ttl below a minute", env: map[string]string{"PHASEFLOW_ANSWER_TTL": "30s"},
			wantErr: "PHASEFLOW_ANSWER_TTL: must be at least 1m0s, got 30s"},
		{name: "heartbeat below 100ms", env: map[string]string{"PHASEFLOW_HEARTBEAT_INTERVAL": "50ms"},
			wantErr: "PHASEFLOW_HEARTBEAT_INTERVAL: must be at least 100ms, got 50ms"},
		{name: "zero shutdown grace", env: map[string]string{"PHASEFLOW_SHUTDOWN_GRACE": "0s"},
			wantErr: "PHASEFLOW_SHUTDOWN_GRACE: must be positive, got 0s"},
		{name: "negative turn timeout", args: []string{"--turn-timeout=-1m"},
			wantErr: "-turn-timeout: must be positive, got -1m0s"},
		{name: "zero idle timeout", env: map[string]string{"PHASEFLOW_IDLE_TIMEOUT": "0"},
			wantErr: "PHASEFLOW_IDLE_TIMEOUT: must be positive"},
		{name: "max turns not a number", env: map[string]string{"PHASEFLOW_MAX_TURNS": "many"},
			wantErr: `PHASEFLOW_MAX_TURNS: invalid integer "many"`},
		{name: "max turns zero", args: []string{"--max-turns", "0"},
			wantErr: "-max-turns: must be positive, got 0"},
		{name: "max body negative", env: map[string]string{"PHASEFLOW_MAX_BODY_BYTES": "-1"},
			wantErr: "PHASEFLOW_MAX_BODY_BYTES: must be positive, got -1"},
		{name: "unknown reply policy", env: map[string]string{"PHASEFLOW_REPLY_POLICY": "ignore"},
			wantErr: `PHASEFLOW_REPLY_POLICY: unknown reply policy "ignore"`},
		{name: "bad bool", env: map[string]string{"PHASEFLOW_SERP_OPTIONAL": "yes"},
			wantErr: `PHASEFLOW_SERP_OPTIONAL: invalid boolean "yes"`},
		{name: "unknown log level", args: []string{"--log-level", "trace"},
			wantErr: `-log-level: unknown log level "trace"`},
		{name: "unknown log format", env: map[string]string{"PHASEFLOW_LOG_FORMAT": "xml"},
			wantErr: `PHASEFLOW_LOG_FORMAT: unknown log format "xml"`},
		{name: "database URL scheme", env: map[string]string{"PHASEFLOW_DATABASE_URL": "mysql://u:p@h/db"},
			wantErr: `PHASEFLOW_DATABASE_URL: unsupported scheme "mysql"`},
		{name: "database URL without scheme", env: map[string]string{"PHASEFLOW_DATABASE_URL": "host=db password=pw"},
			wantErr: "PHASEFLOW_DATABASE_URL: missing scheme"},
		{name: "upstream URL relative", env: map[string]string{"PHASEFLOW_UPSTREAM_URL": "api.openai.com/v1"},
			wantErr: "PHASEFLOW_UPSTREAM_URL: want an absolute http or https URL"},
		{name: "upstream URL ftp", args: []string{"--upstream-url", "ftp://host/v1"},
			wantErr: "-upstream-url: want an absolute http or https URL"},
		{name: "addr without port", env: map[string]string{"PHASEFLOW_ADDR": "localhost"},
			wantErr: "PHASEFLOW_ADDR: address localhost: missing port in address"},
		{name: "empty data dir flag", args: []string{"--data-dir="},
			wantErr: "-data-dir: must not be empty"},
		{name: "JWKS URL over plain http to another host", env: map[string]string{"PHASEFLOW_JWT_JWKS_URL": "http://idp.example/jwks"},
			wantErr: `PHASEFLOW_JWT_JWKS_URL: want an https URL (http only for loopback hosts), got "http://idp.example/jwks"`},
		{name: "JWKS URL relative", env: map[string]string{"PHASEFLOW_JWT_JWKS_URL": "/jwks"},
			wantErr: `PHASEFLOW_JWT_JWKS_URL: not an absolute URL`},
		{name: "max TTL below a minute", env: map[string]string{"PHASEFLOW_JWT_MAX_TTL": "30s"},
			wantErr: `PHASEFLOW_JWT_MAX_TTL: must be at least 1m0s, got 30s`},
		{name: "CORS wildcard", env: map[string]string{"PHASEFLOW_CORS_ORIGINS": "*"},
			wantErr: `PHASEFLOW_CORS_ORIGINS: "*" is not an origin (want scheme://host[:port], no path or wildcard)`},
		{name: "CORS origin with a path", env: map[string]string{"PHASEFLOW_CORS_ORIGINS": "https://app.example/"},
			wantErr: `PHASEFLOW_CORS_ORIGINS: "https://app.example/" is not an origin (want scheme://host[:port], no path or wildcard)`},
		{name: "per-user turns negative", env: map[string]string{"PHASEFLOW_MAX_TURNS_PER_USER": "-1"},
			wantErr: `PHASEFLOW_MAX_TURNS_PER_USER: must not be negative, got -1`},
		{name: "message rate negative", env: map[string]string{"PHASEFLOW_USER_MESSAGE_RATE": "-1"},
			wantErr: `PHASEFLOW_USER_MESSAGE_RATE: must be a number of at least 0, got "-1"`},
		{name: "message rate NaN", env: map[string]string{"PHASEFLOW_USER_MESSAGE_RATE": "NaN"},
			wantErr: `PHASEFLOW_USER_MESSAGE_RATE: must be a number of at least 0, got "NaN"`},
		{name: "header budget too small", env: map[string]string{"PHASEFLOW_MAX_HEADER_BYTES": "100"},
			wantErr: `PHASEFLOW_MAX_HEADER_BYTES: must be at least 4096, got 100`},
		{name: "zero body timeout", env: map[string]string{"PHASEFLOW_BODY_TIMEOUT": "0s"},
			wantErr: `PHASEFLOW_BODY_TIMEOUT: must be positive, got 0s`},
		{name: "unknown flag", args: []string{"--nope"},
			wantErr: "flag provided but not defined: --nope"},
		{name: "positional argument", args: []string{"extra"},
			wantErr: `unexpected argument "extra"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Load(tt.args, env(tt.env))
			if err == nil {
				t.Fatalf("Load succeeded, want error containing %q", tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			if errors.Is(err, flag.ErrHelp) {
				t.Errorf("error %q claims to be a help request", err)
			}
		})
	}
}

func TestLoadURLErrorHidesPassword(t *testing.T) {
	_, err := Load(nil, env(map[string]string{"PHASEFLOW_UPSTREAM_URL": "ftp://u:hunter2@host/"}))
	if err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Fatalf("error = %v, want an error without the password", err)
	}
}

func TestLoadHelp(t *testing.T) {
	for _, arg := range []string{"-h", "--help"} {
		t.Run(arg, func(t *testing.T) {
			_, err := Load([]string{arg}, nil)
			if !errors.Is(err, flag.ErrHelp) {
				t.Fatalf("error = %v, want one matching flag.ErrHelp", err)
			}
			for _, want := range []string{"usage: phaseflow serve", "--heartbeat-interval", "$PHASEFLOW_HEARTBEAT_INTERVAL", `(default "15s")`} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("help text lacks %q:\n%s", want, err)
				}
			}
		})
	}
}

func TestLoadFlagsOwnFlags(t *testing.T) {
	fs := flag.NewFlagSet("phaseflow token", flag.ContinueOnError)
	sub := fs.String("sub", "", "subject of the token")
	cfg, err := LoadFlags(fs, []string{"--sub", "alice", "--data-dir", "/tmp/x"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if *sub != "alice" || cfg.DataDir != "/tmp/x" {
		t.Errorf("sub = %q, DataDir = %q", *sub, cfg.DataDir)
	}
	_, err = LoadFlags(flag.NewFlagSet("phaseflow token", flag.ContinueOnError), []string{"-h"}, nil)
	if !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("error = %v, want help", err)
	}
	fs = flag.NewFlagSet("phaseflow token", flag.ContinueOnError)
	fs.String("sub", "", "subject of the token")
	_, err = LoadFlags(fs, []string{"-h"}, nil)
	if !strings.Contains(err.Error(), "--sub string\n        subject of the token") {
		t.Errorf("help text lacks the command's own flag:\n%s", err)
	}
}

func TestUsageListsEverySetting(t *testing.T) {
	u := Usage()
	for _, s := range settings() {
		if !strings.Contains(u, "--"+s.flag) || !strings.Contains(u, "$"+s.env) {
			t.Errorf("usage lacks --%s or $%s", s.flag, s.env)
		}
	}
}

func TestConfigLogValueRedacts(t *testing.T) {
	cfg, err := Load(nil, env(map[string]string{
		"PHASEFLOW_DATABASE_URL":     "postgres://pf:dbpass123@db:5432/pf?sslmode=disable",
		"PHASEFLOW_JWT_SECRET":       "jwtsecret123",
		"PHASEFLOW_UPSTREAM_URL":     "https://proxy.example/v1?api_key=querykey123",
		"PHASEFLOW_UPSTREAM_API_KEY": "sk-upstream123",
		"PHASEFLOW_METRICS_TOKEN":    "metricstoken123",
	}))
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{"dbpass123", "jwtsecret123", "querykey123", "sk-upstream123", "metricstoken123"}
	for _, format := range []LogFormat{LogFormatText, LogFormatJSON} {
		t.Run(string(format), func(t *testing.T) {
			var buf bytes.Buffer
			c := cfg
			c.LogFormat = format
			c.Logger(&buf).Info("config", "config", c)
			out := buf.String()
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("log output contains secret %q:\n%s", s, out)
				}
			}
			for _, want := range []string{"pf:xxxxx@db:5432", "[redacted]", "heartbeat_interval", "reply_policy"} {
				if !strings.Contains(out, want) {
					t.Errorf("log output lacks %q:\n%s", want, out)
				}
			}
		})
	}
}

func TestSecretPrintableForms(t *testing.T) {
	tests := []struct {
		name   string
		secret Secret
		want   string
	}{
		{name: "set", secret: "hunter2", want: "[redacted]"},
		{name: "empty", secret: "", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forms := map[string]string{
				"%v": fmt.Sprintf("%v", tt.secret),
				//lint:ignore S1025 the test checks what each verb of fmt prints
				"%s":  fmt.Sprintf("%s", tt.secret),
				"%+v": fmt.Sprintf("%+v", struct{ S Secret }{tt.secret}),
				"%#v": fmt.Sprintf("%#v", tt.secret),
				"%x":  fmt.Sprintf("%x", tt.secret),
			}
			j, err := json.Marshal(struct{ S Secret }{tt.secret})
			if err != nil {
				t.Fatal(err)
			}
			forms["json"] = string(j)
			var buf bytes.Buffer
			slog.New(slog.NewTextHandler(&buf, nil)).Info("m", "s", tt.secret)
			forms["slog"] = buf.String()
			for name, got := range forms {
				if tt.secret != "" && strings.Contains(got, "hunter2") {
					t.Errorf("%s form leaks the secret: %q", name, got)
				}
			}
			if got := tt.secret.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if string(j) != `{"S":"`+tt.want+`"}` {
				t.Errorf("JSON = %s", j)
			}
			if tt.secret.Reveal() != string(tt.secret) {
				t.Errorf("Reveal() = %q", tt.secret.Reveal())
			}
		})
	}
}

func TestRedactURL(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "empty", in: "", want: ""},
		{name: "password", in: "postgres://user:pw@host/db", want: "postgres://user:xxxxx@host/db"},
		{name: "user only", in: "postgres://user@host/db", want: "postgres://user@host/db"},
		{name: "query password", in: "postgres://host/db?password=pw&sslmode=disable", want: "postgres://host/db?password=xxxxx&sslmode=disable"},
		{name: "no credentials", in: "https://api.openai.com/v1", want: "https://api.openai.com/v1"},
		{name: "unparseable", in: "postgres://u:p@[::1/db", want: "[redacted]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := RedactURL(tt.in); got != tt.want {
				t.Errorf("RedactURL(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestLoggerLevel(t *testing.T) {
	cfg := defaults()
	cfg.LogLevel = slog.LevelWarn
	var buf bytes.Buffer
	l := cfg.Logger(&buf)
	l.Info("hidden")
	l.Warn("shown")
	if strings.Contains(buf.String(), "hidden") || !strings.Contains(buf.String(), "shown") {
		t.Errorf("output = %q", buf.String())
	}
}
