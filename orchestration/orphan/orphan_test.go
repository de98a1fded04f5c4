package orphan_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/eventlog"
	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/orphan"
	"github.com/phaseflow/phaseflow/skills"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/store/storetest"
)

type texts struct{ s handlers.Skills }

func (t texts) For(context.Context) handlers.Skills { return t.s }

func encode(t *testing.T, v any) store.JSON {
	t.Helper()
	b, err := events.Encode(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// A generation whose replica is gone, taken over by this one, ends with error
// interrupted after the events it has: its partial text kept on the message, the fallback
// reply beside it, the error's message in the session's language.
func TestEndAGenerationOfAReplicaThatIsGone(t *testing.T) {
	st := storetest.SQLite(t)
	ctx := t.Context()
	sess := &store.Session{UserID: "lin", Title: "t", Locale: "zh", Phase: "strategy", Status: "active"}
	if err := st.CreateSession(ctx, sess); err != nil {
		t.Fatal(err)
	}
	u := &store.Message{SessionID: sess.ID, UserID: "lin", Content: "写一个策略", RequestID: "r1"}
	a := &store.Message{SessionID: sess.ID, UserID: "lin", RequestID: "r1"}
	if err := st.CreateTurn(ctx, u, a, store.TurnStart{Lease: store.Lease{Owner: "gone", TTL: time.Millisecond}}); err != nil {
		t.Fatal(err)
	}
	partial := []store.Event{
		{MessageID: a.ID, Seq: 1, Name: events.Status, Data: encode(t, events.StatusData{State: events.StateWorking}), Status: store.StatusStreaming},
		{MessageID: a.ID, Seq: 2, Name: events.ContentDelta, Data: encode(t, events.DeltaData{Seq: 1, Delta: "<thinking>半"})},
	}
	if _, err := st.CommitEvents(ctx, "gone", partial); err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	claimed, err := st.ClaimOrphans(ctx, store.Lease{Owner: "here", TTL: time.Minute}, false, 10)
	if err != nil || len(claimed) != 1 {
		t.Fatalf("ClaimOrphans = %v, %v", claimed, err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	log := eventlog.New(st, "here", logger, eventlog.Options{})
	defer func() { _ = log.Close(context.Background()) }()
	if err := orphan.New(log, st, texts{skills.New()}, events.Route{Provider: "p"}, logger).End(ctx, &claimed[0]); err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMessage(ctx, a.ID, "lin")
	if err != nil {
		t.Fatal(err)
	}
	if m.Status != store.StatusInterrupted || m.Content != "<thinking>半" || m.LastEventID != 3 {
		t.Fatalf("the message ended %s with %q at event %d", m.Status, m.Content, m.LastEventID)
	}
	evs, err := st.ListEvents(ctx, a.ID, 2, 10)
	if err != nil || len(evs) != 1 || evs[0].Name != events.Error {
		t.Fatalf("the events after the partial text: %+v, %v", evs, err)
	}
	var e events.ErrorData
	if err := json.Unmarshal(evs[0].Data, &e); err != nil {
		t.Fatal(err)
	}
	if e.Code != "interrupted" || e.Fallback == "" || e.Message == "" || !containsCJK(e.Message) {
		t.Errorf("the error event: %+v", e)
	}
}

func containsCJK(s string) bool {
	for _, r := range s {
		if r >= 0x4e00 && r <= 0x9fff {
			return true
		}
	}
	return false
}
