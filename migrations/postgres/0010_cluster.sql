-- Several replicas on one database: who is alive, who owns each conversation, and the order
-- each conversation's events are answered in. Every expiry here is decided by the database's
-- own clock (times are Unix ms read from the database inside the statement that compares
-- them), so replicas never trust each other's clocks.

-- One row per running gateway, refreshed by its heartbeat; `draining` is set at shutdown.
CREATE TABLE instances (
    instance_id  TEXT PRIMARY KEY,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    draining     BIGINT NOT NULL DEFAULT 0   -- 1 once the instance stopped claiming
);

-- The one live owner of a conversation. `epoch` grows by one on every acquisition, and every
-- write a turn makes is conditional on the epoch it started with, so an owner that lost the
-- lease (paused, partitioned) cannot write after another took over.
CREATE TABLE conversation_leases (
    key         TEXT PRIMARY KEY,            -- ConversationKey display form
    owner       TEXT NOT NULL,               -- instance_id
    epoch       BIGINT NOT NULL,
    lease_until BIGINT NOT NULL              -- database ms; free for others after this
);

-- Per-conversation sequence numbers: the row is locked by the inserting transaction, so
-- numbers follow commit order and turns run in the order events were stored.
CREATE TABLE conversation_seq (
    key      TEXT PRIMARY KEY,
    last_seq BIGINT NOT NULL
);

ALTER TABLE inbox ADD COLUMN seq BIGINT;
-- Rows stored before this migration keep their arrival order.
UPDATE inbox SET seq = id;
INSERT INTO conversation_seq (key, last_seq)
    SELECT conversation_key, MAX(id) FROM inbox GROUP BY conversation_key;
CREATE UNIQUE INDEX inbox_conversation_seq ON inbox (conversation_key, seq);
