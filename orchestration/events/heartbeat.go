package events

import (
	"strconv"
	"unicode/utf8"
)

// AppendHeartbeat appends hb's JSON to dst, byte for byte as Encode writes it. Heartbeats
// are nearly all an idle follower costs the server, and the reflection behind Encode (a type
// cache lookup and a stack grown on the sender's fresh goroutine) cost as much as the rest
// of a heartbeat's work above the system call.
func AppendHeartbeat(dst []byte, hb HeartbeatData) []byte {
	dst = append(dst, `{"message_id":`...)
	dst = appendString(dst, hb.MessageID)
	dst = append(dst, `,"request_id":`...)
	dst = appendString(dst, hb.RequestID)
	dst = append(dst, `,"ts":`...)
	dst = strconv.AppendInt(dst, hb.TS, 10)
	dst = append(dst, `,"last_event_id":`...)
	dst = strconv.AppendInt(dst, hb.LastEventID, 10)
	return append(dst, '}')
}

// appendString appends s as a JSON string the way Encode does (HTML left as is): ids are
// plain ASCII and copied as they are; anything else takes the encoder's path.
func appendString(dst []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			b, _ := Encode(s) // a string always encodes
			return append(dst, b...)
		}
	}
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"')
}
