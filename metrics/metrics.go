// Package metrics is Phaseflow's Prometheus registry and the methods the rest of the
// program reports through. It uses github.com/prometheus/client_golang (histograms,
// exposition format, runtime and database-pool collectors) instead of hand-written text.
//
// The registry is Phaseflow's own, not the client library's global default, so nothing
// outside this package adds to it by accident and tests can build as many as they like.
// Every method is safe for concurrent use and cheap enough for the hot path; label values
// come from closed sets (route patterns, error codes, outcomes), never from user input.
//
// Who reports what: the API reports requests, open event streams and, among them, the
// followers of an existing message ([Metrics.FollowerOpened], [Metrics.FollowerClosed]);
// the orchestrator reports turns ([Metrics.TurnStarted], [Metrics.TurnRestarted], [Metrics.FirstDelta],
// [Metrics.TurnEnded]) and upstream errors ([Metrics.UpstreamError]); the event log its
// group commits ([Metrics.CommitObserved]); the JSON-skill runner its runs and model calls
// ([Metrics.SkillRunEnded], [Metrics.SkillModelCall]).
package metrics

import (
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Turn outcomes for [Metrics.TurnEnded].
const (
	OutcomeCompleted   = "completed"
	OutcomeFailed      = "failed"
	OutcomeCancelled   = "cancelled"
	OutcomeInterrupted = "interrupted"
)

// Metrics holds Phaseflow's metrics and the registry that serves them.
type Metrics struct {
	reg *prometheus.Registry

	requests        *prometheus.CounterVec
	requestDuration *prometheus.HistogramVec
	streamsOpen     prometheus.Gauge

	turnsStarted prometheus.Counter
	turnRestarts prometheus.Counter
	turnsRunning prometheus.Gauge
	turnsEnded   *prometheus.CounterVec
	firstDelta   prometheus.Histogram
	turnDuration *prometheus.HistogramVec

	upstreamErrors *prometheus.CounterVec

	commitSeconds prometheus.Histogram
	commitEvents  prometheus.Histogram
	commitErrors  prometheus.Counter
	followersOpen prometheus.Gauge

	skillRuns        *prometheus.CounterVec
	skillCalls       *prometheus.CounterVec
	skillRunDuration *prometheus.HistogramVec

	questions      *prometheus.CounterVec
	answerDelivery prometheus.Histogram

	op operatorFamilies
}

// New returns the metrics on a fresh registry that also collects the Go runtime (GC,
// memory, scheduler, goroutines) and the process (CPU, memory, open files).
func New() *Metrics {
	m := newMetrics()
	m.reg = prometheus.NewRegistry()
	m.reg.MustRegister(
		collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsGC, collectors.MetricsMemory, collectors.MetricsScheduler)),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.requests, m.requestDuration, m.streamsOpen,
		m.turnsStarted, m.turnRestarts, m.turnsRunning, m.turnsEnded, m.firstDelta, m.turnDuration,
		m.upstreamErrors, m.commitSeconds, m.commitEvents, m.commitErrors, m.followersOpen,
		m.skillRuns, m.skillCalls, m.skillRunDuration, m.questions, m.answerDelivery,
	)
	m.reg.MustRegister(m.op.collectors()...)
	return m
}

// RegisterDB adds the pool statistics of db (connections open, in use, idle, waits, wait
// time, closes) as go_sql_* metrics labelled db_name=name.
func (m *Metrics) RegisterDB(name string, db *sql.DB) error {
	if err := m.reg.Register(collectors.NewDBStatsCollector(db, name)); err != nil {
		return fmt.Errorf("metrics: register database pool %s: %w", name, err)
	}
	return nil
}

// Handler serves the registry in the Prometheus exposition format. A collector that fails
// is reported in the answer while the others are still served.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

// RegisterBuild exports phaseflow_build_info{version, revision, go_version} 1: which build
// a replica runs, for dashboards and alerts that compare replicas.
func (m *Metrics) RegisterBuild(version, revision, goVersion string) error {
	g := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "phaseflow_build_info", Help: "The build a replica runs: always 1, with its version, VCS revision and Go version.",
	}, []string{"version", "revision", "go_version"})
	if err := m.reg.Register(g); err != nil {
		return fmt.Errorf("metrics: register the build: %w", err)
	}
	g.WithLabelValues(version, revision, goVersion).Set(1)
	return nil
}

