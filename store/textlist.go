package store

import (
	"bytes"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"time"
)

// textListSep separates the elements of a textList: the ASCII record separator, which no
// element can hold. JSON text never holds a raw control character (RFC 8259 §7: in strings
// they are escaped, and outside them only whitespace may appear), and the other lists are
// of ids, event names and formatted times, all written by the server.
const textListSep = '\x1e'

// errTextListElement refuses an element that holds the separator or a NUL.
var errTextListElement = errors.New("store: a list element holds a control byte")

// textList is a list of texts, some NULL, sent as one text parameter that PostgreSQL
// splits with string_to_array. A list that may hold NULLs is split with a third argument,
// the empty text, which marks a NULL (so such a list holds no empty texts; no JSON text is
// empty); a list that holds none is split without it. An empty list is the empty text,
// which splits to no elements: unnest pads a shorter array with NULLs, so a list of one
// NULL reads the same, and a statement turns a lone empty text back with COALESCE.
//
// It replaces pq.Array for the event log's rows: an array literal quotes every element and
// escapes every quote in it (a JSON text is full of them), through reflection for a slice
// of nullable strings, and PostgreSQL's array parser undoes it all again; here each element
// is copied once, side by side, and Value hands over its bytes rather than a string copy
// of them (BenchmarkCommitArgs measures the difference).
type textList struct {
	b []byte
	n int
}

// newTextList returns a list with room for size bytes of elements and separators.
func newTextList(size int) *textList { return &textList{b: make([]byte, 0, size)} }

// add appends t, or NULL when t is nil (only for a list split with the NULL marker). An
// element that holds the separator is refused, so it can never shift the elements after it.
func (l *textList) add(t []byte) error {
	if bytes.IndexByte(t, textListSep) >= 0 || bytes.IndexByte(t, 0) >= 0 {
		return errTextListElement
	}
	l.sep()
	l.b = append(l.b, t...)
	return nil
}

// listable reports whether s may be a list element: it holds neither the separator nor a
// NUL.
func listable(s string) bool {
	return strings.IndexByte(s, textListSep) < 0 && strings.IndexByte(s, 0) < 0
}

// addString appends s (see add).
func (l *textList) addString(s string) error {
	if !listable(s) {
		return errTextListElement
	}
	l.sep()
	l.b = append(l.b, s...)
	return nil
}

// addTime appends t as a timestamptz literal, to the microsecond PostgreSQL keeps.
func (l *textList) addTime(t time.Time) {
	l.sep()
	l.b = t.AppendFormat(l.b, pgTime)
}

// sep starts the next element.
func (l *textList) sep() {
	if l.n > 0 {
		l.b = append(l.b, textListSep)
	}
	l.n++
}

// Value implements driver.Valuer: the elements, joined, as the bytes the list built. lib/pq
// sends a []byte bound to a text parameter as it is, where a string is copied once more; a
// list is built for one statement, so nothing writes to it after this. It is never nil,
// which lib/pq would send as NULL.
func (l *textList) Value() (driver.Value, error) {
	if l.b == nil {
		return []byte{}, nil
	}
	return l.b, nil
}

// textOnly is s with the separator and NUL (neither of which a trace's URL or body, JSON or
// its prefix, should hold) replaced by U+FFFD: a record is kept, whatever it holds, and
// never fails the commit that carries it.
func textOnly(s string) string {
	if listable(s) {
		return s
	}
	return strings.NewReplacer(string(textListSep), "\uFFFD", "\x00", "\uFFFD").Replace(s)
}

// nullableTexts is a text[] parameter that may hold NULLs, for texts that can hold any
// character (a reply's content). pq.Array takes a []sql.NullString through reflection,
// element by element; this writes the same array literal directly: NULL bare, every other
// element quoted with its quotes and backslashes escaped.
type nullableTexts []sql.NullString

// Value implements driver.Valuer.
func (a nullableTexts) Value() (driver.Value, error) {
	if a == nil {
		return nil, nil
	}
	size := 2
	for _, s := range a {
		size += len(s.String) + 3
	}
	b := make([]byte, 1, size)
	b[0] = '{'
	for i, s := range a {
		if i > 0 {
			b = append(b, ',')
		}
		if !s.Valid {
			b = append(b, "NULL"...)
			continue
		}
		b = append(b, '"')
		for rest := s.String; rest != ""; {
			j := strings.IndexAny(rest, `"\`)
			if j < 0 {
				b = append(b, rest...)
				break
			}
			b = append(b, rest[:j]...)
			b = append(b, '\\', rest[j])
			rest = rest[j+1:]
		}
		b = append(b, '"')
	}
	return append(b, '}'), nil // bytes, not a string: see textList.Value
}
