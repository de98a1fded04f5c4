-- Model calls and tokens per user and UTC day, for the per-user call budget
-- (PHASEFLOW_USER_CALL_BUDGET). Counted in the database so that it holds across replicas.
-- Keep in step with ../sqlite/0014_user_usage.sql.
CREATE TABLE user_usage (
    user_id       text NOT NULL,
    day           text NOT NULL, -- YYYY-MM-DD, UTC
    calls         bigint NOT NULL DEFAULT 0,
    input_tokens  bigint NOT NULL DEFAULT 0,
    output_tokens bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (user_id, day)
);
