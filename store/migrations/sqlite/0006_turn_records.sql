-- See ../postgres/0006_turn_records.sql.
ALTER TABLE mcp_calls ADD COLUMN attempt INTEGER NOT NULL DEFAULT 1;
ALTER TABLE mcp_calls ADD COLUMN outcome TEXT NOT NULL DEFAULT '';
UPDATE mcp_calls SET outcome = COALESCE((SELECT status FROM messages WHERE messages.id = mcp_calls.message_id), '');

CREATE TABLE message_traces (
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    attempt    INTEGER NOT NULL CHECK (attempt > 0),
    seq        INTEGER NOT NULL CHECK (seq > 0),
    method     TEXT NOT NULL,
    url        TEXT NOT NULL,
    headers    TEXT NOT NULL,
    body       TEXT NOT NULL,
    truncated  INTEGER NOT NULL DEFAULT 0 CHECK (truncated IN (0, 1)),
    sent_at    TIMESTAMP NOT NULL,
    PRIMARY KEY (message_id, attempt, seq)
);
