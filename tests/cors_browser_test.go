package tests

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath finds the browser; CI installs Debian's chromium (.ci/install-chromium).
func findChromium() (string, error) {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return exec.LookPath("/usr/bin/chromium")
}

// noBrowser fails the test in CI, where the browser test must run, and skips it elsewhere.
func noBrowser(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf(format, args...)
	}
	t.Skipf(format+" (install chromium to run this test; CI fails instead of skipping)", args...)
}

// followResult is what follow.js leaves in window.result.
type followResult struct {
	Done       bool           `json:"done"`
	Error      any            `json:"error"`
	PostStatus int            `json:"postStatus"`
	RequestID  string         `json:"requestId"`
	MessageID  string         `json:"messageId"`
	Deltas     string         `json:"deltas"`
	Events     []string       `json:"events"`
	IDs        []int64        `json:"ids"`
	Completed  map[string]any `json:"completed"`
}

// followPage serves testdata/browser from a second loopback origin, starts a server that
// lets it in (CORS), and returns both with a Chromium tab.
func followPage(t *testing.T) (string, *server, context.Context) {
	t.Helper()
	browser, err := findChromium()
	if err != nil {
		noBrowser(t, "no Chromium found: %v", err)
	}
	pageLn, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pageOrigin := "http://" + pageLn.Addr().String()
	pages := &http.Server{Handler: http.FileServer(http.Dir("testdata/browser")), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = pages.Serve(pageLn) }()
	t.Cleanup(func() { _ = pages.Close() })
	s := startServer(t, "PHASEFLOW_CORS_ORIGINS="+pageOrigin)
	return pageOrigin, s, newBrowser(t, browser)
}

// runFollow opens follow.html with the hash's parameters and waits for its result.
func runFollow(t *testing.T, ctx context.Context, pageOrigin string, hash url.Values) followResult {
	t.Helper()
	// The first Run of a chromedp context owns the browser and must not have a timeout;
	// newBrowser made it. Later actions run with one.
	actx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	if err := chromedp.Do(actx, chromedp.Navigate(pageOrigin+"/follow.html#"+hash.Encode())); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	if _, err := chromedp.Run(actx, chromedp.Poll[bool](`window.result && window.result.done`, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
		t.Fatalf("the page did not finish the turn: %v", err)
	}
	raw, err := chromedp.Run(actx, chromedp.Evaluate[string](`JSON.stringify(window.result)`))
	if err != nil {
		t.Fatal(err)
	}
	var result followResult
	if err := json.Unmarshal([]byte(raw), &result); err != nil {
		t.Fatalf("window.result %s: %v", raw, err)
	}
	if result.Error != nil || result.PostStatus != http.StatusAccepted {
		t.Fatalf("the page failed: post %d, error %v, events %v", result.PostStatus, result.Error, result.Events)
	}
	return result
}

// TestBrowserFollowsATurnFromAnotherOrigin loads a page from a second loopback origin in
// headless Chromium. The page posts a message to the API (a CORS preflight, since it sends
// Authorization and JSON) and follows the reply with EventSource and the stream token. The
// text it assembles must be the persisted reply.
func TestBrowserFollowsATurnFromAnotherOrigin(t *testing.T) {
	pageOrigin, s, ctx := followPage(t)
	tok := s.token("browser-user")
	result := runFollow(t, ctx, pageOrigin, url.Values{"api": {s.base}, "token": {tok}, "text": {"Draft a momentum strategy for BTC [[pace_ms:5]]"}})
	if result.RequestID == "" {
		t.Error("X-Request-Id is not readable cross-origin (Access-Control-Expose-Headers)")
	}
	if len(result.Events) < 3 || result.Events[0] != "status:queued" || result.Events[len(result.Events)-1] != "completed" {
		t.Fatalf("events seen by the page: %v", result.Events)
	}
	msg := waitFinished(t, s, tok, result.MessageID)
	if msg["content"] != result.Deltas || result.Deltas == "" || !strings.Contains(result.Deltas, "<final>") {
		t.Fatalf("the page assembled %q, the server persisted %q", result.Deltas, msg["content"])
	}
}

// TestBrowserFollowsThroughCuts: Chromium's own EventSource follows a turn through a proxy
// that cuts its connections in the middle of data: lines and at frame boundaries, and
// reconnects on its own with Last-Event-ID: it assembles exactly the stored reply, every
// event once, in order.
func TestBrowserFollowsThroughCuts(t *testing.T) {
	pageOrigin, s, ctx := followPage(t)
	tok := s.token("browser-cuts")
	proxy := newCutSchedule(t, s.base, sseCuts)
	result := runFollow(t, ctx, pageOrigin, url.Values{"api": {s.base}, "via": {proxy.URL()}, "token": {tok},
		"text": {"A plain reply [[scenario:default]] [[pace_ms:20]]"}})
	msg := waitFinished(t, s, tok, result.MessageID)
	if msg["content"] != result.Deltas || result.Deltas == "" {
		t.Fatalf("through the cuts the page assembled %q, the server persisted %q", result.Deltas, msg["content"])
	}
	for i, id := range result.IDs {
		if id != int64(i+1) {
			t.Fatalf("the page handled the events %v: want each once, in order, from 1", result.IDs)
		}
	}
	if n := proxy.served(); n != len(sseCuts)+1 {
		t.Errorf("the page opened %d event streams, want %d (one per cut, and the last)", n, len(sseCuts)+1)
	}
}

// newBrowser starts headless Chromium with a fresh profile and no network besides loopback
// traffic the page makes, and returns a tab context that is closed with the test.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(t, path)...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	if err := chromedp.Do(ctx); err != nil { // starts the browser
		noBrowser(t, "Chromium at %s did not start: %v", path, err)
	}
	return ctx
}
