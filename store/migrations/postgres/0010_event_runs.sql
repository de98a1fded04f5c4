-- The event log is stored as runs: a row holds the events of one message that one commit
-- wrote, consecutive by seq (seq is the first one's), their names, payloads and times each
-- joined by U+001F (which no JSON text, name or formatted time holds; an empty payload is
-- NULL). A turn's 60-odd events were as many rows, a heap tuple and a primary-key entry
-- each, and most of what a group commit cost the database; now they are a few
-- (store/eventruns.go). The view message_events shows them as before, one row per event,
-- for operators and tools that read the log with SQL, and takes the inserts of a replica of
-- the build before (as runs of one event), so that turns on such replicas go on writing
-- while a rolling deploy replaces them. An operator who deletes messages by hand deletes
-- their events with
--   DELETE FROM message_event_runs WHERE message_id NOT IN (SELECT id FROM messages);
CREATE TABLE message_event_runs (
    message_id text NOT NULL,
    seq        bigint NOT NULL CHECK (seq > 0),
    names      text NOT NULL,
    data       text NOT NULL,
    times      text NOT NULL,
    PRIMARY KEY (message_id, seq)
);

DO $$
BEGIN
    ALTER TABLE message_event_runs ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'message_event_runs.data keeps the default compression: %', SQLERRM;
END
$$;

-- The events stored so far become runs of up to 64 consecutive events of a message.
INSERT INTO message_event_runs (message_id, seq, names, data, times)
    SELECT message_id, min(seq), string_agg(name, E'\x1f' ORDER BY seq),
        string_agg(COALESCE(data, ''), E'\x1f' ORDER BY seq),
        string_agg(to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || 'Z', E'\x1f' ORDER BY seq)
    FROM (SELECT *, seq - row_number() OVER (PARTITION BY message_id ORDER BY seq) AS island
        FROM message_events) e
    GROUP BY message_id, island, (seq - 1) / 64;

DROP TABLE message_events;

CREATE VIEW message_events AS
    SELECT r.message_id, r.seq + e.i - 1 AS seq, e.name, NULLIF(e.data, '') AS data,
        e.created_at::timestamptz AS created_at
    FROM message_event_runs r,
        unnest(string_to_array(r.names, E'\x1f'), string_to_array(r.data, E'\x1f'),
            string_to_array(r.times, E'\x1f')) WITH ORDINALITY AS e(name, data, created_at, i);

CREATE FUNCTION message_events_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO message_event_runs (message_id, seq, names, data, times)
    VALUES (NEW.message_id, NEW.seq, NEW.name, COALESCE(NEW.data, ''),
        to_char(NEW.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS.US') || 'Z');
    RETURN NEW;
END
$$;

CREATE TRIGGER message_events_insert INSTEAD OF INSERT ON message_events
    FOR EACH ROW EXECUTE FUNCTION message_events_insert();
