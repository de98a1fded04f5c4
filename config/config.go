// Package config builds Phaseflow's one typed [Config] from command-line flags and
// PHASEFLOW_* environment variables.
//
// The precedence is flag, then environment variable, then default. Every value is parsed and
// checked once, here, so the rest of the program receives plain typed fields and never reads
// the environment itself; the command builds a Config and passes it down explicitly. Secrets
// are held as [Secret], and [Config.LogValue] redacts them and any password inside a URL, so
// the whole Config can be logged at startup.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"
)

// MCPServer is one MCP server the upstream may call on the model's behalf.
type MCPServer struct {
	Label string // server_label, also the audience of its x-mcp-context token
	URL   string
}

// ReplyPolicy says what the orchestrator does when a model reply fails validation.
type ReplyPolicy string

// The reply policies accepted by --reply-policy / PHASEFLOW_REPLY_POLICY.
const (
	// ReplyPolicyRetry asks the model once more, then reports the failure.
	ReplyPolicyRetry ReplyPolicy = "retry"
	// ReplyPolicyReport keeps the reply and reports the validation result.
	ReplyPolicyReport ReplyPolicy = "report"
	// ReplyPolicyOff skips validation of replies.
	ReplyPolicyOff ReplyPolicy = "off"
)

// LogFormat selects the slog handler that [Config.Logger] builds.
type LogFormat string

// The log formats accepted by --log-format / PHASEFLOW_LOG_FORMAT.
const (
	// LogFormatText is slog's key=value text, easy to read in a terminal.
	LogFormatText LogFormat = "text"
	// LogFormatJSON is one JSON object a line, for log collectors.
	LogFormatJSON LogFormat = "json"
)

