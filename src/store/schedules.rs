//! The scheduled-task half of the store: jobs (chat reminders and the operator's
//! `[[schedules]]`), each conversation's time zone, and the two inbox look-ups the scheduler
//! needs. Exactly-once firing rests on two things kept here: `next_fire_at` only moves by
//! compare-and-set ([`ScheduleStore::advance_schedule`]), and a fire's inbox event id is
//! derived from (job, fire time) so a second offer is a duplicate.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::{ChannelEvent, ConversationKey};

use super::StoreError;
use super::backend::{Backend, SqlStore};
pub use super::jobs::{JobSource, NewSchedule, Schedule, Timing};
use super::rows::{conversation_key, parse};
use super::text;

/// Where jobs and time zones are kept.
#[async_trait]
pub trait ScheduleStore: Send + Sync {
    /// Store a new active job; returns its id.
    async fn add_schedule(&self, job: &NewSchedule, now_ms: i64) -> Result<i64, StoreError>;

    /// Active jobs, of one conversation or of all, by id.
    async fn active_schedules(
        &self,
        key: Option<&ConversationKey>,
    ) -> Result<Vec<Schedule>, StoreError>;

    /// Cancel job `id` if it is active (and owned by `key`, when given).
    async fn cancel_schedule(
        &self,
        id: i64,
        key: Option<&ConversationKey>,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// Up to `limit` active jobs due at `now_ms`, soonest first.
    async fn due_schedules(&self, now_ms: i64, limit: usize) -> Result<Vec<Schedule>, StoreError>;

    /// The soonest waiting fire of any active job.
    async fn next_fire(&self) -> Result<Option<i64>, StoreError>;

    /// Move job `id` from the fire at `from` to `next` (`None` finishes it), only if no
    /// one moved it first. `true` when this call moved it.
    async fn advance_schedule(
        &self,
        id: i64,
        from: i64,
        next: Option<i64>,
        now_ms: i64,
    ) -> Result<bool, StoreError>;

    /// The config job called `name`, active or not.
    async fn config_schedule(&self, name: &str) -> Result<Option<Schedule>, StoreError>;

    /// Make the config job called `job.name` exactly `job`, active (insert or overwrite).
    async fn put_config_schedule(&self, job: &NewSchedule, now_ms: i64) -> Result<(), StoreError>;

    /// A conversation's time zone set with `/tz`.
    async fn zone_of(&self, key: &ConversationKey) -> Result<Option<String>, StoreError>;

    /// Set a conversation's time zone.
    async fn set_zone(
        &self,
        key: &ConversationKey,
        zone: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;

    /// Every conversation's zone set with `/tz`.
    async fn zones(&self) -> Result<Vec<(ConversationKey, String)>, StoreError>;

    /// Whether the inbox holds an event with this id on `channel` (any state).
    async fn inbox_has(&self, channel: &str, event_id: &str) -> Result<bool, StoreError>;

    /// The event of `key` being processed now (the turn a tool runs in), if any.
    async fn processing_event(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<ChannelEvent>, StoreError>;
}

const COLUMNS: &str = "id, conversation_key, source, name, requester, place, prompt, at_ms, cron, zone, next_fire_at, status";

/// `schedules`, the columns of [`COLUMNS`].
#[derive(sqlx::FromRow)]
struct ScheduleRecord {
    id: i64,
    conversation_key: String,
    source: String,
    name: Option<String>,
    requester: String,
    place: String,
    prompt: String,
    at_ms: Option<i64>,
    cron: Option<String>,
    zone: String,
    next_fire_at: Option<i64>,
    status: String,
}

impl TryFrom<ScheduleRecord> for Schedule {
    type Error = StoreError;

    fn try_from(r: ScheduleRecord) -> Result<Self, StoreError> {
        let corrupt = |what: &str| StoreError::Corrupt(format!("schedules.{what} of job {}", r.id));
        let timing = match (r.at_ms, r.cron) {
            (Some(at), None) => Timing::Once(at),
            (None, Some(cron)) => Timing::Cron(cron),
            _ => return Err(corrupt("at_ms/cron")),
        };
        let source = match r.source.as_str() {
            "chat" => JobSource::Chat,
            "config" => JobSource::Config,
            _ => return Err(corrupt("source")),
        };
        let place = serde_json::from_str(&r.place).map_err(|_| corrupt("place"))?;
        Ok(Schedule {
            id: r.id,
            job: NewSchedule {
                conversation: conversation_key(&r.conversation_key)?,
                source,
                name: r.name,
                requester: r.requester,
                place,
                prompt: text::decode(r.prompt),
                timing,
                zone: r.zone,
                next_fire_at: r.next_fire_at.unwrap_or_default(),
            },
            next_fire_at: r.next_fire_at,
            active: r.status == "active",
        })
    }
}

fn convert(rows: Vec<ScheduleRecord>) -> Result<Vec<Schedule>, StoreError> {
    rows.into_iter().map(Schedule::try_from).collect()
}

/// A job's columns as bind values: `(at_ms, cron, place)`.
fn parts(job: &NewSchedule) -> (Option<i64>, Option<String>, String) {
    let (at, cron) = match &job.timing {
        Timing::Once(at) => (Some(*at), None),
        Timing::Cron(expr) => (None, Some(expr.clone())),
    };
    let place = serde_json::to_string(&job.place).unwrap_or_else(|_| "{}".into());
    (at, cron, place)
}

#[async_trait]
impl<DB> ScheduleStore for SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<i64>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    async fn add_schedule(&self, job: &NewSchedule, now_ms: i64) -> Result<i64, StoreError> {
        let (at, cron, place) = parts(job);
        // `fetch_all`: the id is the schedule's only once its commit landed (see `mod.rs`).
        let id: Option<i64> = sqlx::query_scalar(
            "INSERT INTO schedules (conversation_key, source, name, requester, place, prompt, at_ms, cron, zone, next_fire_at, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11) RETURNING id",
        )
        .bind(job.conversation.to_string())
        .bind(job.source.as_str())
        .bind(job.name.clone())
        .bind(job.requester.as_str())
        .bind(place)
        .bind(text::put::<DB>(&job.prompt))
        .bind(at)
        .bind(cron)
        .bind(job.zone.as_str())
        .bind(job.next_fire_at)
        .bind(now_ms)
        .fetch_all(&self.pool)
        .await?
        .pop();
        id.ok_or(StoreError::Db(sqlx::Error::RowNotFound))
    }

    async fn active_schedules(
        &self,
        key: Option<&ConversationKey>,
    ) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM schedules WHERE status = 'active' \
             AND ($1 IS NULL OR conversation_key = $1) ORDER BY id"
        );
        let rows: Vec<ScheduleRecord> = sqlx::query_as(&sql)
            .bind(key.map(ToString::to_string))
            .fetch_all(&self.pool)
            .await?;
        convert(rows)
    }

