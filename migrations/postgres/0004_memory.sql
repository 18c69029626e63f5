-- Long-term memory: facts the agent keeps across turns and restarts, searched with a
-- generated tsvector (GIN index, ts_rank). `scope` is "conv:<conversation key>" or
-- "user:<channel>:<user id>", so recall never crosses conversations or users.
CREATE TABLE memories (
    id         BIGSERIAL PRIMARY KEY,
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,      -- memory_store key, or "auto:<hash>" for autosaved messages
    content    TEXT NOT NULL,
    category   TEXT NOT NULL,      -- "core" (stored by the model) or "conversation" (autosave)
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    search     tsvector GENERATED ALWAYS AS (to_tsvector('english', key || ' ' || content)) STORED,
    UNIQUE (scope, key)
);
CREATE INDEX memories_search ON memories USING GIN (search);
