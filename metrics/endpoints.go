package metrics

import (
	"fmt"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
)

// EndpointState is one upstream endpoint's circuit breaker as /metrics shows it.
type EndpointState struct {
	ID       int
	Provider string
	State    string // closed, open or half_open
	Failures int    // unhealthy answers in a row
}

// breakerStates are the states a breaker gauge is written for, so an alert sees 0 too.
var breakerStates = []string{"closed", "open", "half_open"}

// RegisterEndpoints adds the upstream endpoints' breakers, read from states at each
// scrape: phaseflow_upstream_breaker_state{endpoint, provider, state} is 1 for the current
// state and 0 for the others, phaseflow_upstream_breaker_failures{endpoint} the failures in
// a row.
func (m *Metrics) RegisterEndpoints(states func() []EndpointState) error {
	if err := m.reg.Register(endpointCollector{states: states}); err != nil {
		return fmt.Errorf("metrics: register endpoints: %w", err)
	}
	return nil
}

var (
	breakerStateDesc = prometheus.NewDesc("phaseflow_upstream_breaker_state",
		"Circuit breaker state of each upstream endpoint: 1 for the current state.", []string{"endpoint", "provider", "state"}, nil)
	breakerFailuresDesc = prometheus.NewDesc("phaseflow_upstream_breaker_failures",
		"Unhealthy answers in a row from each upstream endpoint.", []string{"endpoint"}, nil)
)

// endpointCollector reads the breakers at scrape time.
type endpointCollector struct{ states func() []EndpointState }

// Describe implements [prometheus.Collector].
func (endpointCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- breakerStateDesc
	ch <- breakerFailuresDesc
}

// Collect implements [prometheus.Collector].
func (c endpointCollector) Collect(ch chan<- prometheus.Metric) {
	for _, e := range c.states() {
		id := strconv.Itoa(e.ID)
		for _, s := range breakerStates {
			v := 0.0
			if s == e.State {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(breakerStateDesc, prometheus.GaugeValue, v, id, e.Provider, s)
		}
		ch <- prometheus.MustNewConstMetric(breakerFailuresDesc, prometheus.GaugeValue, float64(e.Failures), id)
	}
}
