package terminal

import "strings"

// Agent names the coding agent a screen shows, as the terminal_state input names it.
type Agent string

// The agents the rules know.
const (
	ClaudeCode Agent = "claude_code"
	Codex      Agent = "codex"
	Gemini     Agent = "gemini"
	OpenCode   Agent = "opencode"
	Aider      Agent = "aider"
)

// DisplayName is the agent as a person names it, "" for an agent the rules do not know.
func (a Agent) DisplayName() string {
	return map[Agent]string{ClaudeCode: "Claude Code", Codex: "Codex", Gemini: "Gemini CLI", OpenCode: "OpenCode", Aider: "Aider"}[a]
}

// agentSigns are texts only one agent puts on its screen.
func agentSigns() map[Agent][]string {
	return map[Agent][]string{
		ClaudeCode: {"⏺ ", "tell Claude", "Claude Code", "⏵⏵", "auto-compact", "ctrl+c to interrupt", "Bash command", "Claude in Chrome"},
		Codex:      {"tell Codex", "Ask Codex", "• Working (", "• Esc to interrupt)", "• esc to interrupt)", "Question 1/", "submit answer"},
		Gemini:     {"✦ ", "Gemini", "(esc to cancel, ", "Allow execution of", "@path/to/file", "suggest changes (esc)", "Modify with external editor"},
		OpenCode:   {"△ Permission required", "opencode", "Ask anything", "Build  Plan", "Build   Plan", "esc interrupt"},
		Aider:      {"(Y)es/(N)o", "(Y)es/(n)o", "Aider", "aider", "Tokens: "},
	}
}

// detectAgent names the agent whose signs the screen shows most, "" when none or a tie.
func detectAgent(lines []string) Agent {
	text := strings.Join(lines[max(0, len(lines)-200):], "\n")
	best, count, tie := Agent(""), 0, false
	for a, signs := range agentSigns() {
		n := 0
		for _, s := range signs {
			if strings.Contains(text, s) {
				n++
			}
		}
		switch {
		case n > count:
			best, count, tie = a, n, false
		case n == count && n > 0:
			tie = true
		}
	}
	if tie {
		return ""
	}
	return best
}
