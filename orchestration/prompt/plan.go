package prompt

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/mcpcontext"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/orchestration/stream"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Handlers finds the handler of a phase.
type Handlers interface {
	For(p phases.Phase) (handlers.Handler, bool)
}

// Store is what planning reads: the history and the strategy in play.
type Store interface {
	LatestMessages(ctx context.Context, sessionID string, n int) ([]store.Message, error)
	GetStrategy(ctx context.Context, id, userID string) (*store.Strategy, error)
	LatestStrategy(ctx context.Context, sessionID, userID string) (*store.Strategy, error)
}

// Signer signs the x-mcp-context token each configured MCP server receives.
type Signer interface {
	SignMCPContext(mc mcpcontext.Context, audience string, ttl time.Duration) (string, error)
}

// MCPServer is an MCP server the model may call.
type MCPServer struct{ Label, URL string }

// Config holds the planner's settings.
type Config struct {
	Model           string
	MaxOutputTokens int // cap when the phase sets none (0: none)
	HistoryMessages int // earlier messages resent to the upstream (default 20)
	TurnLimit       int // turns in a phase before the handler's nudge (default 12)
	// ChainResponses sends previous_response_id instead of the history; only for
	// upstreams that store responses.
	ChainResponses bool
	MCPServers     []MCPServer
	// ReplyPolicy and SerpQueriesOptional are the server's runtime policy, which a
	// request's may override (RuntimePolicy).
	ReplyPolicy         stream.Policy
	SerpQueriesOptional bool
}

// Planner makes the plan of each turn.
type Planner struct {
	cfg      Config
	handlers Handlers
	store    Store
	signer   Signer
	texts    *Texts
}

// NewPlanner returns a planner.
func NewPlanner(cfg Config, h Handlers, st Store, signer Signer, texts *Texts) *Planner {
	if cfg.HistoryMessages <= 0 {
		cfg.HistoryMessages = 20
	}
	if cfg.TurnLimit <= 0 {
		cfg.TurnLimit = 12
	}
	return &Planner{cfg: cfg, handlers: h, store: st, signer: signer, texts: texts}
}

// Turn is what a plan is made for: step 1's begun turn.
type Turn struct {
	Begun    *session.Begun
	UserText string
	// Policy is the request's runtime_policy (nil: the server's and the phase's).
	Policy *RuntimePolicy
}

// Plan is step 2's decision for one turn, made before any attempt. It is a value: later
// steps read it and never change it.
type Plan struct {
	Handler handlers.Handler // nil once the session is completed
	Phase   phases.Phase
	Stage   string
	Locale  string
	// Block is the phase's block as the session holds it, gaps filled; the other phases'
	// are decoded again when the turn settles (Artifacts).
	Block      handlers.Artifacts
	StrategyID string
	// StrategyName is the name of the strategy in play ("" for none or an unnamed one).
	StrategyName string
	History      []store.Message // the recent completed messages, oldest first
	Skills       handlers.Skills // the texts this turn reads
	// MaxOutputTokens is the reply's effective token cap (0: none); ToolChoice and
	// AllowedTools are what the upstream is offered (empty when no tool is).
	MaxOutputTokens int
	ToolChoice      string
	AllowedTools    []string
	// Policy is the runtime policy the turn runs under: the request's over the server's
	// settings and the phase's defaults.
	Policy events.RuntimePolicy

	input    Input    // what each attempt's request is built from
	allowed  []string // the stage's allowed MCP tools
	build    *Builder
	handlers Handlers // to fill the blocks again (Artifacts)
}

