//! The access half of the store: grants made with `switchboard access` (who may talk to the
//! bot, who may approve) and pending pairing requests. In the database, not in memory, so a
//! grant survives restarts and every process on one PostgreSQL sees it.

use std::fmt;
use std::str::FromStr;

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::rows::parse;
use super::text;

/// What a grant lets a person do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum AccessRole {
    /// Talk to the bot.
    User,
    /// Approve other people's requests (as `[policy.approvers]` does).
    Approver,
}

impl AccessRole {
    /// The stored (and typed) word.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Approver => "approver",
        }
    }
}

impl fmt::Display for AccessRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AccessRole {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "user" => Ok(Self::User),
            "approver" => Ok(Self::Approver),
            other => Err(format!("unknown access role {other:?} (user or approver)")),
        }
    }
}

/// One person let in on one channel.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// Channel instance name.
    pub channel: String,
    /// Platform user id.
    pub user_id: String,
    /// Display name when granted.
    pub user_name: Option<String>,
    /// What they may do.
    pub role: AccessRole,
    /// Unix ms.
    pub granted_at: i64,
}

/// A person waiting for the operator to let them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PairingRequest {
    /// Channel instance name.
    pub channel: String,
    /// Platform user id.
    pub user_id: String,
    /// Display name, when the platform gave one.
    pub user_name: Option<String>,
    /// The code they were sent, which the operator types.
    pub code: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms after which the code no longer works.
    pub expires_at: i64,
}

/// What became of a pairing request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pairing {
    /// Stored: send them this code.
    Created(String),
    /// They already have a live code; nothing new is sent.
    Waiting,
    /// Too many people wait on this channel already; nothing is stored or sent.
    Full,
}

/// Where grants and pairing requests live.
#[async_trait]
pub trait AccessStore: Send + Sync {
    /// Store a grant (granting it again changes nothing).
    async fn grant(&self, grant: &Grant) -> Result<(), StoreError>;

    /// Remove every grant of `user_id` on `channel`; how many there were.
    async fn revoke(&self, channel: &str, user_id: &str) -> Result<u64, StoreError>;

    /// Whether `user_id` holds `role` on `channel`.
    async fn has_grant(
        &self,
        channel: &str,
        user_id: &str,
        role: AccessRole,
    ) -> Result<bool, StoreError>;

    /// Every grant, by channel, user and role.
    async fn grants(&self) -> Result<Vec<Grant>, StoreError>;

    /// Store `request` unless its person already waits or `max_pending` people wait on its
    /// channel; expired requests are dropped first.
    async fn request_pairing(
        &self,
        request: &PairingRequest,
        max_pending: i64,
    ) -> Result<Pairing, StoreError>;

    /// Requests whose code still works at `now_ms`, oldest first.
    async fn pairing_requests(&self, now_ms: i64) -> Result<Vec<PairingRequest>, StoreError>;

