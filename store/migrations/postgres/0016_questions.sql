-- The questions a watcher notified (json-skills.md, answering from the phone): each with its
-- user and source, what it asked and its options with the keys that choose them, and what
-- became of it: open until answered, then delivered (typed into the pane that asked) or
-- stale (the screen moved on first); expired once expires_at passes unanswered or
-- undelivered. At most one question of a source and fingerprint is open or answered at a
-- time, so a question is never asked twice. Keep in step with ../sqlite/0016_questions.sql.
CREATE TABLE questions (
    id           text PRIMARY KEY,
    user_id      text NOT NULL,
    source_id    text NOT NULL,
    fingerprint  text NOT NULL,
    workspace    text NOT NULL DEFAULT '',
    agent        text NOT NULL DEFAULT '',
    kind         text NOT NULL,
    message      text NOT NULL,
    subject      text NOT NULL DEFAULT '',
    options      text NOT NULL,
    locale       text NOT NULL,
    state        text NOT NULL CHECK (state IN ('open', 'answered', 'delivered', 'stale', 'expired')),
    answer       text NOT NULL DEFAULT '',
    answer_keys  text NOT NULL DEFAULT '[]',
    created_at   timestamptz NOT NULL,
    expires_at   timestamptz NOT NULL,
    answered_at  timestamptz,
    ended_at     timestamptz
);
CREATE UNIQUE INDEX questions_live_idx ON questions (user_id, source_id, fingerprint)
    WHERE state IN ('open', 'answered');
CREATE INDEX questions_answered_idx ON questions (user_id, answered_at) WHERE state = 'answered';
