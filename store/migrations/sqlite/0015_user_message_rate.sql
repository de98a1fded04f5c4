-- See ../postgres/0015_user_message_rate.sql.
CREATE TABLE user_message_rate (
    user_id TEXT PRIMARY KEY,
    tat     INTEGER NOT NULL
);
