//! Approvals and the audit log at the store level, on both databases: an approval is
//! decided once, statuses and counts come back typed, rules stay per conversation, a
//! pending one holds its conversation's messages (not its control events) back, and the
//! audit log lists newest first.

use std::sync::Arc;

use switchboard::ids::{ApprovalId, ApprovalStatus, InboxKind};
use switchboard::store::{Approval, AuditEntry, Store};
use switchboard_channel::ConversationKey;

use crate::helpers::direct_message as event;
use crate::store_contract::{LEASE, on_both_databases, text_of};

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

#[tokio::test]
async fn while_an_approval_waits_only_control_events_are_claimed() {
    on_both_databases(control_only).await;
}

async fn control_only(store: Arc<dyn Store>) {
    let k = ConversationKey::new("tg", "c");
    let approval = Approval {
        id: ApprovalId::new("abc123"),
        conversation: k.clone(),
        tool: "shell".into(),
        args: "ls".into(),
        rule: "shell(ls)".into(),
        reason: "not read-only".into(),
        requester: "alice".into(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: Some("m1".into()),
        state: "{}".into(),
        created_at: 0,
        expires_at: 1_000,
    };
    store.create_approval(&approval).await.unwrap();
    // Another conversation's approval holds nothing up here.
    let other = ConversationKey::new("tg", "other");
    let elsewhere = Approval {
        id: ApprovalId::new("def456"),
        conversation: other.clone(),
        ..approval.clone()
    };
    store.create_approval(&elsewhere).await.unwrap();
    store
        .insert_event(&event(&other, "o1", "hello"), InboxKind::Message, 0)
        .await
        .unwrap();
    // A message waits behind its own conversation's approval.
    nothing_claimable(&store, &other, 1).await;
    store
        .insert_event(&event(&k, "1", "a normal message"), InboxKind::Message, 0)
        .await
        .unwrap();
    store
        .insert_event(&event(&k, "2", "/approve abc123"), InboxKind::Control, 0)
        .await
        .unwrap();
    let control = store.claim_next(&k, "me", 1, LEASE).await.unwrap().unwrap();
    assert_eq!(text_of(&control.event), "/approve abc123");
    store
        .complete(control.claim(), &k, &[], None, 2)
        .await
        .unwrap();
    // The message waits while the approval is pending.
    nothing_claimable(&store, &k, 3).await;
    // Decided (by the control event's turn, or expired by the sweeper): the claim sees it
    // at once, with no read of its own.
    let decided = store
        .decide_approval(&approval.id, ApprovalStatus::Approved, "alice", 4, None)
        .await
        .unwrap();
    assert!(decided);
    let normal = store.claim_next(&k, "me", 5, LEASE).await.unwrap().unwrap();
    assert_eq!(text_of(&normal.event), "a normal message");
}

/// Asserts that `key` has no event to claim at `now_ms`.
async fn nothing_claimable(store: &Arc<dyn Store>, key: &ConversationKey, now_ms: i64) {
    let claimed = store.claim_next(key, "me", now_ms, LEASE).await.unwrap();
    assert!(claimed.is_none(), "{key}: claimed {claimed:?}");
}
