package scripted

import (
	"encoding/json"
	"strings"
)

// The delimiters of the session-state block the server's prompt builder puts in a
// request's instructions:
//
//	[SESSION STATE]
//	phase: strategy
//	stage: draft
//	locale: en
//	artifacts: {"strategy_status":"draft", …}
//	[/SESSION STATE]
const (
	stateOpen  = "[SESSION STATE]"
	stateClose = "[/SESSION STATE]"
)

// sessionState is what the scripted upstream reads from a [SESSION STATE] block.
type sessionState struct {
	phase, stage, locale string
	// artifacts is the current phase's artifact object; nil when absent or not JSON.
	artifacts map[string]any
}

// parseSessionState reads the last [SESSION STATE] block of instructions. ok is false when
// there is none. A block without its closing line runs to the end of the instructions;
// unknown keys and a malformed artifacts line are ignored.
func parseSessionState(instructions string) (st sessionState, ok bool) {
	i := strings.LastIndex(instructions, stateOpen)
	if i < 0 {
		return sessionState{}, false
	}
	body := instructions[i+len(stateOpen):]
	if j := strings.Index(body, stateClose); j >= 0 {
		body = body[:j]
	}
	for line := range strings.Lines(body) {
		key, value, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		value = strings.TrimSpace(value)
		switch strings.ToLower(strings.TrimSpace(key)) {
		case "phase":
			st.phase = value
		case "stage":
			st.stage = value
		case "locale":
			st.locale = value
		case "artifacts":
			_ = json.Unmarshal([]byte(value), &st.artifacts) // a bad line leaves nil
		}
	}
	return st, true
}

// stageDefault names the scenario played for one phase and stage.
type stageDefault struct {
	phase, stage, scenario string
}

// stageDefaults lists the default scenario of every phase and stage, each phase's stages in
// order: the first is also played when the block names no stage, or one not listed.
func stageDefaults() []stageDefault {
	return []stageDefault{
		{"strategy", "draft", "strategy_draft"},
		{"strategy", "backtest", "strategy_backtest"},
		{"strategy", "confirm", "strategy_confirm"},
		{"stress_test", "bootstrap", "stress_bootstrap"},
		{"stress_test", "scenario", "stress_scenario"},
		{"stress_test", "feedback", "stress_feedback_pass"},
		{"deployment", "prepare", "deploy_prepare"},
		{"deployment", "rollout", "deploy_rollout"},
		{"deployment", "monitor", "deploy_monitor_completed"},
	}
}

// defaultFor returns the scenario to play in phase and stage: the stage's default, else the
// phase's first stage's, else the default reply (an unknown phase, or a finished session).
func defaultFor(phase, stage string) string {
	first := ""
	for _, d := range stageDefaults() {
		if d.phase != phase {
			continue
		}
		if d.stage == stage {
			return d.scenario
		}
		if first == "" {
			first = d.scenario
		}
	}
	if first == "" {
		return defaultScenario
	}
	return first
}

// chooseScenario picks the scenario of a request: an explicit [[scenario:NAME]] naming a
// known scenario wins; otherwise the default of the session state's phase and stage;
// without a state block, the default reply. The name returned is always in the table.
func chooseScenario(marker string, st sessionState, hasState bool) string {
	names := []string{marker}
	if hasState {
		names = append(names, defaultFor(st.phase, st.stage))
	}
	for _, name := range names {
		if _, ok := lookupScenario(name); ok {
			return name
		}
	}
	return defaultScenario
}

// artifactPlaceholders are the placeholders filled from the session's artifacts, each with
// the prefix of the fresh id used when the artifacts lack it.
func artifactPlaceholders() []struct{ name, prefix string } {
	return []struct{ name, prefix string }{
		{"scenario_set_id", "scn-"},
		{"stress_report_id", "rep-"},
		{"deployment_id", "dep-"},
	}
}

// maxArtifactID bounds an artifact id copied into a reply.
const maxArtifactID = 64

// newVars returns the replacer of one reply's placeholders:
//
//	{uuid}              a fresh UUID (a new strategy's id)
//	{id}                a fresh 12-hex-digit id, for new scenario sets, reports, deployments
//	{scenario_set_id}   the artifact of that name, or "scn-{id}" without one
//	{stress_report_id}  the artifact, or "rep-{id}"
//	{deployment_id}     the artifact, or "dep-{id}"
//
// Each placeholder has one value throughout the reply, so a tool's output, the text and the
// patch agree. Artifact values are used only when they are plain ids (letters, digits,
// "_", "-", "."), so nothing from the request can break the JSON or the markup.
func newVars(artifacts map[string]any) *strings.Replacer {
	return varsWith(artifacts, nil)
}

// varsWith is [newVars] with some values already known: known maps a placeholder's name
// (uuid, id, or an artifact's) to the value an earlier tool result gave it, so a reply
// written after the results agrees with them. Only plain ids are taken.
func varsWith(artifacts map[string]any, known map[string]string) *strings.Replacer {
	id, uid := newID()[:12], newUUID()
	if v := known["id"]; isPlainID(v) {
		id = v
	}
	if v := known["uuid"]; isPlainID(v) {
		uid = v
	}
	pairs := []string{"{uuid}", uid, "{id}", id}
	for _, p := range artifactPlaceholders() {
		v, _ := artifacts[p.name].(string)
		if k := known[p.name]; isPlainID(k) {
			v = k
		}
		if !isPlainID(v) {
			v = p.prefix + id
		}
		pairs = append(pairs, "{"+p.name+"}", v)
	}
	return strings.NewReplacer(pairs...)
}

// isPlainID reports whether s is a non-empty id of letters, digits, "_", "-" and ".".
func isPlainID(s string) bool {
	if s == "" || len(s) > maxArtifactID {
		return false
	}
	for _, c := range []byte(s) {
		if !isLetterOrDigit(c) && c != '_' && c != '-' && c != '.' {
			return false
		}
	}
	return true
}

// isLetterOrDigit reports whether c is an ASCII letter or digit.
func isLetterOrDigit(c byte) bool {
	return ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9')
}
