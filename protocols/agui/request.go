package agui

import (
	"encoding/json"
	"errors"
	"strings"
)

// RunAgentInput is what an AG-UI client posts to run the agent: the thread (the
// conversation), the run (the turn), and the messages as the client holds them. The
// client's state and tools are not read: the session's state is the server's, and the
// tools are the phase's. From forwardedProps Phaseflow reads locale and runtime_policy, as
// its own message body names them.
type RunAgentInput struct {
	ThreadID       string          `json:"threadId"`
	RunID          string          `json:"runId"`
	Messages       json.RawMessage `json:"messages"`
	ForwardedProps struct {
		Locale        string          `json:"locale"`
		RuntimePolicy json.RawMessage `json:"runtime_policy"`
	} `json:"forwardedProps"`
}

// inputMessage is a client message as far as it is read: a user message's text is its
// string content or its text parts.
type inputMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Check says what is wrong with the input, in the client's terms, and returns the text of
// its last user message, the turn's. Messages after it are allowed: a client joining a run
// under way may hold the run's reply so far.
func (in *RunAgentInput) Check() (text string, err error) {
	if strings.TrimSpace(in.ThreadID) == "" || strings.TrimSpace(in.RunID) == "" {
		return "", errors.New(`"threadId" and "runId" are required`)
	}
	var msgs []inputMessage
	if err := json.Unmarshal(in.Messages, &msgs); err != nil {
		return "", errors.New(`"messages" must be a list of messages`)
	}
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" {
			if text = userText(msgs[i].Content); strings.TrimSpace(text) != "" {
				return text, nil
			}
			break
		}
	}
	return "", errors.New(`"messages" must hold a user message with text`)
}

// userText is a user message's content as text: the string, or its text parts joined.
func userText(content json.RawMessage) string {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return s
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &parts) != nil {
		return ""
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type == "text" {
			b.WriteString(p.Text)
		}
	}
	return b.String()
}
