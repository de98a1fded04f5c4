package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// plan is what step 2 decides for a turn, before any attempt: the phase's handler and
// stage, its artifacts, the strategy in play, the prompt pieces and the tools.
type plan struct {
	handler    handlers.Handler // nil once the session is completed
	phase      phases.Phase
	stage      string
	artifacts  session.Artifacts
	block      map[string]any // artifacts[phase]
	strategyID string
	pieces     handlers.Pieces
	tools      []json.RawMessage
	values     map[string]string
}

// prepare builds the turn's plan.
func (o *Orchestrator) prepare(t *turn) (*plan, error) {
	sess := t.begun.Session
	phase, err := phases.Parse(sess.Phase)
	if err != nil {
		return nil, err
	}
	arts, err := session.DecodeArtifacts(sess.Artifacts)
	if err != nil {
		return nil, err
	}
	p := &plan{phase: phase, artifacts: arts, values: map[string]string{}}
	h, ok := o.handlers.For(phase)
	if !ok {
		p.block = arts.Fill(string(phase), nil)
		return p, nil
	}
	p.handler, p.block = h, arts.Fill(string(phase), h.InitialArtifacts())
	p.stage = h.Stage(p.block)
	p.strategyID = o.hydrateStrategy(t.ctx, t, arts)
	if err := o.choosePieces(t, p); err != nil {
		return nil, err
	}
	p.tools, err = o.mcpTools(t, p)
	return p, err
}

func (o *Orchestrator) choosePieces(t *turn, p *plan) error {
	count := t.begun.Metadata.TurnCounts[string(p.phase)]
	pieces, err := p.handler.Prompt(o.skillsFor(t.ctx), handlers.PromptInput{
		Locale: t.begun.Session.Locale, Stage: p.stage, Artifacts: p.block,
		TurnCount: count, TurnLimit: o.cfg.PhaseTurnLimit,
	})
	if err != nil {
		return fmt.Errorf("orchestration: prompt pieces of %s: %w", p.phase, err)
	}
	before := p.handler.PostProcess(handlers.PostInput{Artifacts: p.block})
	p.pieces = pieces
	missing := strings.Join(before.MissingFields, ", ")
	if missing == "" {
		missing = "—"
	}
	p.values = map[string]string{
		"allowed_genui":  strings.Join(p.handler.AllowedGenUI(), ", "),
		"missing_fields": missing,
		"turn_limit":     strconv.Itoa(o.cfg.PhaseTurnLimit),
	}
	return nil // the builder fills the placeholders of every text
}

// uuidPattern finds a strategy id the user pasted into their message.
var uuidPattern = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)

// hydrateStrategy finds the strategy in play: from the strategy artifacts, the session
// metadata, a UUID in the user's text, or the session's latest strategy; the first that
// exists and belongs to the user wins. Another user's id is ignored, never used.
func (o *Orchestrator) hydrateStrategy(ctx context.Context, t *turn, arts session.Artifacts) string {
	var candidates []string
	if id, _ := arts[string(phases.Strategy)]["strategy_id"].(string); id != "" {
		candidates = append(candidates, id)
	}
	if t.begun.Metadata.StrategyID != "" {
		candidates = append(candidates, t.begun.Metadata.StrategyID)
	}
	candidates = append(candidates, uuidPattern.FindAllString(t.userText, 3)...)
	for _, id := range candidates {
		if _, err := o.store.GetStrategy(ctx, id, t.msg.UserID); err == nil {
			return id
		}
	}
	if s, err := o.store.LatestStrategy(ctx, t.begun.Session.ID, t.msg.UserID); err == nil {
		return s.ID
	} else if !errors.Is(err, store.ErrNotFound) {
		o.logger.Warn("latest strategy", "session_id", t.begun.Session.ID, "err", err)
	}
	return ""
}

// mcpTools merges the configured MCP servers with the phase's allowed tools. Each server
// gets its own short-lived x-mcp-context token (audience = its label); the tokens are never
// logged.
func (o *Orchestrator) mcpTools(t *turn, p *plan) ([]json.RawMessage, error) {
	if len(p.pieces.AllowedTools) == 0 {
		return nil, nil
	}
	var tools []json.RawMessage
	for _, srv := range o.cfg.MCPServers {
		token, err := o.signer.SignMCPContext(auth.MCPContext{
			UserID: t.msg.UserID, SessionID: t.begun.Session.ID, Phase: string(p.phase), StrategyID: p.strategyID,
		}, srv.Label, auth.DefaultMCPContextTTL)
		if err != nil {
			return nil, fmt.Errorf("orchestration: x-mcp-context for %s: %w", srv.Label, err)
		}
		tools = append(tools, json.RawMessage(mustJSON(map[string]any{
			"type": "mcp", "server_label": srv.Label, "server_url": srv.URL,
			"allowed_tools": p.pieces.AllowedTools, "require_approval": "never",
			"headers": map[string]string{"x-mcp-context": token},
		})))
	}
	return tools, nil
}