// Plan makes the plan of t.
func (p *Planner) Plan(ctx context.Context, t Turn) (*Plan, error) {
	b := t.Begun
	phase, err := phases.Parse(b.Session.Phase)
	if err != nil {
		return nil, err
	}
	texts := p.texts.forTurn(ctx)
	pl := &Plan{Phase: phase, Locale: b.Session.Locale, Skills: texts,
		build: New(p.cfg.Model, p.cfg.MaxOutputTokens), handlers: p.handlers}
	arts := FillBlocks(p.handlers, b.Artifacts.Clone())
	h, hasHandler := p.handlers.For(phase)
	if err := p.read(ctx, pl, t, arts, texts, hasHandler); err != nil {
		return nil, err
	}
	pl.input = Input{Session: b.Session, History: pl.History, UserText: t.UserText, Carryover: b.Carryover}
	if p.cfg.ChainResponses {
		pl.input.PreviousResponseID = b.Session.PreviousResponseID
	}
	if !hasHandler { // completed: nothing but the contract and the state block
		pl.Block = arts.Fill(string(phase), nil)
		pl.input.Artifacts = pl.Block
		pl.capOutput(p.cfg.MaxOutputTokens, t.Policy.requestedCap())
		pl.Policy = pl.policy(p.cfg, t.Policy)
		return pl, nil
	}
	pl.Handler, pl.Block = h, arts.Fill(string(phase), nil) // filled by FillBlocks above
	pl.Stage = h.Stage(pl.Block)
	if err := p.pieces(pl, b.Metadata.TurnCounts[string(phase)]); err != nil {
		return nil, err
	}
	pl.capOutput(cmp.Or(pl.input.MaxOutputTokens, p.cfg.MaxOutputTokens), t.Policy.requestedCap())
	if err := p.tools(pl, b); err != nil {
		return nil, err
	}
	if len(pl.input.Tools) > 0 {
		pl.ToolChoice, pl.AllowedTools = pl.input.ToolChoice, slices.Clone(pl.allowed)
	}
	pl.Policy = pl.policy(p.cfg, t.Policy)
	return pl, nil
}

// Artifacts returns every phase's block as the plan saw them: the session's as its turn
// read them, gaps filled, decoded again into a fresh copy. A plan keeps only its phase's
// Block decoded: the turn holds its plan for as long as the reply streams, and the other
// phases' maps were most of a kilobyte of every generation's heap (docs/performance.md).
func (pl *Plan) Artifacts() (session.Artifacts, error) {
	arts, err := session.DecodeArtifacts(pl.input.Session.Artifacts)
	if err != nil {
		return nil, fmt.Errorf("prompt: artifacts of session %s: %w", pl.input.Session.ID, err)
	}
	return FillBlocks(pl.handlers, arts), nil
}

// capOutput sets the reply's token cap: limit (the phase's, else the server's; 0: none),
// lowered to requested when the request asks for less.
func (pl *Plan) capOutput(limit, requested int) {
	if requested > 0 && (limit == 0 || requested < limit) {
		limit = requested
	}
	pl.MaxOutputTokens, pl.input.MaxOutputTokens = limit, limit
}

// read does the plan's database reads (the history, the strategy in play, the locale's
// stored prompt versions) at the same time: they are independent, and each is a round trip
// on the path to the upstream request, so the turn waits for the slowest instead of the sum.
// A read the turn's lock saw nothing for (session.Begun.Seen) is not made.
func (p *Planner) read(ctx context.Context, pl *Plan, t Turn, arts session.Artifacts, texts *turnTexts, hydrate bool) error {
	seen := t.Begun.Seen
	g, gctx := errgroup.WithContext(ctx)
	if seen.History {
		g.Go(func() (err error) {
			pl.History, err = p.history(gctx, t.Begun)
			return err
		})
	}
	if hydrate {
		g.Go(func() error {
			strategy, err := p.hydrate(gctx, t.Begun, arts, t.UserText)
			if strategy != nil {
				pl.StrategyID, pl.StrategyName = strategy.ID, strategy.Name
			}
			return err
		})
	}
	if seen.Prompts {
		g.Go(func() error { return texts.prefetch(gctx, pl.Locale) })
	} else {
		texts.noneStored(pl.Locale)
	}
	return g.Wait()
}

// FillBlocks makes sure every phase that has a handler has its block in arts, gaps filled
// with the handler's initial values, so the model and the front end always see the same
// keys; it returns arts.
func FillBlocks(h Handlers, arts session.Artifacts) session.Artifacts {
	for _, ph := range phases.All() {
		if hd, ok := h.For(ph); ok {
			arts.Fill(string(ph), hd.InitialArtifacts())
		}
	}
	return arts
}

// InitialBlocks gives every phase's block with its handler's initial values, fresh maps
// each call: for a new session (session.New), which starts with all of them.
func InitialBlocks(h Handlers) func() session.Artifacts {
	return func() session.Artifacts { return FillBlocks(h, session.Artifacts{}) }
}

