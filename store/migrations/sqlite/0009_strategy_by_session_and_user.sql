-- See ../postgres/0009_strategy_by_session_and_user.sql: one index on both columns of the
-- condition a turn reads a session's strategy by.
DROP INDEX IF EXISTS strategies_session_idx;
CREATE INDEX strategies_session_user_idx ON strategies (session_id, user_id, created_at, id);
