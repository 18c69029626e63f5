//! The approvals half of the store: suspended turns waiting for a person, decided at most
//! once (the pending → decided update is atomic), and per-conversation "always allow" rules.

use async_trait::async_trait;
use switchboard_channel::ConversationKey;

use super::StoreError;
use crate::ids::{ApprovalId, ApprovalStatus};

/// One approval request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Approval {
    /// Short random id, shown in prompts and `/approve <id>`.
    pub id: ApprovalId,
    /// Conversation it belongs to.
    pub conversation: ConversationKey,
    /// Tool asked for.
    pub tool: String,
    /// Arguments (scrubbed), shown exactly as they will run.
    pub args: String,
    /// The narrowest rule that would allow this call ("Always allow").
    pub rule: String,
    /// Why the policy asked.
    pub reason: String,
    /// Who started the turn.
    pub requester: String,
    /// Where it stands; only `Pending` changes, once.
    pub status: ApprovalStatus,
    /// Who decided.
    pub decided_by: Option<String>,
    /// The prompt message, once posted.
    pub prompt_ref: Option<String>,
    /// The suspended turn, as JSON.
    pub state: String,
    /// Unix ms.
    pub created_at: i64,
    /// Unix ms after which nobody can approve it.
    pub expires_at: i64,
}

/// How many approvals are in each status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ApprovalCounts {
    /// Waiting for a person.
    pub pending: i64,
    /// Allowed.
    pub approved: i64,
    /// Refused.
    pub denied: i64,
    /// Timed out.
    pub expired: i64,
}

impl ApprovalCounts {
    /// The count of one status.
    pub fn get(&self, status: ApprovalStatus) -> i64 {
        match status {
            ApprovalStatus::Pending => self.pending,
            ApprovalStatus::Approved => self.approved,
            ApprovalStatus::Denied => self.denied,
            ApprovalStatus::Expired => self.expired,
        }
    }

    /// Add `n` to one status's count.
    pub fn add(&mut self, status: ApprovalStatus, n: i64) {
        let slot = match status {
            ApprovalStatus::Pending => &mut self.pending,
            ApprovalStatus::Approved => &mut self.approved,
            ApprovalStatus::Denied => &mut self.denied,
            ApprovalStatus::Expired => &mut self.expired,
        };
        *slot += n;
    }
}

