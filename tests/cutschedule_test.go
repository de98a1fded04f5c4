package tests

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// cutKind is where a cutSchedule cuts an event stream.
type cutKind int

const (
	// cutAtBoundary cuts right after a frame's blank line: the frame is whole.
	cutAtBoundary cutKind = iota
	// cutInData cuts in the middle of a frame's data: line.
	cutInData
)

// cut is one connection's cut: after which frame of that connection, and where.
type cut struct {
	kind  cutKind
	frame int // the frames of the connection before the cut one (0: the first)
}

// cutSchedule is a proxy that forwards requests to a server and cuts its event streams, one connection after
// another, at the points of its schedule, then lets the rest through: what a mobile
// network or a load balancer's idle cut does to a client following a turn. It parses the
// stream as it forwards it, so the cuts fall exactly where the schedule says, whatever the
// frames' sizes.
type cutSchedule struct {
	t        *testing.T
	target   *url.URL
	mu       sync.Mutex
	schedule []cut
	streams  int // event streams served so far
	srv      *httptest.Server
}

// newCutSchedule starts a proxy to base that cuts its event streams by schedule.
func newCutSchedule(t *testing.T, base string, schedule []cut) *cutSchedule {
	t.Helper()
	target, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutSchedule{t: t, target: target, schedule: schedule}
	p.srv = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(p.srv.Close)
	return p
}

// URL is the proxy's base URL.
func (p *cutSchedule) URL() string { return p.srv.URL }

// served is how many event streams the proxy has served.
func (p *cutSchedule) served() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.streams
}

// next is the cut of the next event stream, and false when the schedule is done.
func (p *cutSchedule) next() (cut, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	i := p.streams
	p.streams++
	if i < len(p.schedule) {
		return p.schedule[i], true
	}
	return cut{}, false
}

func (p *cutSchedule) serve(w http.ResponseWriter, r *http.Request) {
	out := r.Clone(r.Context())
	out.RequestURI, out.Host = "", ""
	out.URL.Scheme, out.URL.Host = p.target.Scheme, p.target.Host
	resp, err := http.DefaultTransport.RoundTrip(out) // not the checking client: the test's client checks
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	c, cutting := p.next()
	fl := w.(http.Flusher)
	fl.Flush()
	if !cutting {
		copyFlushing(w, fl, resp.Body)
		return
	}
	p.forwardUntil(w, fl, resp.Body, c)
	// Cut: the connection ends without the response's end, as a dropped one does.
	panic(http.ErrAbortHandler)
}

// copyFlushing forwards a stream as it comes.
func copyFlushing(w io.Writer, fl http.Flusher, body io.Reader) {
	buf := make([]byte, 4096)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			fl.Flush()
		}
		if err != nil {
			return
		}
	}
}

// forwardUntil forwards whole frames up to the cut one, then the part of it the cut lets
// through.
func (p *cutSchedule) forwardUntil(w io.Writer, fl http.Flusher, body io.Reader, c cut) {
	var pending []byte
	buf := make([]byte, 4096)
	for frame := 0; ; {
		end := bytes.Index(pending, []byte("\n\n"))
		if end < 0 {
			n, err := body.Read(buf)
			pending = append(pending, buf[:n]...)
			if err != nil {
				return // the stream ended before the cut: nothing to cut
			}
			continue
		}
		whole := pending[:end+2]
		if frame < c.frame {
			_, _ = w.Write(whole)
			fl.Flush()
			pending, frame = pending[end+2:], frame+1
			continue
		}
		switch c.kind {
		case cutAtBoundary:
			_, _ = w.Write(whole)
		case cutInData:
			i := bytes.Index(whole, []byte("data: "))
			if i < 0 {
				p.t.Errorf("cut proxy: frame %q has no data line", whole)
				return
			}
			_, _ = w.Write(whole[:i+len("data: ")+(len(whole)-i-len("data: "))/2])
		}
		fl.Flush()
		return
	}
}
