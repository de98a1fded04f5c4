package upstream

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/google/go-cmp/cmp"
)

// decodeAll returns every frame of input as "name|data" strings and the final error.
func decodeAll(r io.Reader) ([]string, error) {
	dec := newDecoder(r)
	var got []string
	for {
		f, err := dec.next()
		if err != nil {
			return got, err
		}
		got = append(got, f.name+"|"+string(f.data))
	}
}

func TestDecoder(t *testing.T) {
	tests := []struct {
		name  string
		input string
		want  []string
	}{
		{name: "LF", input: "event: a\ndata: 1\n\nevent: b\ndata: 2\n\n", want: []string{"a|1", "b|2"}},
		{name: "CRLF", input: "event: a\r\ndata: 1\r\n\r\n", want: []string{"a|1"}},
		{name: "lone CR", input: "event: a\rdata: 1\r\rdata: 2\r\r", want: []string{"a|1", "|2"}},
		{name: "byte-order mark", input: "\ufeffdata: 1\n\n", want: []string{"|1"}},
		{name: "comments", input: ": hi\ndata: 1\n: between\n\n:only a comment\n\n", want: []string{"|1"}},
		{name: "multi-line data", input: "data: a\ndata:b\ndata:  c\ndata\n\n", want: []string{"|a\nb\n c\n"}},
		{name: "event without data dropped", input: "event: lonely\n\ndata: x\n\n", want: []string{"|x"}},
		{name: "id retry and unknown fields ignored", input: "id: 3\nretry: 10\nfoo: bar\ndata: x\n\n", want: []string{"|x"}},
		{name: "unfinished event at EOF dropped", input: "data: 1\n\ndata: {\"type\":\"resp", want: []string{"|1"}},
		{name: "unfinished line-ended event at EOF dropped", input: "data: 1\n\ndata: 2\n", want: []string{"|1"}},
		{name: "empty data line still dispatches", input: "data:\n\n", want: []string{"|"}},
		{name: "DONE is a frame like any other", input: "data: [DONE]\n\n", want: []string{"|[DONE]"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// One byte per read puts every line ending, "\r\n" included, across reads.
			for _, r := range []io.Reader{strings.NewReader(tt.input), iotest.OneByteReader(strings.NewReader(tt.input))} {
				got, err := decodeAll(r)
				if !errors.Is(err, io.EOF) {
					t.Fatalf("err = %v, want io.EOF", err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("frames (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func TestDecoderLimits(t *testing.T) {
	tests := []struct {
		name  string
		input string
	}{
		{name: "line over the limit", input: "data: " + strings.Repeat("x", maxLineBytes) + "\n\n"},
		{name: "event over the limit", input: strings.Repeat("data: "+strings.Repeat("x", 1<<20)+"\n", 9) + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeAll(strings.NewReader(tt.input))
			if err == nil || errors.Is(err, io.EOF) {
				t.Fatalf("err = %v, want a size error", err)
			}
		})
	}
}

func TestDecoderReadError(t *testing.T) {
	boom := errors.New("boom")
	_, err := decodeAll(io.MultiReader(strings.NewReader("data: 1\n\n"), iotest.ErrReader(boom)))
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v, want the reader's error", err)
	}
}

// FuzzDecode feeds arbitrary bytes through the decoder and the event parser: it must never
// panic, must stop at EventCompleted, and must end in either success or a coded *Error.
func FuzzDecode(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.sse"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		"", "\r", "\n\n", "data: [DONE]\n\n", "data:{}\n\n", "\ufeff:\r\n\r\n",
		"data: {\"type\":\"error\",\"error\":\"x\"}\n\n",
		"data: {\"type\":\"error\",\"error\":null,\"code\":5}\n\n",
		"data: {\"error\":{\"message\":1}}\n\n",
		"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"mcp_call\",\"error\":{\"content\":{\"text\":\"t\"}}}}\n\n",
		"data: {\"type\":\"response.output_item.done\",\"item\":{\"type\":\"mcp_call\",\"error\":{\"content\":[1,2]}}}\n\n",
		"data: {\"type\":\"response.completed\",\"response\":null}\n\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		completed := false
		yield := func(ev Event, _ error) bool {
			if completed {
				t.Fatalf("event after EventCompleted: %+v", ev)
			}
			completed = ev.Kind == EventCompleted
			return true
		}
		err := readEvents(bytes.NewReader(data), "req", nil, yield)
		if err != nil {
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("error %v (%T) is not a coded *Error", err, err)
			}
		}
		if (err == nil) != completed {
			t.Fatalf("err = %v after completed = %v", err, completed)
		}
	})
}
