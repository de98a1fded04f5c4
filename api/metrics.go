package api

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/labstack/echo/v4"
)

// Metrics counts requests by status and open event streams, served in the Prometheus text
// format. A handful of counters does not justify the Prometheus client library.
type Metrics struct {
	mu       sync.Mutex
	requests map[string]uint64 // "METHOD STATUS" → count
	streams  atomic.Int64
}

// NewMetrics returns empty counters.
func NewMetrics() *Metrics { return &Metrics{requests: make(map[string]uint64)} }

func (m *Metrics) middleware() echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			err := next(c)
			status := c.Response().Status
			if err != nil && !c.Response().Committed {
				status = toHTTP(err).Status
			}
			m.mu.Lock()
			m.requests[fmt.Sprintf("%s %d", c.Request().Method, status)]++
			m.mu.Unlock()
			return err
		}
	}
}

// streamOpened and streamClosed keep the open-streams gauge.
func (m *Metrics) streamOpened() { m.streams.Add(1) }
func (m *Metrics) streamClosed() { m.streams.Add(-1) }

func (m *Metrics) serve(c echo.Context) error {
	var b strings.Builder
	b.WriteString("# HELP phaseflow_http_requests_total HTTP requests by method and status.\n")
	b.WriteString("# TYPE phaseflow_http_requests_total counter\n")
	m.mu.Lock()
	keys := make([]string, 0, len(m.requests))
	for k := range m.requests {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		method, status, _ := strings.Cut(k, " ")
		fmt.Fprintf(&b, "phaseflow_http_requests_total{method=%q,status=%q} %d\n", method, status, m.requests[k])
	}
	m.mu.Unlock()
	b.WriteString("# HELP phaseflow_event_streams_open Event streams currently open.\n")
	b.WriteString("# TYPE phaseflow_event_streams_open gauge\n")
	fmt.Fprintf(&b, "phaseflow_event_streams_open %d\n", m.streams.Load())
	return c.Blob(http.StatusOK, "text/plain; version=0.0.4", []byte(b.String()))
}
