package scripted

// stressScenarios returns the scenarios of the stress_test phase.
func stressScenarios() map[string]scenario {
	return map[string]scenario{}
}
