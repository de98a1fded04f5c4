package finish

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// Handlers finds a phase's handler, which enters its block on a move.
type Handlers interface {
	For(p phases.Phase) (handlers.Handler, bool)
}

// Move is one phase move to make.
type Move struct {
	From, To phases.Phase
	// Reason is the audit's words, for the transition row and the client.
	Reason string
	// ReasonSkill names the skill that says the reason to the model in the session's
	// locale (the handler's [handlers.Report.ReasonSkill]); "" means Reason is the user's
	// own words (the manual route) and is carried over as is.
	ReasonSkill string
	// MessageID is the message that caused it ("" for the manual routes).
	MessageID string
	// Evidence is which fields, which tool call, which route.
	Evidence map[string]any
	// Exchanges are the last messages, for the carryover block.
	Exchanges []store.Message
}

// Apply makes m on the session in memory: the carryover block for the new phase's first
// turn, the new phase's block as its handler enters it, the session's phase and status and
// a fresh upstream chain. It returns the transition row, for the caller to write with the
// session in one transaction.
func (m Move) Apply(skills handlers.Skills, hs Handlers, sess *store.Session, arts session.Artifacts, meta *session.Metadata, at time.Time) (*store.Transition, error) {
	said := m.Reason
	if m.ReasonSkill != "" {
		var err error
		if said, err = carryover.Reason(skills, sess.Locale, m.ReasonSkill, arts[string(m.From)]); err != nil {
			return nil, fmt.Errorf("finish: move %s → %s: %w", m.From, m.To, err)
		}
	}
	block, err := carryover.Build(skills, sess.Locale, carryover.Move{From: string(m.From), To: string(m.To), Reason: said},
		arts[string(m.From)], m.Exchanges, at)
	if err != nil {
		return nil, fmt.Errorf("finish: move %s → %s: %w", m.From, m.To, err)
	}
	meta.Carryover = block
	if h, ok := hs.For(m.To); ok {
		arts[string(m.To)] = h.Enter(arts[string(m.To)])
	}
	sess.Phase, sess.PreviousResponseID = string(m.To), ""
	if phases.IsFinal(m.To) {
		sess.Status = session.StatusCompleted
	}
	evidence, err := json.Marshal(m.Evidence)
	if err != nil {
		return nil, fmt.Errorf("finish: move %s → %s: evidence: %w", m.From, m.To, err)
	}
	// The transition keeps the reason as the session's locale says it, for /transitions
	// and the phase_changed announcement (the handler's Reason is English, for the logs).
	return &store.Transition{SessionID: sess.ID, FromPhase: string(m.From), ToPhase: string(m.To),
		Reason: said, MessageID: m.MessageID, Metadata: evidence}, nil
}

// EncodeState writes a session's decoded state back into its row.
func EncodeState(sess *store.Session, arts session.Artifacts, meta session.Metadata) error {
	var err error
	if sess.Artifacts, err = arts.Encode(); err != nil {
		return err
	}
	sess.Metadata, err = meta.Encode()
	return err
}
