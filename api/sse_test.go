package api

import (
	"testing"

	"github.com/phaseflow/phaseflow/store"
)

// sentFrames is a frameSink that keeps what was sent.
type sentFrames struct{ out []string }

func (s *sentFrames) send(frames []byte, _ bool) error {
	s.out = append(s.out, string(frames))
	return nil
}

// TestFrameLayout: docs/api.md. A logged event is event, data, then id; the
// stream's first frame, whichever it is, carries retry: in its own block.
func TestFrameLayout(t *testing.T) {
	ev := func(seq int64) store.Event {
		return store.Event{Seq: seq, Name: "content_delta", Data: store.JSON(`{"seq":1}`)}
	}
	cases := []struct {
		name  string
		write func(w *sseWriter) error
		want  []string
	}{
		{"events first", func(w *sseWriter) error {
			w.event(ev(1))
			if err := w.flush(false); err != nil {
				return err
			}
			w.event(ev(2))
			return w.flush(false)
		}, []string{
			"retry: 2000\nevent: content_delta\ndata: {\"seq\":1}\nid: 1\n\n",
			"event: content_delta\ndata: {\"seq\":1}\nid: 2\n\n",
		}},
		{"a heartbeat first", func(w *sseWriter) error {
			if err := w.unlogged("heartbeat", map[string]int{"ts": 1}); err != nil {
				return err
			}
			w.event(ev(3))
			return w.flush(true)
		}, []string{
			"retry: 2000\nevent: heartbeat\ndata: {\"ts\":1}\n\n",
			"event: content_delta\ndata: {\"seq\":1}\nid: 3\n\n",
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sink := &sentFrames{}
			w := &sseWriter{out: sink, retry: true}
			if err := tc.write(w); err != nil {
				t.Fatal(err)
			}
			if len(sink.out) != len(tc.want) {
				t.Fatalf("sent %q, want %q", sink.out, tc.want)
			}
			for i := range tc.want {
				if sink.out[i] != tc.want[i] {
					t.Fatalf("frame %d = %q, want %q", i, sink.out[i], tc.want[i])
				}
			}
		})
	}
}
