-- See ../postgres/0011_watched_messages.sql: SQLite has one process and no notifications.
-- Kept so both dialects list the same versions.
SELECT 1;
