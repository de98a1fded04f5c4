package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const validReply = `<thinking>
<phase id="1">
<title>Plan</title>
Reason.
</phase>
</thinking>
<final>
Answer.
<!-- <serp_queries>
["q1"]
</serp_queries> -->
</final>
`

// invalidReply has two errors: a tag that is not allowed and no serp queries block.
const invalidReply = `<thinking>
<phase id="1">
<title>Plan</title>
Reason.
</phase>
</thinking>
<final>
Answer in <b>bold</b>.
</final>
`

func TestValidateCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	valid, invalid := write("valid.xml", validReply), write("invalid.xml", invalidReply)
	invalidListing := "8:11 tag_not_allowed tag <b> is not allowed; to show it as text write &lt;b&gt;\n" +
		"8:18 tag_not_allowed tag </b> is not allowed; to show it as text write &lt;/b&gt;\n" +
		"9:1 serp_queries_missing <final> does not end with the serp queries block\n"
	noSerp := write("noserp.xml", strings.Replace(validReply, "<!-- <serp_queries>\n[\"q1\"]\n</serp_queries> -->\n", "", 1))

	tests := []struct {
		name     string
		args     []string
		stdin    string
		code     int
		stdout   string // exact, unless json is set
		json     bool   // stdout must be a result object with this validity
		valid    bool
		stderrOK func(string) bool
	}{
		{name: "valid file", args: []string{valid}, code: 0, stdout: ""},
		{name: "invalid file lists one line per error", args: []string{invalid}, code: 1, stdout: invalidListing},
		{name: "json on invalid file", args: []string{"--json", invalid}, code: 1, json: true, valid: false},
		{name: "json flag after the file", args: []string{valid, "--json"}, code: 0, json: true, valid: true},
		{name: "stdin with dash", args: []string{"-"}, stdin: validReply, code: 0},
		{name: "stdin without file", args: nil, stdin: invalidReply, code: 1, stdout: invalidListing,
			stderrOK: func(s string) bool { return s == "" }},
		{name: "serp block not required", args: []string{"--no-serp-required", noSerp}, code: 0},
		{name: "serp block required by default", args: []string{noSerp}, code: 1,
			stdout: "9:1 serp_queries_missing <final> does not end with the serp queries block\n"},
		{name: "warnings go to stderr", args: []string{"-"}, code: 0,
			stdin:    strings.Replace(validReply, "Reason.", "Reason. <!-- note -->", 1),
			stderrOK: func(s string) bool { return strings.HasPrefix(s, "warning: 4:9 comment_outside_serp_block ") }},
		{name: "missing file", args: []string{filepath.Join(dir, "nope.xml")}, code: 2,
			stderrOK: func(s string) bool { return strings.Contains(s, "no such file") }},
		{name: "bad flag", args: []string{"--bogus", valid}, code: 2,
			stderrOK: func(s string) bool { return strings.Contains(s, "usage: phaseflow validate") }},
		{name: "two files", args: []string{valid, invalid}, code: 2,
			stderrOK: func(s string) bool { return strings.Contains(s, "one FILE at most") }},
		{name: "help", args: []string{"-h"}, code: 0, stdout: validateHelp},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			sio := stdio{in: strings.NewReader(tc.stdin), out: &out, err: &errOut, getenv: func(string) string { return "" }}
			code := run(context.Background(), sio, append([]string{"validate"}, tc.args...))
			if code != tc.code {
				t.Errorf("exit %d, want %d; stdout %q; stderr %q", code, tc.code, out.String(), errOut.String())
			}
			if tc.json {
				var res struct {
					Valid  bool              `json:"valid"`
					Errors []json.RawMessage `json:"errors"`
				}
				if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.Valid != tc.valid || res.Errors == nil {
					t.Errorf("stdout is not a result object with valid=%v: %q (%v)", tc.valid, out.String(), err)
				}
				if strings.Contains(out.String(), `\u003c`) {
					t.Errorf("JSON escapes < in messages: %q", out.String())
				}
			} else if out.String() != tc.stdout {
				t.Errorf("stdout %q, want %q", out.String(), tc.stdout)
			}
			if tc.stderrOK != nil && !tc.stderrOK(errOut.String()) {
				t.Errorf("unexpected stderr %q", errOut.String())
			}
		})
	}
}

// validateHelp is what phaseflow validate -h prints on stdout.
const validateHelp = `usage: phaseflow validate [--json] [--no-serp-required] [FILE|-]

flags:
  --json
        print the result object (errors, warnings, summary; see docs/api.md) instead of one line per error
  --no-serp-required
        do not require the serp queries block at the end of <final>
`
