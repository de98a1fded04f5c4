package tests

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserReferencePage: the API reference page the binary serves renders the served
// OpenAPI document in Chromium under the page's Content-Security-Policy: every operation in
// the table of contents, the event streams' events named, a phone's width fitted, no
// console error.
func TestBrowserReferencePage(t *testing.T) {
	p := newPage(t)
	s := startServer(t)
	p.do(chromedp.Navigate(s.base + "/reference"))
	p.wait("#schema-StatusEvent")
	toc := p.text("#toc")
	for _, want := range []string{"POST /api/v1/sessions/{id}/messages", "GET /api/v1/messages/{id}/events", "GET /reference", "TurnAnswer"} {
		if !strings.Contains(toc, want) {
			t.Errorf("the table of contents lacks %q", want)
		}
	}
	if doc := p.text("#doc"); !strings.Contains(doc, "event content_delta") {
		t.Errorf("the event stream's events are not named on the page")
	}
	p.shot("reference", "")

	// On a phone the reference fits the screen: nothing scrolls sideways.
	p.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateMobile))
	p.do(chromedp.Reload())
	p.wait("#schema-StatusEvent")
	notWiderThan(t, p, 390)
	p.shot("reference-phone", "")
	for _, e := range p.consoleErrors(func(chromedp.ConsoleMessage) bool { return false }) {
		t.Errorf("console: %s", e)
	}
}
