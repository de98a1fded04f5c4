// Package prompt is step 2 of a turn (docs/turn.md): the whole plan of what the model
// is asked. A [Planner] takes the begun turn and decides, once per turn: the phase's
// handler and stage, every phase's artifact block (gaps filled with the handlers' initial
// values), the strategy in play (hydrated from the artifacts, the session, a UUID in the
// user's text or the session's latest strategy, and only ever the user's own), the recent
// history, the handler's prompt pieces (or its nudge past the phase's turn limit), the MCP
// tools the stage allows with a short-lived x-mcp-context token per server, and the
// carryover block put before the user's text. [Plan.Request] then builds the upstream
// request of one attempt, with the correction note on a retry.
//
// Every text the model sees comes from the skills, read through [Texts] (an admin's active
// stored version overrides the embedded file), in the session's locale; this package only
// decides what goes where and fills their placeholders.
package prompt
