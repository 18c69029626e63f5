-- Recall by meaning: each memory's vector from `[memory.embeddings]`, with the model and
-- length it came from (recall compares only vectors of the configured model; a memory
-- whose vector is missing or of another model is pending until the background embedder
-- replaces it). Stored as `real[]`, which needs no extension: pgvector is required only
-- when embeddings are configured, and then the store creates it and the index over
-- `vector::vector(<dims>)` at start-up. `scope` repeats the memory's, so one scope's
-- vectors are found by index.
CREATE TABLE memory_vectors (
    memory_id BIGINT PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
    scope     TEXT NOT NULL,
    model     TEXT NOT NULL,
    dims      INTEGER NOT NULL,
    vector    REAL[] NOT NULL
);
CREATE INDEX memory_vectors_scope ON memory_vectors (scope, model, dims);

-- A memory whose text changes loses its vector (it is embedded again).
CREATE FUNCTION memory_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM memory_vectors WHERE memory_id = NEW.id;
    RETURN NULL;
END $$;
CREATE TRIGGER memory_vectors_stale AFTER UPDATE OF content ON memories
FOR EACH ROW WHEN (OLD.content IS DISTINCT FROM NEW.content) EXECUTE FUNCTION memory_vectors_stale();

-- When each memory was last recalled: `[memory] max_per_scope` forgets the least recently
-- recalled first.
ALTER TABLE memories ADD COLUMN recalled_at BIGINT;
CREATE INDEX memories_eviction ON memories (scope, recalled_at, updated_at);
