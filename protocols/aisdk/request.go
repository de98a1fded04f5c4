package aisdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ChatRequest is the body DefaultChatTransport posts: the conversation's id, its messages
// as the page holds them, and what to do. Of the fields a page may add to the body
// (useChat's body option), Phaseflow reads locale and runtime_policy, as its own message
// body names them; others are ignored.
type ChatRequest struct {
	ID        string          `json:"id"`
	Messages  []requestMsg    `json:"messages"`
	Trigger   string          `json:"trigger"`
	MessageID string          `json:"messageId"`
	Locale    string          `json:"locale"`
	Policy    json.RawMessage `json:"runtime_policy"`
}

// requestMsg is a message of the page's: only its id, role and text parts are read.
type requestMsg struct {
	ID    string `json:"id"`
	Role  string `json:"role"`
	Parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"parts"`
}

// Triggers.
const (
	TriggerSubmit     = "submit-message"
	TriggerRegenerate = "regenerate-message"
)

// Check says what is wrong with a posted request, in the client's terms; it fills the
// trigger a client left out.
func (r *ChatRequest) Check() error {
	if strings.TrimSpace(r.ID) == "" {
		return errors.New(`"id" (the chat's id) is required`)
	}
	if r.Trigger == "" {
		r.Trigger = TriggerSubmit
	}
	if r.Trigger != TriggerSubmit && r.Trigger != TriggerRegenerate {
		return fmt.Errorf(`"trigger" must be %q or %q, got %q`, TriggerSubmit, TriggerRegenerate, r.Trigger)
	}
	if _, _, ok := r.LastUserMessage(); !ok {
		return errors.New(`"messages" holds no user message with text`)
	}
	return nil
}

// LastUserMessage is the id and text (its text parts joined) of the last user message.
func (r *ChatRequest) LastUserMessage() (id, text string, ok bool) {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		m := r.Messages[i]
		if m.Role != "user" {
			continue
		}
		var b strings.Builder
		for _, p := range m.Parts {
			if p.Type == "text" {
				b.WriteString(p.Text)
			}
		}
		if strings.TrimSpace(b.String()) == "" {
			return "", "", false
		}
		return m.ID, b.String(), true
	}
	return "", "", false
}
