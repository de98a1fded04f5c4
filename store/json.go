package store

import (
	"bytes"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/valyala/fastjson"
)

// JSON is a raw JSON value stored in a text column, byte for byte (no query looks inside
// one, so PostgreSQL's jsonb parsing is not paid for). The three spellings of "nothing"
// are one value here: SQL NULL scans to nil, nil (or the literal null) is written as NULL,
// and nil marshals to JSON null, so a column that was never set looks the same in the
// database, in Go and on the wire.
//
// Values read back are the bytes written, in both databases.
type JSON []byte

// jsonNull is the JSON literal that stands for nil. A constant, not a []byte variable, so
// that no caller can change it.
const jsonNull = "null"

// Scan implements [sql.Scanner]. The drivers hand text over as string or []byte; both are
// copied, because a driver may reuse its buffer after Scan returns.
func (j *JSON) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*j = nil
	case []byte:
		*j = normalise(bytes.Clone(v))
	case string:
		*j = normalise([]byte(v))
	default:
		return fmt.Errorf("store: scan JSON: unsupported type %T", src)
	}
	return nil
}

// normalise maps the stored literal null to nil so that NULL and 'null' read the same.
func normalise(b []byte) JSON {
	if JSON(b).IsNull() {
		return nil
	}
	return JSON(b)
}

// Value implements [driver.Valuer]. It returns a string rather than []byte: SQLite would
// store []byte as a BLOB, which its JSON functions and the TEXT affinity do not expect, and
// lib/pq takes a string for text. Invalid JSON is refused here so both
// databases fail the same way (PostgreSQL would reject it, SQLite would store it).
func (j JSON) Value() (driver.Value, error) {
	if err := j.check(); err != nil || j.IsNull() {
		return nil, err
	}
	return string(j), nil
}

// check refuses a value that is not JSON, as Value does, without Value's copy.
func (j JSON) check() error {
	if j.IsNull() || validJSON(j) {
		return nil
	}
	return errors.New("store: JSON value is not valid JSON")
}

// MarshalJSON implements [encoding/json.Marshaler]: nil becomes null, anything else is
// written as is (encoding/json compacts and validates it).
func (j JSON) MarshalJSON() ([]byte, error) {
	if j.IsNull() {
		return []byte(jsonNull), nil
	}
	return j, nil
}

// UnmarshalJSON implements [encoding/json.Unmarshaler]: null becomes nil, anything else is
// kept as a copy of the raw text.
func (j *JSON) UnmarshalJSON(data []byte) error {
	*j = normalise(bytes.Clone(data))
	return nil
}

// IsNull reports whether j stands for no value (nil, empty or the literal null).
func (j JSON) IsNull() bool {
	t := bytes.TrimSpace(j)
	return len(t) == 0 || string(t) == jsonNull
}

// emptyObject is what a NOT NULL object column (session artifacts, metadata) holds when the
// caller gave nothing.
func emptyObject(j JSON) JSON {
	if j.IsNull() {
		return JSON("{}")
	}
	return j
}

// validJSON is json.Valid at a fraction of its cost, for every JSON column a turn writes
// (FuzzJSONValue holds the two to the same answers). fastjson's validator does the work;
// it takes a raw control character inside a string, which encoding/json refuses, so a
// value with any byte below 0x20 is left to json.Valid. Compact JSON, which is what the
// server writes, has none.
func validJSON(b []byte) bool {
	for _, c := range b {
		if c < 0x20 {
			return json.Valid(b)
		}
	}
	return fastjson.ValidateBytes(b) == nil
}
