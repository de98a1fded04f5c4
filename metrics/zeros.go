package metrics

import "strconv"

// Known is every label value the code knows before anything happens, so each labelled
// counter is exported at 0 from the start: a dashboard or an alert then sees a healthy
// server, not "no data". The caller gathers them from the packages that define them.
type Known struct {
	PhaseMoves [][2]string // from, to
	Problems   []string    // the reply problems a correction retry is counted by
	Endpoints  []int
	Outcomes   []string            // of an upstream request: ok, cancelled and each failure kind
	CallCodes  []string            // the codes of a model call's failures
	TurnCodes  map[string][]string // a turn's final status → the codes it ends with ("" for none)
	Skills     []string
	RunCodes   []string // the codes a skill run fails with
	Reasons    []string // why a skill calls the model: first, widen, correction
	// QuestionEvents are what happens to a watched agent's question (store's states and
	// notified).
	QuestionEvents []string
}

// Zero exports every series of k at 0.
func (m *Metrics) Zero(k Known) {
	for _, mv := range k.PhaseMoves {
		m.op.phaseMoves.WithLabelValues(mv[0], mv[1])
	}
	for _, p := range k.Problems {
		m.op.corrections.WithLabelValues(p)
	}
	for _, kind := range []string{"new", "resume"} {
		m.op.streamOpens.WithLabelValues(kind)
	}
	for _, id := range k.Endpoints {
		ep := strconv.Itoa(id)
		for _, o := range k.Outcomes {
			m.op.upstreamRequests.WithLabelValues(ep, o)
		}
		for _, c := range k.CallCodes {
			m.upstreamErrors.WithLabelValues(c, ep)
		}
	}
	for status, codes := range k.TurnCodes {
		for _, c := range codes {
			m.turnsEnded.WithLabelValues(status, c)
		}
	}
	for _, e := range k.QuestionEvents {
		m.questions.WithLabelValues(e)
	}
	for _, s := range k.Skills {
		m.skillRuns.WithLabelValues(s, "succeeded", "")
		for _, c := range k.RunCodes {
			m.skillRuns.WithLabelValues(s, "failed", c)
		}
		for _, r := range k.Reasons {
			m.skillCalls.WithLabelValues(s, r)
		}
	}
}
