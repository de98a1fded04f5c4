package carryover

import "testing"

func TestTakeOnce(t *testing.T) {
	b := &Block{From: "strategy", To: "stress_test", Text: "strategy s1 confirmed"}
	if got := Take(b, "strategy"); got != "" {
		t.Fatalf("Take for another phase = %q, want nothing", got)
	}
	if got := Take(b, "stress_test"); got != "strategy s1 confirmed" {
		t.Fatalf("first Take = %q", got)
	}
	if got := Take(b, "stress_test"); got != "" {
		t.Fatalf("second Take = %q, want nothing (already used)", got)
	}
	if got := Take(nil, "stress_test"); got != "" {
		t.Fatalf("Take(nil) = %q", got)
	}
}
