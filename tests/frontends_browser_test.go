package tests

import (
	"context"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// useChatPage bundles tests/frontends/page (a plain useChat page) with esbuild into a
// folder of its own, serves it from a second loopback origin, and starts a server that
// lets that origin in; it returns the page's origin, the server and a Chromium tab.
func useChatPage(t *testing.T) (string, *server, context.Context) {
	t.Helper()
	dir := frontends(t)
	browser, err := findChromium()
	if err != nil {
		noBrowser(t, "no Chromium found: %v", err)
	}
	site := t.TempDir()
	bundle := exec.Command(filepath.Join(dir, "node_modules", ".bin", "esbuild"), "page/app.jsx", "--bundle", "--format=esm",
		"--jsx=automatic", `--define:process.env.NODE_ENV="production"`, "--log-level=warning", "--outfile="+filepath.Join(site, "app.js"))
	bundle.Dir = dir
	if out, err := bundle.CombinedOutput(); err != nil {
		t.Fatalf("esbuild: %v\n%s", err, out)
	}
	html, err := os.ReadFile(filepath.Join(dir, "page", "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(site, "index.html"), html, 0o644); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	origin := "http://" + ln.Addr().String()
	pages := &http.Server{Handler: http.FileServer(http.Dir(site)), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = pages.Serve(ln) }()
	t.Cleanup(func() { _ = pages.Close() })
	return origin, startServer(t, "PHASEFLOW_CORS_ORIGINS="+origin), newBrowser(t, browser)
}

// pageChat is what the page leaves in window.chat.
type pageChat struct {
	Status   string `json:"status"`
	Error    *string
	Messages []struct {
		ID   string `json:"id"`
		Role string `json:"role"`
		Text string `json:"text"`
	} `json:"messages"`
}

// reply is the page's assistant message (the last), if any.
func (c pageChat) reply() (id, text string) {
	if n := len(c.Messages); n > 0 && c.Messages[n-1].Role == "assistant" {
		return c.Messages[n-1].ID, c.Messages[n-1].Text
	}
	return "", ""
}

// TestUseChatResumesAfterReload: a React page with @ai-sdk/react's useChat({resume: true})
// sends a message, is reloaded while the reply streams, loads the conversation, resumes the
// running reply and shows exactly the stored reply's answer.
func TestUseChatResumesAfterReload(t *testing.T) {
	origin, s, tab := useChatPage(t)
	tok := s.token("lin")
	ctx, cancel := context.WithTimeout(tab, 2*time.Minute)
	defer cancel()
	hash := url.Values{"base": {s.base}, "token": {tok}, "chat": {"reload-chat"}}
	poll := func(cond string) {
		t.Helper()
		if _, err := chromedp.Run(ctx, chromedp.Poll[bool](cond, chromedp.WithPollingTimeout(60*time.Second))); err != nil {
			chat, _ := chromedp.Run(ctx, chromedp.Evaluate[pageChat](`window.chat`))
			t.Fatalf("waiting for %s: %v (the page holds %+v)", cond, err, chat)
		}
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(origin+"/index.html#"+hash.Encode())); err != nil {
		t.Fatalf("open the page: %v", err)
	}
	poll(`typeof window.send === 'function'`)
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`window.send("Draft a BTC momentum strategy [[pace_ms:40]]"), true`)); err != nil {
		t.Fatal(err)
	}
	poll(`(() => { const m = window.chat.messages.at(-1); return m && m.role === 'assistant' && m.text.length > 40 })()`)
	before, err := chromedp.Run(ctx, chromedp.Evaluate[pageChat](`window.chat`))
	if err != nil {
		t.Fatal(err)
	}
	id, _ := before.reply()
	var msg map[string]any
	s.call(ctxFor(t, 10*time.Second), http.MethodGet, "/api/v1/messages/"+id, tok, nil, &msg)
	if msg["status"] != "streaming" {
		t.Fatalf("the reply is %v before the reload; the test needs it streaming", msg["status"])
	}

	if err := chromedp.Do(ctx, chromedp.Reload()); err != nil {
		t.Fatalf("reload: %v", err)
	}
	poll(`window.chat && window.chat.status === 'ready' && window.chat.messages.at(-1)?.role === 'assistant'`)
	after, err := chromedp.Run(ctx, chromedp.Evaluate[pageChat](`window.chat`))
	if err != nil {
		t.Fatal(err)
	}
	gotID, text := after.reply()
	want := finalAnswer(t, waitFinished(t, s, tok, id)["content"].(string))
	if gotID != id || text != want || after.Error != nil || len(after.Messages) != 2 {
		t.Fatalf("after the reload the page shows %+v\nwant the reply %s: %q", after, id, want)
	}
}
