package orchestration

import (
	"context"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// orphanEndTimeout bounds ending one orphaned generation, so one bad message cannot hold up
// a sweep forever.
const orphanEndTimeout = 30 * time.Second

// endOrphan ends a generation this replica has just claimed from a replica that is gone
// (package lease): an error event of code interrupted after the events it already has, and
// its partial text (what clients assembled from the committed deltas) kept on the message,
// with the fallback reply beside it when there is partial text.
func (o *Orchestrator) endOrphan(ctx context.Context, m *store.Message) error {
	ctx, cancel := context.WithTimeout(ctx, orphanEndTimeout)
	defer cancel()
	text, err := o.replayText(ctx, m.ID)
	if err != nil {
		return err
	}
	w, err := o.log.Open(m.ID, eventlog.Opening{LastSeq: m.LastEventID})
	if err != nil {
		return fmt.Errorf("orchestration: end orphan %s: %w", m.ID, err)
	}
	msg := ErrInterrupted.Error()
	m.Status, m.Content = store.StatusInterrupted, text
	m.Error = jsonOrNull(map[string]any{"code": events.CodeInterrupted, "message": msg})
	route := o.route()
	data := events.ErrorData{
		Base: events.Base{MessageID: m.ID, RequestID: m.RequestID}, Code: events.CodeInterrupted,
		Message: msg, Error: msg, Provider: route.Provider, ResolvedModel: route.ResolvedModel, EndpointID: route.EndpointID,
	}
	if text != "" {
		data.Fallback = o.orphanFallback(ctx, m)
		m.Metadata = jsonOrNull(events.FailureMetadata{FallbackReply: data.Fallback})
	}
	if _, err := w.Finish(ctx, events.Error, data, m); err != nil {
		return fmt.Errorf("orchestration: end orphan %s: %w", m.ID, err)
	}
	return w.Wait(ctx)
}

// orphanFallback is the fallback reply of an orphan in its session's locale ("" when the
// session cannot be read: the orphan still ends).
func (o *Orchestrator) orphanFallback(ctx context.Context, m *store.Message) string {
	sess, err := o.store.GetSession(ctx, m.SessionID, m.UserID)
	if err != nil {
		o.logger.Warn("orphan's session for its fallback reply", "message_id", m.ID, "err", err)
		return ""
	}
	return o.fallback(ctx, nil, sess.Locale)
}

// replayText reads a message's log and returns the reply text it streamed, as a client
// assembled it.
func (o *Orchestrator) replayText(ctx context.Context, messageID string) (string, error) {
	var last int64
	var reply events.Reply
	for {
		evs, err := o.store.ListEvents(ctx, messageID, last, 512)
		if err != nil {
			return "", fmt.Errorf("orchestration: replay %s: %w", messageID, err)
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
