-- Leader leases (see the PostgreSQL migration): which replica runs a receive loop that must
-- run once (a Telegram long poll, a Discord gateway). On SQLite there is one process, which
-- always leads; the table exists so both databases share one schema.
CREATE TABLE leaders (
    role        TEXT PRIMARY KEY,     -- 'telegram:<channel>', 'discord:<channel>'
    holder      TEXT NOT NULL,        -- the leading process's instance id
    term        INTEGER NOT NULL,     -- +1 on every takeover
    lease_until INTEGER NOT NULL,     -- Unix ms the lease runs out at
    cursor      INTEGER               -- the receive loop's confirmed position
);
