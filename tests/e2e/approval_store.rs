//! Approvals and the audit log at the store level, on both databases: an approval is
//! decided once, statuses and counts come back typed, rules stay per conversation, and the
//! audit log lists newest first.

use std::sync::Arc;

use switchboard::ids::{ApprovalId, ApprovalStatus};
use switchboard::store::{Approval, AuditEntry, Store};
use switchboard_channel::ConversationKey;

use crate::store_contract::on_both_databases;

#[tokio::test]
async fn an_approval_is_decided_exactly_once_and_rules_stay_per_conversation() {
    on_both_databases(approvals).await;
}

async fn approvals(store: Arc<dyn Store>) {
    let k = ConversationKey::new("slack", "C9").in_thread("1.2");
    let approval = Approval {
        id: ApprovalId::new("abc123def0"),
        conversation: k.clone(),
        tool: "shell".into(),
        args: "rm -rf build".into(),
        rule: "shell(rm -rf build)".into(),
        reason: "not read-only".into(),
        requester: "U1".into(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: None,
        state: "{}".into(),
        created_at: 10,
        expires_at: 1_000,
    };
    store.create_approval(&approval).await.unwrap();
    store
        .set_approval_prompt(&approval.id, "msg-7")
        .await
        .unwrap();
    let pending = store.pending_approval(&k).await.unwrap().unwrap();
    assert_eq!(pending.prompt_ref.as_deref(), Some("msg-7"));
    assert_eq!(store.pending_approvals().await.unwrap().len(), 1);
    assert_eq!(store.approval_counts().await.unwrap().pending, 1);
    assert!(
        store
            .decide_approval(&approval.id, ApprovalStatus::Approved, "U1", 20, None)
            .await
            .unwrap()
    );
    assert!(
        !store
            .decide_approval(&approval.id, ApprovalStatus::Denied, "U2", 21, None)
            .await
            .unwrap(),
        "second decision refused"
    );
    let decided = store.approval(&approval.id).await.unwrap().unwrap();
    assert_eq!(
        (decided.status, decided.decided_by.as_deref()),
        (ApprovalStatus::Approved, Some("U1"))
    );
    assert!(store.pending_approval(&k).await.unwrap().is_none());
    let counts = store.approval_counts().await.unwrap();
    assert_eq!((counts.pending, counts.approved, counts.denied), (0, 1, 0));
    store
        .add_allow_rule(&k, "shell(rm -rf build)", "U1", 22)
        .await
        .unwrap();
    store
        .add_allow_rule(&k, "shell(rm -rf build)", "U1", 23)
        .await
        .unwrap();
    assert_eq!(
        store.allow_rules(&k).await.unwrap(),
        vec!["shell(rm -rf build)".to_owned()]
    );
    assert!(
        store
            .allow_rules(&ConversationKey::new("slack", "C9"))
            .await
            .unwrap()
            .is_empty()
    );
}

#[tokio::test]
async fn the_audit_log_lists_newest_first_and_filters_by_conversation() {
    on_both_databases(audit_log).await;
}

async fn audit_log(store: Arc<dyn Store>) {
    let entry = |k: &ConversationKey, call: &str, decided_by: Option<&str>| AuditEntry {
        conversation: k.clone(),
        inbox_id: decided_by.is_none().then_some(7),
        tool: "shell".into(),
        call_id: call.into(),
        args: "ls".into(),
        decision: "allow: read-only".into(),
        decided_by: decided_by.map(str::to_owned),
        status: "ok".into(),
        duration_ms: 3,
        output: "file.txt".into(),
        created_at: 100,
    };
    let (a, b) = (
        ConversationKey::new("tg", "a"),
        ConversationKey::new("tg", "b"),
    );
    let first = entry(&a, "c1", None);
    let second = entry(&b, "c2", Some("U1"));
    let third = entry(&a, "c3", Some("U2"));
    for e in [&first, &second, &third] {
        store.record_audit(e).await.unwrap();
    }
    assert_eq!(
        store.audit(None, 10).await.unwrap(),
        vec![third.clone(), second, first.clone()]
    );
    assert_eq!(store.audit(Some(&a), 10).await.unwrap(), vec![third, first]);
    assert_eq!(store.audit(None, 1).await.unwrap().len(), 1);
}
