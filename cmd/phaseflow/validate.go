package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/phaseflow/phaseflow/config"
	"github.com/phaseflow/phaseflow/orchestration/thinkingml"
)

// Exit statuses of "phaseflow validate", for scripts (docs/thinkingml.md).
const (
	validateOK      = 0
	validateInvalid = 1
	validateUsage   = 2
)

// runValidate checks a ThinkingML reply from a file or stdin: exit 0 valid, 1 invalid, 2
// usage or read error. Without --json, stdout carries exactly one "LINE:COL CODE MESSAGE"
// line per error, so scripts can count and grep them; warnings go to stderr.
func runValidate(ctx context.Context, sio stdio, args []string) int {
	_ = ctx // reading one file needs no cancellation
	fs := flag.NewFlagSet("phaseflow validate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	asJSON := fs.Bool("json", false, "print the result object (errors, warnings, summary; see docs/api.md) instead of one line per error")
	noSerp := fs.Bool("no-serp-required", false, "do not require the serp queries block at the end of <final>")
	fs.Usage = func() {
		fmt.Fprint(sio.err, config.FlagUsage("usage: phaseflow validate [--json] [--no-serp-required] [FILE|-]", fs))
	}
	files, err := parseInterspersed(fs, args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fmt.Fprint(sio.out, config.FlagUsage("usage: phaseflow validate [--json] [--no-serp-required] [FILE|-]", fs))
		return validateOK
	case err != nil:
		fmt.Fprintf(sio.err, "phaseflow validate: %v\n", config.FlagError(err))
		fs.Usage()
		return validateUsage
	case len(files) > 1:
		fmt.Fprintf(sio.err, "phaseflow validate: one FILE at most, got %d\n", len(files))
		fs.Usage()
		return validateUsage
	}
	name := "-"
	if len(files) == 1 {
		name = files[0]
	}
	reply, err := readReply(sio.in, name)
	if err != nil {
		fmt.Fprintf(sio.err, "phaseflow validate: %v\n", err)
		return validateUsage
	}
	res := thinkingml.Validate(reply, thinkingml.Options{SerpQueriesOptional: *noSerp})
	if err := report(sio, res, *asJSON); err != nil {
		fmt.Fprintf(sio.err, "phaseflow validate: %v\n", err)
		return validateUsage
	}
	if !res.Valid {
		return validateInvalid
	}
	return validateOK
}

// parseInterspersed parses flags that may stand before or after FILE, as users type them
// ("validate reply.xml --json"); everything after "--" is a file name.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var files []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return files, nil
		}
		if len(args) > len(rest) && args[len(args)-len(rest)-1] == "--" {
			return append(files, rest...), nil
		}
		files, args = append(files, rest[0]), rest[1:]
	}
}

// readReply reads the reply from the named file, or from in for "-".
func readReply(in io.Reader, name string) (string, error) {
	var b []byte
	var err error
	if name == "-" {
		b, err = io.ReadAll(in)
	} else {
		b, err = os.ReadFile(name)
	}
	if err != nil {
		return "", fmt.Errorf("read reply: %w", err)
	}
	return string(b), nil
}

// report writes the result: the JSON object, or one line per error on stdout and one per
// warning on stderr.
func report(sio stdio, res thinkingml.Result, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(sio.out)
		enc.SetEscapeHTML(false) // keep "<final>" readable in messages
		if err := enc.Encode(res); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
		return nil
	}
	for _, e := range res.Errors {
		if _, err := fmt.Fprintf(sio.out, "%d:%d %s %s\n", e.Line, e.Column, e.Code, e.Message); err != nil {
			return fmt.Errorf("write result: %w", err)
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(sio.err, "warning: %d:%d %s %s\n", w.Line, w.Column, w.Code, w.Message)
	}
	return nil
}
