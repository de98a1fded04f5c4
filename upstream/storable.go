package upstream

import "strings"

// storable wraps a stream's yield so that no text the upstream sent reaches the caller with
// a NUL character in it. A model can send one ("\u0000" in a JSON string is valid), but
// PostgreSQL's text cannot hold it: the turn's terminal commit, with the reply as the
// message's content, would fail for good and the reply would be lost. Each NUL becomes
// U+FFFD, the replacement character, before anything sees the text, so the deltas clients
// read and the content stored stay the same text on every database.
func storable(yield func(Event, error) bool) func(Event, error) bool {
	return func(ev Event, err error) bool {
		ev.scrub()
		return yield(ev, err)
	}
}

// scrub replaces the NUL characters in ev's texts; the common event, without any, is not
// copied.
func (ev *Event) scrub() {
	ev.ResponseID, ev.Model, ev.Delta = noNUL(ev.ResponseID), noNUL(ev.Model), noNUL(ev.Delta)
	if t := ev.Tool; t != nil && t.hasNUL() {
		c := *t
		c.ID, c.ServerLabel, c.Name = noNUL(c.ID), noNUL(c.ServerLabel), noNUL(c.Name)
		c.Arguments, c.Output, c.Error = noNUL(c.Arguments), noNUL(c.Output), noNUL(c.Error)
		ev.Tool = &c
	}
}

func (t *ToolCall) hasNUL() bool {
	for _, s := range []string{t.ID, t.ServerLabel, t.Name, t.Arguments, t.Output, t.Error} {
		if strings.IndexByte(s, 0) >= 0 {
			return true
		}
	}
	return false
}

// noNUL returns s with each NUL replaced by U+FFFD.
func noNUL(s string) string {
	if strings.IndexByte(s, 0) < 0 {
		return s
	}
	return strings.ReplaceAll(s, "\x00", "\uFFFD")
}
