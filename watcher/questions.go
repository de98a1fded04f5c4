package watcher

import (
	"context"
	"time"

	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// Questions is where a watcher records the questions it notifies, follows their answers
// and reports what became of each: a Phaseflow server (Remote). Without one the watcher
// only notifies.
type Questions interface {
	// Record records q and says whether it is new: a question its source already has open
	// or answered is not notified again.
	Record(ctx context.Context, q Question) (Recorded, error)
	// Follow sends the user's answers not yet reported on to answers until ctx ends,
	// reconnecting as needed; an answer may come more than once.
	Follow(ctx context.Context, answers chan<- Answer) error
	// Report says what became of an answer: store.QuestionDelivered (typed into the pane
	// that asked) or store.QuestionStale (the screen moved on first: nothing typed).
	Report(ctx context.Context, id, state string) error
}

// Question is a question as the watcher records it.
type Question struct {
	SourceID    string   `json:"source_id"`
	Workspace   string   `json:"workspace"`
	Agent       string   `json:"agent"`
	Fingerprint string   `json:"fingerprint"`
	Kind        string   `json:"message_type"`
	Message     string   `json:"message"`
	Subject     string   `json:"subject"`
	Options     []Option `json:"options"`
	Locale      string   `json:"locale"`
}

// Option is one option of a question: its label and the keys that choose it, as the rules
// read them on the agent's screen (none when the model read it).
type Option struct {
	Label string   `json:"label"`
	Keys  []string `json:"keys,omitempty"`
}

// Recorded is a recorded question: its id, whether it is new, and the links that answer it.
type Recorded struct {
	ID        string
	New       bool
	AnswerURL string
	Actions   []Action
}

// Action is one option answered straight from a notification: POST its URL.
type Action struct {
	Label string `json:"label"`
	URL   string `json:"url"`
}

// Answer is an answer to type into the pane that asked.
type Answer struct {
	ID          string         `json:"id"`
	SourceID    string         `json:"source_id"`
	Fingerprint string         `json:"fingerprint"`
	Answer      string         `json:"answer"`
	Keys        []terminal.Key `json:"keys"`
	AnsweredAt  *time.Time     `json:"answered_at"`
}

// questionOf is the question of a reading of src, in locale.
func questionOf(src Source, r Reading, locale string) Question {
	q := Question{SourceID: src.ID, Workspace: src.Workspace, Agent: r.Agent, Fingerprint: r.Fingerprint,
		Kind: r.Type, Message: r.Message, Subject: r.Subject, Locale: locale}
	for i, label := range r.Options {
		o := Option{Label: label}
		if i < len(r.Keys) {
			o.Keys = r.Keys[i]
		}
		q.Options = append(q.Options, o)
	}
	return q
}
