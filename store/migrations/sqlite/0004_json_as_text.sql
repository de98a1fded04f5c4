-- See ../postgres/0004_json_as_text.sql: SQLite already stores JSON as TEXT. Kept so both
-- dialects list the same versions.
SELECT 1;
