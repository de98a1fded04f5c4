package events

import "strconv"

// appendJSON appends d as encoding/json encodes it with HTML escaping off (Encode's form,
// without the newline). Every turn writes three or more statuses (queued, working,
// routed, one per MCP call), and encoding them by reflection was about half a percent of
// a PostgreSQL replica's CPU in a c=16 sweep. FuzzStatusJSON holds this to
// encoding/json's bytes.
func (d *StatusData) appendJSON(b []byte) []byte {
	b = append(b, `{"message_id":`...)
	b = appendJSONString(b, d.MessageID)
	b = append(b, `,"request_id":`...)
	b = appendJSONString(b, d.RequestID)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, d.State)
	b = appendOptString(b, `,"provider":`, d.Provider)
	b = appendOptString(b, `,"resolved_model":`, d.ResolvedModel)
	b = appendOptInt(b, `,"endpoint_id":`, d.EndpointID)
	b = appendOptString(b, `,"upstream_request_id":`, d.UpstreamRequestID)
	b = appendOptString(b, `,"phase":`, d.Phase)
	if t := d.Tool; t != nil {
		b = append(b, `,"tool":{"server_label":`...)
		b = appendJSONString(b, t.ServerLabel)
		b = append(b, `,"name":`...)
		b = appendJSONString(b, t.Name)
		b = append(b, `,"state":`...)
		b = appendJSONString(b, t.State)
		b = append(b, '}')
	}
	b = appendOptInt(b, `,"attempt":`, d.Attempt)
	b = appendOptString(b, `,"reason":`, d.Reason)
	if d.DiscardThroughSeq != nil {
		b = append(b, `,"discard_through_seq":`...)
		b = strconv.AppendInt(b, int64(*d.DiscardThroughSeq), 10)
	}
	b = appendOptString(b, `,"from":`, d.From)
	b = appendOptString(b, `,"to":`, d.To)
	return append(b, '}')
}

// jsonSize is d's JSON's length when no character needs escaping, and a little room for
// escapes and digits: each status stays in the log's memory while its generation runs,
// so it is not rounded up (an escape-heavy one grows its slice once).
func (d *StatusData) jsonSize() int {
	n := len(`{"message_id":"","request_id":"","state":""}`) + len(d.MessageID) + len(d.RequestID) + len(d.State)
	n += optSize(`,"provider":""`, d.Provider) + optSize(`,"resolved_model":""`, d.ResolvedModel) +
		optSize(`,"upstream_request_id":""`, d.UpstreamRequestID) + optSize(`,"phase":""`, d.Phase) +
		optSize(`,"reason":""`, d.Reason) + optSize(`,"from":""`, d.From) + optSize(`,"to":""`, d.To)
	if d.Tool != nil {
		n += len(`,"tool":{"server_label":"","name":"","state":""}`) + len(d.Tool.ServerLabel) + len(d.Tool.Name) + len(d.Tool.State)
	}
	if d.EndpointID != 0 {
		n += len(`,"endpoint_id":`) + 4
	}
	if d.Attempt != 0 {
		n += len(`,"attempt":`) + 2
	}
	if d.DiscardThroughSeq != nil {
		n += len(`,"discard_through_seq":`) + 6
	}
	return n + 8
}

// optSize is the room an omitempty string field takes: its key, quotes and value, or
// nothing when empty.
func optSize(keyQuotes, s string) int {
	if s == "" {
		return 0
	}
	return len(keyQuotes) + len(s)
}

// appendOptString appends key and s as a JSON string, or nothing for an empty s
// (omitempty).
func appendOptString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendOptInt appends key and n, or nothing for 0 (omitempty).
func appendOptInt(b []byte, key string, n int) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), int64(n), 10)
}
