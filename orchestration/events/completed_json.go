package events

import "strconv"

// appendJSON appends d as encoding/json encodes it with HTML escaping off (Encode's form,
// without the newline). Its Metadata is written as is: the caller encoded it with Encode,
// whose output is compact JSON, and the store validates every event's payload before it
// commits one. encoding/json would validate and compact those bytes once more, the turn's
// largest value (its GenUI cards, tool calls and validation), for nothing: that scan was
// about 1% of a PostgreSQL replica's CPU in a c=16 sweep. FuzzCompletedJSON holds this to
// encoding/json's bytes.
func (d *CompletedData) appendJSON(b []byte) []byte {
	b = append(b, `{"message_id":`...)
	b = appendJSONString(b, d.MessageID)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, d.RequestID)
	b = appendOptString(b, `,"provider":`, d.Provider)
	b = append(b, `,"resolved_model":`...)
	b = appendNullableString(b, d.ResolvedModel)
	b = append(b, `,"endpoint_id":`...)
	b = strconv.AppendInt(b, int64(d.EndpointID), 10)
	if d.UpstreamRequestID != nil {
		b = append(b, `,"upstream_request_id":`...)
		b = appendJSONString(b, *d.UpstreamRequestID)
	}
	b = append(b, `,"reply_len":`...)
	b = strconv.AppendInt(b, int64(d.ReplyLen), 10)
	b = append(b, `,"metadata":`...)
	if len(d.Metadata) == 0 {
		b = append(b, "null"...)
	} else {
		b = append(b, d.Metadata...)
	}
	return append(b, '}')
}

// jsonSize is room for d's JSON when no character needs more than a two-byte escape.
func (d *CompletedData) jsonSize() int {
	n := len(`{"message_id":"","request_id":"","provider":"","resolved_model":"","endpoint_id":,"upstream_request_id":"","reply_len":,"metadata":}`) +
		40 + len(d.MessageID) + len(d.RequestID) + len(d.Provider) + len(d.Metadata)
	if d.ResolvedModel != nil {
		n += len(*d.ResolvedModel)
	}
	if d.UpstreamRequestID != nil {
		n += len(*d.UpstreamRequestID)
	}
	return n
}

// appendNullableString appends *s as a JSON string, or null for a nil s.
func appendNullableString(b []byte, s *string) []byte {
	if s == nil {
		return append(b, "null"...)
	}
	return appendJSONString(b, *s)
}
