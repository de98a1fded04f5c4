package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/phaseflow/phaseflow/store"
)

// BenchmarkCommitFinish is the commit that ends a turn, sized like loadbench's turn: the
// last events with the terminal one (10 KB of payloads), the reply's columns (content,
// tool calls, GenUI, validation, usage) and the request's trace (a 5.8 KB body), about
// 26 KB of parameters. Its bytes per op are what the commit allocates for them: on
// PostgreSQL about three times SQLite's, as lib/pq builds each statement's Bind message
// on a 512-byte scratch array grown by append, copying the whole message at each step
// (docs/performance.md, Not there yet).
func BenchmarkCommitFinish(b *testing.B) {
	benchEach(b, func(b *testing.B, s *store.Store) {
		for range b.N {
			b.StopTimer()
			batch := finishingBatch(benchTurn(b, s))
			b.StartTimer()
			if _, err := s.CommitEvents(b.Context(), testOwner, batch); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// finishingBatch is the batch that ends a's turn.
func finishingBatch(a *store.Message) []store.Event {
	payload := func(n int) store.JSON { return store.JSON(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", n))) }
	batch := events(a.ID, a.LastEventID+1, a.LastEventID+8)
	for i, n := range []int{500, 800} { // validation, genui
		batch = append(batch, store.Event{MessageID: a.ID, Seq: a.LastEventID + 9 + int64(i), Name: "status", Data: payload(n)})
	}
	outcome := *a
	outcome.Status, outcome.Content = store.StatusCompleted, strings.Repeat("y", 1300)
	outcome.ToolCalls, outcome.GenUI, outcome.Validation = payload(2100), payload(800), payload(450)
	outcome.Usage = store.JSON(`{"input_tokens":1200,"output_tokens":640}`)
	outcome.Records = &store.TurnRecords{Traces: []store.Trace{{Attempt: 1, Seq: 1, Method: "POST",
		URL: "http://127.0.0.1/v1/responses", Headers: store.JSON(`{}`), Body: strings.Repeat("z", 5800), SentAt: time.Now()}}}
	return append(batch, store.Event{MessageID: a.ID, Seq: a.LastEventID + 11, Name: "completed", Data: payload(8500), Finish: &outcome})
}
