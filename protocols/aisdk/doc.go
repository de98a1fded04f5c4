// Package aisdk serves the AI SDK's UI message stream (useChat with DefaultChatTransport)
// from Phaseflow's event log: a translation of one message's events into the stream's
// chunks, the conversation as the SDK's UIMessage list, and the chat request's body.
//
// The mapping, in the order a turn produces it:
//
//   - start, with the assistant message's id, first;
//   - status events: a data-status part, id "status", replaced by each new status;
//   - the reply's text, read as a person reads it (turnlog): what precedes <final> as a
//     reasoning part, the content of <final> as a text part. An attempt's parts stay open
//     until the attempt is kept or refused; a refused attempt's parts end with
//     providerMetadata {"phaseflow": {"discarded": true, "attempt": N}}, and the next
//     attempt writes new parts (the protocol cannot take text back);
//   - completed: the open parts end; each GenUI card is a data-genui part (id genui-N),
//     the applied state patch a data-state part (id "state"), each MCP call a dynamic tool
//     part named server_label.name; then finish, with the turn's metadata as the
//     message's metadata;
//   - error: the MCP calls made, the short reply the server wrote instead as a text part
//     marked {"phaseflow": {"fallback": true}}, then error with the message (abort for a
//     cancelled turn);
//   - [DONE] after the terminal event; heartbeats are SSE comments.
//
// Each logged event's last chunk carries the event's id, so a client that sends
// Last-Event-ID resumes where it was; the AI SDK itself resumes from the start.
package aisdk
