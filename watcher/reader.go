package watcher

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/store"
)

// Reader has a snapshot read by the terminal_state skill: in this process (Local), or by a
// Phaseflow server.
type Reader interface {
	ReadScreen(ctx context.Context, src Source, snapshot []byte) (Reading, error)
}

// Reading is a terminal_state run as the watcher needs it.
type Reading struct {
	RunID     string
	Time      time.Time
	Duplicate bool
	// Failed is a failed run's error; the rest is empty then.
	Failed string
	// The answer (docs/json-skills.md's fields).
	Status      string   `json:"status"`
	Message     string   `json:"message"`
	Fingerprint string   `json:"fingerprint"`
	Type        string   `json:"message_type"`
	Options     []string `json:"options"`
	// What the rules read beyond the answer: the agent, and for a question they read, the
	// rule, what waits for approval and each option's keys.
	Agent   string     `json:"agent"`
	Rule    string     `json:"rule"`
	Subject string     `json:"subject"`
	Keys    [][]string `json:"keys"`
}

// Local reads snapshots with a runner of this process, storing the runs as User's.
type Local struct {
	Runner *jsonskill.Runner
	User   string
	Locale string
}

// ReadScreen runs terminal_state on snapshot. It stops, storing nothing, when ctx ends.
func (l Local) ReadScreen(ctx context.Context, src Source, snapshot []byte) (Reading, error) {
	input, err := json.Marshal(map[string]string{"terminal": string(snapshot)})
	if err != nil {
		return Reading{}, fmt.Errorf("encode the snapshot: %w", err)
	}
	run, err := l.Runner.Run(ctx, jsonskill.Request{UserID: l.User, Skill: "terminal_state", Locale: l.Locale,
		SourceID: src.ID, Input: input, StopWithCaller: true})
	if err != nil {
		return Reading{}, err
	}
	return readingOf(run.ID, run.CreatedAt, run.Duplicate, run.Status, run.Output, run.Meta, run.Error)
}

// readingOf decodes a stored run (its output, meta and error as JSON).
func readingOf(id string, at time.Time, dup bool, status string, output, meta, failure []byte) (Reading, error) {
	r := Reading{RunID: id, Time: at, Duplicate: dup}
	if status != store.RunSucceeded {
		r.Failed = string(failure)
		return r, nil
	}
	if err := json.Unmarshal(output, &r); err != nil {
		return r, fmt.Errorf("run %s: decode its answer: %w", id, err)
	}
	var m struct {
		Screen struct {
			Agent, Rule, Subject string
			Keys                 [][]string
		} `json:"screen"`
	}
	if err := json.Unmarshal(meta, &m); err != nil {
		return r, fmt.Errorf("run %s: decode its meta: %w", id, err)
	}
	r.Agent, r.Rule, r.Subject, r.Keys = m.Screen.Agent, m.Screen.Rule, m.Screen.Subject, m.Screen.Keys
	return r, nil
}
