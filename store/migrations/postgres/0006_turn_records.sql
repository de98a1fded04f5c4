-- What a turn records besides its message's result columns, written with its terminal
-- event in the same transaction (orchestrator.md §2 step 5). Keep in step with
-- ../sqlite/0006_turn_records.sql.

-- Every MCP call of a turn is kept, whatever became of the turn: the attempt that made it
-- (a refused attempt's calls really ran too) and the turn's outcome (its message's final
-- status). Older rows belong to completed turns' kept attempts.
ALTER TABLE mcp_calls ADD COLUMN attempt integer NOT NULL DEFAULT 1;
ALTER TABLE mcp_calls ADD COLUMN outcome text NOT NULL DEFAULT '';
UPDATE mcp_calls SET outcome = m.status FROM messages m WHERE m.id = mcp_calls.message_id;

-- The redacted trace of every request sent upstream for a message, per attempt (seq counts
-- the requests of one attempt: failover endpoints, chat tool rounds). It goes with its
-- message.
CREATE TABLE message_traces (
    message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    attempt    integer NOT NULL CHECK (attempt > 0),
    seq        integer NOT NULL CHECK (seq > 0),
    method     text NOT NULL,
    url        text NOT NULL,
    headers    text NOT NULL,
    body       text NOT NULL,
    truncated  boolean NOT NULL DEFAULT false,
    sent_at    timestamptz NOT NULL,
    PRIMARY KEY (message_id, attempt, seq)
);
