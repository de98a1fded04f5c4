package watcher

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// captureLines is how many of a screen's last lines the watcher compares and reads, as
// the terminal_state skill keeps them.
const captureLines = 800

// Source is one watched terminal.
type Source struct {
	// ID names the source for the de-duplication and the runs list.
	ID string
	// Command prints the screen (e.g. tmux capture-pane -p -t agent -S -800).
	Command string
	// Workspace is what a person calls it: the source id given, else the tmux session,
	// window and pane with the pane's working directory.
	Workspace string
}

// Options are a watch's settings.
type Options struct {
	Every   time.Duration
	Timeout time.Duration // one capture's limit
	// Limit is how much of a capture is kept, its last bytes.
	Limit    int
	Reader   Reader
	Notifier *Notifier // nil: print only
	// Out gets one JSON line per new question; Errs the problems, once per change.
	Out, Errs io.Writer
}

// Watcher watches sources until its context ends.
type Watcher struct {
	opts    Options
	sources []Source
	state   map[string]*sourceState
}

// sourceState is what the watcher remembers of a source between captures.
type sourceState struct {
	sum     [sha256.Size]byte // the last screen's
	busy    bool              // the last reading saw the agent at work
	problem string            // the last problem reported
}

// New returns a watcher of sources.
func New(opts Options, sources []Source) *Watcher {
	st := make(map[string]*sourceState, len(sources))
	for _, s := range sources {
		st[s.ID] = &sourceState{}
	}
	return &Watcher{opts: opts, sources: sources, state: st}
}

// Run watches until ctx ends: every interval, each source once.
func (w *Watcher) Run(ctx context.Context) {
	tick := time.NewTicker(w.opts.Every)
	defer tick.Stop()
	for {
		for _, src := range w.sources {
			if ctx.Err() != nil {
				return
			}
			w.once(ctx, src)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// once captures src and, when its screen changed, has it read; a new question is printed
// and notified.
func (w *Watcher) once(ctx context.Context, src Source) {
	st := w.state[src.ID]
	snap, err := capture(ctx, src.Command, w.opts.Timeout, w.opts.Limit)
	if err != nil {
		w.problem(ctx, st, err)
		return
	}
	// The screen as the skill reads it: the user's typing masked, colour gone. Typing a
	// reply, or a redraw in other colours, changes nothing to read.
	prepared := terminal.Prepare(string(snap), "\x00", captureLines)
	sum := sha256.Sum256([]byte(strings.Join(prepared.Lines, "\n")))
	if sum == st.sum {
		return // an unchanged screen costs the capture only
	}
	st.sum = sum
	if len(prepared.Lines) == 0 {
		return // a blank screen, between two of an agent's redraws, says nothing
	}
	if st.busy && terminal.Read(prepared).State == terminal.Busy {
		return // still at work: nothing new to read
	}
	r, err := w.opts.Reader.ReadScreen(ctx, src, snap)
	if err != nil {
		w.problem(ctx, st, err)
		return
	}
	if r.Failed != "" {
		w.problem(ctx, st, fmt.Errorf("run %s failed: %s", r.RunID, r.Failed))
		return
	}
	st.problem, st.busy = "", r.Status == "processing"
	if r.Status != "has_question" || r.Duplicate {
		return
	}
	n := noticeOf(src, r)
	w.print(n)
	if w.opts.Notifier != nil {
		if err := w.opts.Notifier.Send(ctx, n); err != nil {
			w.problem(ctx, st, err)
		}
	}
}

// problem reports err unless it is the one reported last for the source, or ctx ended.
func (w *Watcher) problem(ctx context.Context, st *sourceState, err error) {
	if ctx.Err() != nil || err.Error() == st.problem {
		return
	}
	st.problem = err.Error()
	fmt.Fprintf(w.opts.Errs, "phaseflow watch: %v\n", err)
}

// print writes the question's line.
func (w *Watcher) print(n Notice) {
	line, err := json.Marshal(n)
	if err != nil { // strings, slices of them and a time always marshal
		fmt.Fprintf(w.opts.Errs, "phaseflow watch: encode the question: %v\n", err)
		return
	}
	fmt.Fprintln(w.opts.Out, string(line))
}
