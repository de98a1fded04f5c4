-- See ../postgres/0014_user_usage.sql.
CREATE TABLE user_usage (
    user_id       TEXT NOT NULL,
    day           TEXT NOT NULL,
    calls         INTEGER NOT NULL DEFAULT 0,
    input_tokens  INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day)
);
