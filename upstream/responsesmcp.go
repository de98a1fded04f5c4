package upstream

import "github.com/valyala/fastjson"

// mcpItem is an mcp_call item's fields as a tool call reads them, its output and error
// already flattened to text (rawString, flattenToolError).
type mcpItem struct {
	id, itemType, status, serverLabel, name, arguments string
	output, errText                                    string
}

// mcpItemOf reads an output_item.added or output_item.done frame whose item is an MCP call,
// from its top-level fields as ignoredFields read them (typ, item), without encoding/json,
// whose reflection over the frame's item (its arguments and output repeated whole) was 3%
// of a PostgreSQL replica's CPU. It answers only where encoding/json would read the frame
// without error and the same way, as parseAny's toolCall then takes it; ok is false for
// anything else, which goes the general way: another event or item type, a key
// encoding/json would match by case, a field of the wrong type, and an output or error that
// is neither a string nor null (parseAny keeps those as raw JSON text).
func mcpItemOf(typ string, item *fastjson.Value) (it mcpItem, done, ok bool) {
	if item == nil || item.Type() != fastjson.TypeObject {
		return mcpItem{}, false, false
	}
	switch typ {
	case "response.output_item.added":
	case "response.output_item.done":
		done = true
	default:
		return mcpItem{}, false, false
	}
	if !readMCPItem(item.GetObject(), &it) || it.itemType != "mcp_call" {
		return mcpItem{}, false, false
	}
	return it, done, true
}

// readMCPItem reads an item object into it as encoding/json reads it into a wireItem: a
// null leaves a string field as an earlier key set it, and makes output or error null
// (text ""); false when encoding/json would not read it so.
func readMCPItem(o *fastjson.Object, it *mcpItem) bool {
	ok := true
	o.Visit(func(key []byte, v *fastjson.Value) {
		switch string(key) {
		case "id":
			ok = ok && readString(v, &it.id)
		case "type":
			ok = ok && readString(v, &it.itemType)
		case "status":
			ok = ok && readString(v, &it.status)
		case "server_label":
			ok = ok && readString(v, &it.serverLabel)
		case "name":
			ok = ok && readString(v, &it.name)
		case "arguments":
			ok = ok && readString(v, &it.arguments)
		case "output":
			ok = ok && readRawText(v, &it.output)
		case "error":
			ok = ok && readRawText(v, &it.errText)
		default:
			ok = ok && !foldsTo(key, "id", "type", "status", "server_label", "name", "arguments", "output", "error")
		}
	})
	return ok
}

// readRawText sets *dst to what rawString (and flattenToolError, for a value that is no
// object) makes of a raw JSON field: a string's text, "" for null; false for any other
// value.
func readRawText(v *fastjson.Value, dst *string) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		*dst = ""
		return true
	case fastjson.TypeString:
		b, _ := v.StringBytes() // valid UTF-8 and escapes as encoding/json reads them: strict saw to it
		*dst = string(b)
		return true
	}
	return false
}
