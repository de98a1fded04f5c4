package thinkingml

import (
	"math/rand/v2"
	"strings"
	"testing"
)

// read runs a reply through Sections in the given chunks: the reasoning and the answer.
func read(chunks []string) (reasoning, answer string) {
	var s Sections
	var r, a strings.Builder
	collect := func(ps []Piece) {
		for _, p := range ps {
			if p.Answer {
				a.WriteString(p.Text)
			} else {
				r.WriteString(p.Text)
			}
		}
	}
	for _, c := range chunks {
		collect(s.Write(c))
	}
	collect(s.Close())
	return r.String(), a.String()
}

func TestSections(t *testing.T) {
	cases := []struct {
		name, reply, reasoning, answer string
	}{
		{
			name: "a whole reply",
			reply: "<think>a draft</think>\n<serp>btc momentum</serp>\n<thinking>\n<phase id=\"1\">\n<title>Scope</title>\nBTC, daily bars.\n</phase>\n" +
				"<phase id=\"2\"><title>Risk</title>Stops at 2 &lt; 3 ATR.</phase>\n</thinking>\n<final>\n## Plan\nBuy when a < b.\n\n" +
				"<!-- <serp_queries>\n[\"btc\"]\n</serp_queries> -->\n</final>\n",
			reasoning: "a draft\n\nbtc momentum\n\n**Scope**\n\nBTC, daily bars.\n\n**Risk**\n\nStops at 2 &lt; 3 ATR.",
			answer:    "## Plan\nBuy when a < b.\n\n<!-- <serp_queries>\n[\"btc\"]\n</serp_queries> -->\n",
		},
		{name: "no final: all reasoning", reply: "<thinking><phase id=\"1\"><title>T</title>x</phase></thinking>", reasoning: "**T**\n\nx"},
		{name: "text that looks like a tag stays", reply: "<thinking>x<5 and <-> and <div></thinking><final>ok</final>", reasoning: "x<5 and <-> and <div>", answer: "ok"},
		{name: "an escaped final inside thinking is text", reply: "<thinking>say &lt;final&gt;</thinking><final>a</final>", reasoning: "say &lt;final&gt;", answer: "a"},
		{name: "a cut reply keeps what was held", reply: "<thinking>a</thinking><final>b</fin", reasoning: "a", answer: "b</fin"},
		{name: "after final nothing", reply: "<final>a</final>\n\nstray", answer: "a"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, a := read([]string{tc.reply})
			if r != tc.reasoning || a != tc.answer {
				t.Errorf("reasoning %q\nwant      %q\nanswer %q\nwant   %q", r, tc.reasoning, a, tc.answer)
			}
		})
	}
}

// The reading does not depend on how the reply is cut, down to one byte a chunk.
func TestSectionsChunkingInvariance(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, reply := range filterReplies() {
		wantR, wantA := read([]string{reply})
		for range 50 {
			if r, a := read(randomSplit(rng, reply)); r != wantR || a != wantA {
				t.Fatalf("reply %q read differently when cut:\n%q %q\nwant\n%q %q", reply, r, a, wantR, wantA)
			}
		}
		var bytes []string
		for i := range len(reply) {
			bytes = append(bytes, reply[i:i+1])
		}
		if r, a := read(bytes); r != wantR || a != wantA {
			t.Fatalf("reply %q read differently byte by byte", reply)
		}
	}
}

// FuzzSections: any reply, cut anywhere, reads the same, and the answer is what lies
// between <final> and </final> when the reasoning holds no stray final.
func FuzzSections(f *testing.F) {
	for _, r := range filterReplies() {
		f.Add(r, uint64(7))
	}
	f.Fuzz(func(t *testing.T, reply string, seed uint64) {
		wantR, wantA := read([]string{reply})
		rng := rand.New(rand.NewPCG(seed, 1))
		if r, a := read(randomSplit(rng, reply)); r != wantR || a != wantA {
			t.Fatalf("cut differently: %q %q, whole: %q %q", r, a, wantR, wantA)
		}
		_, inner, ok := strings.Cut(reply, "<final>")
		if ok && !strings.Contains(strings.Split(reply, "<final>")[0], "<final") {
			inner, _, _ = strings.Cut(inner, "</final>")
			if got := strings.TrimLeft(inner, spaces); got != wantA {
				t.Fatalf("answer %q, want %q", wantA, got)
			}
		}
	})
}
