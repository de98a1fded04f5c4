package config

import (
	"flag"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
)

// setting describes one Config field: its flag, its environment variable, its default and
// how a string becomes a checked value. Checking inside set means every error can name the
// flag or variable the bad value came from.
type setting struct {
	flag   string
	env    string
	def    string
	arg    string // placeholder for the value in the usage text
	usage  string
	isBool bool
	set    func(c *Config, v string) error
}

// settings lists every setting in usage order. It is a function, not a package variable, so
// there is no shared mutable state.
func settings() []setting {
	return []setting{
		{flag: "addr", env: "PHASEFLOW_ADDR", def: "127.0.0.1:8080", arg: "host:port",
			usage: "address the HTTP server listens on",
			set:   func(c *Config, v string) error { c.Addr = v; return hostPort(v) }},
		{flag: "data-dir", env: "PHASEFLOW_DATA_DIR", def: "./data", arg: "dir",
			usage: "folder for local state (SQLite database, generated JWT secret)",
			set:   setString(func(c *Config) *string { return &c.DataDir })},
		{flag: "database-url", env: "PHASEFLOW_DATABASE_URL", arg: "url",
			usage: "postgres://, postgresql://, sqlite: or file: URL; empty means SQLite in the data dir",
			set:   setDatabaseURL},
		{flag: "jwt-secret", env: "PHASEFLOW_JWT_SECRET", arg: "secret",
			usage: "HS256 signing key; empty means one generated and kept in <data-dir>/jwt-secret",
			set:   func(c *Config, v string) error { c.JWTSecret = Secret(v); return nil }},
		{flag: "jwt-issuer", env: "PHASEFLOW_JWT_ISSUER", arg: "iss",
			usage: `required "iss" claim; empty means not checked`,
			set:   func(c *Config, v string) error { c.JWTIssuer = v; return nil }},
		{flag: "jwt-audience", env: "PHASEFLOW_JWT_AUDIENCE", arg: "aud",
			usage: `required "aud" claim; empty means not checked`,
			set:   func(c *Config, v string) error { c.JWTAudience = v; return nil }},
		{flag: "jwt-jwks-url", env: "PHASEFLOW_JWT_JWKS_URL", arg: "url",
			usage: "an identity provider's JWK Set URL: user tokens signed RS256/ES256 by its keys are accepted",
			set:   setJWKSURL},
		{flag: "jwt-jwks-refresh", env: "PHASEFLOW_JWT_JWKS_REFRESH", def: "5m", arg: "duration",
			usage: "how often the identity provider's JWK Set is fetched again, so a removed key stops being trusted (at least 1m)",
			set:   setDuration(time.Minute, func(c *Config) *time.Duration { return &c.JWTJWKSRefresh })},
		{flag: "jwt-max-ttl", env: "PHASEFLOW_JWT_MAX_TTL", def: "24h", arg: "duration",
			usage: "longest accepted user-token lifetime (exp - iat, or exp - now without iat; at least 1m)",
			set:   setDuration(time.Minute, func(c *Config) *time.Duration { return &c.JWTMaxTTL })},
		{flag: "mcp-key-file", env: "PHASEFLOW_MCP_KEY_FILE", arg: "file",
			usage: "PEM private key (Ed25519 or ECDSA P-256) signing x-mcp-context tokens; empty means one generated in <data-dir>/mcp-context-key.pem",
			set:   func(c *Config, v string) error { c.MCPKeyFile = v; return nil }},
		{flag: "mcp-published-keys", env: "PHASEFLOW_MCP_PUBLISHED_KEYS", arg: "file,…",
			usage: "PEM key files also published at /.well-known/jwks.json but never used to sign (key rotation)",
			set:   setList(func(c *Config) *[]string { return &c.MCPPublishedKeys }, nil)},
		{flag: "public-url", env: "PHASEFLOW_PUBLIC_URL", arg: "url",
			usage: "the server's address as phones reach it, for the answer links of watched agents' questions (default: http:// and the listen address)",
			set:   setPublicURL},
		{flag: "answer-ttl", env: "PHASEFLOW_ANSWER_TTL", def: "1h", arg: "duration",
			usage: "how long a watched agent's question may be answered from its notification, and its answer typed (at least 1m)",
			set:   setDuration(time.Minute, func(c *Config) *time.Duration { return &c.AnswerTTL })},
		{flag: "cors-origins", env: "PHASEFLOW_CORS_ORIGINS", arg: "origin,…",
			usage: "browser origins (scheme://host[:port]) that get CORS answers; empty means none",
			set:   setList(func(c *Config) *[]string { return &c.CORSOrigins }, checkOrigin)},
		{flag: "upstream-url", env: "PHASEFLOW_UPSTREAM_URL", arg: "url",
			usage: "model API base URL, e.g. https://api.openai.com/v1; empty means the built-in scripted upstream",
			set:   setUpstreamURL},
		{flag: "upstream-api-key", env: "PHASEFLOW_UPSTREAM_API_KEY", arg: "key",
			usage: "API key sent to the upstream",
			set:   func(c *Config, v string) error { c.UpstreamAPIKey = Secret(v); return nil }},
		{flag: "upstream-model", env: "PHASEFLOW_UPSTREAM_MODEL", def: "gpt-4o-mini", arg: "name",
			usage: "model name sent upstream",
			set:   setString(func(c *Config) *string { return &c.UpstreamModel })},
		{flag: "upstream-wire", env: "PHASEFLOW_UPSTREAM_WIRE", def: "responses", arg: "responses|chat",
			usage: "API the --upstream-url endpoint speaks: the Responses API, or Chat Completions with MCP tools run by Phaseflow",
			set:   setWire},
		{flag: "upstream-json-mode", env: "PHASEFLOW_UPSTREAM_JSON_MODE", def: "auto", arg: "auto|structured|text_json",
			usage: "how the --upstream-url endpoint is asked for a JSON skill's object: the schema as response_format (structured), hard rules in the prompt (text_json), or by provider (auto: structured for OpenAI)",
			set:   setJSONMode},
		{flag: "upstreams-file", env: "PHASEFLOW_UPSTREAMS_FILE", arg: "path",
			usage: `JSON file listing several endpoints, {"endpoints":[{"id","url","api_key" or "api_key_env","model","wire","priority"}]}; replaces --upstream-url`,
			set:   func(c *Config, v string) error { c.UpstreamsFile = v; return nil }},
		{flag: "upstream-max-attempts", env: "PHASEFLOW_UPSTREAM_MAX_ATTEMPTS", def: "4", arg: "n",
			usage: "requests one turn may make over all endpoints before the first byte (failover and retries)",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.UpstreamMaxAttempts })},
		{flag: "upstream-first-byte-timeout", env: "PHASEFLOW_UPSTREAM_FIRST_BYTE_TIMEOUT", def: "30s", arg: "duration",
			usage: "move to the next endpoint when one sends nothing for this long",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.UpstreamFirstByteTimeout })},
		{flag: "upstream-retry-after-cap", env: "PHASEFLOW_UPSTREAM_RETRY_AFTER_CAP", def: "10s", arg: "duration",
			usage: "longest Retry-After honoured before trying the same endpoint again",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.UpstreamRetryAfterCap })},
		{flag: "upstream-breaker-failures", env: "PHASEFLOW_UPSTREAM_BREAKER_FAILURES", def: "3", arg: "n",
			usage: "unhealthy answers in a row (connect error, 429, 5xx, time-out) that open an endpoint's circuit breaker",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.UpstreamBreakerFailures })},
		{flag: "upstream-breaker-cooldown", env: "PHASEFLOW_UPSTREAM_BREAKER_COOLDOWN", def: "30s", arg: "duration",
			usage: "how long an open breaker skips its endpoint before one probe request",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.UpstreamBreakerCooldown })},
		{flag: "max-tool-rounds", env: "PHASEFLOW_MAX_TOOL_ROUNDS", def: "8", arg: "n",
			usage: "rounds of MCP tool calls Phaseflow runs for a chat-wire endpoint in one request",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.MaxToolRounds })},
		{flag: "mcp-call-timeout", env: "PHASEFLOW_MCP_CALL_TIMEOUT", def: "45s", arg: "duration",
			usage: "time limit of one MCP tool call Phaseflow runs (chat wire); keep it below --idle-timeout",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.MCPCallTimeout })},
		{flag: "upstream-chain", env: "PHASEFLOW_UPSTREAM_CHAIN", def: "false", isBool: true,
			usage: "send previous_response_id instead of the history (only for upstreams that store responses, such as OpenAI)",
			set:   setBool(func(c *Config) *bool { return &c.UpstreamChain })},
		{flag: "mcp-servers", env: "PHASEFLOW_MCP_SERVERS", arg: "label=url,…",
			usage: "MCP servers the model may call through the upstream, each sent an x-mcp-context token",
			set:   setMCPServers},
		{flag: "phase-turn-limit", env: "PHASEFLOW_PHASE_TURN_LIMIT", def: "12", arg: "n",
			usage: "turns in one phase before the phase's nudge replaces its normal prompt",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.PhaseTurnLimit })},
		{flag: "stop-min-sharpe", env: "PHASEFLOW_STOP_MIN_SHARPE", arg: "ratio",
			usage: "lowest Sharpe ratio the latest backtest may report before the strategy phase moves on (unset: not checked)",
			set:   setThreshold(false, func(c *Config) **float64 { return &c.StopMinSharpe })},
		{flag: "stop-max-drawdown", env: "PHASEFLOW_STOP_MAX_DRAWDOWN", arg: "fraction",
			usage: "largest maximum drawdown (0.2 is 20%) the latest backtest may report before the strategy phase moves on (unset: not checked)",
			set:   setThreshold(true, func(c *Config) **float64 { return &c.StopMaxDrawdown })},
		{flag: "stop-max-scenario-loss", env: "PHASEFLOW_STOP_MAX_SCENARIO_LOSS", arg: "fraction",
			usage: "largest loss (0.1 is 10%) any scenario of the latest stress run may report before the stress test passes (unset: not checked)",
			set:   setThreshold(true, func(c *Config) **float64 { return &c.StopMaxScenarioLoss })},
		{flag: "heartbeat-interval", env: "PHASEFLOW_HEARTBEAT_INTERVAL", def: "15s", arg: "duration",
			usage: "time between SSE heartbeats (at least 100ms)",
			set:   setDuration(100*time.Millisecond, func(c *Config) *time.Duration { return &c.HeartbeatInterval })},
		{flag: "shutdown-grace", env: "PHASEFLOW_SHUTDOWN_GRACE", def: "30s", arg: "duration",
			usage: "how long shutdown waits for running turns",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.ShutdownGrace })},
		{flag: "lease-ttl", env: "PHASEFLOW_LEASE_TTL", def: "15s", arg: "duration",
			usage: "how long a running generation's claim holds without renewal; a dead replica's turns end within it plus a third (at least 1s)",
			set:   setDuration(time.Second, func(c *Config) *time.Duration { return &c.LeaseTTL })},
		{flag: "db-outage-grace", env: "PHASEFLOW_DB_OUTAGE_GRACE", def: "30s", arg: "duration",
			usage: "how long running turns wait out an unreachable database before they end interrupted",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.OutageGrace })},
		{flag: "turn-timeout", env: "PHASEFLOW_TURN_TIMEOUT", def: "5m", arg: "duration",
			usage: "hard time limit for one turn",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.TurnTimeout })},
		{flag: "idle-timeout", env: "PHASEFLOW_IDLE_TIMEOUT", def: "60s", arg: "duration",
			usage: "end a turn when the upstream sends nothing for this long",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.IdleTimeout })},
		{flag: "max-turns", env: "PHASEFLOW_MAX_TURNS", def: "64", arg: "n",
			usage: "generations running at once; more are refused with 503",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.MaxConcurrentTurns })},
		{flag: "max-turns-per-user", env: "PHASEFLOW_MAX_TURNS_PER_USER", def: "0", arg: "n",
			usage: "generations one user runs at once; more are refused with 429 (0: only the global limit)",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.MaxTurnsPerUser })},
		{flag: "user-call-budget", env: "PHASEFLOW_USER_CALL_BUDGET", def: "0", arg: "calls",
			usage: "model calls one user's turns, retries and JSON skills may make a UTC day, across replicas; past it new work is refused with 429 (0: no budget)",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.UserCallBudget })},
		{flag: "user-message-rate", env: "PHASEFLOW_USER_MESSAGE_RATE", def: "0", arg: "per-minute",
			usage: "messages a minute one user may post on average; more are refused with 429 (0: no rate)",
			set:   setRate},
		{flag: "user-message-burst", env: "PHASEFLOW_USER_MESSAGE_BURST", def: "20", arg: "n",
			usage: "messages one user may post at once before the rate applies",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.UserMessageBurst })},
		{flag: "max-header-bytes", env: "PHASEFLOW_MAX_HEADER_BYTES", def: "16384", arg: "n",
			usage: "largest accepted request line and headers; larger gets 431 (at least 4096)",
			set:   setIntAtLeast(4096, func(c *Config) *int { return &c.MaxHeaderBytes })},
		{flag: "header-timeout", env: "PHASEFLOW_HEADER_TIMEOUT", def: "10s", arg: "duration",
			usage: "time a client may take to send its request headers",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.HeaderTimeout })},
		{flag: "body-timeout", env: "PHASEFLOW_BODY_TIMEOUT", def: "30s", arg: "duration",
			usage: "time a client may take to send a request body; slower ones get 408",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.BodyTimeout })},
		{flag: "debug-addr", env: "PHASEFLOW_DEBUG_ADDR", arg: "host:port",
			usage: "serve net/http/pprof on this separate address (off when empty; keep it private)",
			set: func(c *Config, v string) error {
				c.DebugAddr = v
				if v == "" {
					return nil
				}
				return hostPort(v)
			}},
		{flag: "metrics-token", env: "PHASEFLOW_METRICS_TOKEN", arg: "token",
			usage: "bearer token GET /metrics requires; empty means /metrics is open",
			set:   func(c *Config, v string) error { c.MetricsToken = Secret(v); return nil }},
		{flag: "max-body-bytes", env: "PHASEFLOW_MAX_BODY_BYTES", def: "1048576", arg: "n",
			usage: "largest accepted request body; larger gets 413",
			set:   setMaxBodyBytes},
		{flag: "max-reply-bytes", env: "PHASEFLOW_MAX_REPLY_BYTES", def: "1048576", arg: "n",
			usage: "largest model reply (and /validate reply) in bytes; past it a turn ends with reply_too_large, its text so far kept",
			set:   setIntAtLeast(1024, func(c *Config) *int { return &c.MaxReplyBytes })},
		{flag: "max-turn-events", env: "PHASEFLOW_MAX_TURN_EVENTS", def: "100000", arg: "n",
			usage: "most events one turn may send (deltas and tool-call states, its attempts together); past it the turn ends with reply_too_large",
			set:   setIntAtLeast(100, func(c *Config) *int { return &c.MaxTurnEvents })},
		{flag: "max-streams-per-user", env: "PHASEFLOW_MAX_STREAMS_PER_USER", def: "0", arg: "n",
			usage: "event streams one user may hold open on a replica; more are refused with 429 too_many_streams (0: no cap; e.g. 32 where users share a server)",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.MaxStreamsPerUser })},
		{flag: "max-connections", env: "PHASEFLOW_MAX_CONNECTIONS", def: "0", arg: "n",
			usage: "connections a replica holds open; past it new ones get 503 with Retry-After (0: the file limit less a reserve of 256)",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.MaxConnections })},
		{flag: "max-connections-per-client", env: "PHASEFLOW_MAX_CONNECTIONS_PER_CLIENT", def: "0", arg: "n",
			usage: "one client address's share of the connections (0: none); past it its idle connections yield, then it is refused",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.MaxConnectionsPerClient })},
		{flag: "trusted-proxies", env: "PHASEFLOW_TRUSTED_PROXIES", def: "", arg: "cidr,…",
			usage: "proxies (CIDR prefixes) whose X-Forwarded-For names the client, for the per-client share",
			set:   setPrefixes},
		{flag: "reply-policy", env: "PHASEFLOW_REPLY_POLICY", def: "retry", arg: "retry|report|off",
			usage: "what to do with a reply that fails validation",
			set:   setReplyPolicy},
		{flag: "serp-optional", env: "PHASEFLOW_SERP_OPTIONAL", def: "false", isBool: true,
			usage: "accept replies without serp queries",
			set:   setBool(func(c *Config) *bool { return &c.SerpQueriesOptional })},
		{flag: "skill-call-timeout", env: "PHASEFLOW_SKILL_CALL_TIMEOUT", def: "10s", arg: "duration",
			usage: "time limit of one model call of a JSON skill (upstream_timeout beyond)",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.SkillCallTimeout })},
		{flag: "skill-dedup-window", env: "PHASEFLOW_SKILL_DEDUP_WINDOW", def: "10m", arg: "duration",
			usage: "how long the same terminal question from the same source_id counts as a duplicate",
			set:   setDuration(0, func(c *Config) *time.Duration { return &c.SkillDedupWindow })},
		{flag: "skill-max-output-tokens", env: "PHASEFLOW_SKILL_MAX_OUTPUT_TOKENS", def: "0", arg: "n",
			usage: "output limit of every JSON skill's model call, in tokens (0: each skill's own max_output_tokens)",
			set:   setIntAtLeast(0, func(c *Config) *int { return &c.SkillMaxOutputTokens })},
		{flag: "skill-job-concurrency", env: "PHASEFLOW_SKILL_JOB_CONCURRENCY", def: "4", arg: "n",
			usage: "inputs of one JSON-skill job run at once",
			set:   setIntAtLeast(1, func(c *Config) *int { return &c.SkillJobConcurrency })},
		{flag: "log-level", env: "PHASEFLOW_LOG_LEVEL", def: "info", arg: "debug|info|warn|error",
			usage: "minimum log level",
			set:   setLogLevel},
		{flag: "log-format", env: "PHASEFLOW_LOG_FORMAT", def: "text", arg: "text|json",
			usage: "log output format",
			set:   setLogFormat},
	}
}

