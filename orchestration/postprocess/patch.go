package postprocess

import (
	"encoding/json"
	"fmt"
)

// MergePatch applies an RFC 7386 JSON merge patch to target and returns the result; target
// is not modified. A null in the patch removes the key; objects merge recursively; any
// other value replaces.
func MergePatch(target map[string]any, patch json.RawMessage) (map[string]any, error) {
	var p any
	if err := json.Unmarshal(patch, &p); err != nil {
		return nil, fmt.Errorf("postprocess: state patch is not JSON: %w", err)
	}
	obj, ok := p.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("postprocess: state patch is not a JSON object")
	}
	return mergeObject(clone(target), obj), nil
}

func mergeObject(target, patch map[string]any) map[string]any {
	if target == nil {
		target = map[string]any{}
	}
	for k, v := range patch {
		switch pv := v.(type) {
		case nil:
			delete(target, k)
		case map[string]any:
			sub, _ := target[k].(map[string]any)
			target[k] = mergeObject(clone(sub), pv)
		default:
			target[k] = v
		}
	}
	return target
}

// clone copies a JSON object deeply enough for merging: nested objects are copied, other
// values are immutable once decoded.
func clone(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			v = clone(sub)
		}
		out[k] = v
	}
	return out
}
