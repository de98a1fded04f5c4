-- A run's names and times are compressed with lz4 too, as its payloads are since 0010. A
-- run of a whole reply (60-odd events) is over 2 KB even once its payloads are compressed,
-- so PostgreSQL compresses its next largest columns as well, the times (about 1.6 KB for
-- 60 events) and the names, which kept pglz: pglz_compress was 0.9% of the backends' CPU
-- in a loadbench sweep at c=64, several times what lz4 takes for the same bytes. Runs
-- already stored keep their method; both stay readable. On a server without lz4 this
-- changes nothing and the migration still succeeds.
DO $$
BEGIN
    ALTER TABLE message_event_runs ALTER COLUMN names SET COMPRESSION lz4,
        ALTER COLUMN times SET COMPRESSION lz4;
EXCEPTION WHEN OTHERS THEN
    RAISE NOTICE 'message_event_runs.names and times keep the default compression: %', SQLERRM;
END
$$;
