-- A turn's begin asks whether its session has a strategy of the session's user, and the plan
-- reads the latest one (session_id = ? AND user_id = ? ORDER BY created_at DESC, id DESC).
-- Both older indexes matched that condition by one column each, (session_id, created_at)
-- and (user_id, created_at), and a plan made before the table has statistics (a fresh
-- database, or autovacuum off) cannot tell them apart: a connection that took the user's
-- index read every strategy of the user at every turn, and kept that plan for its life
-- (loadbench: 3,500 index entries a scan on one user's table of 7,000). An index on both
-- columns of the condition, in the order the latest is read, is cheaper by any estimate.
-- Deleting a session still finds its strategies by the leading column.
DROP INDEX IF EXISTS strategies_session_idx;
CREATE INDEX strategies_session_user_idx ON strategies (session_id, user_id, created_at, id);
