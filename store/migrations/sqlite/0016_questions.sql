-- See ../postgres/0016_questions.sql.
CREATE TABLE questions (
    id           TEXT PRIMARY KEY,
    user_id      TEXT NOT NULL,
    source_id    TEXT NOT NULL,
    fingerprint  TEXT NOT NULL,
    workspace    TEXT NOT NULL DEFAULT '',
    agent        TEXT NOT NULL DEFAULT '',
    kind         TEXT NOT NULL,
    message      TEXT NOT NULL,
    subject      TEXT NOT NULL DEFAULT '',
    options      TEXT NOT NULL,
    locale       TEXT NOT NULL,
    state        TEXT NOT NULL CHECK (state IN ('open', 'answered', 'delivered', 'stale', 'expired')),
    answer       TEXT NOT NULL DEFAULT '',
    answer_keys  TEXT NOT NULL DEFAULT '[]',
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    answered_at  TIMESTAMP,
    ended_at     TIMESTAMP
);
CREATE UNIQUE INDEX questions_live_idx ON questions (user_id, source_id, fingerprint)
    WHERE state IN ('open', 'answered');
CREATE INDEX questions_answered_idx ON questions (user_id, answered_at) WHERE state = 'answered';
