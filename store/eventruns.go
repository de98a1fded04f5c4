package store

import (
	"fmt"
	"strings"
	"time"

	"github.com/lib/pq"
)

// The event log is stored as runs (message_event_runs, migration 0010): a row holds the
// events of one message that one commit wrote, consecutive by seq, their names, payloads and
// times each joined by runSep. A turn's 60-odd events were as many rows, each a heap tuple
// and a primary-key entry, and those insertions were most of what a group commit cost the
// database, in time on SQLite and in WAL records on PostgreSQL. A turn is now a few rows. The view message_events shows them one row per event,
// as before, for operators and for tools that read the log with SQL.
//
// A run's first event's seq is its key; readers find the run that holds a position as the
// last one that starts at or before it (ListEvents).

// runSep separates the events of a run: the ASCII unit separator, which, like textListSep,
// no JSON text, event name or formatted time holds.
const runSep = '\x1f'

// runTimeRead parses a run's times: pgTime as runs are written, and the longer fractions
// and numeric zones of the times SQLite's driver had stored before migration 0010 copied
// them into runs.
const runTimeRead = "2006-01-02 15:04:05.999999999Z07:00"

// continues reports whether next is the event after prev in the same message's log.
func continues(prev, next Event) bool {
	return prev.MessageID == next.MessageID && prev.Seq+1 == next.Seq
}

// checkRunName refuses an event name that holds either separator or a NUL, so it can never
// shift the events after it. A payload needs no such check: checkEventData has found it to
// be JSON, which holds no raw control byte.
func checkRunName(e Event) error {
	if !listable(e.Name) || strings.IndexByte(e.Name, runSep) >= 0 {
		return fmt.Errorf("event %s/%d: name: %w", e.MessageID, e.Seq, errTextListElement)
	}
	return nil
}

// runWriter lays a batch's events out as runs, each run's names, payloads (empty for NULL,
// as no JSON text is empty) and times joined by runSep, into three buffers: eachRun
// calls back at the end of each run with where it began in them.
type runWriter struct {
	names, data, times []byte
}

// eachRun writes events as runs, a run where the batch's events follow each other in one
// message (summarise has refused a batch whose events of a message are not side by side),
// and calls done after each run with its first event and the offsets in the buffers where
// its parts begin. Between runs it writes between (textListSep for PostgreSQL's joined
// lists; nothing for SQLite's rows).
func (w *runWriter) eachRun(events []Event, between []byte, done func(e Event, at [3]int) error) error {
	var head, last Event // the run's first event, and the last one written
	var at [3]int
	for k, e := range events {
		first := k == 0 || !continues(last, e)
		if first && k > 0 {
			if err := done(head, at); err != nil {
				return err
			}
			w.names, w.data, w.times = append(w.names, between...), append(w.data, between...), append(w.times, between...)
		}
		if first {
			head, at = e, [3]int{len(w.names), len(w.data), len(w.times)}
		}
		if err := w.add(e, first); err != nil {
			return err
		}
		last = e
	}
	if len(events) == 0 {
		return nil
	}
	return done(head, at)
}

// runArrays lays events out for an unnest into message_event_runs (the commit statements and
// writeTurnPGQuery), one element per run: message ids, first seqs (an array), and the runs'
// names, payloads and times, each list joined as a textList.
func runArrays(events []Event) ([]any, error) {
	w := newRunWriter(events)
	ids := newTextList(37)
	var seqs []int64
	err := w.eachRun(events, []byte{textListSep}, func(e Event, _ [3]int) error {
		seqs = append(seqs, e.Seq)
		return ids.addString(e.MessageID)
	})
	if err != nil {
		return nil, err
	}
	n := len(seqs)
	return []any{ids, pq.Array(seqs), &textList{b: w.names, n: n}, &textList{b: w.data, n: n}, &textList{b: w.times, n: n}}, nil
}

// runRow is a run as SQLite's insert binds it: texts, not bytes, which SQLite would store
// as BLOBs.
type runRow struct {
	messageID          string
	seq                int64
	names, data, times string
}

// newRunWriter returns a runWriter whose buffers have room for events: each grown by
// doubling, they were the largest item of a SQLite replica's allocations.
func newRunWriter(events []Event) runWriter {
	size := 0
	for _, e := range events {
		size += len(e.Data) + 1
	}
	return runWriter{names: make([]byte, 0, len(events)*14), data: make([]byte, 0, size), times: make([]byte, 0, len(events)*28)}
}

// runRows lays events out as SQLite's rows of message_event_runs. Each buffer becomes one
// string, which the rows share: a string of each run's part was another copy of the batch,
// allocated piece by piece.
func runRows(events []Event) ([]runRow, error) {
	w := newRunWriter(events)
	var rows []runRow
	var spans [][2][3]int // each run's parts in the buffers: where they begin, where they end
	err := w.eachRun(events, nil, func(e Event, at [3]int) error {
		rows = append(rows, runRow{messageID: e.MessageID, seq: e.Seq})
		spans = append(spans, [2][3]int{at, {len(w.names), len(w.data), len(w.times)}})
		return nil
	})
	if err != nil {
		return nil, err
	}
	names, data, times := string(w.names), string(w.data), string(w.times)
	for i, sp := range spans {
		from, to := sp[0], sp[1]
		rows[i].names, rows[i].data, rows[i].times = names[from[0]:to[0]], data[from[1]:to[1]], times[from[2]:to[2]]
	}
	return rows, nil
}

// add appends event e to the run being written; first says it starts the run.
func (w *runWriter) add(e Event, first bool) error {
	var data []byte // NULL
	if !e.Data.IsNull() {
		if err := checkEventData(e); err != nil {
			return err
		}
		data = e.Data
	}
	if err := checkRunName(e); err != nil {
		return err
	}
	if !first {
		w.names, w.data, w.times = append(w.names, runSep), append(w.data, runSep), append(w.times, runSep)
	}
	w.names = append(w.names, e.Name...)
	w.data = append(w.data, data...)
	w.times = e.CreatedAt.UTC().AppendFormat(w.times, pgTime)
	return nil
}

// splitRun turns a stored run back into its events.
func splitRun(messageID string, seq int64, names, data, times string) ([]Event, error) {
	n := strings.Count(names, string(runSep)) + 1
	if strings.Count(data, string(runSep)) != n-1 || strings.Count(times, string(runSep)) != n-1 {
		return nil, fmt.Errorf("run %s/%d: %d names, but the payloads or times do not match", messageID, seq, n)
	}
	out := make([]Event, n)
	for i := range out {
		var name, d, t string
		name, names, _ = strings.Cut(names, string(runSep))
		d, data, _ = strings.Cut(data, string(runSep))
		t, times, _ = strings.Cut(times, string(runSep))
		at, err := time.Parse(runTimeRead, t)
		if err != nil {
			return nil, fmt.Errorf("run %s/%d: event %d: %w", messageID, seq, i+1, err)
		}
		out[i] = Event{MessageID: messageID, Seq: seq + int64(i), Name: name, CreatedAt: at.UTC()}
		if d != "" {
			out[i].Data = JSON(d)
		}
	}
	return out, nil
}