/// Approval persistence.
#[async_trait]
pub trait ApprovalStore {
    /// Store a new pending approval.
    async fn create_approval(&self, approval: &Approval) -> Result<(), StoreError>;
    /// One approval by id.
    async fn approval(&self, id: &ApprovalId) -> Result<Option<Approval>, StoreError>;
    /// The pending approval of a conversation, if any.
    async fn pending_approval(&self, key: &ConversationKey)
    -> Result<Option<Approval>, StoreError>;
    /// Every pending approval (to re-arm expiry timers at start-up).
    async fn pending_approvals(&self) -> Result<Vec<Approval>, StoreError>;
    /// Recent approvals, newest first.
    async fn list_approvals(
        &self,
        pending_only: bool,
        limit: usize,
    ) -> Result<Vec<Approval>, StoreError>;
    /// Approvals per status, counted by the database.
    async fn approval_counts(&self) -> Result<ApprovalCounts, StoreError>;
    /// Move a pending approval to `status`; `false` if it was no longer pending.
    async fn decide_approval(
        &self,
        id: &ApprovalId,
        status: ApprovalStatus,
        by: &str,
        now_ms: i64,
    ) -> Result<bool, StoreError>;
    /// Remember the prompt message.
    async fn set_approval_prompt(
        &self,
        id: &ApprovalId,
        prompt_ref: &str,
    ) -> Result<(), StoreError>;
    /// Add an "always allow" rule for a conversation.
    async fn add_allow_rule(
        &self,
        key: &ConversationKey,
        rule: &str,
        by: &str,
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// A conversation's "always allow" rules.
    async fn allow_rules(&self, key: &ConversationKey) -> Result<Vec<String>, StoreError>;
}

/// Columns of `approvals`, in [`Approval`] field order.
pub(super) const COLUMNS: &str = "id, conversation_key, tool, args, rule, reason, requester, status, decided_by, prompt_ref, state, created_at, expires_at";

/// Decode a stored `approvals.status`.
pub(super) fn status(text: &str) -> Result<ApprovalStatus, StoreError> {
    text.parse()
        .map_err(|e: crate::ids::ParseIdError| StoreError::Corrupt(e.to_string()))
}

/// Implements [`ApprovalStore`] for a store with a `pool` field.
macro_rules! impl_approvals {
    ($store:ty, $row:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::ApprovalStore for $store {
            async fn create_approval(&self, a: &$crate::store::Approval) -> Result<(), $crate::store::StoreError> {
                sqlx::query(&format!(
                    "INSERT INTO approvals ({}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)",
                    $crate::store::approvals::COLUMNS
                ))
                .bind(a.id.as_str())
                .bind(a.conversation.to_string())
                .bind(&a.tool)
                .bind(&a.args)
                .bind(&a.rule)
                .bind(&a.reason)
                .bind(&a.requester)
                .bind(a.status.as_str())
                .bind(&a.decided_by)
                .bind(&a.prompt_ref)
                .bind(&a.state)
                .bind(a.created_at)
                .bind(a.expires_at)
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn approval(&self, id: &$crate::ids::ApprovalId) -> Result<Option<$crate::store::Approval>, $crate::store::StoreError> {
                let sql = format!("SELECT {} FROM approvals WHERE id = $1", $crate::store::approvals::COLUMNS);
                let row = sqlx::query(&sql).bind(id.as_str()).fetch_optional(&self.pool).await?;
                row.map(|r| approval_row(&r)).transpose()
            }

            async fn pending_approval(
                &self,
                key: &switchboard_channel::ConversationKey,
            ) -> Result<Option<$crate::store::Approval>, $crate::store::StoreError> {
                let sql = format!(
                    "SELECT {} FROM approvals WHERE conversation_key = $1 AND status = 'pending' ORDER BY created_at LIMIT 1",
                    $crate::store::approvals::COLUMNS
                );
                let row = sqlx::query(&sql).bind(key.to_string()).fetch_optional(&self.pool).await?;
                row.map(|r| approval_row(&r)).transpose()
            }

            async fn pending_approvals(&self) -> Result<Vec<$crate::store::Approval>, $crate::store::StoreError> {
                self.list_approvals(true, 100_000).await
            }

            async fn list_approvals(
                &self,
                pending_only: bool,
                limit: usize,
            ) -> Result<Vec<$crate::store::Approval>, $crate::store::StoreError> {
                let sql = format!(
                    "SELECT {} FROM approvals WHERE ($1 = 0 OR status = 'pending') ORDER BY created_at DESC LIMIT $2",
                    $crate::store::approvals::COLUMNS
                );
                let rows = sqlx::query(&sql)
                    .bind(i64::from(pending_only))
                    .bind(limit as i64)
                    .fetch_all(&self.pool)
                    .await?;
                rows.iter().map(approval_row).collect()
            }

            async fn approval_counts(&self) -> Result<$crate::store::ApprovalCounts, $crate::store::StoreError> {
                let rows: Vec<(String, i64)> =
                    sqlx::query_as("SELECT status, COUNT(*) FROM approvals GROUP BY status")
                        .fetch_all(&self.pool)
                        .await?;
                let mut counts = $crate::store::ApprovalCounts::default();
                for (status, n) in rows {
                    counts.add($crate::store::approvals::status(&status)?, n);
                }
                Ok(counts)
            }

            async fn decide_approval(
                &self,
                id: &$crate::ids::ApprovalId,
                status: $crate::ids::ApprovalStatus,
                by: &str,
                now_ms: i64,
            ) -> Result<bool, $crate::store::StoreError> {
                let done = sqlx::query(
                    "UPDATE approvals SET status = $1, decided_by = $2, decided_at = $3 WHERE id = $4 AND status = 'pending'",
                )
                .bind(status.as_str())
                .bind(by)
                .bind(now_ms)
                .bind(id.as_str())
                .execute(&self.pool)
                .await?;
                Ok(done.rows_affected() == 1)
            }

            async fn set_approval_prompt(&self, id: &$crate::ids::ApprovalId, prompt_ref: &str) -> Result<(), $crate::store::StoreError> {
                sqlx::query("UPDATE approvals SET prompt_ref = $1 WHERE id = $2")
                    .bind(prompt_ref)
                    .bind(id.as_str())
                    .execute(&self.pool)
                    .await?;
                Ok(())
            }

            async fn add_allow_rule(
                &self,
                key: &switchboard_channel::ConversationKey,
                rule: &str,
                by: &str,
                now_ms: i64,
            ) -> Result<(), $crate::store::StoreError> {
                sqlx::query(
                    "INSERT INTO allow_rules (conversation_key, rule, created_by, created_at) VALUES ($1, $2, $3, $4) \
                     ON CONFLICT (conversation_key, rule) DO NOTHING",
                )
                .bind(key.to_string())
                .bind(rule)
                .bind(by)
                .bind(now_ms)
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn allow_rules(
                &self,
                key: &switchboard_channel::ConversationKey,
            ) -> Result<Vec<String>, $crate::store::StoreError> {
                Ok(sqlx::query_scalar("SELECT rule FROM allow_rules WHERE conversation_key = $1 ORDER BY created_at")
                    .bind(key.to_string())
                    .fetch_all(&self.pool)
                    .await?)
            }
        }

        fn approval_row(r: &$row) -> Result<$crate::store::Approval, $crate::store::StoreError> {
            use sqlx::Row as _;
            Ok($crate::store::Approval {
                id: $crate::ids::ApprovalId::new(r.try_get::<String, _>("id")?),
                conversation: $crate::store::shared::conversation_key(&r.try_get::<String, _>("conversation_key")?)?,
                tool: r.try_get("tool")?,
                args: r.try_get("args")?,
                rule: r.try_get("rule")?,
                reason: r.try_get("reason")?,
                requester: r.try_get("requester")?,
                status: $crate::store::approvals::status(&r.try_get::<String, _>("status")?)?,
                decided_by: r.try_get("decided_by")?,
                prompt_ref: r.try_get("prompt_ref")?,
                state: r.try_get("state")?,
                created_at: r.try_get("created_at")?,
                expires_at: r.try_get("expires_at")?,
            })
        }
    };
}

pub(super) use impl_approvals;
