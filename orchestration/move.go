package orchestration

import (
	"fmt"
	"time"

	"github.com/phaseflow/phaseflow/handlers"
	"github.com/phaseflow/phaseflow/orchestration/carryover"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
)

// moveSpec is one phase move to make.
type moveSpec struct {
	from, to phases.Phase
	reason   string // for the transition row and the client (the audit's words)
	// reasonSkill names the skill that says the reason to the model in the session's
	// locale (the handler's [handlers.Report.ReasonSkill]); "" means reason is the user's
	// own words (the manual route) and is shown as is.
	reasonSkill string
	messageID   string         // the message that caused it ("" for the manual routes)
	evidence    map[string]any // which fields, which tool call
	exchanges   []store.Message
}

// move prepares a phase move in memory, for the caller to persist with the transition row
// it returns: the carryover block for the new phase's first turn (step 5), the new phase's
// block as its handler enters it, the session's phase and status, and a fresh upstream
// chain.
func (o *Orchestrator) move(skills handlers.Skills, sess *store.Session, arts session.Artifacts, meta *session.Metadata, m moveSpec) (*store.Transition, error) {
	said := m.reason
	if m.reasonSkill != "" {
		var err error
		if said, err = carryover.Reason(skills, sess.Locale, m.reasonSkill, arts[string(m.from)]); err != nil {
			return nil, fmt.Errorf("orchestration: move %s → %s: %w", m.from, m.to, err)
		}
	}
	block, err := carryover.Build(skills, sess.Locale, carryover.Move{From: string(m.from), To: string(m.to), Reason: said},
		arts[string(m.from)], m.exchanges, time.Now().UTC())
	if err != nil {
		return nil, fmt.Errorf("orchestration: move %s → %s: %w", m.from, m.to, err)
	}
	meta.Carryover = block
	if h, ok := o.handlers.For(m.to); ok {
		arts[string(m.to)] = h.Enter(arts[string(m.to)])
	}
	sess.Phase, sess.PreviousResponseID = string(m.to), ""
	if phases.IsFinal(m.to) {
		sess.Status = "completed"
	}
	evidence, err := jsonOf(m.evidence)
	if err != nil {
		return nil, err
	}
	o.logger.Info("phase move", "session_id", sess.ID, "from", m.from, "to", m.to, "reason", m.reason)
	return &store.Transition{SessionID: sess.ID, FromPhase: string(m.from), ToPhase: string(m.to),
		Reason: m.reason, MessageID: m.messageID, Metadata: evidence}, nil
}
