package metrics

import "github.com/prometheus/client_golang/prometheus"

// newMetrics defines every family: names, help texts (what to alert on is docs/metrics.md's
// table), labels and buckets.
func newMetrics() *Metrics {
	return &Metrics{
		op: newOperatorFamilies(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_http_requests_total", Help: "HTTP requests by method, route pattern, status and error code.",
		}, []string{"method", "route", "status", "code"}),
		requestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_http_request_duration_seconds", Help: "Time to answer an HTTP request (an event stream: until it is detached from its handler after its first frame, or its whole life over HTTP/2).",
			Buckets: []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"method", "route"}),
		streamsOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phaseflow_event_streams_open", Help: "Event streams (SSE answers) open now.",
		}),
		turnsStarted: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phaseflow_turns_started_total", Help: "Generations started.",
		}),
		turnRestarts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phaseflow_turn_restarts_total", Help: "Turns started again before their begin committed: a lost race, or a fresh session's guess the database did not confirm (the first start's upstream request was cancelled).",
		}),
		turnsRunning: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phaseflow_turns_running", Help: "Generations running now.",
		}),
		turnsEnded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_turns_total", Help: "Generations ended, by outcome and error code.",
		}, []string{"outcome", "code"}),
		firstDelta: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "phaseflow_turn_first_delta_seconds", Help: "Time from a turn's start to its first content delta.",
			Buckets: []float64{.1, .25, .5, 1, 2, 4, 8, 16, 32, 64},
		}),
		turnDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_turn_duration_seconds", Help: "Time from a turn's start to its terminal event, by outcome.",
			Buckets: []float64{.5, 1, 2, 5, 10, 20, 40, 80, 160, 320},
		}, []string{"outcome"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_upstream_errors_total", Help: "Errors from the model upstream, by error code and endpoint.",
		}, []string{"code", "endpoint"}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "phaseflow_eventlog_commit_seconds", Help: "Time of one event-log group commit.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .25, .5, 1},
		}),
		commitEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "phaseflow_eventlog_commit_events", Help: "Events written by one event-log group commit.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 10),
		}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "phaseflow_eventlog_commit_errors_total", Help: "Event-log group commits that failed.",
		}),
		followersOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "phaseflow_eventlog_followers", Help: "Event-log followers (readers of a message's log) open now.",
		}),
		questions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_watch_questions_total", Help: "Watched agents' questions by what happened: notified, answered (from a phone), delivered (typed into the pane), stale (the screen moved on first), expired.",
		}, []string{"event"}),
		answerDelivery: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "phaseflow_watch_answer_delivery_seconds", Help: "Time from an answer given on a phone to its keys typed into the pane that asked (the watcher's report).",
			Buckets: []float64{.25, .5, 1, 2, 4, 8, 16, 32, 64, 300, 3600},
		}),
		skillRuns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_skill_runs_total", Help: "JSON-skill runs ended, by skill, status and error code.",
		}, []string{"skill", "status", "code"}),
		skillCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_skill_model_calls_total", Help: "Model calls of JSON skills, by skill and reason (first, widen, correction).",
		}, []string{"skill", "reason"}),
		skillRunDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_skill_run_duration_seconds", Help: "Time of one JSON-skill run, its model calls included.",
			Buckets: []float64{.001, .01, .1, .25, .5, 1, 2, 5, 10, 30, 60},
		}, []string{"skill"}),
	}
}
