-- JSON columns hold the exact text the server wrote (text, not jsonb): no query looks
-- inside them, so jsonb's parsing on every write (a turn's metadata is kilobytes) was
-- PostgreSQL CPU spent for nothing, and readers get back the bytes that were written. The
-- server checks every value is valid JSON before writing (store.JSON).
ALTER TABLE sessions ALTER COLUMN artifacts DROP DEFAULT;
ALTER TABLE sessions ALTER COLUMN artifacts TYPE text USING artifacts::text;
ALTER TABLE sessions ALTER COLUMN artifacts SET DEFAULT '{}';
ALTER TABLE sessions ALTER COLUMN metadata DROP DEFAULT;
ALTER TABLE sessions ALTER COLUMN metadata TYPE text USING metadata::text;
ALTER TABLE sessions ALTER COLUMN metadata SET DEFAULT '{}';
ALTER TABLE messages
    ALTER COLUMN tool_calls TYPE text USING tool_calls::text,
    ALTER COLUMN genui TYPE text USING genui::text,
    ALTER COLUMN state_patch TYPE text USING state_patch::text,
    ALTER COLUMN validation TYPE text USING validation::text,
    ALTER COLUMN usage TYPE text USING usage::text,
    ALTER COLUMN error TYPE text USING error::text,
    ALTER COLUMN metadata TYPE text USING metadata::text;
ALTER TABLE mcp_calls ALTER COLUMN arguments TYPE text USING arguments::text;
ALTER TABLE phase_transitions ALTER COLUMN metadata TYPE text USING metadata::text;
ALTER TABLE strategies ALTER COLUMN spec DROP DEFAULT;
ALTER TABLE strategies ALTER COLUMN spec TYPE text USING spec::text;
ALTER TABLE strategies ALTER COLUMN spec SET DEFAULT '{}';
