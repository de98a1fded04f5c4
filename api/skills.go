package api

import (
	"context"
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/orchestration/session"
	"github.com/phaseflow/phaseflow/store"
)

// skillStore is what the JSON skills' routes read: runs and jobs.
type skillStore interface {
	GetSkillRun(ctx context.Context, id, userID string) (*store.SkillRun, error)
	ListSkillRunsPage(ctx context.Context, userID string, f store.RunFilter, after *store.TimeKey, limit int) ([]store.SkillRun, error)
	CreateSkillJob(ctx context.Context, job *store.SkillJob, inputs []store.JSON) error
	GetSkillJob(ctx context.Context, id, userID string) (*store.SkillJob, error)
	SkillJobRuns(ctx context.Context, id string) ([]string, error)
	SkillJobProgress(ctx context.Context, id string, after int64) ([]store.JobProgress, error)
	CancelSkillJob(ctx context.Context, id, userID string) (*store.SkillJob, error)
}

// Skills is the JSON-skill runner as the API uses it (package jsonskill).
type Skills interface {
	Catalog() *jsonskill.Catalog
	Run(ctx context.Context, req jsonskill.Request) (*store.SkillRun, error)
}

// SkillJobs is this replica's job runner (package jsonskill/jobs): told of a job posted
// here, so it starts at once, and of a cancel, so inputs stop starting at once.
type SkillJobs interface {
	Kick()
	Cancel(jobID string)
}

// skillView is one skill in GET /api/v1/skills.
type skillView struct {
	Name         string          `json:"name"`
	Version      string          `json:"version"`
	Description  string          `json:"description"`
	Locales      []string        `json:"locales"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema"`
}

// listSkills serves GET /api/v1/skills.
func (s *Server) listSkills(c echo.Context) error {
	list := s.skills.Catalog().List()
	out := make([]skillView, len(list))
	for i, sk := range list {
		out[i] = skillView{Name: sk.Name, Version: sk.Version, Description: sk.Description, Locales: sk.Locales,
			InputSchema: sk.InputSchema, OutputSchema: sk.OutputSchema}
	}
	return c.JSON(http.StatusOK, map[string]any{"skills": out})
}

// runBody is the body of POST /api/v1/skills/{name}/runs.
type runBody struct {
	Input    json.RawMessage `json:"input"`
	Locale   string          `json:"locale"`
	SourceID string          `json:"source_id"`
}

// runSkill serves POST /api/v1/skills/{name}/runs: the run, whatever its outcome, with 200.
func (s *Server) runSkill(c echo.Context) error {
	var body runBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	locale, err := skillLocale(c, body.Locale)
	if err != nil {
		return err
	}
	if len(body.SourceID) > maxSourceID {
		return badRequest("source_id must be at most 200 bytes")
	}
	run, err := s.skills.Run(c.Request().Context(), jsonskill.Request{
		UserID: mustClaims(c).Subject, Skill: c.Param("name"), Locale: locale, SourceID: body.SourceID, Input: body.Input,
	})
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// maxSourceID bounds a source_id, a name the client gives what it watches.
const maxSourceID = 200

// skillLocale is a skill request's locale: the body's (400 when unsupported), then
// Accept-Language, then en.
func skillLocale(c echo.Context, locale string) (string, error) {
	if err := checkLocale(locale); err != nil {
		return "", err
	}
	if locale == "" {
		locale = c.Request().Header.Get("Accept-Language")
	}
	return session.NormalizeLocale(locale), nil
}

// getSkillRun serves GET /api/v1/skills/runs/{id}.
func (s *Server) getSkillRun(c echo.Context) error {
	run, err := s.store.GetSkillRun(c.Request().Context(), c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, run)
}

// listSkillRuns serves GET /api/v1/skills/runs: the caller's runs, newest first, a page at
// a time, optionally of one skill and one source.
func (s *Server) listSkillRuns(c echo.Context) error {
	limit, after, err := pageParams(c, "skill_runs")
	if err != nil {
		return err
	}
	f := store.RunFilter{Skill: c.QueryParam("skill"), SourceID: c.QueryParam("source_id")}
	rows, err := s.store.ListSkillRunsPage(c.Request().Context(), mustClaims(c).Subject, f, after.timeKey(), limit+1)
	if err != nil {
		return err
	}
	list, next := trimPage(rows, limit, func(x store.SkillRun) cursor { return cursor{List: "skill_runs", Time: x.CreatedAt, ID: x.ID} })
	return c.JSON(http.StatusOK, map[string]any{"runs": list, "next_cursor": next})
}
