package orchestration

import (
	"context"
	"errors"

	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/store"
)

// skillSource reads a prompt text for one turn: the admin's active stored version of the
// name and locale when there is one, else the embedded file. It is built per turn because
// the store needs the turn's context.
type skillSource struct {
	ctx      context.Context
	store    Store
	embedded prompt.Skills
}

// Text implements [prompt.Skills].
func (s skillSource) Text(name, locale string) (string, error) {
	p, err := s.store.ActivePrompt(s.ctx, name, locale)
	if err == nil {
		return p.Body, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return "", err
	}
	return s.embedded.Text(name, locale)
}

func (o *Orchestrator) skillsFor(ctx context.Context) skillSource {
	return skillSource{ctx: ctx, store: o.store, embedded: o.skills}
}