// Config is every setting of the server and its tools. Build it with [Load] or [LoadFlags];
// a zero Config is not valid. It is a plain value: copy it and pass it down rather than
// keeping it in a global.
type Config struct {
	// Addr is the host:port the HTTP server listens on.
	Addr string
	// DataDir holds local state: the SQLite database when DatabaseURL is empty, the
	// generated JWT secret when JWTSecret is empty and the generated x-mcp-context key when
	// MCPKeyFile is empty.
	DataDir string
	// DatabaseURL is a postgres://, postgresql://, sqlite: or file: URL; empty means SQLite
	// in DataDir. It may carry a password, so log it only through [RedactURL].
	DatabaseURL string
	// JWTSecret is the HS256 signing key as raw bytes; empty means a random key generated
	// once and kept in DataDir (see package api/auth).
	JWTSecret Secret
	// JWTIssuer is the required "iss" claim; empty means iss is not checked.
	JWTIssuer string
	// JWTAudience is the required "aud" claim; empty means aud is not checked.
	JWTAudience string
	// JWTJWKSURL is an identity provider's JWK Set: user tokens signed RS256 or ES256 by one
	// of its keys are accepted. Empty means HS256 tokens only.
	JWTJWKSURL string
	// JWTJWKSRefresh is how often the JWK Set is fetched again once a fetch succeeded.
	JWTJWKSRefresh time.Duration
	// JWTMaxTTL is the longest lifetime a user token may have (exp − iat, or exp − now when
	// iat is absent); longer ones are refused.
	JWTMaxTTL time.Duration
	// MCPKeyFile is the PEM private key (Ed25519 or ECDSA P-256) that signs x-mcp-context
	// tokens; empty means one generated and kept in DataDir (see package mcpcontext).
	MCPKeyFile string
	// MCPPublishedKeys are PEM key files published in the JWKS besides the signing key but
	// never used to sign: the other key of a rotation.
	MCPPublishedKeys []string
	// PublicURL is the server's address as phones reach it, for answer links; empty means
	// http:// and the listen address.
	PublicURL string
	// AnswerTTL is how long a watched agent's question may be answered and its answer typed.
	AnswerTTL time.Duration
	// CORSOrigins are the browser origins (scheme://host[:port]) that get CORS answers;
	// empty means none.
	CORSOrigins []string
	// MaxHeaderBytes caps a request's line and headers; larger requests get 431.
	MaxHeaderBytes int
	// HeaderTimeout is how long a client may take to send its request line and headers.
	HeaderTimeout time.Duration
	// BodyTimeout is how long a client may take to send a request body (stream answers
	// are not affected once the body is read).
	BodyTimeout time.Duration
	// MaxTurnsPerUser caps the generations one user runs at once; more get 429.
	MaxTurnsPerUser int
	// UserCallBudget caps the model calls one user's work makes a UTC day, counted in
	// the database across replicas (0: no budget).
	UserCallBudget int
	// UserMessageRate is how many messages a minute one user may post, on average.
	UserMessageRate float64
	// UserMessageBurst is how many messages one user may post at once before the rate
	// applies.
	UserMessageBurst int
	// MetricsToken, when set, is the bearer token GET /metrics requires.
	MetricsToken Secret
	// DebugAddr, when set, is a separate listener serving net/http/pprof, so a profile can
	// be taken from a running deployment without exposing it on the API's address.
	DebugAddr string
	// UpstreamURL is the model API's base URL (e.g. https://api.openai.com/v1) without a
	// trailing slash; empty means the built-in scripted upstream.
	UpstreamURL string
	// UpstreamAPIKey is sent to the upstream as a bearer token.
	UpstreamAPIKey Secret
	// UpstreamModel is the model name sent upstream.
	UpstreamModel string
	// UpstreamWire is the API the shorthand endpoint (UpstreamURL) speaks.
	UpstreamWire Wire
	// UpstreamJSONMode is how the shorthand endpoint (or the built-in upstream) is asked
	// for a JSON skill's object: auto, structured or text_json.
	UpstreamJSONMode JSONMode
	// UpstreamsFile names the JSON file listing several endpoints; it excludes
	// UpstreamURL.
	UpstreamsFile string
	// Endpoints are the upstream endpoints, from UpstreamsFile or the shorthand, checked;
	// empty means the built-in scripted upstream.
	Endpoints []Endpoint
	// UpstreamMaxAttempts bounds the requests one turn makes over all endpoints before
	// the first byte.
	UpstreamMaxAttempts int
	// UpstreamFirstByteTimeout moves a turn to the next endpoint when an endpoint sends
	// nothing for this long.
	UpstreamFirstByteTimeout time.Duration
	// UpstreamRetryAfterCap bounds the Retry-After wait honoured before trying the same
	// endpoint again.
	UpstreamRetryAfterCap time.Duration
	// UpstreamBreakerFailures unhealthy answers in a row open an endpoint's breaker.
	UpstreamBreakerFailures int
	// UpstreamBreakerCooldown is how long an open breaker skips its endpoint.
	UpstreamBreakerCooldown time.Duration
	// MaxToolRounds bounds the rounds of MCP tool calls Phaseflow runs for a Chat
	// Completions endpoint in one request.
	MaxToolRounds int
	// MCPCallTimeout bounds one MCP tool call Phaseflow runs. Nothing streams while a
	// tool runs, so it should stay below IdleTimeout, or a slow tool ends the turn as
	// upstream_timeout instead of becoming a failed call the model sees.
	MCPCallTimeout time.Duration
	// UpstreamChain sends previous_response_id instead of resending the history; only
	// upstreams that store responses support it (docs/upstreams.md).
	UpstreamChain bool
	// MCPServers are the MCP servers the model may call through the upstream.
	MCPServers []MCPServer
	// PhaseTurnLimit is the stop criterion: turns in one phase before the nudge.
	PhaseTurnLimit int
	// StopMinSharpe, StopMaxDrawdown and StopMaxScenarioLoss are the performance stop
	// criteria: a phase whose latest run misses one does not move on. nil: not checked.
	StopMinSharpe       *float64
	StopMaxDrawdown     *float64
	StopMaxScenarioLoss *float64
	// HeartbeatInterval is the time between SSE heartbeat events (at least 100ms).
	HeartbeatInterval time.Duration
	// ShutdownGrace is how long shutdown waits for running turns before cutting them.
	ShutdownGrace time.Duration
	// LeaseTTL is how long a running generation's claim holds without renewal; another
	// replica may end a generation only after its lease has expired.
	LeaseTTL time.Duration
	// OutageGrace is how long running turns wait out an unreachable database.
	OutageGrace time.Duration
	// TurnTimeout is the hard limit for one turn, from start to terminal event.
	TurnTimeout time.Duration
	// IdleTimeout ends a turn when the upstream sends no event for this long.
	IdleTimeout time.Duration
	// MaxConcurrentTurns caps the generations running at once; more are refused fast.
	MaxConcurrentTurns int
	// MaxBodyBytes caps a request body; larger bodies get 413.
	MaxBodyBytes int64
	// MaxReplyBytes caps a model's reply (and a /validate reply); past it a turn ends with
	// reply_too_large, its text so far kept.
	MaxReplyBytes int
	// MaxTurnEvents caps the events of one turn, its attempts together.
	MaxTurnEvents int
	// MaxStreamsPerUser caps one user's open event streams on a replica (0: none).
	MaxStreamsPerUser int
	// MaxConnections caps the connections a replica holds open, below its file limit
	// (0: the file limit less a reserve for the database, logs and files).
	MaxConnections int
	// MaxConnectionsPerClient is one client's share of MaxConnections (0: none): past it
	// the client's own idle connections yield, then it is refused.
	MaxConnectionsPerClient int
	// TrustedProxies are the peers whose X-Forwarded-For names the client.
	TrustedProxies []netip.Prefix
	// ReplyPolicy is what happens to a reply that fails validation.
	ReplyPolicy ReplyPolicy
	// SerpQueriesOptional lets a reply without serp queries pass validation.
	SerpQueriesOptional bool
	// SkillCallTimeout bounds one model call of a JSON skill (its own timeout is the
	// lower bound of the two).
	SkillCallTimeout time.Duration
	// SkillDedupWindow is how long a terminal question keeps its fingerprint: the same
	// question from the same source within it is a duplicate.
	SkillDedupWindow time.Duration
	// SkillJobConcurrency is how many inputs of one skill job run at once.
	SkillJobConcurrency int
	// SkillMaxOutputTokens replaces every skill's own output limit when set (0: each
	// skill's max_output_tokens).
	SkillMaxOutputTokens int
	// LogLevel is the minimum level the logger writes.
	LogLevel slog.Level
	// LogFormat is the logger's output format.
	LogFormat LogFormat
}

