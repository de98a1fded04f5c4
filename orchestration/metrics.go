package orchestration

import "time"

// Metrics receives what operators alert on about turns (package metrics implements it).
type Metrics interface {
	TurnStarted()
	TurnRestarted()
	FirstDelta(d time.Duration)
	TurnEnded(outcome, code string, d time.Duration)
	UpstreamError(code string, endpointID int)
}

// noMetrics is the Metrics of an orchestrator built without one.
type noMetrics struct{}

func (noMetrics) TurnStarted()                            {}
func (noMetrics) TurnRestarted()                          {}
func (noMetrics) FirstDelta(time.Duration)                {}
func (noMetrics) TurnEnded(string, string, time.Duration) {}
func (noMetrics) UpstreamError(string, int)               {}
