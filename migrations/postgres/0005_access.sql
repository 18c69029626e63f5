-- Access granted with `switchboard access` (besides the config's allowed_users): kept in the
-- database so it survives restarts and every process on one database agrees.
CREATE TABLE access_grants (
    channel    TEXT NOT NULL,       -- configured channel instance name
    user_id    TEXT NOT NULL,       -- platform user id (numeric on Telegram, never a username)
    role       TEXT NOT NULL,       -- user (may talk to the bot) | approver (may approve others)
    user_name  TEXT,                -- display name when granted, for `access list`
    granted_at BIGINT NOT NULL,
    PRIMARY KEY (channel, user_id, role)
);
-- People who wrote to the bot in a private chat and wait for the operator: one row per person
-- and channel, nothing of their message. A code expires; `access allow` turns it into a grant.
CREATE TABLE pairing_requests (
    channel    TEXT NOT NULL,
    user_id    TEXT NOT NULL,
    user_name  TEXT,
    code       TEXT NOT NULL,
    created_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (channel, user_id)
);
CREATE UNIQUE INDEX pairing_by_code ON pairing_requests (channel, code);
