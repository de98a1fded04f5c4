-- See ../postgres/0005_events_unreferenced.sql: message_events loses its foreign key to
-- messages (the commit that inserts events updates the message row in the same
-- transaction). SQLite cannot drop a constraint, so the table is rebuilt.
CREATE TABLE message_events_new (
    message_id TEXT NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    name       TEXT NOT NULL,
    data       TEXT,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (message_id, seq)
);
INSERT INTO message_events_new (message_id, seq, name, data, created_at)
    SELECT message_id, seq, name, data, created_at FROM message_events;
DROP TABLE message_events;
ALTER TABLE message_events_new RENAME TO message_events;
