//! Stored rows as plain records (one field per selected column, decoded by `sqlx` on either
//! database) and their conversion into the store's types. A row that cannot be converted is
//! `StoreError::Corrupt`, never a panic.

use std::str::FromStr;

use switchboard_channel::{ChannelEvent, ConversationKey, MessageRef};

use super::text::{decode, decode_opt};
use super::{Approval, AuditEntry, InboxRow, Memory, StoreError};
use crate::ids::ApprovalId;
use crate::provider::{ChatMessage, Role, ToolCall};

/// Parse a stored text column into a typed value.
pub(super) fn parse<T>(column: &str, text: &str) -> Result<T, StoreError>
where
    T: FromStr,
    T::Err: std::fmt::Display,
{
    text.parse()
        .map_err(|e: T::Err| StoreError::Corrupt(format!("{column}: {e}")))
}

/// Parse a stored conversation key.
pub(super) fn conversation_key(s: &str) -> Result<ConversationKey, StoreError> {
    parse("conversation_key", s)
}

/// `inbox`: `id, payload, attempts, draft_refs`.
#[derive(sqlx::FromRow)]
pub(super) struct InboxRecord {
    id: i64,
    payload: String,
    attempts: i64,
    draft_refs: Option<String>,
}

impl TryFrom<InboxRecord> for InboxRow {
    type Error = StoreError;

    fn try_from(r: InboxRecord) -> Result<Self, StoreError> {
        let id = r.id;
        let event: ChannelEvent = serde_json::from_str(&r.payload)
            .map_err(|e| StoreError::Corrupt(format!("inbox {id}: {e}")))?;
        let draft_refs = match r.draft_refs {
            Some(json) => serde_json::from_str::<Vec<String>>(&json)
                .map_err(|e| StoreError::Corrupt(format!("inbox {id} draft_refs: {e}")))?
                .into_iter()
                .map(MessageRef::new)
                .collect(),
            None => Vec::new(),
        };
        Ok(InboxRow {
            id,
            event,
            attempts: r.attempts,
            draft_refs,
            epoch: 0,
        })
    }
}

/// `messages`: `role, content, tool_calls, tool_call_id`.
#[derive(sqlx::FromRow)]
pub(super) struct MessageRecord {
    role: String,
    content: String,
    tool_calls: Option<String>,
    tool_call_id: Option<String>,
}

impl TryFrom<MessageRecord> for ChatMessage {
    type Error = StoreError;

    fn try_from(r: MessageRecord) -> Result<Self, StoreError> {
        let role = Role::parse(&r.role)
            .ok_or_else(|| StoreError::Corrupt(format!("role {:?}", r.role)))?;
        let tool_calls: Vec<ToolCall> = match r.tool_calls {
            Some(json) => {
                serde_json::from_str(&json).map_err(|e| StoreError::Corrupt(e.to_string()))?
            }
            None => Vec::new(),
        };
        Ok(ChatMessage {
            role,
            content: decode(r.content),
            tool_calls,
            images: Vec::new(),
            tool_call_id: decode_opt(r.tool_call_id),
        })
    }
}

/// `approvals`, every column of [`Approval`] (see `approvals::COLUMNS`).
#[derive(sqlx::FromRow)]
pub(super) struct ApprovalRecord {
    id: String,
    conversation_key: String,
    tool: String,
    args: String,
    rule: String,
    reason: String,
    requester: String,
    status: String,
    decided_by: Option<String>,
    prompt_ref: Option<String>,
    state: String,
    created_at: i64,
    expires_at: i64,
}

impl TryFrom<ApprovalRecord> for Approval {
    type Error = StoreError;

    fn try_from(r: ApprovalRecord) -> Result<Self, StoreError> {
        Ok(Approval {
            id: ApprovalId::new(r.id),
            conversation: conversation_key(&r.conversation_key)?,
            tool: decode(r.tool),
            args: decode(r.args),
            rule: decode(r.rule),
            reason: decode(r.reason),
            requester: r.requester,
            status: parse("approvals.status", &r.status)?,
            decided_by: r.decided_by,
            prompt_ref: r.prompt_ref,
            state: r.state,
            created_at: r.created_at,
            expires_at: r.expires_at,
        })
    }
}

/// `audit`, every column of [`AuditEntry`].
#[derive(sqlx::FromRow)]
pub(super) struct AuditRecord {
    conversation_key: String,
    inbox_id: Option<i64>,
    tool: String,
    call_id: String,
    args: String,
    decision: String,
    decided_by: Option<String>,
    status: String,
    duration_ms: i64,
    output: String,
    created_at: i64,
}

impl TryFrom<AuditRecord> for AuditEntry {
    type Error = StoreError;

    fn try_from(r: AuditRecord) -> Result<Self, StoreError> {
        Ok(AuditEntry {
            conversation: conversation_key(&r.conversation_key)?,
            inbox_id: r.inbox_id,
            tool: decode(r.tool),
            call_id: decode(r.call_id),
            args: decode(r.args),
            decision: r.decision,
            decided_by: r.decided_by,
            status: r.status,
            duration_ms: r.duration_ms,
            output: decode(r.output),
            created_at: r.created_at,
        })
    }
}

/// `memories`: `scope, key, content, category, updated_at`.
#[derive(sqlx::FromRow)]
pub(super) struct MemoryRecord {
    scope: String,
    key: String,
    content: String,
    category: String,
    updated_at: i64,
}

impl MemoryRecord {
    /// A record from columns read one by one (a query that also selects the row's id).
    pub(super) fn new(
        scope: String,
        key: String,
        content: String,
        category: String,
        updated_at: i64,
    ) -> Self {
        Self {
            scope,
            key,
            content,
            category,
            updated_at,
        }
    }
}

impl TryFrom<MemoryRecord> for Memory {
    type Error = StoreError;

    fn try_from(r: MemoryRecord) -> Result<Self, StoreError> {
        Ok(Memory {
            scope: parse("memories.scope", &r.scope)?,
            key: decode(r.key),
            content: decode(r.content),
            category: r.category,
            updated_at: r.updated_at,
        })
    }
}

/// Convert every record, failing on the first corrupt one.
pub(super) fn convert<R, T>(records: Vec<R>) -> Result<Vec<T>, StoreError>
where
    T: TryFrom<R, Error = StoreError>,
{
    records.into_iter().map(T::try_from).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_stored_status_or_scope_is_corrupt_not_a_panic() {
        let err = parse::<crate::ids::ApprovalStatus>("approvals.status", "maybe").unwrap_err();
        assert!(
            matches!(err, StoreError::Corrupt(ref m) if m.contains("maybe")),
            "{err}"
        );
        let err = parse::<crate::ids::MemoryScope>("memories.scope", "team:x").unwrap_err();
        assert!(matches!(err, StoreError::Corrupt(_)), "{err}");
    }

    #[test]
    fn parse_errors_name_the_column() {
        let err: Result<ConversationKey, _> = parse("conversation_key", "nokey");
        assert!(err.unwrap_err().to_string().contains("conversation_key"));
    }
}
