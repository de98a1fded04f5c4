package scripted

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

func TestChunks(t *testing.T) {
	tests := []struct {
		name string
		text string
		size int
		want []string
	}{
		{name: "ascii", text: "abcdefg", size: 3, want: []string{"abc", "def", "g"}},
		{name: "chinese counts runes", text: "交易策略回测", size: 4, want: []string{"交易策略", "回测"}},
		{name: "mixed", text: "a交b易", size: 1, want: []string{"a", "交", "b", "易"}},
		{name: "empty", text: "", size: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chunks(tt.text, tt.size)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("chunks (-want +got):\n%s", diff)
			}
			for _, c := range got {
				if !utf8.ValidString(c) {
					t.Errorf("chunk %q splits a rune", c)
				}
			}
		})
	}
}

func TestOnceTrackerIsBounded(t *testing.T) {
	var o onceTracker
	for i := range maxOnceKeys + 50 {
		if !o.bad("broken_xml_once", strconv.Itoa(i)) {
			t.Fatalf("message %d: first request not bad", i)
		}
	}
	if len(o.seen) != maxOnceKeys {
		t.Errorf("remembers %d keys, want %d", len(o.seen), maxOnceKeys)
	}
	// The newest keys survived the eviction and now give the good reply.
	if o.bad("broken_xml_once", strconv.Itoa(maxOnceKeys+49)) {
		t.Error("second request of a recent message is bad")
	}
}

func TestEcho(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{name: "markers removed", in: "plan  it [[fault:stall]]\n[[pace_ms:5]] now", want: "plan it now"},
		{name: "long text cut", in: strings.Repeat("策", 100), want: strings.Repeat("策", maxEcho) + "…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := echo(tt.in); got != tt.want {
				t.Errorf("echo = %q, want %q", got, tt.want)
			}
		})
	}
}
