-- Long-term memory: facts the agent keeps across turns and restarts, searched with FTS5
-- (BM25). `scope` is "conv:<conversation key>" or "user:<channel>:<user id>", so recall never
-- crosses conversations (or users) that should not see each other.
CREATE TABLE memories (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    scope      TEXT NOT NULL,
    key        TEXT NOT NULL,      -- memory_store key, or "auto:<hash>" for autosaved messages
    content    TEXT NOT NULL,
    category   TEXT NOT NULL,      -- "core" (stored by the model) or "conversation" (autosave)
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL,
    UNIQUE (scope, key)
);

-- External-content FTS index kept in step by triggers.
CREATE VIRTUAL TABLE memories_fts USING fts5(key, content, content='memories', content_rowid='id');
CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content) VALUES ('delete', old.id, old.key, old.content);
    INSERT INTO memories_fts(rowid, key, content) VALUES (new.id, new.key, new.content);
END;
