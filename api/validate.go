package api

import (
	"encoding/json"
	"fmt"
	"mime"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// isPlainText reports whether a Content-Type is text/plain; a missing one counts too, as
// scripts piping a file often send none.
func isPlainText(contentType string) bool {
	if contentType == "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == echo.MIMETextPlain
}

// validate serves POST /api/v1/validate: the reply as a text/plain body or as JSON
// {"reply": "..."}; the answer is the validation result with status 200, valid or not.
func (s *Server) validate(c echo.Context) error {
	b, err := readBody(c)
	if err != nil {
		return err
	}
	reply := string(b)
	ct := c.Request().Header.Get(echo.HeaderContentType)
	if !isJSON(ct) && !isPlainText(ct) {
		return unsupportedMediaType(ct, "text/plain or application/json")
	}
	if isJSON(ct) {
		var body struct {
			Reply *string `json:"reply"`
		}
		if err := json.Unmarshal(b, &body); err != nil || body.Reply == nil {
			return badRequest(`a JSON body must be {"reply": "..."}`)
		}
		reply = *body.Reply
	}
	if limit := s.cfg.MaxReplyBytes; limit > 0 && len(reply) > limit {
		return &HTTPError{Status: http.StatusRequestEntityTooLarge, Code: "reply_too_large",
			Message: fmt.Sprintf("the reply is larger than %d bytes, the longest a turn accepts", limit)}
	}
	res := thinkingml.Validate(reply, thinkingml.Options{SerpQueriesOptional: s.cfg.SerpQueriesOptional})
	return c.JSON(http.StatusOK, res)
}
