//! The audit log half of the store: every tool execution, refusal and approval decision,
//! written as it happens and listed by `switchboard audit`.

use async_trait::async_trait;
use switchboard_channel::ConversationKey;

use super::StoreError;

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

/// Where audit entries go.
#[async_trait]
pub trait AuditLog {
    /// Append an entry.
    async fn record_audit(&self, entry: &AuditEntry) -> Result<(), StoreError>;

    /// The newest `limit` entries, newest first, optionally of one conversation.
    async fn audit(
        &self,
        conversation: Option<&ConversationKey>,
        limit: usize,
    ) -> Result<Vec<AuditEntry>, StoreError>;
}

/// Implements [`AuditLog`] for a store with a `pool` field (same SQL on both backends).
macro_rules! impl_audit {
    ($store:ty) => {
        #[async_trait::async_trait]
        impl $crate::store::AuditLog for $store {
            async fn record_audit(&self, e: &$crate::store::AuditEntry) -> Result<(), $crate::store::StoreError> {
                sqlx::query(
                    "INSERT INTO audit (conversation_key, inbox_id, tool, call_id, args, decision, decided_by, status, duration_ms, output, created_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)",
                )
                .bind(e.conversation.to_string())
                .bind(e.inbox_id)
                .bind(&e.tool)
                .bind(&e.call_id)
                .bind(&e.args)
                .bind(&e.decision)
                .bind(&e.decided_by)
                .bind(&e.status)
                .bind(e.duration_ms)
                .bind(&e.output)
                .bind(e.created_at)
                .execute(&self.pool)
                .await?;
                Ok(())
            }

            async fn audit(
                &self,
                conversation: Option<&switchboard_channel::ConversationKey>,
                limit: usize,
            ) -> Result<Vec<$crate::store::AuditEntry>, $crate::store::StoreError> {
                use sqlx::Row as _;
                let rows = sqlx::query(
                    "SELECT conversation_key, inbox_id, tool, call_id, args, decision, decided_by, status, duration_ms, output, created_at \
                     FROM audit WHERE ($1 IS NULL OR conversation_key = $1) ORDER BY id DESC LIMIT $2",
                )
                .bind(conversation.map(|k| k.to_string()))
                .bind(limit as i64)
                .fetch_all(&self.pool)
                .await?;
                rows.iter()
                    .map(|r| {
                        Ok($crate::store::AuditEntry {
                            conversation: $crate::store::shared::conversation_key(&r.try_get::<String, _>("conversation_key")?)?,
                            inbox_id: r.try_get("inbox_id")?,
                            tool: r.try_get("tool")?,
                            call_id: r.try_get("call_id")?,
                            args: r.try_get("args")?,
                            decision: r.try_get("decision")?,
                            decided_by: r.try_get("decided_by")?,
                            status: r.try_get("status")?,
                            duration_ms: r.try_get("duration_ms")?,
                            output: r.try_get("output")?,
                            created_at: r.try_get("created_at")?,
                        })
                    })
                    .collect()
            }
        }
    };
}

pub(super) use impl_audit;
