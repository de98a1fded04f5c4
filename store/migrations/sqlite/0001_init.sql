-- Phaseflow schema, SQLite dialect. Keep in step with ../postgres/0001_init.sql.
-- Ids are TEXT (UUIDs made by the server), JSON is TEXT (written as text by store.JSON),
-- times are declared TIMESTAMP so that modernc.org/sqlite parses them back into time.Time;
-- the server writes them in UTC with a fixed format, so they also sort as text. Times are
-- never defaulted here, so both dialects hold the same values. Booleans are 0/1 INTEGERs.

CREATE TABLE sessions (
    id                   TEXT PRIMARY KEY,
    user_id              TEXT NOT NULL,
    title                TEXT NOT NULL DEFAULT '',
    locale               TEXT NOT NULL DEFAULT '',
    phase                TEXT NOT NULL DEFAULT '',
    status               TEXT NOT NULL DEFAULT '',
    artifacts            TEXT NOT NULL DEFAULT '{}',
    metadata             TEXT NOT NULL DEFAULT '{}',
    previous_response_id TEXT NOT NULL DEFAULT '',
    created_at           TIMESTAMP NOT NULL,
    updated_at           TIMESTAMP NOT NULL
);
CREATE INDEX sessions_user_created_idx ON sessions (user_id, created_at DESC, id DESC);

CREATE TABLE messages (
    id                TEXT PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    user_id           TEXT NOT NULL,
    role              TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system')),
    status            TEXT NOT NULL CHECK (status IN ('pending', 'streaming', 'completed', 'failed', 'cancelled', 'interrupted')),
    content           TEXT NOT NULL DEFAULT '',
    phase             TEXT NOT NULL DEFAULT '',
    request_id        TEXT NOT NULL DEFAULT '',
    client_request_id TEXT NOT NULL DEFAULT '',
    -- reply_to links an assistant message to the user message it answers; a repeated
    -- client_request_id finds the earlier pair through it.
    reply_to          TEXT REFERENCES messages (id) ON DELETE SET NULL,
    response_id       TEXT NOT NULL DEFAULT '',
    tool_calls        TEXT,
    genui             TEXT,
    state_patch       TEXT,
    validation        TEXT,
    usage             TEXT,
    error             TEXT,
    metadata          TEXT,
    last_event_id     INTEGER NOT NULL DEFAULT 0,
    created_at        TIMESTAMP NOT NULL,
    completed_at      TIMESTAMP
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
    message_id TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    seq        INTEGER NOT NULL CHECK (seq > 0),
    name       TEXT NOT NULL,
    data       TEXT,
    created_at TIMESTAMP NOT NULL,
    PRIMARY KEY (message_id, seq)
);

-- One row per MCP tool call made during a turn.
CREATE TABLE mcp_calls (
    id           TEXT PRIMARY KEY,
    message_id   TEXT NOT NULL REFERENCES messages (id) ON DELETE CASCADE,
    session_id   TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    server_label TEXT NOT NULL DEFAULT '',
    name         TEXT NOT NULL,
    arguments    TEXT,
    output       TEXT NOT NULL DEFAULT '',
    error        TEXT NOT NULL DEFAULT '',
    status       TEXT NOT NULL,
    duration_ms  INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMP NOT NULL
);
CREATE INDEX mcp_calls_message_idx ON mcp_calls (message_id, created_at);
CREATE INDEX mcp_calls_session_idx ON mcp_calls (session_id, created_at);

-- Every phase move, with the evidence for it.
CREATE TABLE phase_transitions (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    from_phase TEXT NOT NULL,
    to_phase   TEXT NOT NULL,
    reason     TEXT NOT NULL DEFAULT '',
    message_id TEXT REFERENCES messages (id) ON DELETE SET NULL,
    metadata   TEXT,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX phase_transitions_session_idx ON phase_transitions (session_id, created_at);

CREATE TABLE strategies (
    id              TEXT PRIMARY KEY,
    user_id         TEXT NOT NULL,
    session_id      TEXT REFERENCES sessions (id) ON DELETE SET NULL,
    name            TEXT NOT NULL DEFAULT '',
    spec            TEXT NOT NULL DEFAULT '{}',
    status          TEXT NOT NULL DEFAULT 'draft',
    backtest_status TEXT NOT NULL DEFAULT 'none',
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
CREATE INDEX strategies_user_idx ON strategies (user_id, created_at);
CREATE INDEX strategies_session_idx ON strategies (session_id, created_at);

-- Stored prompt versions; an active one overrides the embedded skill file.
CREATE TABLE prompts (
    id         TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    locale     TEXT NOT NULL,
    body       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    active     INTEGER NOT NULL DEFAULT 0 CHECK (active IN (0, 1)),
    created_by TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL,
    UNIQUE (name, locale, version)
);
CREATE UNIQUE INDEX prompts_one_active_idx ON prompts (name, locale) WHERE active = 1;
