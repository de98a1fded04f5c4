// Package tests holds Phaseflow's end-to-end tests: they build the real binary, start it
// against a real PostgreSQL and the scripted upstream (itself the real binary's
// mock-upstream command, speaking the Responses wire format), and drive it over HTTP the way
// clients do (docs/api.md).
package tests
