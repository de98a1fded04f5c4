-- JSON skills (json-skills.md): every run with its input, output, error and meta, and jobs
-- that run many inputs durably. Keep in step with ../sqlite/0013_skills.sql.
CREATE TABLE skill_runs (
    id          text PRIMARY KEY,
    user_id     text NOT NULL,
    skill       text NOT NULL,
    version     text NOT NULL,
    status      text NOT NULL CHECK (status IN ('succeeded', 'failed')),
    locale      text NOT NULL DEFAULT '',
    source_id   text NOT NULL DEFAULT '',
    input       text NOT NULL,
    output      text,
    error       text,
    meta        text NOT NULL,
    -- fingerprint is a question's, set on a has_question run with a source_id: the next
    -- run with the same fingerprint from that source is a duplicate.
    fingerprint text NOT NULL DEFAULT '',
    duplicate   boolean NOT NULL DEFAULT false,
    job_id      text,
    created_at  timestamptz NOT NULL
);
CREATE INDEX skill_runs_user_created_idx ON skill_runs (user_id, created_at DESC, id DESC);
CREATE INDEX skill_runs_questions_idx ON skill_runs (user_id, skill, source_id, created_at DESC)
    WHERE fingerprint <> '';

-- A job is claimed by the replica that runs it, with a lease as a turn's (owner,
-- lease_until in the database's clock); another replica takes it over once the lease has
-- expired.
CREATE TABLE skill_jobs (
    id               text PRIMARY KEY,
    user_id          text NOT NULL,
    skill            text NOT NULL,
    locale           text NOT NULL DEFAULT '',
    status           text NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'cancelled')),
    total            integer NOT NULL CHECK (total > 0),
    done             integer NOT NULL DEFAULT 0,
    succeeded        integer NOT NULL DEFAULT 0,
    failed           integer NOT NULL DEFAULT 0,
    cancel_requested boolean NOT NULL DEFAULT false,
    owner            text NOT NULL DEFAULT '',
    lease_until      timestamptz,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX skill_jobs_open_idx ON skill_jobs (created_at) WHERE status IN ('queued', 'running');

-- One input of a job. run_id is set once, when the input's run is stored, in the same
-- transaction that counts it done: an input finishes at most once, whoever ran it. seq is
-- the order it finished in, the id of its progress event; the counts after it are what
-- that event says.
CREATE TABLE skill_job_items (
    job_id          text NOT NULL REFERENCES skill_jobs (id) ON DELETE CASCADE,
    idx             integer NOT NULL,
    input           text NOT NULL,
    run_id          text,
    seq             integer,
    succeeded_after integer,
    failed_after    integer,
    PRIMARY KEY (job_id, idx)
);
CREATE UNIQUE INDEX skill_job_items_seq_idx ON skill_job_items (job_id, seq) WHERE seq IS NOT NULL;
