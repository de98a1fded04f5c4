package terminal

import (
	"regexp"
	"strings"
)

// subject finds what a dialog asks approval for, in its lines above the options: the
// command of Claude Code's "Bash command" box, the file its question names, the commands
// in Gemini CLI's box, the file of its edit title, a "$ command" line (Codex, OpenCode),
// Codex's permission rule, an MCP tool, an address, a path. "" when none.
func subject(block []string, question string) string {
	for _, find := range []func([]string, string) string{
		bashCommand, questionFile, geminiCommands, geminiEdit, dollarLine, labelled("Permission rule: "),
		labelled("Tool: "), urlLine, pathLine,
	} {
		if s := find(block, question); s != "" {
			return s
		}
	}
	return ""
}

// bashCommand reads Claude Code's box: "Bash command", the command (maybe wrapped, maybe
// after "# comment" lines), then a one-line description.
func bashCommand(block []string, _ string) string {
	at := -1
	for i, s := range block {
		if s == "Bash command" {
			at = i
		}
	}
	if at < 0 {
		return ""
	}
	var lines []string
	for _, s := range block[at+1:] {
		switch {
		case s == "" && len(lines) > 0, s == boxEdge:
			return commandOf(lines)
		case s == "", strings.HasPrefix(s, "#"):
		default:
			lines = append(lines, s)
		}
	}
	return commandOf(lines)
}

// commandOf joins a command's wrapped lines, leaving out the description under them.
func commandOf(lines []string) string {
	if len(lines) > 1 {
		lines = lines[:len(lines)-1]
	}
	return strings.Join(lines, " ")
}

var fileInQuestion = regexp.MustCompile(`(?:make this edit to|create|write to|overwrite|delete) (\S+?)\?$`)

// questionFile is the file a question names: "Do you want to make this edit to a.ts?".
func questionFile(_ []string, question string) string {
	if m := fileInQuestion.FindStringSubmatch(question); m != nil {
		return m[1]
	}
	return ""
}

// geminiCommands reads the commands in the box above Gemini CLI's "Allow execution of
// [Shell]?", one a line, as "a; b; c".
func geminiCommands(block []string, question string) string {
	if !strings.HasPrefix(question, "Allow execution of [") {
		return ""
	}
	var box []string
	in := false
	for _, s := range block {
		switch {
		case s == boxEdge && in:
			return strings.Join(box, "; ")
		case s == boxEdge:
			in, box = true, nil
		case in && s != "" && !strings.Contains(s, "hidden (Ctrl+O"):
			box = append(box, s)
		}
	}
	return ""
}

// geminiEdit reads the file of Gemini CLI's edit title: "? Edit path/to/file: old => new".
func geminiEdit(block []string, _ string) string {
	for _, s := range block {
		if rest, ok := strings.CutPrefix(s, "? Edit "); ok {
			path, _, _ := strings.Cut(rest, ":")
			return strings.TrimSpace(path)
		}
	}
	return ""
}

// dollarLine is the last "$ command" line.
func dollarLine(block []string, _ string) string {
	for i := len(block) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(block[i], "$ "); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// labelled returns a finder of the text after label on a line of its own.
func labelled(label string) func([]string, string) string {
	return func(block []string, _ string) string {
		for i := len(block) - 1; i >= 0; i-- {
			if rest, ok := strings.CutPrefix(block[i], label); ok {
				return strings.TrimSpace(rest)
			}
		}
		return ""
	}
}

// urlLine is the last line that is only an address (or a list item of one).
func urlLine(block []string, _ string) string {
	for i := len(block) - 1; i >= 0; i-- {
		s := strings.TrimSpace(strings.TrimPrefix(block[i], "- "))
		if (strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://")) && !strings.Contains(s, " ") {
			return s
		}
	}
	return ""
}

// pathLine is the path a line starts with ("/tmp/outside is outside the …").
func pathLine(block []string, _ string) string {
	for _, s := range block {
		if strings.HasPrefix(s, "/") || strings.HasPrefix(s, "~/") {
			path, _, _ := strings.Cut(s, " ")
			return path
		}
	}
	return ""
}
