// Package eventlog is the durable, gap-free event log of every assistant message and the only
// path from a producing turn to its clients (docs/api.md, docs/turn.md).
//
// # One invariant
//
// A client only ever sees what the log keeps. A producer appends through its message's
// [Writer]: the event gets the next position (1, 2, 3 …) at once, but nobody can read it
// yet. One committer goroutine per process takes whatever events are waiting, of every
// message, writes them in one transaction (group commit: the batch is whatever piled up
// while the previous commit ran, so a lone event waits for no timer), and only then
// publishes them: followers in this process see them in memory, followers on other
// replicas are woken by PostgreSQL NOTIFY (which their cursor asks for: store.Watch) and
// read them from the database. So each id has one content forever, and a crash can lose
// only events no client has seen.
//
// A turn starts producing before its first event is committed: its begin writes the
// message row and that event while the turn already plans and calls the upstream
// ([Opening.Unwritten]). Its events are held in the log until the begin's outcome is known
// ([Writer.Begun]), so commit before deliver holds without the turn knowing.
//
// A producer never needs to know when the log commits, but the log helps the one delta a
// client waits on: an attempt's first, and one that comes after a pause (a reply paced by
// the model). The writer commits it at once and holds the producer, briefly, until it is
// committed: a producer parsing a reply whose bytes are already buffered never blocks on
// its own, and on a busy or single-thread scheduler nothing else would run until the whole
// reply was parsed (not the committer, not the database's answer, not the client's
// stream), so the first delta reached clients with the last. The wait is bounded so that a
// slow database does not stall the upstream read for longer than a client would notice.
// Measured with loadbench, removing it more than doubled PostgreSQL's added time to first
// delta.
//
// Every write is fenced by ownership (store.CommitEvents): a message taken over by another
// replica is reported lost, its pending events are dropped, and its producer is told
// through the callback given to [Log.Open]; the new owner ends it with its own terminal
// event. A message's terminal event commits together with the message row's final status
// and outcome (and a completed turn's settlement: the session and strategy it leaves), so
// the row is finished exactly when its log is. A finish the store refuses (a settlement
// naming another user's strategy) is dropped before anyone saw it, the events before it
// are committed as usual, and its producer learns it from [Writer.Wait] and ends the
// message with another terminal event in its place.
//
// # Outages
//
// While the database is unreachable the committer retries with backoff, keeping every
// message's events in memory, bounded per message (a producer over
// the bound waits, a terminal event is always accepted). [Log.FailingSince] tells the
// orchestrator how long the outage has lasted, so it can stop turns past their grace.
// Followers keep their connections (the API sends heartbeats) and catch up when the
// commits resume.
//
// # Followers
//
// A [Cursor] reads a message from a position on: from memory while the message is produced
// in this process (a window of the shared slice, never a copy, so a slow client costs only
// its own lag and never holds up the producer or anyone else), from the database otherwise
// (another replica's message, one that ended, or one this process lost), and then waits for
// the live tail: on a channel ([Cursor.Next]), or without a goroutine of its own
// ([Cursor.NextFunc]: the committer, a notification or the poll timer calls a wake, once
// per change), which is how a waiting client stream costs no goroutine.
package eventlog
