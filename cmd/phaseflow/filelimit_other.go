//go:build !unix

package main

// raiseFileLimit has no file limit to raise here: 0 leaves connections uncapped unless
// PHASEFLOW_MAX_CONNECTIONS says otherwise.
func raiseFileLimit() uint64 { return 0 }