// Load builds a Config from defaults, then getenv, then args (flags such as --addr; one or
// two leading dashes). Use it for "phaseflow serve"; commands with flags of their own use
// [LoadFlags]. A nil getenv reads no environment, which keeps tests hermetic.
//
// Errors name the variable or flag at fault, e.g.
// `PHASEFLOW_HEARTBEAT_INTERVAL: time: invalid duration "x"`. For -h or --help the error
// satisfies errors.Is(err, flag.ErrHelp) and its Error() is the full usage text: print it to
// stdout and exit 0. Any other error is a usage error (exit 2); it carries no command name,
// so print it as "phaseflow serve: <err>". A bad variable is an error even when a flag
// overrides it, so a broken environment does not go unnoticed.
func Load(args []string, getenv func(string) string) (Config, error) {
	return LoadFlags(flag.NewFlagSet("phaseflow serve", flag.ContinueOnError), args, getenv)
}

// LoadFlags is [Load] on a caller's flag set, so a command can add flags of its own (define
// them on fs first, read them after LoadFlags returns) and still accept every config flag.
// LoadFlags silences fs (output to io.Discard, no Usage function) because the usage text
// travels in the returned error instead, and it rejects positional arguments.
func LoadFlags(fs *flag.FlagSet, args []string, getenv func(string) string) (Config, error) {
	return LoadFlagsFor(fs, args, getenv)
}

// LoadFlagsFor is [LoadFlags] for a command that uses only the settings named by uses
// (their flag names): only those are its flags and its help lists only them; the rest keep
// their defaults and variables. No names means every setting.
func LoadFlagsFor(fs *flag.FlagSet, args []string, getenv func(string) string, uses ...string) (Config, error) {
	specs := settings()
	var c Config
	for _, s := range specs {
		if err := s.set(&c, s.def); err != nil {
			return Config{}, fmt.Errorf("default of --%s: %w", s.flag, err)
		}
	}
	if getenv != nil {
		if err := applyEnv(&c, specs, getenv); err != nil {
			return Config{}, err
		}
	}
	flags := specs
	if len(uses) > 0 {
		flags = slices.DeleteFunc(slices.Clone(specs), func(s setting) bool { return !slices.Contains(uses, s.flag) })
	}
	if err := applyFlags(&c, flags, fs, args); err != nil {
		return Config{}, err
	}
	if err := resolveEndpoints(&c, getenv); err != nil {
		return Config{}, err
	}
	return c, nil
}

// applyEnv overrides c with every non-empty variable; an empty variable counts as unset.
func applyEnv(c *Config, specs []setting, getenv func(string) string) error {
	for _, s := range specs {
		v := getenv(s.env)
		if v == "" {
			continue
		}
		if err := s.set(c, v); err != nil {
			return fmt.Errorf("%s: %w", s.env, err)
		}
	}
	return nil
}

