// Package orchestration is the ChatOrchestrator: it runs one chat turn through its steps
// (orchestrator.md §2), each in its own subpackage:
//
//   - session: resolve or create the session and persist the turn's messages (step 1);
//   - prompt: build the upstream request from skills, history and carryover (step 2);
//   - stream: call the upstream and forward filtered deltas (step 3);
//   - postprocess: extract, validate and report on the reply (step 4);
//   - carryover: the memory a session takes from one phase into the next.
//
// This package wires them together, owns the goroutine of every running turn, applies the
// reply policy (one correction retry), and writes the tail: the persisted assistant message
// and the terminal event. The event log (eventlog) is the only path from a turn to clients.
package orchestration
