-- Recall by meaning: each memory's vector from `[memory.embeddings]`, in a table of its
-- own so that writing one never rewrites the memory's row (and with it its full-text
-- entry). A vector carries the model and length it came from: recall compares only
-- vectors of the configured model, and a memory whose vector is of another model (or
-- missing: saved while the endpoint was down) is pending until the background embedder
-- replaces it. `scope` repeats the memory's, so one scope's vectors are read by index.
CREATE TABLE memory_vectors (
    memory_id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    scope     TEXT NOT NULL,
    model     TEXT NOT NULL,
    dims      INTEGER NOT NULL,
    vector    BLOB NOT NULL    -- `dims` little-endian f32
);
CREATE INDEX memory_vectors_scope ON memory_vectors (scope, model, dims);

-- A memory whose text changes loses its vector (it is embedded again).
CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content ON memories
WHEN old.content IS NOT new.content BEGIN
    DELETE FROM memory_vectors WHERE memory_id = new.id;
END;

-- When each memory was last recalled: `[memory] max_per_scope` forgets the least recently
-- recalled first. The full-text trigger now fires only when the indexed columns change,
-- so stamping a recall does not rewrite the memory's index entry.
ALTER TABLE memories ADD COLUMN recalled_at INTEGER;
CREATE INDEX memories_eviction ON memories (scope, recalled_at, updated_at);
DROP TRIGGER memories_au;
CREATE TRIGGER memories_au AFTER UPDATE OF scope, key, content ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content, scope_token) VALUES ('delete', old.id, old.key, old.content, old.scope_token);
    INSERT INTO memories_fts(rowid, key, content, scope_token) VALUES (new.id, new.key, new.content, new.scope_token);
END;
