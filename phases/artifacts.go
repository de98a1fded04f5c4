package phases

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Field kinds: the JSON type an artifact field holds. An enum is a string restricted to
// [Field.Allowed].
const (
	KindString = "string"
	KindBool   = "bool"
	KindObject = "object"
	KindEnum   = "enum"
)

// Field describes one artifact field of a phase. The model may only set fields that are
// described here, so this list is also the vocabulary the prompts teach.
type Field struct {
	Name    string
	Kind    string   // KindString, KindBool, KindObject or KindEnum
	Allowed []string // the values of an enum, in their natural order
	// Keys describes the keys of an object field; empty means any object is accepted.
	Keys []Field
	// Required marks a key an object must hold (used for Keys; top-level fields may always
	// be unset).
	Required bool
	// Server marks a field only the server writes, from tool results (the figures the
	// stop criteria judge): a model's patch that sets it is refused, so a reply cannot
	// claim a result no tool reported.
	Server bool
}

// ServerFields names the fields of p that only the server writes ([Field.Server]).
func ServerFields(p Phase) []string {
	var out []string
	for _, f := range Fields(p) {
		if f.Server {
			out = append(out, f.Name)
		}
	}
	return out
}

// Fields lists the artifact fields of p: the common ones (summary, notes) first, then the
// phase's own. Completed has only the common fields; an unknown phase has none. The slice is
// fresh on every call, so callers may change it.
func Fields(p Phase) []Field {
	var own []Field
	switch p {
	case Strategy:
		own = strategyFields()
	case StressTest:
		own = stressTestFields()
	case Deployment:
		own = deploymentFields()
	case Completed:
	default:
		return nil
	}
	return append(commonFields(), own...)
}

func commonFields() []Field {
	return []Field{
		{Name: "summary", Kind: KindString},
		{Name: "notes", Kind: KindString},
	}
}

func strategyFields() []Field {
	return []Field{
		{Name: "strategy_id", Kind: KindString},
		enum("strategy_status", "draft", "validated", "confirmed"),
		enum("backtest_status", "none", "running", "completed", "failed"),
		{Name: "advance_to_stress_test", Kind: KindBool},
		{Name: "strategy_draft", Kind: KindObject, Keys: []Field{
			{Name: "name", Kind: KindString, Required: true},
			{Name: "spec", Kind: KindObject, Required: true},
		}},
		{Name: "backtest_metrics", Kind: KindObject, Server: true},
	}
}

func stressTestFields() []Field {
	return []Field{
		{Name: "scenario_set_id", Kind: KindString},
		{Name: "stress_report_id", Kind: KindString},
		enum("stress_test_decision", "pending", "pass", "revise"),
		{Name: "stress_metrics", Kind: KindObject, Server: true},
	}
}

func deploymentFields() []Field {
	return []Field{
		{Name: "deployment_target", Kind: KindString},
		enum("risk_guard_status", "pending", "armed", "failed"),
		enum("rollout_status", "pending", "rolling", "done"),
		{Name: "deployment_id", Kind: KindString},
		enum("deployment_status", "ready", "deployed", "completed", "blocked"),
		{Name: "blocker_code", Kind: KindString},
	}
}

// enum builds an enum field; the values are listed in the order a phase moves through them.
func enum(name string, allowed ...string) Field {
	return Field{Name: name, Kind: KindEnum, Allowed: allowed}
}

// FieldError is one reason an artifact block was refused. Field is a dotted path
// ("strategy_draft.name"); it is empty when the block as a whole is wrong.
type FieldError struct {
	Field  string
	Reason string
}

// String returns "field: reason", the form stored with a refused patch.
func (e FieldError) String() string {
	if e.Field == "" {
		return e.Reason
	}
	return e.Field + ": " + e.Reason
}

// Error makes a FieldError usable as an error, so callers can wrap one.
func (e FieldError) Error() string { return e.String() }

// CheckArtifacts reports every unknown field and every value of the wrong type or outside
// its allowed values in a, the artifacts of phase p after a patch was merged. It checks the
// merged block rather than the patch because a merge patch may be valid on its own and still
// leave, say, a draft without a name. A nil value means "unset" and is always accepted.
// Errors come sorted by field; nil means a is acceptable.
func CheckArtifacts(p Phase, a map[string]any) []FieldError {
	fields := Fields(p)
	if fields == nil {
		return []FieldError{{Reason: fmt.Sprintf("unknown phase %q", p)}}
	}
	return checkObject("", fields, a)
}

// checkObject checks the keys of obj against fields; prefix is the dotted path of obj.
func checkObject(prefix string, fields []Field, obj map[string]any) []FieldError {
	var errs []FieldError
	for _, name := range sortedKeys(obj) {
		f, ok := lookup(fields, name)
		if !ok {
			errs = append(errs, FieldError{Field: prefix + name, Reason: "unknown field"})
			continue
		}
		if obj[name] == nil {
			continue
		}
		errs = append(errs, checkValue(prefix+name, f, obj[name])...)
	}
	for _, f := range fields {
		if f.Required && obj[f.Name] == nil {
			errs = append(errs, FieldError{Field: prefix + f.Name, Reason: "required"})
		}
	}
	sort.SliceStable(errs, func(i, j int) bool { return errs[i].Field < errs[j].Field })
	return errs
}

// checkValue checks one non-nil value against its field.
func checkValue(path string, f Field, v any) []FieldError {
	switch f.Kind {
	case KindString:
		if _, ok := v.(string); !ok {
			return []FieldError{typeError(path, "a string", v)}
		}
	case KindBool:
		if _, ok := v.(bool); !ok {
			return []FieldError{typeError(path, "a boolean", v)}
		}
	case KindEnum:
		s, ok := v.(string)
		if !ok || !slices.Contains(f.Allowed, s) {
			return []FieldError{{Field: path, Reason: fmt.Sprintf("want one of %s, got %s",
				strings.Join(f.Allowed, "|"), describe(v))}}
		}
	case KindObject:
		obj, ok := v.(map[string]any)
		if !ok {
			return []FieldError{typeError(path, "an object", v)}
		}
		if len(f.Keys) > 0 {
			return checkObject(path+".", f.Keys, obj)
		}
	}
	return nil
}

func typeError(path, want string, got any) FieldError {
	return FieldError{Field: path, Reason: fmt.Sprintf("want %s, got %s", want, describe(got))}
}

// describe names a decoded JSON value for an error message, quoting strings so an empty one
// is visible.
func describe(v any) string {
	switch v := v.(type) {
	case string:
		return fmt.Sprintf("%q", v)
	case bool:
		return fmt.Sprintf("%t", v)
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case float64, int, int64:
		return fmt.Sprintf("the number %v", v)
	default:
		return fmt.Sprintf("%T", v)
	}
}

func lookup(fields []Field, name string) (Field, bool) {
	for _, f := range fields {
		if f.Name == name {
			return f, true
		}
	}
	return Field{}, false
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
