package upstream

import (
	"bytes"
	"slices"

	"github.com/valyala/fastjson"
)

// handled are the event types parseAny can turn into an event or an end; every other
// typed event (response.in_progress, the content parts, output_text.done, MCP progress, …)
// yields nothing.
var handled = map[string]bool{
	"response.created": true, evTextDelta: true, "response.output_item.added": true,
	"response.output_item.done": true, "response.mcp_call.failed": true, "response.completed": true,
	"response.failed": true, "response.incomplete": true, "error": true,
	"response.refusal.delta": true, "response.refusal.done": true,
}

// ignorable reports, without encoding/json, whether a frame strict parsed, read by
// ignoredFields into typ and item, is one parseAny would read without error and turn into
// no event. A stream sends several such events around its text, and some of them
// (content_part.done, output_text.done, a message's output_item.done) repeat the whole
// reply, so decoding them with encoding/json cost as much as all the deltas. Like deltaOf,
// it answers only where encoding/json would read the frame the same way: a frame
// ignoredFields refuses goes to parseAny, which also reports what is wrong with it.
func ignorable(typ string, item *fastjson.Value) bool {
	switch {
	case typ == "": // an untyped frame may be a chat-style error
		return false
	case typ == "response.output_item.added" || typ == "response.output_item.done":
		return item != nil && item.Type() == fastjson.TypeObject && !isMCPItem(item.GetObject())
	}
	return !handled[typ]
}

// ignoredFields reads the top-level fields of a frame parseAny would decode, for ignorable
// and mcpItemOf: the type (the SSE event name, name, when the frame has none) and the item.
// ok is false when any field wireEvent maps could make encoding/json fail or read
// otherwise (a case-folded key, the response object, a string field that is not one, a
// repeated item, whose objects encoding/json reads into one).
func ignoredFields(o *fastjson.Object, name string) (typ string, item *fastjson.Value, ok bool) {
	ok = true
	o.Visit(func(key []byte, v *fastjson.Value) {
		switch k := string(key); k {
		case "type":
			if v.Type() == fastjson.TypeNull {
				break // a null leaves the string field as an earlier key set it
			}
			b, err := v.StringBytes()
			typ, ok = string(b), ok && err == nil
		case "response":
			ok = false // decoded into a typed struct: left to encoding/json
		case "item":
			ok = ok && item == nil && readsAsWireEvent(key, v)
			item = v
		default:
			ok = ok && readsAsWireEvent(key, v)
		}
	})
	if typ == "" {
		typ = name
	}
	return typ, item, ok
}

// readsAsWireEvent reports whether encoding/json reads key: v, a field of an event other
// than type and response, into wireEvent without error and as the fastjson paths assume:
// its string fields are strings or null, its item an object wireItem reads (or null), and
// no other key matches a field only by case.
func readsAsWireEvent(key []byte, v *fastjson.Value) bool {
	switch string(key) {
	case "delta", "item_id", "message", "refusal":
		return stringOrNull(v)
	case "item":
		return objectRead(v, []string{"id", "type", "status", "server_label", "name", "arguments"}, []string{"output", "error"})
	case "error", "code":
		return true // raw JSON: any value reads
	}
	return !foldsTo(key, "type", "delta", "item_id", "item", "response", "error", "code", "message", "refusal")
}

// objectRead reports whether encoding/json reads v into a struct whose fields are strs
// (each a string or null) and raws (any value): v is null or an object, and no other key of
// it matches one of them by case.
func objectRead(v *fastjson.Value, strs, raws []string) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeObject:
	default:
		return false
	}
	ok := true
	v.GetObject().Visit(func(key []byte, x *fastjson.Value) {
		switch k := string(key); {
		case slices.Contains(strs, k):
			ok = ok && stringOrNull(x)
		case slices.Contains(raws, k):
		default:
			ok = ok && !foldsTo(key, strs...) && !foldsTo(key, raws...)
		}
	})
	return ok
}

// isMCPItem reports whether an item's type is mcp_call: its last "type" key that is not
// null, as encoding/json reads it.
func isMCPItem(o *fastjson.Object) bool {
	mcp := false
	o.Visit(func(key []byte, v *fastjson.Value) {
		if string(key) == "type" && v.Type() != fastjson.TypeNull { // a null keeps the type
			b, _ := v.StringBytes()
			mcp = string(b) == "mcp_call"
		}
	})
	return mcp
}

func stringOrNull(v *fastjson.Value) bool {
	return v.Type() == fastjson.TypeString || v.Type() == fastjson.TypeNull
}

// foldsTo reports whether key equals one of names ignoring case: encoding/json would read
// it into that field.
func foldsTo(key []byte, names ...string) bool {
	for _, n := range names {
		if bytes.EqualFold(key, []byte(n)) {
			return true
		}
	}
	return false
}
