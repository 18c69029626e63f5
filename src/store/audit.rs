//! The audit log half of the store: every tool execution, refusal and approval decision,
//! written as it happens and listed by `switchboard audit`.

use async_trait::async_trait;
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Type};
use switchboard_channel::ConversationKey;

use super::StoreError;
use super::backend::{Backend, SqlStore};
use super::rows::{AuditRecord, convert};
use super::text;

/// One audited tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditEntry {
    /// Conversation it ran in.
    pub conversation: ConversationKey,
    /// The inbox event whose turn ran it.
    pub inbox_id: Option<i64>,
    /// Tool name.
    pub tool: String,
    /// The model's call id.
    pub call_id: String,
    /// Arguments as JSON, scrubbed.
    pub args: String,
    /// Which policy decision let it run (or stopped it).
    pub decision: String,
    /// Who decided, when a person did.
    pub decided_by: Option<String>,
    /// `ok`, `error`, `denied`, `expired`.
    pub status: String,
    /// Run time.
    pub duration_ms: i64,
    /// Output, scrubbed and truncated.
    pub output: String,
    /// When it was recorded (Unix ms).
    pub created_at: i64,
}

/// Which entries a page of the audit log shows: each field set narrows it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    /// Only this tool.
    pub tool: Option<String>,
    /// Only decisions starting with this (`allow`, `ask`, `deny`, `ask: approved`).
    pub decision: Option<String>,
    /// Only calls decided by this person (a user id, or the operator's).
    pub decided_by: Option<String>,
}

/// Where audit entries go.
#[async_trait]
pub trait AuditLog: Send + Sync {
    /// Append an entry.
    async fn record_audit(&self, entry: &AuditEntry) -> Result<(), StoreError>;

    /// The newest `limit` entries, newest first, optionally of one conversation.
    async fn audit(
        &self,
        conversation: Option<&ConversationKey>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StoreError>;

    /// Entries matching `filter`, newest first, skipping the newest `offset` of them.
    async fn audit_page(
        &self,
        filter: &AuditFilter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StoreError>;
}

#[async_trait]
impl<DB> AuditLog for SqlStore<DB>
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
    async fn record_audit(&self, e: &AuditEntry) -> Result<(), StoreError> {
        sqlx::query(
            "INSERT INTO audit (conversation_key, inbox_id, tool, call_id, args, decision, decided_by, status, duration_ms, output, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
        )
        .bind(e.conversation.to_string())
        .bind(e.inbox_id)
        .bind(text::put::<DB>(&e.tool))
        .bind(text::put::<DB>(&e.call_id))
        .bind(text::put::<DB>(&e.args))
        .bind(e.decision.as_str())
        .bind(e.decided_by.clone())
        .bind(e.status.as_str())
        .bind(e.duration_ms)
        .bind(text::put::<DB>(&e.output))
        .bind(e.created_at)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn audit(
        &self,
        conversation: Option<&ConversationKey>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let rows: Vec<AuditRecord> = sqlx::query_as(
            "SELECT conversation_key, inbox_id, tool, call_id, args, decision, decided_by, status, duration_ms, output, created_at \
             FROM audit WHERE ($1 IS NULL OR conversation_key = $1) ORDER BY id DESC LIMIT $2",
        )
        .bind(conversation.map(ToString::to_string))
        .bind(limit as i64)
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }

    async fn audit_page(
        &self,
        filter: &AuditFilter,
        offset: usize,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StoreError> {
        let rows: Vec<AuditRecord> = sqlx::query_as(
            "SELECT conversation_key, inbox_id, tool, call_id, args, decision, decided_by, status, duration_ms, output, created_at \
             FROM audit WHERE ($1 IS NULL OR tool = $1) AND ($2 IS NULL OR decision LIKE $2 || '%') \
             AND ($3 IS NULL OR decided_by = $3) ORDER BY id DESC LIMIT $4 OFFSET $5",
        )
        .bind(filter.tool.as_deref().map(text::put::<DB>))
        .bind(filter.decision.clone())
        .bind(filter.decided_by.clone())
        .bind(limit as i64)
        .bind(offset as i64)
        .fetch_all(&self.pool)
        .await?;
        convert(rows)
    }
}