// applyFlags registers specs on fs and parses args into c, so flags win over the environment.
func applyFlags(c *Config, specs []setting, fs *flag.FlagSet, args []string) error {
	for _, s := range specs {
		fs.Var(flagValue{cfg: c, s: s}, s.flag, s.usage)
	}
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return helpError{text: usageText(fs, specs)}
		}
		return FlagError(err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return nil
}

// Logger builds the process's one slog logger from LogLevel and LogFormat, writing to w.
// Build it once in the command and pass it down; packages take a *slog.Logger rather than
// using slog's default.
//
// Durations are written as strings ("1.5s"), in JSON too, where slog would write
// nanoseconds: a reader (and a log query) should not have to know the unit.
func (c Config) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel, ReplaceAttr: durationsAsText}
	if c.LogFormat == LogFormatJSON {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// LogValue lets `logger.Info("config", "config", cfg)` log every field at startup with the
// secrets shown as "[redacted]" and URL passwords as "xxxxx".
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("addr", c.Addr),
		slog.String("data_dir", c.DataDir),
		slog.String("database_url", RedactURL(c.DatabaseURL)),
		slog.String("jwt_secret", c.JWTSecret.String()),
		slog.String("jwt_issuer", c.JWTIssuer),
		slog.String("jwt_audience", c.JWTAudience),
		slog.String("jwt_jwks_url", RedactURL(c.JWTJWKSURL)),
		slog.Duration("jwt_jwks_refresh", c.JWTJWKSRefresh),
		slog.Duration("jwt_max_ttl", c.JWTMaxTTL),
		slog.String("mcp_key_file", c.MCPKeyFile),
		slog.Any("mcp_published_keys", c.MCPPublishedKeys),
		slog.String("public_url", c.PublicURL),
		slog.Duration("answer_ttl", c.AnswerTTL),
		slog.Any("cors_origins", c.CORSOrigins),
		slog.Int("max_header_bytes", c.MaxHeaderBytes),
		slog.Duration("header_timeout", c.HeaderTimeout),
		slog.Duration("body_timeout", c.BodyTimeout),
		slog.Int("max_turns_per_user", c.MaxTurnsPerUser),
		slog.Int("user_call_budget", c.UserCallBudget),
		slog.Float64("user_message_rate", c.UserMessageRate),
		slog.Int("user_message_burst", c.UserMessageBurst),
		slog.String("metrics_token", c.MetricsToken.String()),
		slog.String("debug_addr", c.DebugAddr),
		slog.String("upstream_url", RedactURL(c.UpstreamURL)),
		slog.String("upstream_api_key", c.UpstreamAPIKey.String()),
		slog.String("upstream_model", c.UpstreamModel),
		slog.String("upstream_wire", string(c.UpstreamWire)),
		slog.String("upstream_json_mode", string(c.UpstreamJSONMode)),
		slog.String("upstreams_file", c.UpstreamsFile),
		slog.Attr{Key: "endpoints", Value: endpointsValue(c.Endpoints)},
		slog.Int("upstream_max_attempts", c.UpstreamMaxAttempts),
		slog.Duration("upstream_first_byte_timeout", c.UpstreamFirstByteTimeout),
		slog.Duration("upstream_retry_after_cap", c.UpstreamRetryAfterCap),
		slog.Int("upstream_breaker_failures", c.UpstreamBreakerFailures),
		slog.Duration("upstream_breaker_cooldown", c.UpstreamBreakerCooldown),
		slog.Int("max_tool_rounds", c.MaxToolRounds),
		slog.Duration("mcp_call_timeout", c.MCPCallTimeout),
		slog.Bool("upstream_chain", c.UpstreamChain),
		slog.Any("mcp_servers", c.MCPServers),
		slog.Int("phase_turn_limit", c.PhaseTurnLimit),
		slog.Attr{Key: "stop_min_sharpe", Value: thresholdValue(c.StopMinSharpe)},
		slog.Attr{Key: "stop_max_drawdown", Value: thresholdValue(c.StopMaxDrawdown)},
		slog.Attr{Key: "stop_max_scenario_loss", Value: thresholdValue(c.StopMaxScenarioLoss)},
		slog.Duration("heartbeat_interval", c.HeartbeatInterval),
		slog.Duration("shutdown_grace", c.ShutdownGrace),
		slog.Duration("lease_ttl", c.LeaseTTL),
		slog.Duration("db_outage_grace", c.OutageGrace),
		slog.Duration("turn_timeout", c.TurnTimeout),
		slog.Duration("idle_timeout", c.IdleTimeout),
		slog.Int("max_turns", c.MaxConcurrentTurns),
		slog.Int64("max_body_bytes", c.MaxBodyBytes),
		slog.Int("max_reply_bytes", c.MaxReplyBytes),
		slog.Int("max_turn_events", c.MaxTurnEvents),
		slog.Int("max_streams_per_user", c.MaxStreamsPerUser),
		slog.Int("max_connections", c.MaxConnections),
		slog.Int("max_connections_per_client", c.MaxConnectionsPerClient),
		slog.Any("trusted_proxies", c.TrustedProxies),
		slog.String("reply_policy", string(c.ReplyPolicy)),
		slog.Bool("serp_optional", c.SerpQueriesOptional),
		slog.Duration("skill_call_timeout", c.SkillCallTimeout),
		slog.Duration("skill_dedup_window", c.SkillDedupWindow),
		slog.Int("skill_max_output_tokens", c.SkillMaxOutputTokens),
		slog.Int("skill_job_concurrency", c.SkillJobConcurrency),
		slog.String("log_level", c.LogLevel.String()),
		slog.String("log_format", string(c.LogFormat)),
	)
}

