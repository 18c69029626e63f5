-- Leader leases: receive loops that must run on exactly one replica (a Telegram long poll,
-- a Discord gateway) are run by the holder of a row here. A lease is renewed by its holder
-- under its term and taken over only once it has run out by the database's own clock
-- (now()), so no replica's wall clock decides. Every takeover increments the term, and
-- every write a leader makes is conditional on (holder, term), so a paused leader that
-- wakes up after losing its lease changes nothing. A table rather than session advisory
-- locks: those leak through connection pools and break behind PgBouncer.
CREATE TABLE leaders (
    role        TEXT PRIMARY KEY,      -- what is led: 'telegram:<channel>', 'discord:<channel>'
    holder      TEXT NOT NULL,         -- the leading replica's instance id
    term        BIGINT NOT NULL,       -- +1 on every takeover; fences the holder's writes
    lease_until TIMESTAMPTZ NOT NULL,  -- the lease runs out then (released: set to now())
    cursor      BIGINT                 -- the receive loop's confirmed position (Telegram's
                                       -- next update offset), written after its batch is stored
);