// Usage returns the help text for every config flag and its environment variable, for a
// command's -h output.
func Usage() string {
	var b strings.Builder
	writeSettings(&b, settings())
	return b.String()
}

// usageText is the text a -h gives: the command's own flags (those on fs that are not config
// settings) followed by the config flags.
func usageText(fs *flag.FlagSet, specs []setting) string {
	var b strings.Builder
	fmt.Fprintf(&b, "usage: %s [flags]\n", fs.Name())
	writeOwnFlags(&b, ownFlags(fs, specs))
	b.WriteString("\nsettings (each flag can also be given as its environment variable; the flag wins):\n")
	writeSettings(&b, specs)
	return b.String()
}

// writeOwnFlags lists a command's own flags, each as --name.
func writeOwnFlags(b *strings.Builder, own []*flag.Flag) {
	if len(own) == 0 {
		return
	}
	b.WriteString("\nflags:\n")
	for _, f := range own {
		arg, usage := flag.UnquoteUsage(f)
		fmt.Fprintf(b, "  --%s", f.Name)
		if arg != "" {
			fmt.Fprintf(b, " %s", arg)
		}
		if f.DefValue != "" && f.DefValue != "false" {
			fmt.Fprintf(b, " (default %q)", f.DefValue)
		}
		fmt.Fprintf(b, "\n        %s\n", usage)
	}
}

