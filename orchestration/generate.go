package orchestration

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/orchestration/events"
	"github.com/phaseflow/phaseflow/orchestration/postprocess"
	"github.com/phaseflow/phaseflow/orchestration/prompt"
	"github.com/phaseflow/phaseflow/store"
)

// maxAttempts is the first attempt plus at most one correction retry.
const maxAttempts = 2

// generate runs the attempts of a turn and writes its tail. An error return means the turn
// failed and [Orchestrator.fail] must end it.
func (o *Orchestrator) generate(t *turn) error {
	if err := o.setStatus(t, store.StatusStreaming, events.StatusData{State: events.StateWorking, Phase: t.begun.Session.Phase}); err != nil {
		return err
	}
	var err error
	if t.history, err = o.history(t); err != nil {
		return err
	}
	if t.plan, err = o.prepare(t); err != nil {
		return err
	}
	for t.attempts = 1; t.attempts <= maxAttempts; t.attempts++ {
		accepted, err := o.attempt(t)
		if err != nil || accepted {
			if err == nil {
				err = o.finish(t)
			}
			return err
		}
		if t.attempts < maxAttempts {
			if err := o.announceRetry(t); err != nil {
				return err
			}
		}
	}
	return &replyInvalidError{problems: t.problems}
}

// attempt streams one attempt and judges it by the reply policy.
func (o *Orchestrator) attempt(t *turn) (bool, error) {
	req, err := o.prompts.Build(o.skillsFor(t.ctx), o.promptInput(t))
	if err != nil {
		return false, err
	}
	t.result, err = o.streams.Run(t.ctx, req, t.em)
	if err != nil {
		return false, err
	}
	if strings.TrimSpace(t.result.Text) == "" {
		if err := o.fallbackEmpty(t); err != nil {
			return false, err
		}
	}
	t.outcome = postprocess.Process(t.result, postprocess.Options{
		Locale: t.begun.Session.Locale, SerpQueriesOptional: o.cfg.SerpQueriesOptional,
	})
	if o.cfg.ReplyPolicy == PolicyOff {
		return true, nil // blocks are still extracted; the findings are neither sent nor enforced
	}
	t.problems = t.outcome.Problems()
	return len(t.problems) == 0 || o.cfg.ReplyPolicy == PolicyReport, nil
}

func (o *Orchestrator) promptInput(t *turn) prompt.Input {
	p := t.plan
	in := prompt.Input{
		Session: t.begun.Session, History: t.history, UserText: t.userText,
		Carryover: t.begun.Carryover, Correction: t.problems,
		Stage: p.stage, Artifacts: p.block, PhaseTexts: p.pieces.Texts, Values: p.values,
		Tools: p.tools, ToolChoice: p.pieces.ToolChoice, MaxOutputTokens: p.pieces.MaxOutputTokens,
	}
	if o.cfg.ChainResponses {
		in.PreviousResponseID = t.begun.Session.PreviousResponseID
	}
	return in
}

// finish settles the accepted reply and writes the tail.
func (o *Orchestrator) finish(t *turn) error {
	if err := o.settle(t); err != nil {
		return err
	}
	return o.complete(t)
}

// fallbackEmpty answers in the model's place when its reply was empty: the fallback text is
// a valid ThinkingML reply in the session's locale, streamed like any reply.
func (o *Orchestrator) fallbackEmpty(t *turn) error {
	text, err := o.skillsFor(t.ctx).Text("fallback/empty", t.begun.Session.Locale)
	if err != nil {
		return err
	}
	if err := t.em.Delta(t.ctx, text); err != nil {
		return err
	}
	t.result.Text, t.fallback = text, true
	return nil
}

func (o *Orchestrator) announceRetry(t *turn) error {
	o.logger.Info("reply refused, asking again", "message_id", t.msg.ID, "problems", t.problems)
	t.em.restart(t.attempts + 1)
	return t.em.status(t.logCtx(), events.StatusData{
		State: events.StateRetrying, Attempt: t.attempts + 1, Reason: strings.Join(t.problems, "; "),
	})
}

// history loads the recent messages of the session, without this turn's own two.
func (o *Orchestrator) history(t *turn) ([]store.Message, error) {
	msgs, err := o.store.LatestMessages(t.ctx, t.begun.Session.ID, o.cfg.HistoryMessages+2)
	if err != nil {
		return nil, fmt.Errorf("orchestration: load history: %w", err)
	}
	out := msgs[:0]
	for _, m := range msgs {
		if m.ID != t.msg.ID && (t.begun.User == nil || m.ID != t.begun.User.ID) {
			out = append(out, m)
		}
	}
	if len(out) > o.cfg.HistoryMessages {
		out = out[len(out)-o.cfg.HistoryMessages:]
	}
	return out, nil
}

func (o *Orchestrator) setStatus(t *turn, status string, ev events.StatusData) error {
	if err := o.store.SetMessageStatus(t.ctx, t.msg.ID, status); err != nil {
		return fmt.Errorf("orchestration: set status: %w", err)
	}
	t.msg.Status = status
	return t.em.status(t.logCtx(), ev)
}
