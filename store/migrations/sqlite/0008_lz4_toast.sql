-- See ../postgres/0008_lz4_toast.sql: SQLite does not compress values. Kept so both
-- dialects list the same versions.
SELECT 1;