// ownFlags returns the flags of fs that LoadFlags did not register.
func ownFlags(fs *flag.FlagSet, specs []setting) []*flag.Flag {
	var own []*flag.Flag
	fs.VisitAll(func(f *flag.Flag) {
		if !slices.ContainsFunc(specs, func(s setting) bool { return s.flag == f.Name }) {
			own = append(own, f)
		}
	})
	return own
}

// writeSettings writes two lines a setting, in the style of flag.PrintDefaults.
func writeSettings(b *strings.Builder, specs []setting) {
	for _, s := range specs {
		fmt.Fprintf(b, "  --%s", s.flag)
		if s.arg != "" {
			fmt.Fprintf(b, " %s", s.arg)
		}
		fmt.Fprintf(b, "   $%s", s.env)
		if s.def != "" && !s.isBool {
			fmt.Fprintf(b, " (default %q)", s.def)
		}
		fmt.Fprintf(b, "\n        %s\n", s.usage)
	}
}

// setString returns a setter for a string that must not be empty.
func setString(field func(*Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" {
			return fmt.Errorf("must not be empty")
		}
		*field(c) = v
		return nil
	}
}

// setBool returns a setter accepting strconv.ParseBool's spellings (1, t, true, 0, f, false…).
func setBool(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("invalid boolean %q", v)
		}
		*field(c) = b
		return nil
	}
}

