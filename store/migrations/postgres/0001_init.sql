-- Phaseflow schema, PostgreSQL dialect. Keep in step with ../sqlite/0001_init.sql.
-- Ids are text (UUIDs made by the server) so that a malformed id in a URL is "not found",
-- not a cast error. Times are written by the server, never defaulted here, so both
-- dialects hold the same values.

CREATE TABLE sessions (
    id                   text PRIMARY KEY,
    user_id              text NOT NULL,
    title                text NOT NULL DEFAULT '',
    locale               text NOT NULL DEFAULT '',
    phase                text NOT NULL DEFAULT '',
    status               text NOT NULL DEFAULT '',
    artifacts            jsonb NOT NULL DEFAULT '{}',
    metadata             jsonb NOT NULL DEFAULT '{}',
    previous_response_id text NOT NULL DEFAULT '',
    created_at           timestamptz NOT NULL,
    updated_at           timestamptz NOT NULL
);
CREATE INDEX sessions_user_created_idx ON sessions (user_id, created_at DESC, id DESC);

CREATE TABLE messages (
    id                text PRIMARY KEY,
    session_id        text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id           text NOT NULL,
    role              text NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    status            text NOT NULL CHECK (status IN ('pending', 'streaming', 'completed', 'failed', 'cancelled', 'interrupted')),
    content           text NOT NULL DEFAULT '',
    phase             text NOT NULL DEFAULT '',
    request_id        text NOT NULL DEFAULT '',
    client_request_id text NOT NULL DEFAULT '',
    -- reply_to links an assistant message to the user message it answers; a repeated
    -- client_request_id finds the earlier pair through it.
    reply_to          text REFERENCES messages (id) ON DELETE SET NULL,
    response_id       text NOT NULL DEFAULT '',
    tool_calls        jsonb,
    genui             jsonb,
    state_patch       jsonb,
    validation        jsonb,
    usage             jsonb,
    error             jsonb,
    metadata          jsonb,
    last_event_id     bigint NOT NULL DEFAULT 0,
    created_at        timestamptz NOT NULL,
    completed_at      timestamptz
);
CREATE INDEX messages_session_created_idx ON messages (session_id, created_at, id);
CREATE INDEX messages_reply_to_idx ON messages (reply_to) WHERE reply_to IS NOT NULL;
-- At most one generation per session. The store maps a violation to GenerationRunningError.
CREATE UNIQUE INDEX messages_one_running_idx ON messages (session_id)
    WHERE role = 'assistant' AND status IN ('pending', 'streaming');
-- A client_request_id names one user turn per session. The assistant reply carries a copy,
-- hence role = 'user'. Mapped to DuplicateRequestError.
CREATE UNIQUE INDEX messages_client_request_id_idx ON messages (session_id, client_request_id)
    WHERE role = 'user' AND client_request_id <> '';

-- The durable event log of a message: seq is 1, 2, 3 … and becomes the SSE id.
CREATE TABLE message_events (
    message_id text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq        bigint NOT NULL CHECK (seq > 0),
    name       text NOT NULL,
    data       jsonb,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (message_id, seq)
);

-- One row per MCP tool call made during a turn.
CREATE TABLE mcp_calls (
    id           text PRIMARY KEY,
    message_id   text NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id   text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    server_label text NOT NULL DEFAULT '',
    name         text NOT NULL,
    arguments    jsonb,
    output       text NOT NULL DEFAULT '',
    error        text NOT NULL DEFAULT '',
    status       text NOT NULL,
    duration_ms  bigint NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL
);
CREATE INDEX mcp_calls_message_idx ON mcp_calls (message_id, created_at);
CREATE INDEX mcp_calls_session_idx ON mcp_calls (session_id, created_at);

-- Every phase move, with the evidence for it.
CREATE TABLE phase_transitions (
    id         text PRIMARY KEY,
    session_id text NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_phase text NOT NULL,
    to_phase   text NOT NULL,
    reason     text NOT NULL DEFAULT '',
    message_id text REFERENCES messages (id) ON DELETE SET NULL,
    metadata   jsonb,
    created_at timestamptz NOT NULL
);
CREATE INDEX phase_transitions_session_idx ON phase_transitions (session_id, created_at);

CREATE TABLE strategies (
    id              text PRIMARY KEY,
    user_id         text NOT NULL,
    session_id      text REFERENCES sessions (id) ON DELETE SET NULL,
    name            text NOT NULL DEFAULT '',
    spec            jsonb NOT NULL DEFAULT '{}',
    status          text NOT NULL DEFAULT 'draft',
    backtest_status text NOT NULL DEFAULT 'none',
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX strategies_user_idx ON strategies (user_id, created_at);
CREATE INDEX strategies_session_idx ON strategies (session_id, created_at);

-- Stored prompt versions; an active one overrides the embedded skill file.
CREATE TABLE prompts (
    id         text PRIMARY KEY,
    name       text NOT NULL,
    locale     text NOT NULL,
    body       text NOT NULL,
    version    integer NOT NULL,
    active     boolean NOT NULL DEFAULT false,
    created_by text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL,
    UNIQUE (name, locale, version)
);
CREATE UNIQUE INDEX prompts_one_active_idx ON prompts (name, locale) WHERE active;