// Registry returns the registry, for tests that read metric values.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// RequestObserved counts one HTTP request: route is the matched pattern (e.g.
// /api/v1/sessions/:id, "" when none matched), code the error code of an error answer ("" on
// success).
func (m *Metrics) RequestObserved(method, route string, status int, code string, d time.Duration) {
	if route == "" {
		route = "unmatched"
	}
	m.requests.WithLabelValues(method, route, strconv.Itoa(status), code).Inc()
	m.requestDuration.WithLabelValues(method, route).Observe(d.Seconds())
}

// StreamOpened counts an event stream (SSE answer) opening; StreamClosed its end.
func (m *Metrics) StreamOpened() { m.streamsOpen.Inc() }

// StreamClosed counts an event stream ending.
func (m *Metrics) StreamClosed() { m.streamsOpen.Dec() }

// TurnStarted counts a generation that was accepted and started.
func (m *Metrics) TurnStarted() {
	m.turnsStarted.Inc()
	m.turnsRunning.Inc()
}

// TurnRestarted counts a turn started again before its begin committed: the session
// changed between the begin's read and its write (another turn, a phase move), and the
// turn started on the old read was stopped, its upstream request cancelled.
func (m *Metrics) TurnRestarted() { m.turnRestarts.Inc() }

// FirstDelta observes the time from a turn's start to its first content delta.
func (m *Metrics) FirstDelta(d time.Duration) { m.firstDelta.Observe(d.Seconds()) }

// TurnEnded counts a generation's end: outcome is one of the Outcome constants, code the
// error code of a failed, cancelled or interrupted turn ("" when completed), d the time
// since TurnStarted.
func (m *Metrics) TurnEnded(outcome, code string, d time.Duration) {
	m.turnsRunning.Dec()
	m.turnsEnded.WithLabelValues(outcome, code).Inc()
	m.turnDuration.WithLabelValues(outcome).Observe(d.Seconds())
}

// UpstreamError counts an error from the model upstream by its error code (the SSE error
// codes: provider_error, upstream_timeout, rate_limited, …) and endpoint.
func (m *Metrics) UpstreamError(code string, endpointID int) {
	m.upstreamErrors.WithLabelValues(code, strconv.Itoa(endpointID)).Inc()
}

// CommitObserved observes one event-log group commit: how many events it wrote and how long
// it took. A failed commit is counted apart and not observed.
func (m *Metrics) CommitObserved(events int, d time.Duration, err error) {
	if err != nil {
		m.commitErrors.Inc()
		return
	}
	m.commitSeconds.Observe(d.Seconds())
	m.commitEvents.Observe(float64(events))
}

// FollowerOpened counts a follower (a GET …/events stream of an existing message)
// starting; FollowerClosed its end.
func (m *Metrics) FollowerOpened() { m.followersOpen.Inc() }

// FollowerClosed counts an event-log follower ending.
func (m *Metrics) FollowerClosed() { m.followersOpen.Dec() }

// SkillRunEnded counts a finished JSON-skill run by skill, status (succeeded, failed) and
// error code ("" on success), and observes its duration. Skill names come from the
// embedded catalog, a closed set.
func (m *Metrics) SkillRunEnded(skill, status, code string, d time.Duration) {
	m.skillRuns.WithLabelValues(skill, status, code).Inc()
	m.skillRunDuration.WithLabelValues(skill).Observe(d.Seconds())
}

// QuestionEvent counts what happened to watched agents' questions: notified, answered,
// delivered, stale, expired.
func (m *Metrics) QuestionEvent(event string) { m.questions.WithLabelValues(event).Inc() }

// AnswerDelivered observes the time from an answer given to its keys typed in the pane.
func (m *Metrics) AnswerDelivered(d time.Duration) { m.answerDelivery.Observe(d.Seconds()) }

// SkillModelCall counts one model call of a JSON skill by skill and reason: first, widen
// (a wider terminal window) or correction (the one retry).
func (m *Metrics) SkillModelCall(skill, reason string) {
	m.skillCalls.WithLabelValues(skill, reason).Inc()
}