    async fn cancel_schedule(
        &self,
        id: i64,
        key: Option<&ConversationKey>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let done = sqlx::query(
            "UPDATE schedules SET status = 'cancelled', next_fire_at = NULL, updated_at = $1 \
             WHERE id = $2 AND status = 'active' AND ($3 IS NULL OR conversation_key = $3)",
        )
        .bind(now_ms)
        .bind(id)
        .bind(key.map(ToString::to_string))
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn due_schedules(&self, now_ms: i64, limit: usize) -> Result<Vec<Schedule>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM schedules WHERE status = 'active' AND next_fire_at <= $1 \
             ORDER BY next_fire_at, id LIMIT $2"
        );
        let rows: Vec<ScheduleRecord> = sqlx::query_as(&sql)
            .bind(now_ms)
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await?;
        convert(rows)
    }

    async fn next_fire(&self) -> Result<Option<i64>, StoreError> {
        let next: Option<i64> =
            sqlx::query_scalar("SELECT MIN(next_fire_at) FROM schedules WHERE status = 'active'")
                .fetch_one(&self.pool)
                .await?;
        Ok(next)
    }

    async fn advance_schedule(
        &self,
        id: i64,
        from: i64,
        next: Option<i64>,
        now_ms: i64,
    ) -> Result<bool, StoreError> {
        let status = if next.is_some() { "active" } else { "done" };
        let done = sqlx::query(
            "UPDATE schedules SET next_fire_at = $1, status = $2, updated_at = $3 \
             WHERE id = $4 AND status = 'active' AND next_fire_at = $5",
        )
        .bind(next)
        .bind(status)
        .bind(now_ms)
        .bind(id)
        .bind(from)
        .execute(&self.pool)
        .await?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn config_schedule(&self, name: &str) -> Result<Option<Schedule>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM schedules WHERE source = 'config' AND name = $1");
        let row: Option<ScheduleRecord> = sqlx::query_as(&sql)
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(Schedule::try_from).transpose()
    }

    async fn put_config_schedule(&self, job: &NewSchedule, now_ms: i64) -> Result<(), StoreError> {
        let Some(name) = &job.name else {
            return Err(StoreError::Corrupt("a config job needs a name".into()));
        };
        let (at, cron, place) = parts(job);
        let updated = sqlx::query(
            "UPDATE schedules SET conversation_key = $1, requester = $2, place = $3, prompt = $4, \
             at_ms = $5, cron = $6, zone = $7, next_fire_at = $8, status = 'active', updated_at = $9 \
             WHERE source = 'config' AND name = $10",
        )
        .bind(job.conversation.to_string())
        .bind(job.requester.as_str())
        .bind(place)
        .bind(text::put::<DB>(&job.prompt))
        .bind(at)
        .bind(cron)
        .bind(job.zone.as_str())
        .bind(job.next_fire_at)
        .bind(now_ms)
        .bind(name.as_str())
        .execute(&self.pool)
        .await?;
        if DB::rows_affected(&updated) == 0 {
            self.add_schedule(job, now_ms).await?;
        }
        Ok(())
    }

    async fn zone_of(&self, key: &ConversationKey) -> Result<Option<String>, StoreError> {
        let zone: Option<String> =
            sqlx::query_scalar("SELECT zone FROM conversation_zones WHERE conversation_key = $1")
                .bind(key.to_string())
                .fetch_optional(&self.pool)
                .await?;
        Ok(zone)
    }

    async fn set_zone(
        &self,
        key: &ConversationKey,
        zone: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO conversation_zones (conversation_key, zone, updated_at) VALUES ($1, $2, $3) \
             ON CONFLICT (conversation_key) DO UPDATE SET zone = $2, updated_at = $3",
        )
        .bind(key.to_string())
        .bind(zone)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn zones(&self) -> Result<Vec<(ConversationKey, String)>, StoreError> {
        let rows: Vec<(String, String)> =
            sqlx::query_as("SELECT conversation_key, zone FROM conversation_zones")
                .fetch_all(&self.pool)
                .await?;
        rows.into_iter()
            .map(|(key, zone)| Ok((conversation_key(&key)?, zone)))
            .collect()
    }

    async fn inbox_has(&self, channel: &str, event_id: &str) -> Result<bool, StoreError> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT id FROM inbox WHERE channel = $1 AND event_id = $2")
                .bind(channel)
                .bind(event_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(found.is_some())
    }

    async fn processing_event(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<ChannelEvent>, StoreError> {
        let payload: Option<String> = sqlx::query_scalar(
            "SELECT payload FROM inbox WHERE conversation_key = $1 AND status = 'processing' \
             ORDER BY id DESC LIMIT 1",
        )
        .bind(key.to_string())
        .fetch_optional(&self.pool)
        .await?;
        payload
            .map(|p| parse::<Json<ChannelEvent>>("inbox.payload", &p).map(|j| j.0))
            .transpose()
    }
}

/// A JSON column parsed with `FromStr`, so [`parse`] reports it like any other column.
struct Json<T>(T);

impl<T: serde::de::DeserializeOwned> std::str::FromStr for Json<T> {
    type Err = serde_json::Error;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        serde_json::from_str(s).map(Json)
    }
}
