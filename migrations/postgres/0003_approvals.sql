-- Approvals: a turn that needs a person's yes is suspended here, with everything needed to
-- resume it, so nothing waits in memory and a restart loses no pending approval.

-- Control events (button presses, /stop, /approve, /deny) may be processed while a
-- conversation waits for an approval; ordinary messages wait behind it.
ALTER TABLE inbox ADD COLUMN kind TEXT NOT NULL DEFAULT 'message';

CREATE TABLE approvals (
    id               TEXT PRIMARY KEY,
    conversation_key TEXT NOT NULL,
    tool             TEXT NOT NULL,
    args             TEXT NOT NULL,    -- scrubbed, shown exactly as it will run
    rule             TEXT NOT NULL,    -- narrowest rule covering the call ("Always allow")
    reason           TEXT NOT NULL,    -- why the policy asked
    requester        TEXT NOT NULL,    -- user id of the person whose message started the turn
    status           TEXT NOT NULL DEFAULT 'pending',  -- pending | approved | denied | expired
    decided_by       TEXT,
    prompt_ref       TEXT,             -- platform message id of the prompt with the buttons
    state            TEXT NOT NULL,    -- JSON: the suspended turn
    created_at       BIGINT NOT NULL,
    expires_at       BIGINT NOT NULL,
    decided_at       BIGINT
);
CREATE INDEX approvals_pending ON approvals (conversation_key) WHERE status = 'pending';

-- "Always allow" rules, per conversation only.
CREATE TABLE allow_rules (
    conversation_key TEXT NOT NULL,
    rule             TEXT NOT NULL,
    created_by       TEXT,
    created_at       BIGINT NOT NULL,
    PRIMARY KEY (conversation_key, rule)
);
