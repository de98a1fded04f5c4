// Package turnlog reads a message's event log the way the protocols of other clients need
// it (package protocols' translations): not deltas and statuses but what a person sees
// happen in a turn. The reply's text comes as reasoning and answer (thinkingml.Sections);
// an attempt the server refused is said to be refused, so a protocol that cannot take text
// back can mark it; the end is the turn's outcome, decoded once.
package turnlog

import (
	"encoding/json"
	"fmt"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/store"
)

// Kind says what happened.
type Kind uint8

const (
	// Status: the turn's state changed (Status is set).
	Status Kind = iota
	// Reasoning and Answer: text of the current attempt (Text is set).
	Reasoning
	Answer
	// Refused: the server refused the current attempt's reply and asks again; what it
	// wrote will not be kept.
	Refused
	// Completed: the turn ended with a kept reply (Completed and Metadata are set).
	Completed
	// Failed: the turn ended without one (Failed is set; FallbackAnswer is the answer of
	// the short reply the server wrote instead, when it wrote one).
	Failed
)

// Happening is one thing that happened in a turn.
type Happening struct {
	Kind           Kind
	Attempt        int // the attempt it belongs to, from 1
	Text           string
	Status         *events.StatusData
	Completed      *events.CompletedData
	Metadata       *events.Metadata
	Failed         *events.ErrorData
	FallbackAnswer string
}

// Reader reads one message's events in order. It is not safe for concurrent use.
type Reader struct {
	attempt  int
	sections thinkingml.Sections
}

// NewReader returns a Reader at the start of a message's log.
func NewReader() *Reader { return &Reader{attempt: 1} }

// Attempt is the attempt under way, from 1.
func (r *Reader) Attempt() int { return r.attempt }

// Read turns the next event into what happened; heartbeats and unknown events are nothing.
func (r *Reader) Read(ev store.Event) ([]Happening, error) {
	switch ev.Name {
	case events.ContentDelta:
		var d events.DeltaData
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return nil, fmt.Errorf("turnlog: %s %d: %w", ev.Name, ev.Seq, err)
		}
		return r.text(r.sections.Write(d.Delta)), nil
	case events.Status:
		var st events.StatusData
		if err := json.Unmarshal(ev.Data, &st); err != nil {
			return nil, fmt.Errorf("turnlog: %s %d: %w", ev.Name, ev.Seq, err)
		}
		if st.State != events.StateRetrying {
			return []Happening{{Kind: Status, Attempt: r.attempt, Status: &st}}, nil
		}
		out := []Happening{{Kind: Refused, Attempt: r.attempt}, {Kind: Status, Attempt: r.attempt + 1, Status: &st}}
		r.attempt++
		r.sections = thinkingml.Sections{}
		return out, nil
	case events.Completed:
		return r.completed(ev)
	case events.Error:
		return r.failed(ev)
	}
	return nil, nil
}

// completed ends the text and decodes the turn's metadata.
func (r *Reader) completed(ev store.Event) ([]Happening, error) {
	var c events.CompletedData
	if err := json.Unmarshal(ev.Data, &c); err != nil {
		return nil, fmt.Errorf("turnlog: %s %d: %w", ev.Name, ev.Seq, err)
	}
	var md events.Metadata
	if len(c.Metadata) > 0 {
		if err := json.Unmarshal(c.Metadata, &md); err != nil {
			return nil, fmt.Errorf("turnlog: %s %d metadata: %w", ev.Name, ev.Seq, err)
		}
	}
	out := r.text(r.sections.Close())
	return append(out, Happening{Kind: Completed, Attempt: r.attempt, Completed: &c, Metadata: &md}), nil
}

// failed ends the text and reads the fallback reply's answer.
func (r *Reader) failed(ev store.Event) ([]Happening, error) {
	var e events.ErrorData
	if err := json.Unmarshal(ev.Data, &e); err != nil {
		return nil, fmt.Errorf("turnlog: %s %d: %w", ev.Name, ev.Seq, err)
	}
	out := r.text(r.sections.Close())
	_, fallback := Split(e.Fallback)
	return append(out, Happening{Kind: Failed, Attempt: r.attempt, Failed: &e, FallbackAnswer: fallback}), nil
}

// text is the pieces of the current attempt as happenings.
func (r *Reader) text(pieces []thinkingml.Piece) []Happening {
	var out []Happening
	for _, p := range pieces {
		k := Reasoning
		if p.Answer {
			k = Answer
		}
		out = append(out, Happening{Kind: k, Attempt: r.attempt, Text: p.Text})
	}
	return out
}

// Split reads a whole reply into its reasoning and its answer.
func Split(reply string) (reasoning, answer string) {
	var s thinkingml.Sections
	pieces := append(s.Write(reply), s.Close()...)
	for _, p := range pieces {
		if p.Answer {
			answer += p.Text
		} else {
			reasoning += p.Text
		}
	}
	return reasoning, answer
}
