package api

import (
	"encoding/base64"
	"encoding/json"
	"strconv"
	"time"

	"github.com/labstack/echo/v4"

	"github.com/phaseflow/phaseflow/store"
)

// List pages: every list route takes ?limit= (default defaultLimit, at most maxLimit) and
// ?cursor= (the next_cursor of the page before) and answers next_cursor (null on the last
// page). The store reads limit+1 rows by key (keyset pagination), so one request costs
// memory bounded by the limit, however long the list.
const (
	defaultLimit = 50
	maxLimit     = 200
)

// cursor is what a next_cursor encodes: the sort key of the last row shown, and the list it
// belongs to, so a cursor of one list is refused by another. It is opaque to clients
// (base64url JSON); they can forge one, but it only moves where a page starts: the
// ownership filters still apply.
type cursor struct {
	List    string    `json:"l"`
	Time    time.Time `json:"t,omitzero"`
	ID      string    `json:"i,omitempty"`
	Name    string    `json:"n,omitempty"`
	Locale  string    `json:"o,omitempty"`
	Version int       `json:"v,omitempty"`
}

func (k cursor) encode() *string {
	b, _ := json.Marshal(k) // plain strings, a time and an int: cannot fail
	s := base64.RawURLEncoding.EncodeToString(b)
	return &s
}

// pageParams reads limit and cursor for list; a nil cursor means the first page.
func pageParams(c echo.Context, list string) (int, *cursor, error) {
	limit := defaultLimit
	if v := c.QueryParam("limit"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > maxLimit {
			return 0, nil, badRequest("limit must be an integer from 1 to " + strconv.Itoa(maxLimit))
		}
		limit = n
	}
	raw := c.QueryParam("cursor")
	if raw == "" {
		return limit, nil, nil
	}
	bad := badRequest("cursor is not a next_cursor of this list")
	if len(raw) > 1024 {
		return 0, nil, bad
	}
	b, err := base64.RawURLEncoding.DecodeString(raw)
	if err != nil || !cleanText(string(b)) {
		return 0, nil, bad
	}
	var k cursor
	if err := json.Unmarshal(b, &k); err != nil || k.List != list || !cleanText(k.ID+k.Name+k.Locale) {
		return 0, nil, bad
	}
	return limit, &k, nil
}

// timeKey is the store's key for a cursor of a time-ordered list.
func (k *cursor) timeKey() *store.TimeKey {
	if k == nil {
		return nil
	}
	return &store.TimeKey{CreatedAt: k.Time, ID: k.ID}
}

// trimPage cuts rows (read with limit+1) to limit and makes the next cursor from the last
// row kept when more followed.
func trimPage[T any](rows []T, limit int, key func(T) cursor) ([]T, *string) {
	if rows == nil {
		rows = []T{}
	}
	if len(rows) <= limit {
		return rows, nil
	}
	rows = rows[:limit]
	return rows, key(rows[limit-1]).encode()
}
