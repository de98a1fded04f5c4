package upstream

import (
	"strconv"

	"github.com/valyala/fastjson"
)

// responseEventOf reads response.created and response.completed from o, the frame strict
// parsed, without encoding/json. Both carry the response object, and the terminal event
// repeats the whole reply in it: decoding it into wireEvent by reflection was a visible
// share of Phaseflow's CPU per turn. Like deltaOf and ignorable, it answers only where encoding/json
// would read the frame without error and the same way: any field of the wrong type for
// wireEvent or wireResponse, or a key they would match only by case folding, leaves the
// frame to parseAny. Repeated keys are read as encoding/json reads them: the last wins, and
// a null leaves a string or count as it was and makes a pointer nil. The event is what
// parseAny makes of the frame, except created's UpstreamRequestID, which the caller sets.
func responseEventOf(o *fastjson.Object, name string) (ev Event, terminal, ok bool) {
	var typ *fastjson.Value
	ok = true
	o.Visit(func(key []byte, v *fastjson.Value) {
		switch string(key) {
		case "type":
			typ = lastSet(typ, v)
		case "response":
			ok = ok && readResponse(v, &ev)
		default:
			ok = ok && readsAsWireEvent(key, v)
		}
	})
	switch {
	case !ok:
		return Event{}, false, false
	case isString(typ, "response.completed", name):
		ev.Kind = EventCompleted
		return ev, true, true
	case isString(typ, "response.created", name):
		ev.Kind, ev.Usage = EventCreated, nil // parseAny's created takes the id and model only
		return ev, false, true
	case isIgnored(typ, name):
		// response.in_progress and response.queued: no event. Each stream sends one right
		// after created, and encoding/json's reading of its response was the deepest stack
		// a waiting generation reached (docs/performance.md).
		return Event{}, false, true
	}
	return Event{}, false, false
}

// isIgnored reports whether v, the frame's type field (or name, the SSE event name, when
// it is absent, null or empty), names an event parseAny reads to nothing.
func isIgnored(v *fastjson.Value, name string) bool {
	typ := name
	if v != nil && v.Type() != fastjson.TypeNull {
		b, err := v.StringBytes()
		if err != nil {
			return false
		}
		if len(b) > 0 {
			typ = string(b)
		}
	}
	return typ != "" && !handled[typ]
}

// readResponse reads a response value into ev's id, model and usage as encoding/json reads
// it into *wireResponse: null drops what an earlier response key set (the pointer becomes
// nil), an object is read over it; false when encoding/json would not read it so.
func readResponse(v *fastjson.Value, ev *Event) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		ev.ResponseID, ev.Model, ev.Usage = "", "", nil
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	ok := true
	v.GetObject().Visit(func(key []byte, x *fastjson.Value) {
		switch string(key) {
		case "id":
			ok = ok && readString(x, &ev.ResponseID)
		case "model":
			ok = ok && readString(x, &ev.Model)
		case "status":
			ok = ok && stringOrNull(x)
		case "usage":
			ok = ok && readUsage(x, &ev.Usage)
		case "error":
			ok = ok && objectRead(x, []string{"type", "message"}, []string{"code"})
		case "incomplete_details":
			ok = ok && objectRead(x, []string{"reason"}, nil)
		default:
			ok = ok && !foldsTo(key, "id", "model", "status", "usage", "error", "incomplete_details")
		}
	})
	return ok
}

// readString sets *dst to v's text when v is a string, leaves it when v is null, and
// reports false for any other value.
func readString(v *fastjson.Value, dst *string) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeString:
		b, _ := v.StringBytes()
		*dst = string(b)
		return true
	}
	return false
}

// readUsage reads a usage value into *dst as encoding/json reads it into a *Usage: null
// makes it nil, an object allocates it if needed and sets the counts it holds.
func readUsage(v *fastjson.Value, dst **Usage) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		*dst = nil
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	if *dst == nil {
		*dst = &Usage{}
	}
	u, ok := *dst, true
	v.GetObject().Visit(func(key []byte, x *fastjson.Value) {
		switch string(key) {
		case "input_tokens":
			ok = ok && readInt(x, &u.InputTokens)
		case "output_tokens":
			ok = ok && readInt(x, &u.OutputTokens)
		case "total_tokens":
			ok = ok && readInt(x, &u.TotalTokens)
		default:
			ok = ok && !foldsTo(key, "input_tokens", "output_tokens", "total_tokens")
		}
	})
	return ok
}

// readInt sets *dst from an integer literal (what encoding/json accepts for an int: no
// fraction, no exponent, in range), leaves it for null, and reports false otherwise.
func readInt(v *fastjson.Value, dst *int) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeNumber:
		n, err := strconv.Atoi(string(v.MarshalTo(nil)))
		if err != nil {
			return false
		}
		*dst = n
		return true
	}
	return false
}
