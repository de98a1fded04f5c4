package prompt

import (
	"context"
	"sync"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/store"
)

// PromptStore is where admins' stored prompt versions are read.
type PromptStore interface {
	ActivePrompts(ctx context.Context, locale string) (map[string]string, error)
}

// Texts reads the texts the model sees: the admin's active stored version of a name and
// locale when there is one, else the embedded skill file.
type Texts struct {
	store    PromptStore
	embedded handlers.Skills
}

// NewTexts returns the texts over stored versions in st and the embedded skills.
func NewTexts(st PromptStore, embedded handlers.Skills) *Texts {
	return &Texts{store: st, embedded: embedded}
}

// For returns the texts as one turn reads them: the stored versions of a locale are read
// once, in one query, the first time a text of that locale is asked for (so a version
// activated before the turn began is used, and one activated during it waits for the next
// turn). ctx bounds the query, and an unreachable database is waited out (within the
// turn's life), never taken for "no stored version".
func (t *Texts) For(ctx context.Context) handlers.Skills { return t.forTurn(ctx) }

func (t *Texts) forTurn(ctx context.Context) *turnTexts {
	return &turnTexts{ctx: ctx, t: t, stored: map[string]map[string]string{}}
}

type turnTexts struct {
	ctx    context.Context
	t      *Texts
	mu     sync.Mutex
	stored map[string]map[string]string // locale → name → body
}

// Text implements [handlers.Skills].
func (tt *turnTexts) Text(name, locale string) (string, error) {
	stored, err := tt.versions(locale)
	if err != nil {
		return "", err
	}
	if body, ok := stored[name]; ok {
		return body, nil
	}
	return tt.t.embedded.Text(name, locale)
}

// prefetch reads the stored versions of locale now, bounded by ctx, so that the read runs
// beside the plan's other reads instead of when the first text is asked for.
func (tt *turnTexts) prefetch(ctx context.Context, locale string) error {
	_, err := tt.read(ctx, locale)
	return err
}

// noneStored records that locale has no active stored version (the turn's lock saw none),
// so its texts come from the embedded skills without a read.
func (tt *turnTexts) noneStored(locale string) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.stored[locale] = map[string]string{}
}

// versions reads the active stored versions of locale, once per turn.
func (tt *turnTexts) versions(locale string) (map[string]string, error) {
	return tt.read(tt.ctx, locale)
}

func (tt *turnTexts) read(ctx context.Context, locale string) (map[string]string, error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	if v, ok := tt.stored[locale]; ok {
		return v, nil
	}
	var v map[string]string
	err := store.WhileUnavailable(ctx, func() (err error) {
		v, err = tt.t.store.ActivePrompts(ctx, locale)
		return err
	})
	if err != nil {
		return nil, err
	}
	tt.stored[locale] = v
	return v, nil
}