// setDuration returns a setter for a positive duration of at least minimum.
func setDuration(minimum time.Duration, field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return err
		}
		if d <= 0 {
			return fmt.Errorf("must be positive, got %v", d)
		}
		if d < minimum {
			return fmt.Errorf("must be at least %v, got %v", minimum, d)
		}
		*field(c) = d
		return nil
	}
}

// setMaxBodyBytes parses a positive byte count.
func setMaxBodyBytes(c *Config, v string) error {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return fmt.Errorf("invalid integer %q", v)
	}
	if n <= 0 {
		return fmt.Errorf("must be positive, got %d", n)
	}
	c.MaxBodyBytes = n
	return nil
}

// setReplyPolicy accepts one of the ReplyPolicy constants.
func setReplyPolicy(c *Config, v string) error {
	p := ReplyPolicy(v)
	switch p {
	case ReplyPolicyRetry, ReplyPolicyReport, ReplyPolicyOff:
		c.ReplyPolicy = p
		return nil
	}
	return fmt.Errorf("unknown reply policy %q (want retry, report or off)", v)
}

// setJSONMode accepts one of the JSONMode constants.
func setJSONMode(c *Config, v string) error {
	m, err := parseJSONMode(v)
	c.UpstreamJSONMode = m
	return err
}

// setLogLevel accepts the four slog level names, case-insensitively.
func setLogLevel(c *Config, v string) error {
	levels := map[string]slog.Level{
		"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError,
	}
	l, ok := levels[strings.ToLower(v)]
	if !ok {
		return fmt.Errorf("unknown log level %q (want debug, info, warn or error)", v)
	}
	c.LogLevel = l
	return nil
}