// history loads the recent messages of the session, without this turn's own two, waiting
// out an unreachable database.
func (p *Planner) history(ctx context.Context, b *session.Begun) ([]store.Message, error) {
	var msgs []store.Message
	err := store.WhileUnavailable(ctx, func() (err error) {
		msgs, err = p.store.LatestMessages(ctx, b.Session.ID, p.cfg.HistoryMessages+2)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("prompt: load history: %w", err)
	}
	out := msgs[:0]
	for _, m := range msgs {
		if m.ID != b.Assistant.ID && (b.User == nil || m.ID != b.User.ID) {
			out = append(out, m)
		}
	}
	if len(out) > p.cfg.HistoryMessages {
		out = out[len(out)-p.cfg.HistoryMessages:]
	}
	return out, nil
}

// pieces asks the handler for its prompt pieces (its nudge past the turn limit) and sets
// the values of the placeholders every text may use.
func (p *Planner) pieces(pl *Plan, turnCount int) error {
	pieces, err := pl.Handler.Prompt(pl.Skills, handlers.PromptInput{
		Locale: pl.Locale, Stage: pl.Stage, Artifacts: pl.Block, TurnCount: turnCount, TurnLimit: p.cfg.TurnLimit,
	})
	if err != nil {
		return fmt.Errorf("prompt: pieces of %s: %w", pl.Phase, err)
	}
	missing := strings.Join(pl.Handler.PostProcess(handlers.PostInput{Artifacts: pl.Block}).MissingFields, ", ")
	if missing == "" {
		missing = "—"
	}
	pl.input.Stage, pl.input.Artifacts, pl.input.PhaseTexts = pl.Stage, pl.Block, pieces.Texts
	pl.input.ToolChoice, pl.input.MaxOutputTokens = pieces.ToolChoice, pieces.MaxOutputTokens
	pl.input.Values = map[string]string{
		"allowed_genui":  strings.Join(pl.Handler.AllowedGenUI(), ", "),
		"missing_fields": missing,
		"turn_limit":     strconv.Itoa(p.cfg.TurnLimit),
	}
	pl.allowed = pieces.AllowedTools
	return nil
}

// tools offers the configured MCP servers the stage's allowed tools, each server only
// those it serves (handlers.ToolsOf; a server with none of them is not offered). Each
// server gets its own short-lived x-mcp-context token (audience = its label); the tokens
// are never logged.
func (p *Planner) tools(pl *Plan, b *session.Begun) error {
	allowed := pl.allowed
	if len(allowed) == 0 {
		return nil
	}
	for _, srv := range p.cfg.MCPServers {
		served := handlers.ToolsOf(srv.Label, allowed)
		if len(served) == 0 {
			continue
		}
		token, err := p.signer.SignMCPContext(mcpcontext.Context{
			UserID: b.Assistant.UserID, SessionID: b.Session.ID, Phase: string(pl.Phase), StrategyID: pl.StrategyID,
		}, srv.Label, mcpcontext.DefaultTTL)
		if err != nil {
			return fmt.Errorf("prompt: x-mcp-context for %s: %w", srv.Label, err)
		}
		tool, err := json.Marshal(map[string]any{
			"type": "mcp", "server_label": srv.Label, "server_url": srv.URL,
			"allowed_tools": served, "require_approval": "never",
			"headers": map[string]string{"x-mcp-context": token},
		})
		if err != nil {
			return fmt.Errorf("prompt: MCP tool %s: %w", srv.Label, err)
		}
		pl.input.Tools = append(pl.input.Tools, tool)
	}
	return nil
}

// Request builds the upstream request of one attempt. correction lists why the previous
// attempt was refused (nil on the first): the correction note then joins the instructions.
func (pl *Plan) Request(correction []thinkingml.Issue) (upstream.Request, error) {
	in := pl.input
	seen := map[thinkingml.Code]bool{}
	for _, c := range correction {
		if !seen[c.Code] {
			seen[c.Code] = true
			in.Correction = append(in.Correction, explain(pl.Skills, pl.Locale, c.Code))
		}
	}
	return pl.build.Build(pl.Skills, in)
}

// explain is one refusal reason as the correction note lists it: the problem's code and its
// explanation in the session's locale (skills problems/<code>), never the validator's own
// English message. Each code is listed once. A code without a text (a stored override
// cannot remove one; the skills tests check every code has one) is listed alone.
func explain(skills handlers.Skills, locale string, code thinkingml.Code) string {
	text, err := skills.Text("problems/"+string(code), locale)
	if err != nil {
		return "`" + string(code) + "`"
	}
	return "`" + string(code) + "`: " + strings.TrimSpace(text)
}
