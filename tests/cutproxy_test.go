package tests

import (
	"bytes"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// cutProxy stands between the browser and the server like a flaky network: it forwards
// everything, and when armed it cuts the next event stream once, in the middle of a frame
// after a few content_delta events, by dropping the connection (no closing chunk), which
// is what a browser sees when a mobile link or a proxy goes away.
type cutProxy struct {
	srv   *httptest.Server
	armed atomic.Bool
	cuts  atomic.Int32

	mu       sync.Mutex
	resumeAt []string // the Last-Event-ID of each events request, "" for a first one
}

// deltasBeforeCut is how many content_delta events get through before the cut.
const deltasBeforeCut = 5

var errCut = errors.New("cutProxy: connection cut")

func newCutProxy(t *testing.T, target string) *cutProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &cutProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1
	rp.ErrorLog = log.New(io.Discard, "", 0) // the cut is on purpose
	rp.ModifyResponse = func(resp *http.Response) error {
		if isEvents(resp.Request) && resp.StatusCode == http.StatusOK && p.armed.CompareAndSwap(true, false) {
			resp.Body = &cutter{ReadCloser: resp.Body, after: deltasBeforeCut}
			p.cuts.Add(1)
		}
		return nil
	}
	p.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isEvents(r) {
			p.mu.Lock()
			p.resumeAt = append(p.resumeAt, r.Header.Get("Last-Event-ID"))
			p.mu.Unlock()
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(p.srv.Close)
	return p
}

func isEvents(r *http.Request) bool { return strings.HasSuffix(r.URL.Path, "/events") }

// eventsRequests returns the Last-Event-ID of every events request so far.
func (p *cutProxy) eventsRequests() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.resumeAt...)
}

// cutter passes a stream through until it has passed after content_delta events and the
// "event:" line of the next one, then fails, so the connection ends mid-frame.
type cutter struct {
	io.ReadCloser
	after int
	seen  int
	cut   bool
}

const deltaLine = "event: content_delta\n"

func (c *cutter) Read(b []byte) (int, error) {
	if c.cut {
		return 0, errCut
	}
	n, err := c.ReadCloser.Read(b)
	for i := 0; ; {
		j := bytes.Index(b[i:n], []byte(deltaLine))
		if j < 0 {
			break
		}
		i += j + len(deltaLine)
		if c.seen++; c.seen > c.after {
			c.cut = true
			return i, nil
		}
	}
	return n, err
}
