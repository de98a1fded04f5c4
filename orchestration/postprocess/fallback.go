package postprocess

import (
	"fmt"
	"strings"

	"github.com/phaseflow/phaseflow/handlers"
)

// EmptyFallback is the reply streamed in the model's place when it sent nothing: a valid
// ThinkingML reply in the session's locale (skills fallback/empty).
func EmptyFallback(skills handlers.Skills, locale string) (string, error) {
	text, err := skills.Text("fallback/empty", locale)
	if err != nil {
		return "", fmt.Errorf("postprocess: empty-reply fallback: %w", err)
	}
	return text, nil
}

// InterruptedFallback is the reply that stands in for one the stream broke off after
// partial text (docs/turn.md): a valid ThinkingML reply in the session's locale
// that says the answer was cut off and what the user can do (skills fallback/interrupted).
// It goes with the error event and the message, beside the partial text, never into it.
func InterruptedFallback(skills handlers.Skills, locale string) (string, error) {
	text, err := skills.Text("fallback/interrupted", locale)
	if err != nil {
		return "", fmt.Errorf("postprocess: interrupted-reply fallback: %w", err)
	}
	return text, nil
}

// ErrorMessage is what a client is told when a turn ends with code (skills errors/<code>),
// in the session's locale: one fixed text per code, never the cause itself, which stays in
// the server's log.
func ErrorMessage(skills handlers.Skills, locale, code string) (string, error) {
	text, err := skills.Text("errors/"+code, locale)
	if err != nil {
		return "", fmt.Errorf("postprocess: error message: %w", err)
	}
	return strings.TrimSpace(text), nil
}
