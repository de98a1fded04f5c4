-- See ../postgres/0003_event_data_text.sql: SQLite already stores event payloads as TEXT,
-- byte for byte. Kept so both dialects list the same versions.
SELECT 1;
