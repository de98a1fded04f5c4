-- Owned generations (orchestrator.md §5): each running assistant message names the replica
-- that runs it (owner) and how long that claim lasts without renewal (lease_until, in the
-- database's clock, so replicas never compare their own clocks). Another replica may end a
-- generation only once its lease has expired. cancel_requested carries a cancel received by
-- any replica to the owner. Keep in step with ../sqlite/0002_leases.sql.
ALTER TABLE messages ADD COLUMN owner text NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN lease_until timestamptz;
ALTER TABLE messages ADD COLUMN cancel_requested boolean NOT NULL DEFAULT false;
-- The sweep looks for expired leases, the owner renews its own: both only among running rows.
CREATE INDEX messages_running_lease_idx ON messages (lease_until)
    WHERE role = 'assistant' AND status IN ('pending', 'streaming');
CREATE INDEX messages_running_owner_idx ON messages (owner)
    WHERE role = 'assistant' AND status IN ('pending', 'streaming');
