package api

import (
	"context"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// promptStore is what the admin routes of prompt versions need.
type promptStore interface {
	CreatePrompt(ctx context.Context, p *store.Prompt) error
	ListPromptsPage(ctx context.Context, after *store.PromptKey, limit int) ([]store.Prompt, error)
	ActivatePrompt(ctx context.Context, id string) (*store.Prompt, error)
	DeactivatePrompt(ctx context.Context, id string) (*store.Prompt, error)
}

// listPrompts serves GET /api/v1/llm/prompts (admin): the stored prompt versions by name,
// locale and version, a page at a time.
func (s *Server) listPrompts(c echo.Context) error {
	limit, after, err := pageParams(c, "prompts")
	if err != nil {
		return err
	}
	var key *store.PromptKey
	if after != nil {
		key = &store.PromptKey{Name: after.Name, Locale: after.Locale, Version: after.Version}
	}
	rows, err := s.store.ListPromptsPage(c.Request().Context(), key, limit+1)
	if err != nil {
		return err
	}
	list, next := trimPage(rows, limit, func(x store.Prompt) cursor {
		return cursor{List: "prompts", Name: x.Name, Locale: x.Locale, Version: x.Version}
	})
	return c.JSON(http.StatusOK, map[string]any{"prompts": list, "next_cursor": next})
}

// createPrompt serves POST /api/v1/llm/prompts (admin) {"name", "locale", "body"}: a new,
// inactive version of the named skill text; activate it to make the model see it. The
// version is checked against the embedded text first (422 invalid_prompt naming each
// problem), so a bad one is refused here rather than failing the next turns.
func (s *Server) createPrompt(c echo.Context) error {
	var body struct {
		Name   string `json:"name"`
		Locale string `json:"locale"`
		Body   string `json:"body"`
	}
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if body.Name == "" || strings.TrimSpace(body.Body) == "" {
		return badRequest(`"name" and "body" are required`)
	}
	if body.Locale != "en" && body.Locale != "zh" {
		return badRequest(`"locale" must be "en" or "zh"`)
	}
	if s.prompts != nil {
		if problems := s.prompts.CheckVersion(body.Name, body.Locale, body.Body); len(problems) > 0 {
			return &HTTPError{Status: http.StatusUnprocessableEntity, Code: "invalid_prompt",
				Message: "the version cannot replace the embedded text: " + strings.Join(problems, "; "),
				Extra:   map[string]any{"problems": problems}}
		}
	}
	p := &store.Prompt{Name: body.Name, Locale: body.Locale, Body: body.Body, CreatedBy: mustClaims(c).Subject}
	if err := s.store.CreatePrompt(c.Request().Context(), p); err != nil {
		return err
	}
	return c.JSON(http.StatusCreated, p)
}

// activatePrompt serves POST /api/v1/llm/prompts/{id}/activate (admin): from the next turn
// on, this version replaces the embedded text for its name and locale.
func (s *Server) activatePrompt(c echo.Context) error {
	p, err := s.store.ActivatePrompt(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

// deactivatePrompt serves POST /api/v1/llm/prompts/{id}/deactivate (admin): from the next
// turn on, the embedded text is back for this version's name and locale.
func (s *Server) deactivatePrompt(c echo.Context) error {
	p, err := s.store.DeactivatePrompt(c.Request().Context(), c.Param("id"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}
