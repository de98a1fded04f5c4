package config

import (
	"slices"
	"testing"
)

func TestUnknownVariables(t *testing.T) {
	got := UnknownVariables([]string{"PHASEFLOW_MAX_TURN=3", "PHASEFLOW_MAX_TURNS=4", "HOME=/root", "PHASEFLOW_UPSTREM_URL=x", "PHASEFLOW_ADDR=:1"})
	want := []Unknown{{"PHASEFLOW_MAX_TURN", "PHASEFLOW_MAX_TURNS"}, {"PHASEFLOW_UPSTREM_URL", "PHASEFLOW_UPSTREAM_URL"}}
	if !slices.Equal(got, want) {
		t.Fatalf("UnknownVariables = %v, want %v", got, want)
	}
}