// setLogFormat accepts one of the LogFormat constants.
func setLogFormat(c *Config, v string) error {
	f := LogFormat(v)
	if f != LogFormatText && f != LogFormatJSON {
		return fmt.Errorf("unknown log format %q (want text or json)", v)
	}
	c.LogFormat = f
	return nil
}

// setDatabaseURL accepts "" (SQLite in the data dir) or a URL with a supported scheme. The
// parse error is not wrapped because url.Error quotes the whole URL, password included.
func setDatabaseURL(c *Config, v string) error {
	if v == "" {
		c.DatabaseURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	switch strings.ToLower(u.Scheme) {
	case "postgres", "postgresql", "sqlite", "file":
		c.DatabaseURL = v
		return nil
	case "":
		return fmt.Errorf("missing scheme (want postgres, postgresql, sqlite or file)")
	}
	return fmt.Errorf("unsupported scheme %q (want postgres, postgresql, sqlite or file)", u.Scheme)
}

// setUpstreamURL accepts "" (the built-in upstream) or an absolute http(s) URL, kept without
// a trailing slash so callers can append paths such as "/responses".
func setUpstreamURL(c *Config, v string) error {
	if v == "" {
		c.UpstreamURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil {
		return fmt.Errorf("not a valid URL")
	}
	if s := strings.ToLower(u.Scheme); (s != "http" && s != "https") || u.Host == "" {
		return fmt.Errorf("want an absolute http or https URL, got %q", RedactURL(v))
	}
	c.UpstreamURL = strings.TrimRight(v, "/")
	return nil
}

// setMCPServers parses "label=url,label=url".
func setMCPServers(c *Config, v string) error {
	c.MCPServers = nil
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		label, raw, ok := strings.Cut(item, "=")
		if !ok || label == "" {
			return fmt.Errorf("%q is not label=url", item)
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%q: not an absolute http(s) URL", raw)
		}
		c.MCPServers = append(c.MCPServers, MCPServer{Label: label, URL: raw})
	}
	return nil
}

// setIntAtLeast returns a setter for an int of at least least: 1 for counts and limits, 0
// where 0 switches a limit off, more where a smaller budget cannot work.
func setIntAtLeast(least int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		switch {
		case err != nil:
			return fmt.Errorf("invalid integer %q", v)
		case n < least && least == 1:
			return fmt.Errorf("must be positive, got %d", n)
		case n < least && least == 0:
			return fmt.Errorf("must not be negative, got %d", n)
		case n < least:
			return fmt.Errorf("must be at least %d, got %d", least, n)
		}
		*field(c) = n
		return nil
	}
}

