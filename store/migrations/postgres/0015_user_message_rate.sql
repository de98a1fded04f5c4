-- Each user's message rate (PHASEFLOW_USER_MESSAGE_RATE) as a generic cell rate: tat is
-- the theoretical arrival time of the user's next message, in Unix microseconds. Counted in
-- the database so that N replicas allow a user what one does. Keep in step with
-- ../sqlite/0015_user_message_rate.sql.
CREATE TABLE user_message_rate (
    user_id text PRIMARY KEY,
    tat     bigint NOT NULL
);
