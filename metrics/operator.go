package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// operatorFamilies are what an operator of an LLM gateway watches first: tokens, upstream
// requests and their latency, MCP tool calls, correction retries, stream opens and resumes,
// phase moves. Every label comes from a closed set: endpoints and servers from the
// configuration, tools from the phases' table ("other" for any other name), models as the
// configured endpoints name them, codes and phases from the contract.
type operatorFamilies struct {
	tokens           *prometheus.CounterVec
	upstreamRequests *prometheus.CounterVec
	upstreamFirst    *prometheus.HistogramVec
	upstreamDuration *prometheus.HistogramVec
	toolCalls        *prometheus.CounterVec
	toolDuration     *prometheus.HistogramVec
	corrections      *prometheus.CounterVec
	streamOpens      *prometheus.CounterVec
	resumeDepth      prometheus.Histogram
	phaseMoves       *prometheus.CounterVec
}

// latencyBuckets span an upstream's answers: tens of milliseconds to a long reply.
func latencyBuckets() []float64 { return []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 120} }

func newOperatorFamilies() operatorFamilies {
	return operatorFamilies{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_tokens_total", Help: "Tokens of finished turns as the upstream reported them, by provider, model, endpoint and kind (input, output).",
		}, []string{"provider", "model", "endpoint", "kind"}),
		upstreamRequests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_upstream_requests_total", Help: "Requests sent to upstream endpoints, by endpoint and outcome (ok, cancelled, rate_limited, unavailable, timeout, provider, refused, truncated).",
		}, []string{"endpoint", "outcome"}),
		upstreamFirst: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_upstream_first_byte_seconds", Help: "Time from sending an upstream request to its first event, by endpoint.",
			Buckets: latencyBuckets(),
		}, []string{"endpoint"}),
		upstreamDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_upstream_request_seconds", Help: "Whole time of an upstream request, by endpoint and outcome.",
			Buckets: latencyBuckets(),
		}, []string{"endpoint", "outcome"}),
		toolCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_mcp_tool_calls_total", Help: "MCP tool calls of turns, by server, tool and status (success, failure).",
		}, []string{"server", "tool", "status"}),
		toolDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "phaseflow_mcp_tool_call_seconds", Help: "Time of one MCP tool call, by server and tool.",
			Buckets: latencyBuckets(),
		}, []string{"server", "tool"}),
		corrections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_correction_retries_total", Help: "Correction retries of turns (a refused reply asked for again), by the first problem's code.",
		}, []string{"reason"}),
		streamOpens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_event_stream_opens_total", Help: "Event streams opened, by kind: new (from the start) or resume (with Last-Event-ID).",
		}, []string{"kind"}),
		resumeDepth: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "phaseflow_event_stream_resume_events", Help: "How far back a resumed stream started: the events it had not seen when it opened.",
			Buckets: []float64{0, 1, 5, 20, 100, 500, 2000, 10000},
		}),
		phaseMoves: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "phaseflow_phase_moves_total", Help: "Session phase moves, by from and to phase (turns, the phase route and the confirm route).",
		}, []string{"from", "to"}),
	}
}

func (f operatorFamilies) collectors() []prometheus.Collector {
	return []prometheus.Collector{f.tokens, f.upstreamRequests, f.upstreamFirst, f.upstreamDuration, f.toolCalls,
		f.toolDuration, f.corrections, f.streamOpens, f.resumeDepth, f.phaseMoves}
}

// UpstreamRequest counts one request sent to an upstream endpoint and observes its time
// to the first event (when one came) and its whole time.
func (m *Metrics) UpstreamRequest(endpointID int, outcome string, firstByte, total time.Duration) {
	ep := strconv.Itoa(endpointID)
	m.op.upstreamRequests.WithLabelValues(ep, outcome).Inc()
	if firstByte > 0 {
		m.op.upstreamFirst.WithLabelValues(ep).Observe(firstByte.Seconds())
	}
	m.op.upstreamDuration.WithLabelValues(ep, outcome).Observe(total.Seconds())
}

// Tokens adds a finished turn's tokens.
func (m *Metrics) Tokens(provider, model string, endpointID, input, output int) {
	ep := strconv.Itoa(endpointID)
	m.op.tokens.WithLabelValues(provider, model, ep, "input").Add(float64(input))
	m.op.tokens.WithLabelValues(provider, model, ep, "output").Add(float64(output))
}

// ToolCall counts one MCP tool call and observes its time.
func (m *Metrics) ToolCall(server, tool, status string, d time.Duration) {
	m.op.toolCalls.WithLabelValues(server, tool, status).Inc()
	m.op.toolDuration.WithLabelValues(server, tool).Observe(d.Seconds())
}

// CorrectionRetry counts a refused reply asked for again, by its first problem's code.
func (m *Metrics) CorrectionRetry(reason string) { m.op.corrections.WithLabelValues(reason).Inc() }

// StreamResumed counts an event stream opening: resumed says it came with Last-Event-ID,
// behind how many events it had not seen then.
func (m *Metrics) StreamResumed(resumed bool, behind int64) {
	if !resumed {
		m.op.streamOpens.WithLabelValues("new").Inc()
		return
	}
	m.op.streamOpens.WithLabelValues("resume").Inc()
	m.op.resumeDepth.Observe(float64(max(behind, 0)))
}

// PhaseMoved counts a session's phase move.
func (m *Metrics) PhaseMoved(from, to string) { m.op.phaseMoves.WithLabelValues(from, to).Inc() }
