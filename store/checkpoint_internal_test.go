package store

import (
	"context"
	"testing"
	"time"
)

// countingWriteback counts the writebacks pause starts.
type countingWriteback struct{ n int }

func (w *countingWriteback) start() { w.n++ }

// While the log grows fast the checkpointer starts the log's writeback every
// sqliteWritebackEvery between two checkpoints, and otherwise not at all; a closing store
// ends the pause at once.
func TestCheckpointPause(t *testing.T) {
	cases := []struct {
		name    string
		d       time.Duration
		fast    bool
		closing bool
		want    int
		ok      bool
	}{
		{"log growing fast: a writeback every step", sqliteCheckpointEvery, true, false, int(sqliteCheckpointEvery / sqliteWritebackEvery), true},
		{"log growing slowly: none", sqliteCheckpointEvery, false, false, 0, true},
		{"log idle: none", 2 * sqliteCheckpointEvery, false, false, 0, true},
		{"store closing: none", sqliteCheckpointIdle, true, true, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.closing {
				cancel()
			}
			s := &Store{bg: ctx}
			tm := time.NewTimer(time.Hour)
			defer tm.Stop()
			wb := &countingWriteback{}
			began := time.Now()
			ok := s.pause(tm, tc.d, tc.fast, wb)
			if ok != tc.ok || wb.n != tc.want {
				t.Fatalf("pause(%v) = %v with %d writebacks, want %v with %d", tc.d, ok, wb.n, tc.ok, tc.want)
			}
			if took := time.Since(began); tc.ok && took < tc.d {
				t.Fatalf("pause(%v) returned after %v", tc.d, took)
			}
		})
	}
}
