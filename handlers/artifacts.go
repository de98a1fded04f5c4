package handlers

// str returns the string field key of a, or "" when it is unset or not a string.
func str(a Artifacts, key string) string {
	s, _ := a[key].(string)
	return s
}

// boolean returns the bool field key of a, or false when it is unset or not a bool.
func boolean(a Artifacts, key string) bool {
	b, _ := a[key].(bool)
	return b
}

// evidence copies the named fields of a (nil when unset) and, when any tool succeeded this
// turn, their names under "tool_calls": what the transition row needs to explain a verdict.
func evidence(a Artifacts, calls []ToolResult, keys ...string) map[string]any {
	ev := make(map[string]any, len(keys)+1)
	for _, k := range keys {
		ev[k] = a[k]
	}
	var ok []string
	for _, c := range calls {
		if c.Status == "success" {
			ok = append(ok, c.Name)
		}
	}
	if len(ok) > 0 {
		ev["tool_calls"] = ok
	}
	return ev
}
