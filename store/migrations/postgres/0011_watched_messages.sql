-- A message's commits notify other replicas (pg_notify on phaseflow_events) only once one of
-- them follows it: a replica that reads a running message from the database sets watched
-- first (Store.Watch), then reads. A NOTIFY costs every commit that sends it the notify
-- queue's lock and a signal to every listening backend, this replica's own listener
-- included, which then wakes to read a notification nobody here needs: about a quarter of a
-- millisecond of a paced delta's commit on a 2-core machine. Adding a column with a constant
-- default rewrites nothing. Replicas of the build before never set it and still notify every
-- commit, so during a rolling deploy their followers of a newer replica's message fall back
-- to the event log's poll (250 ms) until they are replaced.
ALTER TABLE messages ADD COLUMN watched boolean NOT NULL DEFAULT false;
