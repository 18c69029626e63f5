//! The approvals half of the store: suspended turns waiting for a person, decided at most
//! once (the pending → decided update is atomic), and per-conversation "always allow" rules.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::backend::{Backend, SqlStore};
use super::cluster::held;
use super::rows::{ApprovalRecord, convert, parse};
use super::text;
use super::{Claim, StoreError};
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
    fn add(&mut self, status: ApprovalStatus, n: i64) {
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
pub trait ApprovalStore: Send + Sync {
    /// Store a new pending approval.
    async fn create_approval(&self, approval: &Approval) -> Result<(), StoreError>;
    /// Suspend a turn: store its pending `approvals` (one, or one per waiting sub-task of a
    /// delegation) and mark the inbox row it was claimed under done, in one transaction
    /// fenced on `claim` (nothing is stored when the claim or its conversation lease moved
    /// on: `Fenced` or `Superseded`). A replica that dies right after leaves a suspended
    /// turn, never a second run of the same message.
    async fn suspend_turn(
        &self,
        claim: Claim,
        approvals: &[Approval],
        now_ms: i64,
    ) -> Result<(), StoreError>;
    /// Replace the suspended turn a still pending approval keeps (another sub-task of the
    /// same delegation moved on); `false` when it is no longer pending.
    async fn update_approval_state(&self, id: &ApprovalId, state: &str)
    -> Result<bool, StoreError>;
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
    /// Move a pending approval to `status`; `false` if it was no longer pending. With a
    /// `fence` (the claim of the turn deciding it) nothing changes unless that claim and
    /// its conversation lease are still current (`Fenced` or `Superseded` otherwise).
    async fn decide_approval(
        &self,
        id: &ApprovalId,
        status: ApprovalStatus,
        by: &str,
        now_ms: i64,
        fence: Option<Claim>,
    ) -> Result<bool, StoreError>;
    /// Remember the prompt message (`""` when it was posted but the channel gave no id):
    /// a pending approval without one has a prompt nobody has seen, which the replica that
    /// next holds the conversation posts.
    async fn set_approval_prompt(
        &self,
        id: &ApprovalId,
        prompt_ref: &str,
    ) -> Result<(), StoreError>;
    /// Drop the raw call a decided approval kept to resume its turn, once that turn ran it:
    /// `state` is the one column holding unscrubbed arguments, and only until then.
    async fn forget_approval_call(&self, id: &ApprovalId) -> Result<(), StoreError>;
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
const COLUMNS: &str = "id, conversation_key, tool, args, rule, reason, requester, status, decided_by, prompt_ref, state, created_at, expires_at";

impl<DB> SqlStore<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    for<'q> DB::Arguments<'q>: IntoArguments<'q, DB>,
    for<'r> i64: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> Option<String>: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> String: Type<DB> + Encode<'r, DB> + Decode<'r, DB>,
    for<'r> &'r str: Type<DB> + Encode<'r, DB> + ColumnIndex<DB::Row>,
    usize: ColumnIndex<DB::Row>,
{
    /// Insert approval `a` on `conn` (a pooled connection or an open transaction).
    async fn insert_approval(conn: &mut DB::Connection, a: &Approval) -> Result<(), StoreError> {
        sqlx::query(&format!(
            "INSERT INTO approvals ({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)"
        ))
        .bind(a.id.as_str())
        .bind(a.conversation.to_string())
        .bind(text::put::<DB>(&a.tool))
        .bind(text::put::<DB>(&a.args))
        .bind(text::put::<DB>(&a.rule))
        .bind(text::put::<DB>(&a.reason))
        .bind(a.requester.as_str())
        .bind(a.status.as_str())
        .bind(a.decided_by.clone())
        .bind(a.prompt_ref.clone())
        .bind(a.state.as_str())
        .bind(a.created_at)
        .bind(a.expires_at)
        .execute(conn)
        .await?;
        Ok(())
    }
}

#[async_trait]
impl<DB> ApprovalStore for SqlStore<DB>
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
    async fn create_approval(&self, a: &Approval) -> Result<(), StoreError> {
        let mut conn = self.pool.acquire().await?;
        Self::insert_approval(&mut conn, a).await
    }

    async fn suspend_turn(
        &self,
        claim: Claim,
        approvals: &[Approval],
        now_ms: i64,
    ) -> Result<(), StoreError> {
        let mut tx = self.begin_write().await?;
        // The fence first: this claim, under the conversation lease it was made with.
        if !Self::mark_done_fenced(&mut tx, claim, now_ms).await? {
            tx.rollback().await?;
            return Err(self.refusal(claim).await);
        }
        for approval in approvals {
            Self::insert_approval(&mut tx, approval).await?;
        }
        tx.commit().await?;
        Ok(())
    }

    async fn update_approval_state(
        &self,
        id: &ApprovalId,
        state: &str,
    ) -> Result<bool, StoreError> {
        let done =
            sqlx::query("UPDATE approvals SET state = $1 WHERE id = $2 AND status = 'pending'")
                .bind(state)
                .bind(id.as_str())
                .execute(&self.pool)
                .await?;
        Ok(DB::rows_affected(&done) == 1)
    }

    async fn approval(&self, id: &ApprovalId) -> Result<Option<Approval>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM approvals WHERE id = $1");
        let row: Option<ApprovalRecord> = sqlx::query_as(&sql)
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.map(Approval::try_from).transpose()
    }

    async fn pending_approval(
        &self,
        key: &ConversationKey,
    ) -> Result<Option<Approval>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE conversation_key = $1 AND status = 'pending' ORDER BY created_at LIMIT 1"
        );
        let row: Option<ApprovalRecord> = sqlx::query_as(&sql)
            .bind(key.to_string())
            .fetch_optional(&self.pool)
            .await?;
        row.map(Approval::try_from).transpose()
    }

    async fn pending_approvals(&self) -> Result<Vec<Approval>, StoreError> {
        self.list_approvals(true, 100_000).await
    }

    async fn list_approvals(
        &self,
        pending_only: bool,
        limit: usize,
    ) -> Result<Vec<Approval>, StoreError> {
        let sql = format!(
            "SELECT {COLUMNS} FROM approvals WHERE ($1 = 0 OR status = 'pending') ORDER BY created_at DESC LIMIT $2"
        );
        let rows: Vec<ApprovalRecord> = sqlx::query_as(&sql)
            .bind(i64::from(pending_only))
            .bind(limit as i64)
            .fetch_all(&self.pool)
            .await?;
        convert(rows)
    }

    async fn approval_counts(&self) -> Result<ApprovalCounts, StoreError> {
        let rows: Vec<(String, i64)> =
            sqlx::query_as("SELECT status, COUNT(*) FROM approvals GROUP BY status")
                .fetch_all(&self.pool)
                .await?;
        let mut counts = ApprovalCounts::default();
        for (status, n) in rows {
            counts.add(parse("approvals.status", &status)?, n);
        }
        Ok(counts)
    }

    async fn decide_approval(
        &self,
        id: &ApprovalId,
        status: ApprovalStatus,
        by: &str,
        now_ms: i64,
        fence: Option<Claim>,
    ) -> Result<bool, StoreError> {
        // Without a fence (`$5` = 0) the claim condition is skipped.
        let sql = format!(
            "UPDATE approvals SET status = $1, decided_by = $2, decided_at = $3 \
             WHERE id = $4 AND status = 'pending' AND ($5 = 0 OR {})",
            held(6)
        );
        let claim = fence.unwrap_or(Claim {
            id: 0,
            attempt: 0,
            epoch: 0,
        });
        let done = sqlx::query(&sql)
            .bind(status.as_str())
            .bind(by)
            .bind(now_ms)
            .bind(id.as_str())
            .bind(i64::from(fence.is_some()))
            .bind(claim.id)
            .bind(claim.attempt)
            .bind(claim.epoch)
            .execute(&self.pool)
            .await?;
        if DB::rows_affected(&done) == 1 {
            return Ok(true);
        }
        if let Some(claim) = fence {
            // Refused by the fence, or simply no longer pending?
            let err = self.refusal(claim).await;
            if let StoreError::Fenced(_) = err {
                return Err(err);
            }
        }
        Ok(false)
    }

    async fn set_approval_prompt(
        &self,
        id: &ApprovalId,
        prompt_ref: &str,
    ) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET prompt_ref = $1 WHERE id = $2")
            .bind(prompt_ref)
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    async fn forget_approval_call(&self, id: &ApprovalId) -> Result<(), StoreError> {
        sqlx::query("UPDATE approvals SET state = '' WHERE id = $1 AND status <> 'pending'")
            .bind(id.as_str())
            .execute(&self.pool)
            .await?;
        DB::flush_journal(self).await
    }

    async fn add_allow_rule(
        &self,
        key: &ConversationKey,
        rule: &str,
        by: &str,
        now_ms: i64,
    ) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO allow_rules (conversation_key, rule, created_by, created_at) VALUES ($1, $2, $3, $4) \
             ON CONFLICT (conversation_key, rule) DO NOTHING",
        )
        .bind(key.to_string())
        .bind(text::put::<DB>(rule))
        .bind(by)
        .bind(now_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn allow_rules(&self, key: &ConversationKey) -> Result<Vec<String>, StoreError> {
        let rules: Vec<String> = sqlx::query_scalar(
            "SELECT rule FROM allow_rules WHERE conversation_key = $1 ORDER BY created_at",
        )
        .bind(key.to_string())
        .fetch_all(&self.pool)
        .await?;
        Ok(rules.into_iter().map(text::decode).collect())
    }
}
