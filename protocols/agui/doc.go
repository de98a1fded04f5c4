// Package agui serves AG-UI (its HTTP and server-sent events binding, protocol 1.x) from
// Phaseflow's event log: a run is a turn, a thread a conversation. It translates one
// message's events into AG-UI events and reads the RunAgentInput a client posts.
//
// The mapping, in the order a run produces it:
//
//   - RUN_STARTED; for a client that joins a run under way, MESSAGES_SNAPSHOT with the
//     messages it posted; STATE_SNAPSHOT with the conversation's state, {phase, artifacts};
//   - status events: CUSTOM "phaseflow.status" with the status; a phase move is a
//     STATE_DELTA replacing /phase;
//   - the reply's text, read as a person reads it (turnlog): what precedes <final> as a
//     reasoning message (REASONING_START, REASONING_MESSAGE_*, REASONING_END), the content
//     of <final> as the assistant's text message, whose id is the Phaseflow message's;
//   - a refused attempt: its messages end, and MESSAGES_SNAPSHOT takes them back (the
//     posted messages and the next attempt's reasoning message, empty), so the client's
//     messages end with the kept attempt only;
//   - completed: STATE_DELTA, the RFC 6902 operations of the applied state patch (a JSON
//     merge patch on the phase's block, so under /artifacts/PHASE; what tool results fill
//     in afterwards is in the session, GET /sessions/{id}); each GenUI card as
//     ACTIVITY_SNAPSHOT of activity type "phaseflow.genui" whose content is the card; each
//     MCP call as TOOL_CALL_START, _ARGS, _END and _RESULT on the text message;
//     RUN_FINISHED with the turn's metadata as result;
//   - error: the MCP calls made, the short reply the server wrote instead as a text
//     message, then RUN_ERROR with the code and message; a cancelled turn is RUN_FINISHED
//     with the outcome cancelled;
//   - heartbeats are SSE comments.
package agui
