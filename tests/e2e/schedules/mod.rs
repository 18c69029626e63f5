//! Scheduled tasks (#26). `ticker`: the scheduler's step over the real inbox on SQLite and
//! PostgreSQL, time moved by hand (a one-shot fires once; restarts around the fire neither
//! repeat nor lose it; cron every 5 minutes; DST days; the grace window). `chat`: the whole
//! gateway on a stand-in channel and a scripted model (a reminder made from a message,
//! listed, cancelled, fired as a new message; operator jobs; `switchboard schedules`).

mod chat;
mod ticker;
