-- message_events no longer has a foreign key to messages. Events are written only by the
-- event log's commit, which inserts the events of a message in the same statement that
-- updates (and fences) that message's row, so the key's check could never fail; it still
-- cost a locked lookup of the message per event row (measured with pgbench: 12-18 µs a row,
-- about a millisecond of database CPU for a 66-event turn). Nothing in Phaseflow deletes
-- messages; an operator who deletes them by hand deletes their events with
--   DELETE FROM message_events WHERE message_id NOT IN (SELECT id FROM messages);
ALTER TABLE message_events DROP CONSTRAINT IF EXISTS message_events_message_id_fkey;
