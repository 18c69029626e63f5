//! `[memory] max_per_scope`: a scope's memories do not grow without bound. Past it, the
//! least recently recalled are forgotten (those never recalled first, the oldest among
//! equals), and the audit log says which, so an operator can tell where a memory went.

use switchboard_channel::ConversationKey;

use crate::clock::Clock;
use crate::ids::MemoryScope;
use crate::store::{AuditEntry, Store};

/// Forget what `scope` holds beyond `max`, recording it in the audit log under `key`
/// (failures are logged: a memory over the bound is harmless until the next save).
pub async fn enforce_bound(
    store: &dyn Store,
    scope: &MemoryScope,
    max: usize,
    key: &ConversationKey,
    clock: &Clock,
) {
    let forgotten = match store.evict_beyond(scope, max.max(1)).await {
        Ok(keys) if keys.is_empty() => return,
        Ok(keys) => keys,
        Err(err) => {
            tracing::warn!(error = %err, %scope, "could not keep the memory scope within max_per_scope");
            return;
        }
    };
    tracing::info!(%scope, forgotten = forgotten.len(), max, "memory scope full: forgot the least recently recalled");
    let entry = AuditEntry {
        conversation: key.clone(),
        inbox_id: None,
        tool: "memory_evict".into(),
        call_id: String::new(),
        args: serde_json::json!({ "scope": scope.to_string(), "max_per_scope": max }).to_string(),
        decision: "allow (gateway): [memory] max_per_scope".into(),
        decided_by: None,
        status: "ok".into(),
        duration_ms: 0,
        output: serde_json::json!({ "forgotten": forgotten }).to_string(),
        created_at: clock.now_ms(),
    };
    if let Err(err) = store.record_audit(&entry).await {
        tracing::warn!(error = %err, "could not audit forgotten memories");
    }
}
