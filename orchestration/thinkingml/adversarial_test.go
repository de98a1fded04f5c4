package thinkingml

import (
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"
)

// adversarial are replies shaped to make a validator do more than linear work, each built
// to about size bytes: the shapes of issue 52 (thousands of unclosed tags, deep nesting, one
// huge line, many short lines) and their mixes with stray closing tags.
var adversarial = map[string]func(size int) string{
	"unclosed phases": func(n int) string { return "<thinking>" + repeatTo(`<phase id="1">`, n) },
	"unclosed on one line then stray closes": func(n int) string {
		return "<thinking>" + repeatTo(`<phase id="1">`, n/2) + repeatTo("</x>", n/2)
	},
	"unclosed phases, then their parent closes": func(n int) string {
		return "<thinking>" + repeatTo("<phase>", n) + "</thinking><final>x</final>"
	},
	"deep nesting": func(n int) string { return repeatTo("<think>", n/2) + repeatTo("</think>", n/2) },
	"mismatched closes": func(n int) string {
		return "<thinking>" + repeatTo("<phase><title>", n/2) + repeatTo("</phase>", n/2)
	},
	"one huge line":    func(n int) string { return "<thinking><phase>" + repeatTo("a<b & c ", n) + "</phase></thinking>" },
	"many short lines": func(n int) string { return "<thinking>" + repeatTo("<phase>\n", n) },
	"many closed phases": func(n int) string {
		return "<thinking>" + repeatTo(`<phase id="1"><title>t</title>x</phase>`, n) + "</thinking><final>ok</final>"
	},
	"comments and cdata": func(n int) string { return "<thinking>" + repeatTo("<!-- <phase> --><![CDATA[<x>]]>", n) },
}

func repeatTo(unit string, size int) string {
	return strings.Repeat(unit, max(1, size/len(unit)))
}

// BenchmarkValidateAdversarial reports ns per byte for each shape from 10 KB to 1 MB; the
// figure must stay flat as the size grows (TestValidateIsLinear checks the same by work).
func BenchmarkValidateAdversarial(b *testing.B) {
	for name, build := range adversarial {
		for _, size := range []int{10 << 10, 100 << 10, 1 << 20} {
			r := build(size)
			b.Run(fmt.Sprintf("%s/%dKB", name, size>>10), func(b *testing.B) {
				b.SetBytes(int64(len(r)))
				for b.Loop() {
					Validate(r, Options{})
				}
			})
		}
	}
}

// FuzzValidateLinear fails on an input whose cost grows faster than its size: the input
// repeated to 8 times the length must not cost more than 24 times as much (linear is 8,
// quadratic 64). Timing is judged only when asked for, while fuzzing:
//
//	PHASEFLOW_FUZZ_LINEAR=1 go test -run '^$' -fuzz FuzzValidateLinear ./orchestration/thinkingml/
//
// (it finds the quadratic nesting pass this package had within seconds). Elsewhere, CI's
// brief fuzzing included, it only checks that a long input keeps its report bounded: a
// busy machine's timings are not a verdict.
func FuzzValidateLinear(f *testing.F) {
	for _, build := range adversarial {
		f.Add(build(64))
	}
	f.Add(benchReply(512))
	timed := flag.Lookup("test.fuzz").Value.String() != "" && os.Getenv("PHASEFLOW_FUZZ_LINEAR") != ""
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) == 0 || len(s) > 1<<10 {
			return
		}
		if !timed {
			if res := Validate(repeatTo(s, 8<<10), Options{}); len(res.Errors) > maxIssues || len(res.Warnings) > maxIssues {
				t.Fatalf("%d errors and %d warnings, want at most %d of each", len(res.Errors), len(res.Warnings), maxIssues)
			}
			return
		}
		small, large := repeatTo(s, 4<<10), repeatTo(s, 32<<10)
		ts, tl := cost(small), cost(large)
		if tl > 24*ts && tl > 5*time.Millisecond {
			t.Fatalf("8 times the input cost %v against %v (%.0f times): super-linear on %q", tl, ts, float64(tl)/float64(ts), s)
		}
	})
}

// cost is the least of three runs' time, so that one descheduled run does not count.
func cost(r string) time.Duration {
	best := time.Duration(1 << 62)
	for range 3 {
		start := time.Now()
		Validate(r, Options{})
		best = min(best, time.Since(start))
	}
	return best
}
