package agui

import (
	"encoding/json"
	"sort"
	"strings"
)

// State is what AG-UI's state is for a Phaseflow conversation: the session's phase and its
// artifacts, the blocks the model's state patches change.
type State struct {
	Phase     string         `json:"phase"`
	Artifacts map[string]any `json:"artifacts"`
}

// Op is one RFC 6902 operation.
type Op struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// mergeOps are the JSON Patch operations that do to doc what the JSON merge patch (RFC
// 7386) patch does, under path, and applies them to doc: a null removes a member that is
// there, an object merges into an object, anything else is set. Members go in name order,
// so the operations are the same for the same patch.
func mergeOps(doc map[string]any, patch map[string]any, path string) []Op {
	var ops []Op
	names := make([]string, 0, len(patch))
	for name := range patch {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		value, at := patch[name], path+"/"+pointerEscape(name)
		current, exists := doc[name]
		sub, isObject := value.(map[string]any)
		currentObject, currentIsObject := current.(map[string]any)
		switch {
		case value == nil && exists:
			delete(doc, name)
			ops = append(ops, Op{Op: "remove", Path: at})
		case value == nil:
		case isObject && currentIsObject:
			ops = append(ops, mergeOps(currentObject, sub, at)...)
		case isObject:
			fresh := mergeInto(map[string]any{}, sub)
			doc[name] = fresh
			ops = append(ops, Op{Op: "add", Path: at, Value: fresh})
		default:
			doc[name] = value
			ops = append(ops, Op{Op: "add", Path: at, Value: value})
		}
	}
	return ops
}

// mergeInto applies a merge patch to doc and returns it (a new object's nulls are dropped).
func mergeInto(doc, patch map[string]any) map[string]any {
	mergeOps(doc, patch, "")
	return doc
}

// pointerEscape escapes a member name for a JSON Pointer (RFC 6901).
func pointerEscape(name string) string {
	return strings.ReplaceAll(strings.ReplaceAll(name, "~", "~0"), "/", "~1")
}

// decodeObject reads raw as a JSON object; nil when it is not one.
func decodeObject(raw json.RawMessage) map[string]any {
	var m map[string]any
	if json.Unmarshal(raw, &m) != nil {
		return nil
	}
	return m
}
