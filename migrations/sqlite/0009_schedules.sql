-- Scheduled tasks: reminders and recurring jobs the `schedule` tool made in a conversation,
-- and the operator's `[[schedules]]` entries. A due job becomes an inbox event whose id is
-- derived from (job id, fire time), so the inbox's unique key makes each fire run once
-- across restarts and replicas; `next_fire_at` only moves forward by compare-and-set.
-- Times are Unix milliseconds written by the gateway.
CREATE TABLE schedules (
    id               INTEGER PRIMARY KEY AUTOINCREMENT,
    conversation_key TEXT NOT NULL,    -- the owning conversation (ConversationKey display form)
    source           TEXT NOT NULL,    -- chat (the schedule tool) | config ([[schedules]])
    name             TEXT,             -- a config job's name; NULL for chat jobs
    requester        TEXT NOT NULL,    -- user id the fired turn runs for (approvals, memory)
    place            TEXT NOT NULL,    -- the requester's Place as JSON (access is re-checked)
    prompt           TEXT NOT NULL,
    at_ms            INTEGER,          -- a one-shot's instant
    cron             TEXT,             -- a recurring job's pattern
    zone             TEXT NOT NULL,    -- IANA zone the pattern is read in, and times shown in
    next_fire_at     INTEGER,          -- the fire waiting; NULL once finished
    status           TEXT NOT NULL DEFAULT 'active', -- active | done | cancelled
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    UNIQUE (source, name)
);
-- The scheduler's one query: what is due, soonest first.
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE status = 'active';
CREATE INDEX schedules_by_conversation ON schedules (conversation_key) WHERE status = 'active';

-- A conversation's time zone, set with /tz (the config's default_zone otherwise).
CREATE TABLE conversation_zones (
    conversation_key TEXT PRIMARY KEY,
    zone             TEXT NOT NULL,
    updated_at       INTEGER NOT NULL
);
