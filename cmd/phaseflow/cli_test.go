package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// TestEveryCommandSpeaksOneCLI: each subcommand's -h exits 0 with its help on stdout,
// listing its flags as --name; an unknown flag exits 2 and names it --nope, as the help
// does. Commands without a server's settings do not list them.
func TestEveryCommandSpeaksOneCLI(t *testing.T) {
	singleDash := regexp.MustCompile(`(^|\s)-[a-z][a-z-]+`)
	for _, tc := range []struct {
		args     []string
		settings bool // lists the server's settings
	}{
		{[]string{"serve"}, true},
		{[]string{"migrate"}, false},
		{[]string{"validate"}, false},
		{[]string{"token"}, false},
		{[]string{"mock-upstream"}, false},
		{[]string{"skill", "run", "post_views"}, true},
		{[]string{"watch"}, true},
		{[]string{"healthcheck"}, false},
		{[]string{"version"}, false},
	} {
		name := strings.Join(tc.args, " ")
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			sio := stdio{in: strings.NewReader(""), out: &out, err: &errOut, getenv: func(string) string { return "" }}
			if code := run(context.Background(), sio, append(append([]string{}, tc.args...), "-h")); code != 0 {
				t.Fatalf("%s -h: exit %d; stderr %q", name, code, errOut.String())
			}
			help := out.String()
			if !strings.HasPrefix(help, "usage: phaseflow "+tc.args[0]) || singleDash.MatchString(help) {
				t.Errorf("%s -h on stdout:\n%s\nwant a usage line and every flag as --name", name, help)
			}
			if lists := strings.Contains(help, "PHASEFLOW_UPSTREAM_URL"); lists != tc.settings {
				t.Errorf("%s -h lists the server's settings: %v, want %v", name, lists, tc.settings)
			}
			out.Reset()
			errOut.Reset()
			if code := run(context.Background(), sio, append(append([]string{}, tc.args...), "--nope")); code != 2 {
				t.Fatalf("%s --nope: exit %d, want 2", name, code)
			}
			if msg := errOut.String(); !strings.Contains(msg, "--nope") || strings.Contains(msg, " -nope") {
				t.Errorf("%s --nope said %q, want the flag named --nope", name, msg)
			}
		})
	}
}
