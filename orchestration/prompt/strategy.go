package prompt

import (
	"context"
	"errors"
	"regexp"

	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// uuidPattern finds a strategy id the user pasted into their message.
var uuidPattern = regexp.MustCompile(`\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b`)

// hydrate finds the strategy in play: from the artifacts, the session metadata, a UUID in
// the user's text, or the session's latest strategy; the first that exists and belongs to
// the user wins (nil for none), and nothing is read when there is no candidate and the
// session has no strategy. Another user's id is ignored, never used. An unreachable
// database is waited out rather than taken for "no strategy".
func (p *Planner) hydrate(ctx context.Context, b *session.Begun, arts session.Artifacts, text string) (*store.Strategy, error) {
	var candidates []string
	if id := phases.StrategyIDOf(arts); id != "" {
		candidates = append(candidates, id)
	}
	if b.Metadata.StrategyID != "" {
		candidates = append(candidates, b.Metadata.StrategyID)
	}
	candidates = append(candidates, uuidPattern.FindAllString(text, 3)...)
	if len(candidates) == 0 && !b.Seen.Strategy {
		return nil, nil
	}
	var found *store.Strategy
	err := store.WhileUnavailable(ctx, func() (err error) {
		found, err = p.findStrategy(ctx, b, candidates)
		return err
	})
	return found, err
}

// findStrategy returns the first candidate that is the user's strategy, else the session's
// latest strategy (looked for only when the turn's lock saw the session has one), else nil.
func (p *Planner) findStrategy(ctx context.Context, b *session.Begun, candidates []string) (*store.Strategy, error) {
	user := b.Assistant.UserID
	for _, id := range candidates {
		s, err := p.store.GetStrategy(ctx, id, user)
		switch {
		case err == nil:
			return s, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
	}
	if !b.Seen.Strategy {
		return nil, nil
	}
	s, err := p.store.LatestStrategy(ctx, b.Session.ID, user)
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, store.ErrNotFound):
		return nil, nil
	}
	return nil, err
}
