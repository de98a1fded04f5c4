-- Owned generations (orchestrator.md §5); see ../postgres/0002_leases.sql. SQLite serves one
-- process, so leases matter here only for start-up recovery, but the columns and rules are
-- the same so the store has one behaviour.
ALTER TABLE messages ADD COLUMN owner TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN lease_until TIMESTAMP;
ALTER TABLE messages ADD COLUMN cancel_requested INTEGER NOT NULL DEFAULT 0;
CREATE INDEX messages_running_lease_idx ON messages (lease_until)
    WHERE role = 'assistant' AND status IN ('pending', 'streaming');
CREATE INDEX messages_running_owner_idx ON messages (owner)
    WHERE role = 'assistant' AND status IN ('pending', 'streaming');
