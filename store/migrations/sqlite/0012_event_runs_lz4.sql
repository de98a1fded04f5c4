-- See ../postgres/0012_event_runs_lz4.sql: SQLite does not compress values. Kept so both
-- dialects list the same versions.
SELECT 1;
