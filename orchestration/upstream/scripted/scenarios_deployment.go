package scripted

// deploymentScenarios returns the scenarios of the deployment phase.
func deploymentScenarios() map[string]scenario {
	return map[string]scenario{}
}
