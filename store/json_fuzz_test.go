package store_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/phaseflow/phaseflow/store"
)

// FuzzJSONValue holds JSON.Value's check to encoding/json's: a value is written when
// json.Valid accepts it (or it is null), and refused otherwise.
func FuzzJSONValue(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,2.5e3,"x\u00e9"]`, `"\ud800"`, "\"\xff\"", `{"a":}`, `tru`,
		" null ", `01`, `-`, `1.`, `"\x01"`, `"\/\b\f\n\r\t"`, `"\x"`, `{"a":1,}`, `[1 2]`, `1e`, `{} {}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		_, err := store.JSON(b).Value()
		want := store.JSON(b).IsNull() || json.Valid(b)
		if (err == nil) != want {
			t.Fatalf("JSON(%q).Value() error = %v, want accepted = %v (json.Valid)", b, err, want)
		}
	})
}

// BenchmarkJSONValue checks a content_delta's data and a 2 KB metadata object, as every
// commit of a turn does.
func BenchmarkJSONValue(b *testing.B) {
	delta := store.JSON(`{"message_id":"01a2167a-f9ec-7f27-bd34-c47bcf3d8bd1","request_id":"req-1","seq":12,"delta":" the 20-bar rate of chan"}`)
	meta := map[string]any{"phase": "strategy", "stage": "draft", "runtime_policy": map[string]any{"reply_policy": "retry", "tool_choice": "auto"}}
	for i := range 20 {
		meta[fmt.Sprintf("k%d", i)] = []any{1.5, "text with \"quotes\" and <tags>", true, nil, map[string]any{"x": i}}
	}
	doc, err := json.Marshal(meta)
	if err != nil {
		b.Fatal(err)
	}
	for name, v := range map[string]store.JSON{"delta": delta, "metadata": doc} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(v)))
			for b.Loop() {
				if _, err := v.Value(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