// setThreshold returns a setter for a stop criterion: any finite number, or a fraction
// from 0 to 1 for a drawdown or a loss; "" (the default) leaves it unchecked.
func setThreshold(fraction bool, field func(*Config) **float64) func(*Config, string) error {
	return func(c *Config, v string) error {
		if v == "" {
			*field(c) = nil
			return nil
		}
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || math.IsNaN(f) || math.IsInf(f, 0):
			return fmt.Errorf("must be a number, got %q", v)
		case fraction && (f < 0 || f > 1):
			return fmt.Errorf("must be a fraction from 0 to 1 (0.2 is 20%%), got %q", v)
		}
		*field(c) = &f
		return nil
	}
}

// setRate parses a number of messages a minute, 0 for no rate.
func setRate(c *Config, v string) error {
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r < 0 || r != r || math.IsInf(r, 0) {
		return fmt.Errorf("must be a number of at least 0, got %q", v)
	}
	c.UserMessageRate = r
	return nil
}

// setList returns a setter for a comma-separated list; check, when set, vets each item.
func setList(field func(*Config) *[]string, check func(string) error) func(*Config, string) error {
	return func(c *Config, v string) error {
		var out []string
		for _, item := range strings.Split(v, ",") {
			item = strings.TrimSpace(item)
			if item == "" {
				continue
			}
			if check != nil {
				if err := check(item); err != nil {
					return err
				}
			}
			out = append(out, item)
		}
		*field(c) = out
		return nil
	}
}

