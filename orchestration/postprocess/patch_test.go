package postprocess

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The cases are the examples of RFC 7386 §3 plus the ones this project relies on.
func TestMergePatch(t *testing.T) {
	cases := []struct {
		name, target, patch, want string
	}{
		{"replace a value", `{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{"add a key", `{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{"null removes", `{"a":"b"}`, `{"a":null}`, `{}`},
		{"null removes one of two", `{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{"array replaces", `{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{"value replaces array", `{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{"nested merge", `{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{"arrays are not merged", `{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{"nested nulls are dropped", `{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
		{"strategy fields", `{"strategy_status":"draft","backtest_status":"none"}`, `{"backtest_status":"completed","strategy_id":"s1"}`,
			`{"strategy_status":"draft","backtest_status":"completed","strategy_id":"s1"}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var target, want map[string]any
			_ = json.Unmarshal([]byte(tc.target), &target)
			_ = json.Unmarshal([]byte(tc.want), &want)
			got, err := MergePatch(target, json.RawMessage(tc.patch))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("merge (-want +got):\n%s", d)
			}
			var again map[string]any
			_ = json.Unmarshal([]byte(tc.target), &again)
			if d := cmp.Diff(again, target); d != "" {
				t.Fatalf("the target was modified:\n%s", d)
			}
		})
	}
	if _, err := MergePatch(nil, json.RawMessage(`[1]`)); err == nil {
		t.Fatal("an array patch was accepted")
	}
}
