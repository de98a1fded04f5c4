// Package carryover keeps the short memory a session carries from one phase into the next:
// a block built when the phase moves, stored in the session metadata, put before the user's
// text on the new phase's first turn and then marked used, so it is sent exactly once.
package carryover

import "time"

// Block is one phase's carryover for the next.
type Block struct {
	From      string    `json:"from"`
	To        string    `json:"to"`
	Text      string    `json:"text"`
	Used      bool      `json:"used"`
	CreatedAt time.Time `json:"created_at"`
}

// Take returns the text to put before the user's message on this turn, if a block for phase
// is waiting, and marks it used. It returns "" when there is nothing to carry.
func Take(b *Block, phase string) string {
	if b == nil || b.Used || b.To != phase || b.Text == "" {
		return ""
	}
	b.Used = true
	return b.Text
}
