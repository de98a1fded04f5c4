// Package eventlog is the durable, gap-free event log of every assistant message and the only
// path from a producing turn to its clients (sse-contract.md §4, orchestrator.md §5).
//
// A producer appends through a [Writer]: each event gets the next position (1, 2, 3 …), is
// kept in memory for the clients of this process, and is queued for a single batching writer
// that inserts many events per database round trip. Clients read through a [Cursor]: from
// memory while the message is live in this process, from the database otherwise (another
// replica's message, or one that ended), and then follow the live tail.
//
// Backpressure rules: subscribers never hold up the producer, because they pull from the
// shared in-memory slice at their own pace instead of being pushed to through per-client
// queues; a slow client costs nothing but its own lag. The writer queue is bounded; when the
// database falls that far behind, the producer waits for it (durable events are never
// dropped).
package eventlog
