// Package orphan ends the generations this replica takes over from replicas that are gone
// (package lease claims them, once their lease has expired): an error event of code
// interrupted after the events each already has, with its partial text kept and, when
// there is some, the fallback reply beside it.
package orphan

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/finish"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/store"
)

// Store is what ending an orphan reads: its log (to replay the partial text) and its
// session (for the fallback's locale).
type Store interface {
	ListEvents(ctx context.Context, messageID string, afterSeq int64, limit int) ([]store.Event, error)
	GetSession(ctx context.Context, id, userID string) (*store.Session, error)
}

// Texts gives the prompt texts in force, for the fallback reply and the error message.
type Texts interface {
	For(ctx context.Context) handlers.Skills
}

// Ender ends orphans through the event log.
type Ender struct {
	log     *eventlog.Log
	store   Store
	prompts Texts
	route   events.Route // what the error event names: the configured primary
	logger  *slog.Logger
}

// New returns an ender writing through log.
func New(log *eventlog.Log, st Store, texts Texts, route events.Route, logger *slog.Logger) *Ender {
	return &Ender{log: log, store: st, prompts: texts, route: route, logger: logger}
}

// orphanEndTimeout bounds ending one orphaned generation, so one bad message cannot hold up
// a sweep forever.
const orphanEndTimeout = 30 * time.Second

// End ends a generation this replica has just claimed from a replica that is gone
// (package lease): an error event of code interrupted after the events it already has, and
// its partial text (what clients assembled from the committed deltas) kept on the message,
// with the fallback reply beside it when there is partial text.
func (e *Ender) End(ctx context.Context, m *store.Message) error {
	ctx, cancel := context.WithTimeout(ctx, orphanEndTimeout)
	defer cancel()
	text, err := e.replayText(ctx, m.ID)
	if err != nil {
		return err
	}
	w, err := e.log.Open(m.ID, eventlog.Opening{LastSeq: m.LastEventID})
	if err != nil {
		return fmt.Errorf("orphan: end %s: %w", m.ID, err)
	}
	fallback, why := e.texts(ctx, m, text != "")
	tail := finish.Orphan(m, text, fallback, why, e.route)
	if _, err := w.Finish(ctx, tail.Name, tail.Data, tail.Message); err != nil {
		return fmt.Errorf("orphan: end %s: %w", m.ID, err)
	}
	return w.Wait(ctx)
}

// texts are what an orphan's client reads, in its session's locale: the fallback reply
// (when there is partial text to stand in for) and the error's message. Both are "" when
// the session cannot be read: the orphan still ends, in English.
func (e *Ender) texts(ctx context.Context, m *store.Message, partial bool) (fallback, why string) {
	sess, err := e.store.GetSession(ctx, m.SessionID, m.UserID)
	if err != nil {
		e.logger.Warn("orphan's session for its texts", "message_id", m.ID, "err", err)
		return "", ""
	}
	skills := e.prompts.For(ctx)
	if partial {
		if fallback, err = postprocess.InterruptedFallback(skills, sess.Locale); err != nil {
			e.logger.Error("fallback reply", "err", err)
		}
	}
	if why, err = postprocess.ErrorMessage(skills, sess.Locale, failure.Interrupted); err != nil {
		e.logger.Error("interrupted message", "err", err)
	}
	return fallback, why
}

// replayText reads a message's log and returns the reply text it streamed, as a client
// assembled it.
func (e *Ender) replayText(ctx context.Context, messageID string) (string, error) {
	var last int64
	var reply events.Reply
	for {
		evs, err := e.store.ListEvents(ctx, messageID, last, 512)
		if err != nil {
			return "", fmt.Errorf("orphan: replay %s: %w", messageID, err)
		}
		for _, ev := range evs {
			last = ev.Seq
			reply.Add(ev)
		}
		if len(evs) < 512 {
			return reply.String(), nil
		}
	}
}
