package api

import (
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/api/auth"
	"github.com/phaseflow/phaseflow/jsonskill"
	"github.com/phaseflow/phaseflow/store"
)

// maxJobInputs bounds the inputs of one job (docs/json-skills.md).
const maxJobInputs = 1000

// jobBody is the body of POST /api/v1/skills/{name}/jobs.
type jobBody struct {
	Inputs []json.RawMessage `json:"inputs"`
	Locale string            `json:"locale"`
}

// jobAnswer is the 202 of a posted job.
type jobAnswer struct {
	JobID       string `json:"job_id"`
	Status      string `json:"status"`
	Total       int    `json:"total"`
	EventsURL   string `json:"events_url"`
	StreamToken string `json:"stream_token"`
}

// jobView is a job as GET /api/v1/skills/jobs/{id} shows it; Runs holds each input's run
// id in input order, null for an input with no run (yet).
type jobView struct {
	JobID     string    `json:"job_id"`
	Skill     string    `json:"skill"`
	Status    string    `json:"status"`
	Total     int       `json:"total"`
	Done      int       `json:"done"`
	Succeeded int       `json:"succeeded"`
	Failed    int       `json:"failed"`
	Runs      []*string `json:"runs"`
}

// postSkillJob serves POST /api/v1/skills/{name}/jobs: every input is checked first (one
// bad input refuses the job, naming its index), then the job is stored and started.
func (s *Server) postSkillJob(c echo.Context) error {
	var body jobBody
	if err := decodeJSON(c, &body); err != nil {
		return err
	}
	if len(body.Inputs) == 0 || len(body.Inputs) > maxJobInputs {
		return &HTTPError{Status: http.StatusBadRequest, Code: "invalid_input",
			Message: fmt.Sprintf(`"inputs" must hold 1 to %d inputs, not %d`, maxJobInputs, len(body.Inputs))}
	}
	locale, err := skillLocale(c, body.Locale)
	if err != nil {
		return err
	}
	sk, err := s.skills.Catalog().Get(c.Param("name"))
	if err != nil {
		return err
	}
	inputs := make([]store.JSON, len(body.Inputs))
	for i, raw := range body.Inputs {
		in, err := sk.CheckInput(raw)
		if err != nil {
			return inputAt(i, err)
		}
		inputs[i] = store.JSON(in.Raw())
	}
	claims := mustClaims(c)
	job := &store.SkillJob{UserID: claims.Subject, Skill: sk.Name, Locale: locale}
	if err := s.store.CreateSkillJob(c.Request().Context(), job, inputs); err != nil {
		return err
	}
	if s.jobs != nil {
		s.jobs.Kick()
	}
	token, err := s.auth.SignStream(claims.Subject, job.ID, auth.DefaultStreamTTL)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusAccepted, jobAnswer{JobID: job.ID, Status: job.Status, Total: job.Total,
		EventsURL: "/api/v1/skills/jobs/" + job.ID + "/events", StreamToken: token})
}

// inputAt is the error of a job's bad input, naming its index.
func inputAt(i int, err error) error {
	he := toHTTP(err)
	he.Message = fmt.Sprintf("inputs[%d]: %s", i, he.Message)
	he.Extra = map[string]any{"index": i}
	return he
}

// getSkillJob serves GET /api/v1/skills/jobs/{id}.
func (s *Server) getSkillJob(c echo.Context) error {
	ctx := c.Request().Context()
	job, err := s.store.GetSkillJob(ctx, c.Param("id"), mustClaims(c).Subject)
	if err != nil {
		return err
	}
	ids, err := s.store.SkillJobRuns(ctx, job.ID)
	if err != nil {
		return err
	}
	runs := make([]*string, len(ids))
	for i := range ids {
		if ids[i] != "" {
			runs[i] = &ids[i]
		}
	}
	return c.JSON(http.StatusOK, jobView{JobID: job.ID, Skill: job.Skill, Status: job.Status, Total: job.Total,
		Done: job.Done, Succeeded: job.Succeeded, Failed: job.Failed, Runs: runs})
}

// cancelSkillJob serves POST /api/v1/skills/jobs/{id}/cancel: inputs not started are not
// started. A job that has ended answers 409 job_finished.
func (s *Server) cancelSkillJob(c echo.Context) error {
	ctx := c.Request().Context()
	claims := mustClaims(c)
	before, err := s.store.GetSkillJob(ctx, c.Param("id"), claims.Subject)
	if err != nil {
		return err
	}
	if before.Ended() {
		return &HTTPError{Status: http.StatusConflict, Code: "job_finished", Message: "the job has already ended"}
	}
	job, err := s.store.CancelSkillJob(ctx, before.ID, claims.Subject)
	if err != nil {
		return err
	}
	if s.jobs != nil {
		s.jobs.Cancel(job.ID)
	}
	return c.JSON(http.StatusAccepted, map[string]string{"job_id": job.ID, "status": job.Status})
}

// skillErrors maps the runner's refusals: an unknown skill (404), a bad input (400, or 413
// for one over a size limit).
func skillErrors(err error) *HTTPError {
	if isInput, tooLarge := jsonskill.IsInputError(err); isInput {
		if tooLarge {
			return &HTTPError{Status: http.StatusRequestEntityTooLarge, Code: "input_too_large", Message: err.Error(), Err: err}
		}
		return &HTTPError{Status: http.StatusBadRequest, Code: "invalid_input", Message: err.Error(), Err: err}
	}
	return &HTTPError{Status: http.StatusNotFound, Code: "unknown_skill", Message: "there is no skill of that name", Err: err}
}
