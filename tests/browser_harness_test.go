package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// chromiumPath is Debian's Chromium; .ci/install-chromium installs it when it is missing.
const chromiumPath = "/usr/bin/chromium"

// browserUnavailable skips the test on a developer's machine without Chromium, and fails
// it in CI, where a browser test that does not run is a failure.
func browserUnavailable(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("CI is set and Chromium cannot start: "+format, args...)
	}
	t.Skipf("Chromium cannot start (apt-get install chromium): "+format, args...)
}

// browser is one headless Chromium tab, with what it wrote to its console.
type browser struct {
	ctx   context.Context
	shots string // where screenshots go

	mu      sync.Mutex
	n       int // screenshots taken
	console []chromedp.ConsoleMessage
}

// page is the tab as one test or subtest uses it: failures are reported to t.
type page struct {
	t *testing.T
	b *browser
}

// in returns the tab for t, a subtest of the test that started the browser.
func (p *page) in(t *testing.T) *page { return &page{t: t, b: p.b} }

// chromiumOptions start headless Chromium at path with a fresh profile, no network of its
// own (no updates, sync or QUIC), and its temporary folders under the test's, so nothing
// outlives the test (Chromium leaves one in $TMPDIR per launch otherwise); extra is added.
func chromiumOptions(t *testing.T, path string, extra ...chromedp.ExecAllocatorOption) []chromedp.ExecAllocatorOption {
	return append([]chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoFirstRun,
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Env("TMPDIR=" + t.TempDir()),
	}, extra...)
}

// newPage starts Chromium with a new empty profile and opens a tab. The browser stops when
// the test ends.
func newPage(t *testing.T) *page {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err != nil {
		browserUnavailable(t, "%v", err)
	}
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), chromiumOptions(t, chromiumPath, chromedp.WindowSize(1280, 900))...)
	ctx, cancelTab := chromedp.NewContext(allocCtx)
	b := &browser{ctx: ctx, shots: screenshotDir(t)}
	if err := chromedp.Do(ctx); err != nil { // starts the browser and opens the tab
		cancelTab()
		cancelAlloc()
		browserUnavailable(t, "%v", err)
	}
	messages := chromedp.Console(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m, err := range messages { // ends with the context's error when the tab closes
			if err != nil {
				return
			}
			b.mu.Lock()
			b.console = append(b.console, m)
			b.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		<-done
	})
	t.Logf("screenshots go to %s", b.shots)
	return &page{t: t, b: b}
}

// screenshotDir is PHASEFLOW_SCREENSHOT_DIR when set (kept after the test), else the
// test's temporary directory.
func screenshotDir(t *testing.T) string {
	if dir := os.Getenv("PHASEFLOW_SCREENSHOT_DIR"); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	return t.TempDir()
}

// stepTimeout bounds one step: a turn of the scripted upstream takes well under a second,
// a cut stream reconnects after the 2 s the server's retry: line asks for.
const stepTimeout = 30 * time.Second

// do runs steps, failing the test (with a screenshot and the console) when one fails.
func (p *page) do(steps ...chromedp.Action[chromedp.Void]) {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.ctx, stepTimeout)
	defer cancel()
	if err := chromedp.Do(ctx, steps...); err != nil {
		p.fail("%v", err)
	}
}

// eval evaluates a JavaScript expression (awaiting a promise) and decodes its value.
func eval[T any](p *page, expr string) T {
	p.t.Helper()
	ctx, cancel := context.WithTimeout(p.b.ctx, stepTimeout)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		p.fail("evaluate %s: %v", expr, err)
	}
	return v
}

// wait waits until an element matching css is visible.
func (p *page) wait(css string) {
	p.t.Helper()
	p.do(chromedp.WaitVisible(chromedp.CSS(css)))
}

// click clicks the element matching css once it is visible.
func (p *page) click(css string) {
	p.t.Helper()
	// Centre the element first: Click scrolls only "if needed", which can leave an element
	// under the page's sticky header, where the click would land on the header instead.
	p.do(chromedp.WaitVisible(chromedp.CSS(css)))
	eval[bool](p, fmt.Sprintf(`(document.querySelector(%s)?.scrollIntoView({block: "center"}), true)`, jsString(css)))
	p.do(chromedp.Click(chromedp.CSS(css)))
}

// attr returns an attribute of the first element matching css ("" when absent).
func (p *page) attr(css, name string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.getAttribute(%s) ?? ""`, jsString(css), jsString(name)))
}

// text returns the text of the first element matching css ("" when there is none).
func (p *page) text(css string) string {
	p.t.Helper()
	return eval[string](p, fmt.Sprintf(`document.querySelector(%s)?.textContent ?? ""`, jsString(css)))
}

// count returns how many elements match css.
func (p *page) count(css string) int {
	p.t.Helper()
	return eval[int](p, fmt.Sprintf(`document.querySelectorAll(%s).length`, jsString(css)))
}

// shot saves a screenshot of the viewport, with css (when given) scrolled to the top.
func (p *page) shot(name, css string) {
	p.t.Helper()
	if css != "" {
		eval[chromedp.Void](p, fmt.Sprintf(`document.querySelector(%s)?.scrollIntoView({block: "start"})`, jsString(css)))
	}
	buf, err := chromedp.Run(p.b.ctx, chromedp.CaptureScreenshot())
	if err != nil {
		p.t.Errorf("screenshot %s: %v", name, err)
		return
	}
	p.b.mu.Lock()
	p.b.n++
	n := p.b.n
	p.b.mu.Unlock()
	path := filepath.Join(p.b.shots, fmt.Sprintf("%02d-%s.png", n, name))
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Errorf("save %s: %v", path, err)
	}
}

// overview saves a tall screenshot of the open session from its top (the phase bar and the
// first turns), as in README.md's picture of the page.
func (p *page) overview(name string) {
	p.t.Helper()
	p.do(chromedp.EmulateViewport(1280, 2250))
	defer p.do(chromedp.ResetViewport())
	eval[chromedp.Void](p, `(document.getElementById("toast").hidden = true, window.scrollTo(0, 0))`)
	p.shot(name, "")
}

// fail saves a full-page screenshot and ends the test with the console's messages.
func (p *page) fail(format string, args ...any) {
	p.t.Helper()
	if buf, err := chromedp.Run(p.b.ctx, chromedp.FullScreenshot(100)); err == nil {
		path := filepath.Join(p.b.shots, "failure.png")
		if os.WriteFile(path, buf, 0o644) == nil {
			p.t.Logf("screenshot of the failure: %s", path)
		}
	}
	p.t.Fatalf(format+"\nconsole:\n%s", append(args, p.consoleText())...)
}

// consoleErrors returns the console's errors and uncaught exceptions, and any message that
// says a resource broke the Content-Security-Policy, except those allow says are expected.
func (p *page) consoleErrors(allow func(chromedp.ConsoleMessage) bool) []string {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	var out []string
	for _, m := range p.b.console {
		bad := m.Type == chromedp.ConsoleError || m.IsException() || strings.Contains(m.Text, "Content Security Policy")
		if bad && (allow == nil || !allow(m)) {
			out = append(out, fmt.Sprintf("%s %s (%s)", m, m.URL, m.Source))
		}
	}
	return out
}

func (p *page) consoleText() string {
	p.b.mu.Lock()
	defer p.b.mu.Unlock()
	var b strings.Builder
	for _, m := range p.b.console {
		fmt.Fprintf(&b, "  %s %s\n", m, m.URL)
	}
	return b.String()
}

// jsString quotes s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
