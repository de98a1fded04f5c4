-- See ../postgres/0013_skills.sql.
CREATE TABLE skill_runs (
    id          TEXT PRIMARY KEY,
    user_id     TEXT NOT NULL,
    skill       TEXT NOT NULL,
    version     TEXT NOT NULL,
    status      TEXT NOT NULL CHECK (status IN ('succeeded', 'failed')),
    locale      TEXT NOT NULL DEFAULT '',
    source_id   TEXT NOT NULL DEFAULT '',
    input       TEXT NOT NULL,
    output      TEXT,
    error       TEXT,
    meta        TEXT NOT NULL,
    -- fingerprint is a question's, set on a has_question run with a source_id: the next
    -- run with the same fingerprint from that source is a duplicate.
    fingerprint TEXT NOT NULL DEFAULT '',
    duplicate   INTEGER NOT NULL DEFAULT 0,
    job_id      TEXT,
    created_at  TIMESTAMP NOT NULL
);
CREATE INDEX skill_runs_user_created_idx ON skill_runs (user_id, created_at DESC, id DESC);
CREATE INDEX skill_runs_questions_idx ON skill_runs (user_id, skill, source_id, created_at DESC)
    WHERE fingerprint <> '';

-- A job is claimed by the replica that runs it, with a lease as a turn's (owner,
-- lease_until in the database's clock); another replica takes it over once the lease has
-- expired.
CREATE TABLE skill_jobs (
    id               TEXT PRIMARY KEY,
    user_id          TEXT NOT NULL,
    skill            TEXT NOT NULL,
    locale           TEXT NOT NULL DEFAULT '',
    status           TEXT NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'cancelled')),
    total            INTEGER NOT NULL CHECK (total > 0),
    done             INTEGER NOT NULL DEFAULT 0,
    succeeded        INTEGER NOT NULL DEFAULT 0,
    failed           INTEGER NOT NULL DEFAULT 0,
    cancel_requested INTEGER NOT NULL DEFAULT 0,
    owner            TEXT NOT NULL DEFAULT '',
    lease_until      TIMESTAMP,
    created_at       TIMESTAMP NOT NULL,
    updated_at       TIMESTAMP NOT NULL
);
CREATE INDEX skill_jobs_open_idx ON skill_jobs (created_at) WHERE status IN ('queued', 'running');

-- One input of a job. run_id is set once, when the input's run is stored, in the same
-- transaction that counts it done: an input finishes at most once, whoever ran it. seq is
-- the order it finished in, the id of its progress event; the counts after it are what
-- that event says.
CREATE TABLE skill_job_items (
    job_id          TEXT NOT NULL REFERENCES skill_jobs (id) ON DELETE CASCADE,
    idx             INTEGER NOT NULL,
    input           TEXT NOT NULL,
    run_id          TEXT,
    seq             INTEGER,
    succeeded_after INTEGER,
    failed_after    INTEGER,
    PRIMARY KEY (job_id, idx)
);
CREATE UNIQUE INDEX skill_job_items_seq_idx ON skill_job_items (job_id, seq) WHERE seq IS NOT NULL;
