package main

import (
	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/failure"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/metrics"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
	"github.com/phaseflow/phaseflow/phases"
	"github.com/phaseflow/phaseflow/store"
	"github.com/phaseflow/phaseflow/upstream"
)

// knownLabels gathers the label values of every labelled counter from the packages that
// define them, for metrics.Zero.
func knownLabels(cfg config.Config, skills *jsonskill.Catalog) metrics.Known {
	k := metrics.Known{
		Problems:  []string{"other"},
		Outcomes:  []string{"ok", "cancelled"},
		CallCodes: failure.ModelCall(),
		TurnCodes: map[string][]string{
			store.StatusCompleted: {""}, store.StatusFailed: failure.Turn(),
			store.StatusCancelled: {failure.Cancelled}, store.StatusInterrupted: {failure.Interrupted},
		},
		RunCodes: failure.Run(),
		Reasons:  jsonskill.CallReasons(),
		QuestionEvents: []string{"notified", store.QuestionAnswered, store.QuestionDelivered,
			store.QuestionStale, store.QuestionExpired},
	}
	for _, mv := range phases.Moves() {
		k.PhaseMoves = append(k.PhaseMoves, [2]string{string(mv[0]), string(mv[1])})
	}
	for _, c := range thinkingml.ErrorCodes() {
		k.Problems = append(k.Problems, string(c))
	}
	for _, kind := range upstream.Kinds() {
		k.Outcomes = append(k.Outcomes, kind.String())
	}
	k.Endpoints = []int{1} // the built-in scripted upstream's, when none is configured
	if len(cfg.Endpoints) > 0 {
		k.Endpoints = k.Endpoints[:0]
		for _, e := range cfg.Endpoints {
			k.Endpoints = append(k.Endpoints, e.ID)
		}
	}
	for _, sk := range skills.List() {
		k.Skills = append(k.Skills, sk.Name)
	}
	return k
}
