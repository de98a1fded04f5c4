// Package finish is step 5 of a turn, its tail (docs/turn.md): from what the turn
// did, it builds everything that ends it, as a value the orchestrator hands to the event
// log: the terminal event (completed or error) and its data, the message's final row with
// the turn's records (every MCP call, the unrecorded upstream traces), the settlement (the
// session and strategy after the turn), and a phase move's transition, carryover block and
// phase_changed announcement. Nothing here writes or emits.
//
// [Move] is the one way a phase moves, for turns and for the manual routes alike: the
// carryover block the old phase leaves, the new phase's block as its handler enters it, the
// session's phase and status, and the audit row.
package finish
