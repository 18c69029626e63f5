-- Audit log: one row per tool execution (or refusal), with scrubbed arguments and output,
-- the policy decision that let it run, and who decided when a person did.
CREATE TABLE audit (
    id               BIGSERIAL PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    inbox_id         BIGINT,
    tool             TEXT NOT NULL,
    call_id          TEXT NOT NULL,
    args             TEXT NOT NULL,     -- JSON, scrubbed
    decision         TEXT NOT NULL,     -- e.g. "allow: tools.enabled", "ask: approved"
    decided_by       TEXT,              -- user id of an approver, when a person decided
    status           TEXT NOT NULL,     -- ok | error | denied | expired
    duration_ms      BIGINT NOT NULL,
    output           TEXT NOT NULL,     -- scrubbed, truncated
    created_at       BIGINT NOT NULL
);
CREATE INDEX audit_by_conversation ON audit (conversation_key, id);