// RedactURL returns raw with the userinfo password replaced by "xxxxx" and the values of
// credential-like query parameters (password, token, key, secret) masked the same way, for
// logging a database or upstream URL. A string that does not parse as a URL is replaced
// whole, since its password cannot be located.
func RedactURL(raw string) string {
	if raw == "" {
		return ""
	}
	u, err := url.Parse(raw)
	if err != nil {
		return redacted
	}
	if _, ok := u.User.Password(); ok {
		u.User = url.UserPassword(u.User.Username(), "xxxxx")
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k := range q {
			if isCredentialParam(k) {
				q.Set(k, "xxxxx")
			}
		}
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// isCredentialParam reports whether a query parameter name suggests a credential value.
func isCredentialParam(name string) bool {
	n := strings.ToLower(name)
	for _, word := range []string{"pass", "secret", "token", "key"} {
		if strings.Contains(n, word) {
			return true
		}
	}
	return false
}

// flagValue adapts one setting to flag.Value so a bad flag is reported with the same parse
// error as a bad environment variable (the flag package's own Duration says only "parse
// error").
type flagValue struct {
	cfg *Config
	s   setting
}

// String returns the default, which is what the flag package expects of a Value.
func (v flagValue) String() string { return v.s.def }

// Set parses and checks s into the Config.
func (v flagValue) Set(s string) error { return v.s.set(v.cfg, s) }

// IsBoolFlag lets boolean settings be given as a bare --flag.
func (v flagValue) IsBoolFlag() bool { return v.s.isBool }

// helpError carries the usage text out of [LoadFlags] when -h or --help is given.
type helpError struct{ text string }

// Error returns the usage text, ready to print.
func (e helpError) Error() string { return e.text }

// Is makes errors.Is(err, flag.ErrHelp) true, the test callers already know from flag.
func (e helpError) Is(target error) bool { return target == flag.ErrHelp }

// hostPort checks that s has the form host:port the listener expects.
func hostPort(s string) error {
	if _, _, err := net.SplitHostPort(s); err != nil {
		return err
	}
	return nil
}

// thresholdValue logs a stop criterion: its figure, or "unset".
func thresholdValue(t *float64) slog.Value {
	if t == nil {
		return slog.StringValue("unset")
	}
	return slog.Float64Value(*t)
}

// durationsAsText writes a duration attribute as its string.
func durationsAsText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		a.Value = slog.StringValue(a.Value.Duration().String())
	}
	return a
}

// FlagError says a flag package error as the help does: "--name", where the package writes
// "-name" (both are accepted; the help and every message use the double dash).
func FlagError(err error) error {
	if err == nil {
		return nil
	}
	return errors.New(singleDash().ReplaceAllString(err.Error(), "$1--$2"))
}

// singleDash finds a flag written with one dash after a space or at the start.
func singleDash() *regexp.Regexp { return regexp.MustCompile(`(^|\s)-([a-zA-Z][a-zA-Z0-9-]*)`) }

// FlagUsage is the help of a command with flags of its own only: a usage line, then each
// flag as --name with its argument, default and meaning.
func FlagUsage(line string, fs *flag.FlagSet) string {
	var b strings.Builder
	b.WriteString(line + "\n")
	writeOwnFlags(&b, ownFlags(fs, nil))
	return b.String()
}
