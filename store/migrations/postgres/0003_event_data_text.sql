-- The event log's payloads are stored as the exact text the server encoded (text, not
-- jsonb): an event id must have one content forever, byte for byte, whether a client gets
-- it live or replays it from the database, and no query looks inside a payload, so jsonb's
-- parsing and re-spacing bought nothing. SQLite already stores TEXT; its 0003 is a no-op.
ALTER TABLE message_events ALTER COLUMN data TYPE text USING data::text;
