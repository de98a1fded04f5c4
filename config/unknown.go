package config

import (
	"slices"
	"strings"
)

// Unknown is a PHASEFLOW_* variable no setting reads, with the known one closest to it.
type Unknown struct {
	Name, Closest string
}

// UnknownVariables lists the PHASEFLOW_* variables of environ ("NAME=value" pairs, as
// os.Environ gives them) that no setting reads: a misspelled PHASEFLOW_MAX_TURN=3 is
// otherwise silently ignored. Each comes with the known name it is closest to.
func UnknownVariables(environ []string) []Unknown {
	var known []string
	for _, s := range settings() {
		known = append(known, s.env)
	}
	var out []Unknown
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, "PHASEFLOW_") || slices.Contains(known, name) {
			continue
		}
		out = append(out, Unknown{Name: name, Closest: closest(name, known)})
	}
	return out
}

// closest is the name of names at the least edit distance from s.
func closest(s string, names []string) string {
	best, bestDist := "", -1
	for _, n := range names {
		if d := editDistance(s, n); bestDist < 0 || d < bestDist {
			best, bestDist = n, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance of a and b (ASCII names).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}
