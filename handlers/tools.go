package handlers

import "slices"

// toolServers names the MCP server (by its configured label) that serves each tool the
// phases use; the stage texts and the scripted MCP servers agree on it.
func toolServers() map[string]string {
	return map[string]string{
		toolValidateStrategy: "strategy_engine", toolRunBacktest: "strategy_engine",
		toolRunStress: "risk_lab", toolGetStressReport: "risk_lab",
		toolCheckRiskGuard: "deployer", toolDeploy: "deployer", toolDeploymentStatus: "deployer",
	}
}

// KnownTool reports whether name is one of the tools the phases use: a metric labels
// every other name "other", so a provider inventing names cannot grow its series.
func KnownTool(name string) bool {
	_, ok := toolServers()[name]
	return ok
}

// ToolsOf are the tools of allowed that the server labelled label serves, so no server is
// offered another's tools. A label this table does not know (an operator's own server) is
// offered all of allowed, as its own tools/list decides what it serves.
func ToolsOf(label string, allowed []string) []string {
	servers := toolServers()
	known := false
	for _, l := range servers {
		known = known || l == label
	}
	if !known {
		return slices.Clone(allowed)
	}
	var out []string
	for _, t := range allowed {
		if servers[t] == label {
			out = append(out, t)
		}
	}
	return out
}
