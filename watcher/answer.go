package watcher

import (
	"context"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// answer types a's keys into the pane that asked, when it is one of this watcher's and it
// still shows that question: the watcher captures it again and has it read. Otherwise
// the answer is stale and nothing is typed. An answer of another watcher's source is left
// to that watcher.
func (w *Watcher) answer(ctx context.Context, a Answer) {
	if w.handled[a.ID] {
		return
	}
	var src *Source
	for i := range w.sources {
		if w.sources[i].ID == a.SourceID && w.sources[i].Typer != nil {
			src = &w.sources[i]
		}
	}
	if src == nil {
		return
	}
	st := w.state[src.ID]
	outcome, err := w.deliver(ctx, *src, a)
	if ctx.Err() != nil {
		return // stopping: the answer is sent again to the next watcher run
	}
	if err != nil {
		w.retry(ctx, st, a, err)
		return
	}
	delete(w.pending, a.ID)
	if len(w.handled) >= maxHandled {
		clear(w.handled)
	}
	w.handled[a.ID] = true
	w.report(ctx, st, a.ID, outcome)
	lag := ""
	if a.AnsweredAt != nil {
		lag = fmt.Sprintf(" %v after the answer", time.Since(*a.AnsweredAt).Round(time.Millisecond))
	}
	fmt.Fprintf(w.opts.Errs, "phaseflow watch: answer to %s on %s %s%s\n", a.ID, src.Workspace, outcome, lag)
}

// deliver types a into src if src still asks its question: the outcome, or an error when
// the pane could not be captured, read or typed into (tried again next round).
func (w *Watcher) deliver(ctx context.Context, src Source, a Answer) (string, error) {
	snap, err := capture(ctx, src.Command, w.opts.Timeout, w.opts.Limit)
	if err != nil {
		return "", err
	}
	r, err := w.opts.Reader.ReadScreen(ctx, src, snap)
	if err != nil {
		return "", err
	}
	if r.Status != "has_question" || r.Fingerprint != a.Fingerprint {
		return store.QuestionStale, nil
	}
	if err := src.Typer.Type(ctx, a.Keys); err != nil {
		return "", err
	}
	return store.QuestionDelivered, nil
}

// maxTries is how many rounds an answer is tried again after its pane failed to be
// captured, read or typed into, before it is given up as stale.
const maxTries = 10

// retry keeps a for the next rounds, reporting err the first time; after maxTries it is
// given up as stale.
func (w *Watcher) retry(ctx context.Context, st *sourceState, a Answer, err error) {
	p, known := w.pending[a.ID]
	p.answer, p.tries = a, p.tries+1
	if p.tries == 1 {
		fmt.Fprintf(w.opts.Errs, "phaseflow watch: answer to %s: %v (trying again)\n", a.ID, err)
	}
	if p.tries >= maxTries {
		delete(w.pending, a.ID)
		w.handled[a.ID] = true
		w.report(ctx, st, a.ID, store.QuestionStale)
		return
	}
	if known || len(w.pending) < maxHandled {
		w.pending[a.ID] = p
	}
}

// pendingAnswer is an answer tried again.
type pendingAnswer struct {
	answer Answer
	tries  int
}

// retryPending tries the pending answers again.
func (w *Watcher) retryPending(ctx context.Context) {
	for _, p := range w.pending {
		if ctx.Err() != nil {
			return
		}
		w.answer(ctx, p.answer)
	}
}
