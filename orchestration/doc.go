// Package orchestration is the ChatOrchestrator (orchestrator.md §2). It owns the goroutine
// of every running turn and runs the turn's outline, each step a function of its own
// package that takes values and returns values:
//
//  1. begin — session: resolve or create the session, de-duplicate (per user), refuse a
//     second running generation, persist the turn with the assistant message claimed by
//     this replica's lease and its log started ([Orchestrator.HandleMessage]);
//  2. plan — prompt: the phase's handler and stage, the strategy in play, history, the
//     handler's pieces or nudge, MCP tools with x-mcp-context, the carryover block;
//  3. attempts — stream: the upstream stream through the ThinkingML filter to the client,
//     tool calls, the idle limit, and the correction retry by the reply policy;
//  4. settle — postprocess: GenUI and patch extraction, the handler's verdict, metadata;
//  5. carry over — carryover: the block for the next phase when the verdict moves it;
//
// Steps 2 and 3 start as soon as step 1 has read the session and its checks have passed,
// while step 1 writes and commits: the database's begin overlaps the prompt build and the
// upstream's time to first token, and only the turn's events wait for the commit (an event
// reaches a client only after it is committed, and the turn's first is step 1's queued).
//
// Then one settle transaction and the terminal event (complete), or the error event with
// the partial text and, after a broken stream, the fallback reply (fail). Whatever the
// outcome, the terminal event's commit also writes what the turn recorded: every MCP call
// of every attempt and the redacted trace of every upstream request not written yet
// (store.TurnRecords); a request's trace goes to the log once its reply's first delta is
// out (traces.go), so a generation does not hold its prompt for the rest of the stream.
// The phases themselves are known only to package handlers and phases; this package names
// none. Every event goes through the event log (eventlog), and
// every running generation's lease through package lease.
package orchestration
