package api

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// validate serves POST /api/v1/validate: the reply as a text/plain body or as JSON
// {"reply": "..."}; the answer is the validation result with status 200, valid or not.
func (s *Server) validate(c echo.Context) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	reply := string(b)
	if strings.HasPrefix(c.Request().Header.Get(echo.HeaderContentType), echo.MIMEApplicationJSON) {
		var body struct {
			Reply *string `json:"reply"`
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Reply == nil {
			return badRequest(`a JSON body must be {"reply": "..."}`)
		}
		reply = *body.Reply
	}
	res := thinkingml.Validate(reply, thinkingml.Options{SerpQueriesOptional: s.cfg.SerpQueriesOptional})
	return c.JSON(http.StatusOK, res)
}
