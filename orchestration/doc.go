// Package orchestration is the ChatOrchestrator (docs/turn.md). It owns the goroutine
// of every running turn and runs the turn's outline, each step a function of its own
// package that takes values and returns values:
//
//  1. begin — session: the session read and checked (the caller's, no generation running,
//     no repeated client_request_id) and the turn's rows prepared, then committed only if
//     the session is still as read ([Orchestrator.HandleMessage]);
//  2. plan — prompt: the phase's handler and stage, the strategy in play, history, the
//     handler's pieces or nudge, MCP tools with x-mcp-context, the carryover block, the
//     merged runtime policy;
//  3. attempts — stream: the upstream stream through the ThinkingML filter to the client,
//     tool calls, the idle limit, and the correction retry by the reply policy;
//  4. settle — postprocess: GenUI and patch extraction, the handler's verdict, metadata;
//  5. finish — finish: the final message row and records, the settlement, a phase move
//     with its carryover block (carryover), and the terminal event, as one value the root
//     hands to the event log (conclude.go).
//
// Steps 2 and 3 start on step 1's read, while its write commits: the begin overlaps the
// prompt build and the upstream's time to first token. The turn's events wait inside the
// event log until the begin has committed (eventlog.Opening.Unwritten), so an event
// reaches a client only after it is committed and after the turn's first, status queued;
// a begin that did not commit (the session changed, the database failed) drops them
// unseen. Measured with loadbench, starting only after the commit more than doubled
// PostgreSQL's added time to first delta.
//
// The phases themselves are known only to packages handlers and phases; this package
// names none. Every event goes through the event log (eventlog), every running
// generation's lease through package lease, and the concurrency limits through admission.
package orchestration
