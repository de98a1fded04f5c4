package events

import (
	"strconv"
	"unicode/utf8"
)

// appendJSON appends d as encoding/json encodes it with HTML escaping off (Encode's form,
// without the newline). A content_delta is most of a turn's events, and encoding it by
// reflection was 4% of Phaseflow's CPU in a c=16 sweep. FuzzDeltaJSON holds this to
// encoding/json's bytes for any text, ids and numbers.
func (d *DeltaData) appendJSON(b []byte) []byte {
	b = append(b, `{"message_id":`...)
	b = appendJSONString(b, d.MessageID)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, d.RequestID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, int64(d.Seq), 10)
	b = append(b, `,"delta":`...)
	b = appendJSONString(b, d.Delta)
	if d.Attempt != 0 {
		b = append(b, `,"attempt":`...)
		b = strconv.AppendInt(b, int64(d.Attempt), 10)
	}
	return append(b, '}')
}

// jsonSize is room for d's JSON when no character needs more than a two-byte escape.
func (d *DeltaData) jsonSize() int {
	return len(`{"message_id":"","request_id":"","seq":,"delta":"","attempt":}`) + 40 +
		len(d.MessageID) + len(d.RequestID) + len(d.Delta) + len(d.Delta)/8
}

// appendJSONString appends s as a JSON string the way encoding/json writes one with HTML
// escaping off (encode.go, appendString): quotes and backslashes escaped, control characters
// as \b, \f, \n, \r, \t or \u00XX, invalid UTF-8 as \ufffd, and U+2028 and U+2029 escaped.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
