-- See ../postgres/0010_event_runs.sql: the event log as runs, a row per message and
-- commit (the events stored so far in runs of up to 64), and a view message_events of one
-- row per event. SQLite has no function to split
-- a text, so the view splits each run by recursion; the server never reads it. Times
-- stored before keep the driver's format (store/eventruns.go reads both).
CREATE TABLE message_event_runs (
    message_id TEXT NOT NULL,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    names      TEXT NOT NULL,
    data       TEXT NOT NULL,
    times      TEXT NOT NULL,
    PRIMARY KEY (message_id, seq)
);

INSERT INTO message_event_runs (message_id, seq, names, data, times)
    SELECT message_id, min(seq), group_concat(name, char(31) ORDER BY seq),
        group_concat(COALESCE(data, ''), char(31) ORDER BY seq),
        group_concat(created_at, char(31) ORDER BY seq)
    FROM (SELECT *, seq - row_number() OVER (PARTITION BY message_id ORDER BY seq) AS island
        FROM message_events) e
    GROUP BY message_id, island, (seq - 1) / 64;

DROP TABLE message_events;

CREATE VIEW message_events AS
    WITH RECURSIVE e (message_id, seq, name, data, created_at, names, datas, times) AS (
        SELECT message_id, seq - 1, NULL, NULL, NULL,
            names || char(31), data || char(31), times || char(31)
        FROM message_event_runs
        UNION ALL
        SELECT message_id, seq + 1,
            substr(names, 1, instr(names, char(31)) - 1),
            NULLIF(substr(datas, 1, instr(datas, char(31)) - 1), ''),
            substr(times, 1, instr(times, char(31)) - 1),
            substr(names, instr(names, char(31)) + 1),
            substr(datas, instr(datas, char(31)) + 1),
            substr(times, instr(times, char(31)) + 1)
        FROM e WHERE names <> ''
    )
    SELECT message_id, seq, name, data, created_at FROM e WHERE name IS NOT NULL;
