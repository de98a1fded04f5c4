package watcher

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"
	"time"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/jsonskill/terminal"
)

// The notification formats.
const (
	FormatText = "text" // the message as text/plain, the rest in ntfy's headers
	FormatJSON = "json" // one JSON object, for webhooks that want one
)

// Notifier posts notifications to a URL.
type Notifier struct {
	URL    string
	Format string
	Client *http.Client
}

// Notice is one notification: a new question of one source.
type Notice struct {
	Title    string   `json:"title"`
	Message  string   `json:"message"`
	Priority string   `json:"priority"`
	Tags     []string `json:"tags"`
	// Reason is "approval" when something waits for approval, else "question".
	Reason      string    `json:"reason"`
	Agent       string    `json:"agent"`
	Workspace   string    `json:"workspace"`
	SourceID    string    `json:"source_id"`
	Subject     string    `json:"subject"`
	Type        string    `json:"message_type"`
	Options     []string  `json:"options"`
	Fingerprint string    `json:"fingerprint"`
	RunID       string    `json:"run_id"`
	Time        time.Time `json:"time"`
	// AnswerURL is the page that answers the question from a phone, and Actions answer
	// its first options straight from the notification (POST each URL); both only when the
	// watcher works through a server that can type the answer into the pane.
	AnswerURL string   `json:"answer_url,omitempty"`
	Actions   []Action `json:"actions,omitempty"`
}

// noticeOf is the notification of a new question read on src.
func noticeOf(src Source, r Reading) Notice {
	n := Notice{Message: r.Message, Priority: "high", Reason: "question", Agent: r.Agent, Workspace: src.Workspace,
		SourceID: src.ID, Subject: r.Subject, Type: r.Type, Options: r.Options, Fingerprint: r.Fingerprint,
		RunID: r.RunID, Time: r.Time, Tags: []string{"question"}}
	if r.Subject != "" || r.Rule == "permission" {
		n.Reason, n.Tags = "approval", []string{"warning"}
	}
	who := terminal.Agent(r.Agent).DisplayName()
	if who == "" {
		who = "The agent"
	}
	verb := map[string]string{"question": "asks a question", "approval": "asks for approval"}[n.Reason]
	n.Title = who + " " + verb
	if src.Workspace != "" {
		n.Title += " - " + src.Workspace
	}
	return n
}

// Send posts n.
func (nt *Notifier) Send(ctx context.Context, n Notice) error {
	body, ctype := []byte(n.Message), "text/plain; charset=utf-8"
	if nt.Format == FormatJSON {
		var err error
		if body, err = json.Marshal(n); err != nil {
			return fmt.Errorf("notify: encode: %w", err)
		}
		ctype = "application/json"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, nt.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	req.Header.Set("Content-Type", ctype)
	if nt.Format != FormatJSON {
		req.Header.Set("Title", headerText(n.Title))
		req.Header.Set("Priority", n.Priority)
		req.Header.Set("Tags", strings.Join(n.Tags, ","))
		if n.AnswerURL != "" {
			req.Header.Set("Click", n.AnswerURL)
		}
		if len(n.Actions) > 0 {
			req.Header.Set("Actions", ntfyActions(n.Actions))
		}
	}
	resp, err := nt.Client.Do(req)
	if err != nil {
		return fmt.Errorf("notify: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("notify: %s answered %s", config.RedactURL(nt.URL), resp.Status)
	}
	return nil
}

// ntfyActions is ntfy's Actions header for actions: each an http action that POSTs its
// URL and clears the notification. Labels are quoted, without the characters that would end
// them.
func ntfyActions(actions []Action) string {
	parts := make([]string, 0, len(actions))
	for _, a := range actions {
		label := strings.Map(func(r rune) rune {
			if strings.ContainsRune(`,;"'`, r) {
				return ' '
			}
			return r
		}, a.Label)
		parts = append(parts, fmt.Sprintf(`http, "%s", %s, method=POST, clear=true`, strings.Join(strings.Fields(label), " "), a.URL))
	}
	return headerText(strings.Join(parts, "; "))
}

// headerText is s as a header value: printable ASCII as it is, anything else as an RFC 2047
// encoded word (which ntfy decodes), line breaks never.
func headerText(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	for _, r := range s {
		if r >= 0x80 {
			return mime.BEncoding.Encode("utf-8", s)
		}
	}
	return s
}
