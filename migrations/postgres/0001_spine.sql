-- The spine: conversations, their full message history, and the durable inbox.
-- Times are Unix milliseconds written by the gateway, so both backends compare them alike.

CREATE TABLE conversations (
    key        TEXT PRIMARY KEY,      -- ConversationKey display form: channel:chat[:thread]
    channel    TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);

-- Full history including tool calls and results; compaction (later) rewrites old rows.
CREATE TABLE messages (
    id               BIGSERIAL PRIMARY KEY,
    conversation_key TEXT NOT NULL REFERENCES conversations(key) ON DELETE CASCADE,
    role             TEXT NOT NULL,
    content          TEXT NOT NULL,
    tool_calls       TEXT,             -- JSON array, assistant messages only
    tool_call_id     TEXT,             -- tool results only
    inbox_id         BIGINT,           -- the event whose turn wrote it
    created_at       BIGINT NOT NULL
);
CREATE INDEX messages_by_conversation ON messages (conversation_key, id);

-- Every inbound ChannelEvent, stored before the platform is acknowledged.
-- The unique key drops platform redeliveries; status moves pending -> processing -> done|failed.
CREATE TABLE inbox (
    id               BIGSERIAL PRIMARY KEY,
    channel          TEXT NOT NULL,
    event_id         TEXT NOT NULL,
    conversation_key TEXT NOT NULL,
    payload          TEXT NOT NULL,    -- the ChannelEvent as JSON
    status           TEXT NOT NULL DEFAULT 'pending',
    owner            TEXT,             -- instance_id holding the lease while processing
    lease_until      BIGINT,
    attempts         BIGINT NOT NULL DEFAULT 0,
    draft_refs       TEXT,             -- JSON array of platform message ids already posted
    error            TEXT,
    created_at       BIGINT NOT NULL,
    updated_at       BIGINT NOT NULL,
    UNIQUE (channel, event_id)
);
-- Claiming walks one conversation's unfinished rows in arrival order.
CREATE INDEX inbox_unfinished ON inbox (conversation_key, id) WHERE status IN ('pending', 'processing');
