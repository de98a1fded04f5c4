package store

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/lib/pq"
)

// IsUnavailable reports whether err means the database could not be reached or dropped
// the connection (as opposed to refusing a statement): the condition a caller may wait
// out and retry, and that the API answers with 503 database_unavailable instead of 500. It
// recognises [ErrUnavailable], network errors (refused, reset, timed-out dials), a
// connection database/sql gave up on, and PostgreSQL's own shutdown and connection
// SQLSTATEs (class 08, 57P01–57P03).
func IsUnavailable(err error) bool {
	if err == nil {
		return false
	}
	var netErr net.Error
	var pqErr *pq.Error
	switch {
	case errors.Is(err, ErrUnavailable), errors.Is(err, driver.ErrBadConn), errors.Is(err, sql.ErrConnDone),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
		return true
	case errors.As(err, &netErr):
		return true
	case errors.As(err, &pqErr):
		return pqErr.Code.Class() == "08" || pqErr.Code == "57P01" || pqErr.Code == "57P02" || pqErr.Code == "57P03"
	}
	return false
}
