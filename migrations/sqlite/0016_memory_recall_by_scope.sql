-- Issue #19: recall searched every scope's memories and ranked them all (BM25 over the whole
-- table) before keeping the one scope asked for, so each turn's recall grew with everything
-- every conversation had ever said (4 ms at 10,000 memories, 41 ms at 100,000). The index
-- now also holds each memory's scope as one token (its hex, so no tokenizer splits it), and
-- recall matches that token together with the words: only the scope's own matches are
-- read. They are ranked by the store (BM25 over them), as PostgreSQL ranks only its scope.
DROP TRIGGER memories_ai;
DROP TRIGGER memories_ad;
DROP TRIGGER memories_au;
DROP TABLE memories_fts;

ALTER TABLE memories ADD COLUMN scope_token TEXT GENERATED ALWAYS AS (hex(scope)) VIRTUAL;

CREATE VIRTUAL TABLE memories_fts USING fts5(key, content, scope_token, content='memories', content_rowid='id');
INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');

CREATE TRIGGER memories_ai AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts(rowid, key, content, scope_token) VALUES (new.id, new.key, new.content, new.scope_token);
END;
CREATE TRIGGER memories_ad AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content, scope_token) VALUES ('delete', old.id, old.key, old.content, old.scope_token);
END;
CREATE TRIGGER memories_au AFTER UPDATE ON memories BEGIN
    INSERT INTO memories_fts(memories_fts, rowid, key, content, scope_token) VALUES ('delete', old.id, old.key, old.content, old.scope_token);
    INSERT INTO memories_fts(rowid, key, content, scope_token) VALUES (new.id, new.key, new.content, new.scope_token);
END;
