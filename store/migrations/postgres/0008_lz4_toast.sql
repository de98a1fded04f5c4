-- The large text columns are compressed with lz4 instead of pglz where the server has it
-- (PostgreSQL 14 and later, built with lz4, as the Debian and Docker packages are). A row
-- over 2 KB is compressed on every write of it: a turn's trace body (the whole request,
-- about 6 KB) and its finished message row (content and metadata), and pglz_compress was
-- 3% of the database's CPU in a loadbench profile; lz4 compresses several times faster.
-- Values already stored keep their method, and both stay readable. On a server without
-- lz4 (or before 14) this changes nothing and the migration still succeeds.
DO $$
BEGIN
    ALTER TABLE message_traces ALTER COLUMN body SET COMPRESSION lz4,
        ALTER COLUMN headers SET COMPRESSION lz4;
    ALTER TABLE messages ALTER COLUMN content SET COMPRESSION lz4,
        ALTER COLUMN metadata SET COMPRESSION lz4,
        ALTER COLUMN genui SET COMPRESSION lz4,
        ALTER COLUMN tool_calls SET COMPRESSION lz4,
        ALTER COLUMN state_patch SET COMPRESSION lz4,
        ALTER COLUMN validation SET COMPRESSION lz4;
    ALTER TABLE sessions ALTER COLUMN artifacts SET COMPRESSION lz4,
        ALTER COLUMN metadata SET COMPRESSION lz4;
    ALTER TABLE mcp_calls ALTER COLUMN arguments SET COMPRESSION lz4,
        ALTER COLUMN output SET COMPRESSION lz4;
    ALTER TABLE strategies ALTER COLUMN spec SET COMPRESSION lz4;
    ALTER TABLE message_events ALTER COLUMN data SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'large columns keep the default compression: %', SQLERRM;
END
$$;
