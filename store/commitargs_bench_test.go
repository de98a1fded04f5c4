package store

import (
	"database/sql/driver"
	"fmt"
	"testing"
	"time"
)

// BenchmarkCommitArgs lays out a group commit of the size the event log sends at c=16
// (benchBatch) as commitEventsPG's parameters and
// encodes them as lib/pq does (driver.Valuer): Phaseflow's CPU for one commit, before the
// database sees it.
func BenchmarkCommitArgs(b *testing.B) {
	events, msgs := benchBatch()
	b.ReportAllocs()
	for b.Loop() {
		args, err := commitArgs(testOwnerName, events, msgs)
		if err != nil {
			b.Fatal(err)
		}
		for _, a := range args {
			if v, ok := a.(driver.Valuer); ok {
				if _, err := v.Value(); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
}

// BenchmarkRunRows is the same batch laid out as SQLite's rows of message_event_runs
// (insertEvents), before the database sees it.
func BenchmarkRunRows(b *testing.B) {
	events, _ := benchBatch()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := runRows(events); err != nil {
			b.Fatal(err)
		}
	}
}

// benchBatch is a group commit of the size the event log sends at c=16: 6 messages, 180
// content deltas of a realistic payload.
func benchBatch() ([]Event, []msgBatch) {
	var events []Event
	var msgs []msgBatch
	at := time.Now()
	for m := range 6 {
		id := fmt.Sprintf("01972a4b-8c1d-7e2f-9a3b-4c5d6e7f80%02d", m)
		for s := range 30 {
			data := fmt.Sprintf(`{"message_id":%q,"request_id":"req-1","seq":%d,"delta":"some \"quoted\" text of a reply, about sixty bytes"}`, id, s+1)
			events = append(events, Event{MessageID: id, Seq: int64(s + 1), Name: "content_delta", Data: JSON(data), CreatedAt: at})
		}
		msgs = append(msgs, msgBatch{id: id, maxSeq: 30, status: StatusStreaming})
	}
	return events, msgs
}

const testOwnerName = "replica-bench"
