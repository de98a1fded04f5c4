package orchestration

import (
	"context"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/store"
)

// Recover ends the generations a previous run of this server left unfinished (it stopped
// without its shutdown completing): each gets an error event of code interrupted after the
// events it already has, and its partial text stays in the log. Call it at start-up, before
// serving. It assumes one server process owns the database's running turns; with several
// replicas, only the replica that restarts may recover, which is why it runs at start-up only.
func (o *Orchestrator) Recover(ctx context.Context) (int, error) {
	msgs, err := o.store.ListUnfinishedMessages(ctx)
	if err != nil {
		return 0, fmt.Errorf("orchestration: recover: %w", err)
	}
	for i := range msgs {
		if err := o.interruptOrphan(ctx, &msgs[i]); err != nil {
			return i, err
		}
	}
	return len(msgs), nil
}

func (o *Orchestrator) interruptOrphan(ctx context.Context, m *store.Message) error {
	last, text, err := o.replayTail(ctx, m.ID)
	if err != nil {
		return err
	}
	w, err := o.log.Open(m.ID, last)
	if err != nil {
		return fmt.Errorf("orchestration: recover %s: %w", m.ID, err)
	}
	now := time.Now().UTC()
	m.Status, m.Content, m.CompletedAt, m.LastEventID = store.StatusInterrupted, text, &now, last+1
	m.Error = mustJSON(map[string]any{"code": events.CodeInterrupted, "message": ErrInterrupted.Error()})
	if err := o.store.FinishMessage(ctx, m); err != nil {
		return fmt.Errorf("orchestration: recover %s: %w", m.ID, err)
	}
	route := o.route()
	msg := ErrInterrupted.Error()
	data := events.ErrorData{
		Base: events.Base{MessageID: m.ID, RequestID: m.RequestID}, Code: events.CodeInterrupted,
		Message: msg, Error: msg, Provider: route.Provider, ResolvedModel: route.ResolvedModel, EndpointID: route.EndpointID,
	}
	if _, err := w.Append(ctx, events.Error, data); err != nil {
		return fmt.Errorf("orchestration: recover %s: %w", m.ID, err)
	}
	return w.Close(ctx)
}

// replayTail reads a message's log to find its last position and the text it streamed.
func (o *Orchestrator) replayTail(ctx context.Context, messageID string) (int64, string, error) {
	var last int64
	var text []byte
	for {
		evs, err := o.store.ListEvents(ctx, messageID, last, 512)
		if err != nil {
			return 0, "", fmt.Errorf("orchestration: recover %s: %w", messageID, err)
		}
		for _, ev := range evs {
			last = ev.Seq
			text = appendDelta(text, ev)
		}
		if len(evs) < 512 {
			return last, string(text), nil
		}
	}
}
