package watcher

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
	"github.com/phaseflow/phaseflow/store"
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
	// Typer types an answer into it; nil when answers cannot be typed (its questions are
	// then notified without an answer path).
	Typer *Typer
}

// Options are a watch's settings.
type Options struct {
	Every   time.Duration
	Timeout time.Duration // one capture's limit
	// Limit is how much of a capture is kept, its last bytes.
	Limit    int
	Reader   Reader
	Notifier *Notifier // nil: print only
	// Questions keeps the questions and follows their answers (a Phaseflow server); nil:
	// notifications only, no answer path.
	Questions Questions
	// Panes, when set, lists the sources again before each round (every pane of a tmux
	// server), so panes that open or close are picked up.
	Panes *Panes
	// Locale is the questions' locale (their answer page's language).
	Locale string
	// Out gets one JSON line per new question; Errs the problems, once per change.
	Out, Errs io.Writer
}

// Watcher watches sources until its context ends.
type Watcher struct {
	opts    Options
	sources []Source
	state   map[string]*sourceState
	handled map[string]bool // answers typed or found stale, so that one sent again is not
	pending map[string]pendingAnswer
	listErr string // the last problem listing the panes
}

// sourceState is what the watcher remembers of a source between captures.
type sourceState struct {
	sum     [sha256.Size]byte // the last screen's
	busy    bool              // the last reading saw the agent at work
	problem string            // the last problem reported
	// open is the question the source asks and its fingerprint, recorded and not answered
	// through the watcher yet; "" when none.
	open, openPrint string
}

// maxHandled bounds the answers remembered as handled; past it the oldest are forgotten
// (the server has the outcome by then, and does not send them again).
const maxHandled = 1024

// New returns a watcher of sources (or of opts.Panes' panes).
func New(opts Options, sources []Source) *Watcher {
	w := &Watcher{opts: opts, state: map[string]*sourceState{}, handled: map[string]bool{}, pending: map[string]pendingAnswer{}}
	w.setSources(sources)
	return w
}

// setSources makes sources the watched ones, keeping what is known of those still there.
func (w *Watcher) setSources(sources []Source) {
	state := make(map[string]*sourceState, len(sources))
	for _, s := range sources {
		state[s.ID] = w.state[s.ID]
		if state[s.ID] == nil {
			state[s.ID] = &sourceState{}
		}
	}
	w.sources, w.state = sources, state
}

// Run watches until ctx ends: every interval, each source once; between rounds it types the
// answers that come, each into the pane that asked.
func (w *Watcher) Run(ctx context.Context) {
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	answers := make(chan Answer) // unbuffered: the stream waits while a round runs
	var following sync.WaitGroup
	if w.opts.Questions != nil {
		following.Go(func() {
			if err := w.opts.Questions.Follow(ctx, answers); err != nil && ctx.Err() == nil {
				fmt.Fprintf(w.opts.Errs, "phaseflow watch: answers: %v\n", err)
			}
		})
	}
	defer following.Wait()
	tick := time.NewTicker(w.opts.Every)
	defer tick.Stop()
	for {
		w.round(ctx)
		w.retryPending(ctx)
		for waiting := true; waiting; {
			select {
			case <-ctx.Done():
				return
			case a := <-answers:
				w.answer(ctx, a)
			case <-tick.C:
				waiting = false
			}
		}
	}
}

// round captures each source once, listing the panes first when they are watched.
func (w *Watcher) round(ctx context.Context) {
	if w.opts.Panes != nil {
		sources, err := w.opts.Panes.List(ctx)
		if err != nil && err.Error() != w.listErr && ctx.Err() == nil {
			fmt.Fprintf(w.opts.Errs, "phaseflow watch: %v\n", err)
		}
		w.listErr = ""
		if err != nil {
			w.listErr = err.Error()
		} else {
			w.setSources(sources)
		}
	}
	for _, src := range w.sources {
		if ctx.Err() != nil {
			return
		}
		w.once(ctx, src)
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
	if st.open != "" && (r.Status != "has_question" || r.Fingerprint != st.openPrint) {
		w.report(ctx, st, st.open, store.QuestionStale) // answered at the computer, or gone
	}
	if r.Status != "has_question" || r.Duplicate {
		return
	}
	n := noticeOf(src, r)
	if w.opts.Questions != nil && src.Typer != nil {
		rec, err := w.opts.Questions.Record(ctx, questionOf(src, r, w.opts.Locale))
		if err != nil {
			w.problem(ctx, st, err)
			return
		}
		st.open, st.openPrint = rec.ID, r.Fingerprint
		if !rec.New {
			return // asked already: notified then, or answered and waiting to be typed
		}
		n.AnswerURL, n.Actions = rec.AnswerURL, rec.Actions
	}
	w.print(n)
	if w.opts.Notifier != nil {
		if err := w.opts.Notifier.Send(ctx, n); err != nil {
			w.problem(ctx, st, err)
		}
	}
}

// report tells the server what became of question id, which the source no longer waits on.
func (w *Watcher) report(ctx context.Context, st *sourceState, id, state string) {
	if st != nil && st.open == id {
		st.open, st.openPrint = "", ""
	}
	if err := w.opts.Questions.Report(ctx, id, state); err != nil && ctx.Err() == nil {
		fmt.Fprintf(w.opts.Errs, "phaseflow watch: report question %s %s: %v\n", id, state, err)
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