// setPrefixes reads a comma-separated list of CIDR prefixes ("10.0.0.0/8") and single
// addresses (a prefix of their full length).
func setPrefixes(c *Config, v string) error {
	c.TrustedProxies = nil
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		if item == "" {
			continue
		}
		p, err := netip.ParsePrefix(item)
		if err != nil {
			a, aerr := netip.ParseAddr(item)
			if aerr != nil {
				return fmt.Errorf("%q is not a CIDR prefix or an address", item)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		c.TrustedProxies = append(c.TrustedProxies, p.Masked())
	}
	return nil
}

// checkOrigin accepts a browser origin as the Origin header spells it: scheme://host[:port]
// with no path, no trailing slash and no wildcard (a wildcard would hand the API to any page).
func checkOrigin(o string) error {
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" ||
		u.Path != "" || u.RawQuery != "" || u.User != nil || strings.Contains(o, "*") {
		return fmt.Errorf("%q is not an origin (want scheme://host[:port], no path or wildcard)", o)
	}
	return nil
}

// setPublicURL accepts "" or an absolute http(s) URL without query or fragment; a
// trailing slash is dropped.
func setPublicURL(c *Config, v string) error {
	if v == "" {
		c.PublicURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not an http or https URL (want scheme://host[:port][/path])", v)
	}
	c.PublicURL = strings.TrimSuffix(v, "/")
	return nil
}

// setJWKSURL accepts "" or an absolute http(s) URL; plain http only for loopback hosts, since
// the keys it serves decide who is authenticated.
func setJWKSURL(c *Config, v string) error {
	if v == "" {
		c.JWTJWKSURL = ""
		return nil
	}
	u, err := url.Parse(v)
	if err != nil || u.Host == "" {
		return fmt.Errorf("not an absolute URL")
	}
	switch {
	case u.Scheme == "https":
	case u.Scheme == "http" && isLoopback(u.Hostname()):
	default:
		return fmt.Errorf("want an https URL (http only for loopback hosts), got %q", RedactURL(v))
	}
	c.JWTJWKSURL = v
	return nil
}

// isLoopback reports whether host names this machine.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
