package jsonskill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// Model is the upstream as the runner calls it: the router the chat turns use, with its
// endpoints, failover and breakers.
type Model interface {
	Stream(ctx context.Context, req upstream.Request) iter.Seq2[upstream.Event, error]
}

// Runs keeps the runs the runner makes.
type Runs interface {
	SaveSkillRun(ctx context.Context, run *store.SkillRun, window time.Duration) error
}

// Metrics receives what a run did; nil reports nothing.
type Metrics interface {
	// SkillRunEnded counts a finished run by skill, status and error code ("" on success).
	SkillRunEnded(skill, status, code string, d time.Duration)
	// SkillModelCall counts one model call by skill and reason: first, widen or correction.
	SkillModelCall(skill, reason string)
}

// Options are the runner's settings.
type Options struct {
	// CallTimeout bounds one model call; a skill's own timeout is used when shorter.
	CallTimeout time.Duration
	// DedupWindow is how long a question keeps its fingerprint (see [store.Store.SaveSkillRun]).
	DedupWindow time.Duration
	// MaxOutputTokens replaces every skill's own output limit when positive.
	MaxOutputTokens int
	Logger          *slog.Logger
	Metrics         Metrics
}

// Runner runs JSON skills. It is safe for concurrent use.
type Runner struct {
	catalog *Catalog
	model   Model
	runs    Runs
	opts    Options
}

// New returns a runner over the skills of catalog, calling model and storing in runs.
func New(catalog *Catalog, model Model, runs Runs, opts Options) *Runner {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return &Runner{catalog: catalog, model: model, runs: runs, opts: opts}
}

// Catalog returns the skills the runner knows.
func (r *Runner) Catalog() *Catalog { return r.catalog }

// Request is one run to make.
type Request struct {
	UserID string
	Skill  string
	// Locale is "en" or "zh"; anything else (or a locale the skill lacks) runs in English.
	Locale string
	// SourceID names what is watched (one terminal, say); a question from the same
	// source is de-duplicated. Optional.
	SourceID string
	Input    json.RawMessage
	// StopWithCaller stops the run when the caller's context ends, storing nothing: for a
	// caller that is itself stopping (a watcher interrupted at the keyboard), not for a
	// request whose client may come back for the run.
	StopWithCaller bool
}

// Run runs req and stores the run, whatever its outcome; the error is for a request that
// could not run at all: ErrUnknownSkill, an *[InputError], a stored run that could not be
// written, or ctx ending. Unless req.StopWithCaller, the run goes on when the caller leaves
// (its model calls each have their own timeout), so every started run is stored.
func (r *Runner) Run(ctx context.Context, req Request) (*store.SkillRun, error) {
	sk, err := r.catalog.Get(req.Skill)
	if err != nil {
		return nil, err
	}
	in, err := sk.CheckInput(req.Input)
	if err != nil {
		return nil, err
	}
	runCtx := context.WithoutCancel(ctx)
	if req.StopWithCaller {
		runCtx = ctx
	}
	run, err := r.Execute(runCtx, sk, req, in)
	if err != nil {
		return nil, err
	}
	window := time.Duration(0)
	if sk.rules.Dedup {
		window = r.opts.DedupWindow
	}
	if err := r.runs.SaveSkillRun(context.WithoutCancel(ctx), run, window); err != nil {
		return nil, fmt.Errorf("jsonskill: store the run: %w", err)
	}
	return run, nil
}

// Execute runs a checked input (see [Skill.CheckInput]) and returns the run to store. Its
// error is ctx's when ctx ended before the run did (nothing is to be stored then: a job
// runs the input again elsewhere); every other outcome is a run, failed or not.
func (r *Runner) Execute(ctx context.Context, sk *Skill, req Request, in Input) (*store.SkillRun, error) {
	began := time.Now()
	ex := r.newExecution(sk, req, in)
	out := ex.run(ctx)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	ex.meta.LatencyMS = time.Since(began).Milliseconds()
	run, err := ex.record(out)
	if err != nil {
		return nil, err
	}
	if m := r.opts.Metrics; m != nil {
		m.SkillRunEnded(sk.Name, run.Status, out.code, time.Since(began))
	}
	return run, nil
}

// Refused is the failed run of an input that cannot run (see [failure.InvalidInput]).
func (r *Runner) Refused(req Request, input store.JSON, err error) *store.SkillRun {
	e, encErr := json.Marshal(map[string]string{"code": failure.InvalidInput, "message": err.Error()})
	if encErr != nil { // two strings always marshal
		e = store.JSON(`{"code":"invalid_input"}`)
	}
	return &store.SkillRun{UserID: req.UserID, Skill: req.Skill, Status: store.RunFailed, Locale: req.Locale,
		Input: input, Error: e, Meta: store.JSON(`{"attempts":0,"decided_by":"rules"}`)}
}

// maxOutputTokens is the output limit sent with each model call of sk.
func (r *Runner) maxOutputTokens(sk *Skill) int {
	if r.opts.MaxOutputTokens > 0 {
		return r.opts.MaxOutputTokens
	}
	return sk.maxOutputTokens
}

// callTimeout is the limit of one model call of sk.
func (r *Runner) callTimeout(sk *Skill) time.Duration {
	if r.opts.CallTimeout > 0 && r.opts.CallTimeout < sk.callTimeout {
		return r.opts.CallTimeout
	}
	return sk.callTimeout
}

// InputError is an input that does not match its skill's input schema, or is too large;
// the message names the field (the API answers 400 invalid_input, or 413).
type InputError struct {
	// Problems are the failed rules, each led by the field's JSON pointer.
	Problems []string
	// TooLarge marks an input over a size limit rather than a malformed one.
	TooLarge bool
}

// Error joins the problems.
func (e *InputError) Error() string { return "invalid input: " + strings.Join(e.Problems, "; ") }

// Input is a checked input: its JSON and its decoded fields.
type Input struct {
	raw    json.RawMessage
	fields map[string]any
}

// Raw is the input as sent.
func (in Input) Raw() json.RawMessage { return in.raw }

// CheckInput holds raw to the skill's input schema and limits.
func (sk *Skill) CheckInput(raw json.RawMessage) (Input, error) {
	if len(raw) == 0 {
		raw = json.RawMessage("null")
	}
	problems, err := validate(sk.input, raw, "/")
	if err != nil {
		return Input{}, &InputError{Problems: []string{"/: not JSON"}}
	}
	if len(problems) > 0 {
		return Input{}, &InputError{Problems: problems}
	}
	var fields map[string]any
	if err := json.Unmarshal(raw, &fields); err != nil {
		return Input{}, &InputError{Problems: []string{"/: " + err.Error()}}
	}
	if snap := sk.rules.Snapshot; snap != nil {
		if text, _ := fields[snap.Field].(string); snap.MaxBytes > 0 && len(text) > snap.MaxBytes {
			return Input{}, &InputError{TooLarge: true,
				Problems: []string{fmt.Sprintf("/%s: the snapshot is %d bytes, more than %d", snap.Field, len(text), snap.MaxBytes)}}
		}
	}
	return Input{raw: raw, fields: fields}, nil
}

// IsInputError reports whether err is an *InputError, and whether it is about size.
func IsInputError(err error) (isInput, tooLarge bool) {
	var ie *InputError
	if errors.As(err, &ie) {
		return true, ie.TooLarge
	}
	return false, false
}