    /// Turn the live request with `code` on `channel` into a user grant, atomically; `None`
    /// when no live request has that code.
    async fn accept_pairing(
        &self,
        channel: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<PairingRequest>, StoreError>;

    /// Drop the live request with `code` on `channel` without granting anything (the
    /// operator refused it); `None` when no live request has that code.
    async fn refuse_pairing(
        &self,
        channel: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<PairingRequest>, StoreError>;
}

/// `pairing_requests` columns, in the order selected.
type PairingRow = (String, String, Option<String>, String, i64, i64);

const PAIRING_COLUMNS: &str = "channel, user_id, user_name, code, created_at, expires_at";

fn pairing(row: PairingRow) -> PairingRequest {
    let (channel, user_id, user_name, code, created_at, expires_at) = row;
    PairingRequest {
        channel,
        user_id,
        user_name: text::decode_opt(user_name),
        code,
        created_at,
        expires_at,
    }
}

#[async_trait]
impl<DB> AccessStore for SqlStore<DB>
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
    async fn grant(&self, g: &Grant) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO access_grants (channel, user_id, role, user_name, granted_at) \
             VALUES ($1, $2, $3, $4, $5) ON CONFLICT (channel, user_id, role) DO NOTHING",
        )
        .bind(g.channel.as_str())
        .bind(g.user_id.as_str())
        .bind(g.role.as_str())
        .bind(text::put_opt::<DB>(g.user_name.as_deref()))
        .bind(g.granted_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn revoke(&self, channel: &str, user_id: &str) -> Result<u64, StoreError> {
        let done = sqlx::query("DELETE FROM access_grants WHERE channel = $1 AND user_id = $2")
            .bind(channel)
            .bind(user_id)
            .execute(&self.pool)
            .await?;
        Ok(DB::rows_affected(&done))
    }

    async fn has_grant(
        &self,
        channel: &str,
        user_id: &str,
        role: AccessRole,
    ) -> Result<bool, StoreError> {
        // On every inbound event's path (the access decision): bounded.
        let lookup = sqlx::query_as(
            "SELECT granted_at FROM access_grants WHERE channel = $1 AND user_id = $2 AND role = $3",
        )
        .bind(channel)
        .bind(user_id)
        .bind(role.as_str())
        .fetch_optional(&self.front);
        let found: Option<(i64,)> = self.timeouts.bounded(async { Ok(lookup.await?) }).await?;
        Ok(found.is_some())
    }

    async fn grants(&self) -> Result<Vec<Grant>, StoreError> {
        let rows: Vec<(String, String, String, Option<String>, i64)> = sqlx::query_as(
            "SELECT channel, user_id, role, user_name, granted_at FROM access_grants \
             ORDER BY channel, user_id, role",
        )
        .fetch_all(&self.pool)
        .await?;
        rows.into_iter()
            .map(|(channel, user_id, role, user_name, granted_at)| {
                Ok(Grant {
                    role: parse("role", &role)?,
                    channel,
                    user_id,
                    user_name: text::decode_opt(user_name),
                    granted_at,
                })
            })
            .collect()
    }

    async fn request_pairing(
        &self,
        r: &PairingRequest,
        max_pending: i64,
    ) -> Result<Pairing, StoreError> {
        sqlx::query("DELETE FROM pairing_requests WHERE channel = $1 AND expires_at <= $2")
            .bind(r.channel.as_str())
            .bind(r.created_at)
            .execute(&self.pool)
            .await?;
        let (waiting,): (i64,) =
            sqlx::query_as("SELECT COUNT(*) FROM pairing_requests WHERE channel = $1")
                .bind(r.channel.as_str())
                .fetch_one(&self.pool)
                .await?;
        let sql = format!(
            "INSERT INTO pairing_requests ({PAIRING_COLUMNS}) SELECT $1, $2, $3, $4, $5, $6 \
             WHERE $7 > $8 ON CONFLICT (channel, user_id) DO NOTHING"
        );
        let inserted = sqlx::query(&sql)
            .bind(r.channel.as_str())
            .bind(r.user_id.as_str())
            .bind(text::put_opt::<DB>(r.user_name.as_deref()))
            .bind(r.code.as_str())
            .bind(r.created_at)
            .bind(r.expires_at)
            .bind(max_pending)
            .bind(waiting)
            .execute(&self.pool)
            .await?;
        if DB::rows_affected(&inserted) == 1 {
            return Ok(Pairing::Created(r.code.clone()));
        }
        let mine: Option<(i64,)> = sqlx::query_as(
            "SELECT expires_at FROM pairing_requests WHERE channel = $1 AND user_id = $2",
        )
        .bind(r.channel.as_str())
        .bind(r.user_id.as_str())
        .fetch_optional(&self.pool)
        .await?;
        Ok(if mine.is_some() {
            Pairing::Waiting
        } else {
            Pairing::Full
        })
    }

    async fn pairing_requests(&self, now_ms: i64) -> Result<Vec<PairingRequest>, StoreError> {
        let sql = format!(
            "SELECT {PAIRING_COLUMNS} FROM pairing_requests WHERE expires_at > $1 \
             ORDER BY created_at, channel, user_id"
        );
        let rows: Vec<PairingRow> = sqlx::query_as(&sql)
            .bind(now_ms)
            .fetch_all(&self.pool)
            .await?;
        Ok(rows.into_iter().map(pairing).collect())
    }

    async fn accept_pairing(
        &self,
        channel: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<PairingRequest>, StoreError> {
        let mut tx = self.begin_write().await?;
        let sql = format!(
            "DELETE FROM pairing_requests WHERE channel = $1 AND code = $2 AND expires_at > $3 \
             RETURNING {PAIRING_COLUMNS}"
        );
        let row: Option<PairingRow> = sqlx::query_as(&sql)
            .bind(channel)
            .bind(code)
            .bind(now_ms)
            .fetch_all(&mut *tx)
            .await?
            .pop();
        let Some(request) = row.map(pairing) else {
            return Ok(None);
        };
        sqlx::query(
            "INSERT INTO access_grants (channel, user_id, role, user_name, granted_at) \
             VALUES ($1, $2, 'user', $3, $4) ON CONFLICT (channel, user_id, role) DO NOTHING",
        )
        .bind(channel)
        .bind(request.user_id.as_str())
        .bind(text::put_opt::<DB>(request.user_name.as_deref()))
        .bind(now_ms)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(request))
    }

    async fn refuse_pairing(
        &self,
        channel: &str,
        code: &str,
        now_ms: i64,
    ) -> Result<Option<PairingRequest>, StoreError> {
        let sql = format!(
            "DELETE FROM pairing_requests WHERE channel = $1 AND code = $2 AND expires_at > $3 \
             RETURNING {PAIRING_COLUMNS}"
        );
        // `fetch_all`: the refusal counts only once its commit landed (see `mod.rs`).
        let row: Option<PairingRow> = sqlx::query_as(&sql)
            .bind(channel)
            .bind(code)
            .bind(now_ms)
            .fetch_all(&self.pool)
            .await?
            .pop();
        Ok(row.map(pairing))
    }
}
