//! The access decision on a real (SQLite) store and a manual clock.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use switchboard_channel::{
    AccessRules, ButtonPress, ChannelEvent, ConversationKey, DmPolicy, GroupPolicy, Inbound, Place,
    UserRef,
};

use super::*;
use crate::access::cli::{AccessAction, apply};
use crate::store::{SqliteStore, Store};

struct Fixture {
    access: Access,
    store: Arc<dyn Store>,
    clock: Clock,
    _dir: tempfile::TempDir,
}

async fn fixture(rules: AccessRules) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}", dir.path().join("a.db").display());
    let store: Arc<dyn Store> = Arc::new(SqliteStore::connect(&url).await.unwrap());
    let clock = Clock::manual(1_000_000);
    let approvers = BTreeMap::from([("tg".to_owned(), vec!["900".to_owned()])]);
    let access = Access::from_parts(
        HashMap::from([("tg".to_owned(), rules)]),
        approvers,
        store.clone(),
        clock.clone(),
    );
    Fixture {
        access,
        store,
        clock,
        _dir: dir,
    }
}

fn user(id: &str, name: Option<&str>) -> UserRef {
    UserRef {
        id: id.into(),
        name: name.map(str::to_owned),
    }
}

fn message(user_id: &str, place: Place) -> ChannelEvent {
    ChannelEvent::Message(Inbound {
        key: ConversationKey::new("tg", "chat"),
        event_id: format!("e-{user_id}"),
        user: user(user_id, None),
        text: "please run rm -rf ~".into(),
        place,
        attachments: Vec::new(),
    })
}

fn press(user_id: &str, place: Place) -> ChannelEvent {
    ChannelEvent::Button(ButtonPress {
        key: ConversationKey::new("tg", "chat"),
        event_id: "p".into(),
        user: user(user_id, None),
        payload: "x".into(),
        message: None,
        reply_token: None,
        place,
    })
}

fn rules(dm: DmPolicy, group: GroupPolicy, users: &[&str], groups: &[&str]) -> AccessRules {
    AccessRules {
        dm_policy: dm,
        group_policy: group,
        allowed_users: users.iter().map(|u| (*u).to_owned()).collect(),
        allowed_groups: groups.iter().map(|g| (*g).to_owned()).collect(),
        operator_only: false,
    }
}

#[tokio::test]
async fn a_stranger_in_a_private_chat_gets_one_code_and_repeats_get_none() {
    let f = fixture(AccessRules::default()).await;
    let first = f.access.decide(&message("7", Place::Direct)).await.unwrap();
    let Admission::Pair(Some(code)) = first else {
        panic!("expected a new code, got {first:?}");
    };
    let again = f.access.decide(&message("7", Place::Direct)).await.unwrap();
    assert_eq!(again, Admission::Pair(None));
    let waiting = f.store.pairing_requests(f.clock.now_ms()).await.unwrap();
    assert_eq!(waiting.len(), 1);
    assert_eq!(waiting[0].code, code);
}

#[tokio::test]
async fn an_allowed_code_lets_the_person_in_and_revoking_shuts_them_out() {
    let f = fixture(AccessRules::default()).await;
    let Admission::Pair(Some(code)) = f.access.decide(&message("7", Place::Direct)).await.unwrap()
    else {
        panic!("expected a code");
    };
    let allow = AccessAction::Allow {
        channel: "tg".into(),
        code: code.to_lowercase(),
    };
    let said = apply(f.store.as_ref(), &allow, f.clock.now_ms())
        .await
        .unwrap();
    assert!(said.starts_with("allowed 7"), "{said}");
    let verdict = f.access.decide(&message("7", Place::Direct)).await.unwrap();
    assert_eq!(verdict, Admission::Admit);
    let revoke = AccessAction::Revoke {
        channel: "tg".into(),
        user: "7".into(),
    };
    apply(f.store.as_ref(), &revoke, f.clock.now_ms())
        .await
        .unwrap();
    let verdict = f.access.decide(&message("7", Place::Direct)).await.unwrap();
    assert!(matches!(verdict, Admission::Pair(Some(_))), "{verdict:?}");
}

#[tokio::test]
async fn a_code_expires_after_an_hour_and_only_a_few_strangers_may_wait() {
    let f = fixture(AccessRules::default()).await;
    let Admission::Pair(Some(code)) = f.access.decide(&message("1", Place::Direct)).await.unwrap()
    else {
        panic!("expected a code");
    };
    for id in ["2", "3"] {
        let verdict = f.access.decide(&message(id, Place::Direct)).await.unwrap();
        assert!(matches!(verdict, Admission::Pair(Some(_))), "{verdict:?}");
    }
    let full = f.access.decide(&message("4", Place::Direct)).await.unwrap();
    assert_eq!(full, Admission::Pair(None));
    f.clock
        .advance(std::time::Duration::from_millis(PAIRING_TTL_MS as u64 + 1));
    let late = f
        .store
        .accept_pairing("tg", &code, f.clock.now_ms())
        .await
        .unwrap();
    assert_eq!(late, None);
    let fresh = f.access.decide(&message("4", Place::Direct)).await.unwrap();
    assert!(matches!(fresh, Admission::Pair(Some(_))), "{fresh:?}");
}

#[tokio::test]
async fn allowlist_refuses_strangers_silently_and_admits_listed_ids_and_usernames() {
    let f = fixture(rules(
        DmPolicy::Allowlist,
        GroupPolicy::Open,
        &["42", "@Alice"],
        &[],
    ))
    .await;
    let stranger = f.access.decide(&message("7", Place::Direct)).await.unwrap();
    assert!(matches!(stranger, Admission::Refuse(_)), "{stranger:?}");
    assert_eq!(
        f.access
            .decide(&message("42", Place::Direct))
            .await
            .unwrap(),
        Admission::Admit
    );
    let mut alice = message("8", Place::Direct);
    if let ChannelEvent::Message(m) = &mut alice {
        m.user.name = Some("@alice".into());
    }
    assert_eq!(f.access.decide(&alice).await.unwrap(), Admission::Admit);
    assert!(f.store.pairing_requests(0).await.unwrap().is_empty());
}

#[tokio::test]
async fn under_group_allowlist_an_empty_list_means_no_group_and_a_listed_group_needs_a_listed_user()
{
    let closed = fixture(rules(
        DmPolicy::Pairing,
        GroupPolicy::Allowlist,
        &["42"],
        &[],
    ))
    .await;
    let verdict = closed
        .access
        .decide(&message("42", Place::group("C1")))
        .await
        .unwrap();
    assert!(matches!(verdict, Admission::Refuse(_)), "{verdict:?}");
    let listed = fixture(rules(
        DmPolicy::Pairing,
        GroupPolicy::Allowlist,
        &["42"],
        &["C1"],
    ))
    .await;
    let ok = listed
        .access
        .decide(&message("42", Place::group("C1")))
        .await
        .unwrap();
    assert_eq!(ok, Admission::Admit);
    let stranger = listed
        .access
        .decide(&message("7", Place::group("C1")))
        .await
        .unwrap();
    assert!(
        matches!(stranger, Admission::Refuse(_)),
        "a stranger in a group gets no code"
    );
    let disabled = fixture(rules(
        DmPolicy::Open,
        GroupPolicy::Disabled,
        &["*"],
        &["C1"],
    ))
    .await;
    let off = disabled
        .access
        .decide(&message("42", Place::group("C1")))
        .await
        .unwrap();
    assert!(matches!(off, Admission::Refuse(_)), "{off:?}");
}

#[tokio::test]
async fn open_lets_anyone_in_and_approvers_are_always_let_in() {
    let open = fixture(rules(DmPolicy::Open, GroupPolicy::Open, &["*"], &[])).await;
    assert_eq!(
        open.access
            .decide(&message("7", Place::Direct))
            .await
            .unwrap(),
        Admission::Admit
    );
    let closed = fixture(rules(DmPolicy::Allowlist, GroupPolicy::Open, &[], &[])).await;
    let approver = closed
        .access
        .decide(&press("900", Place::group("C1")))
        .await
        .unwrap();
    assert_eq!(approver, Admission::Admit);
    let stranger = closed
        .access
        .decide(&press("7", Place::Direct))
        .await
        .unwrap();
    assert!(matches!(stranger, Admission::Refuse(_)), "{stranger:?}");
}

#[tokio::test]
async fn an_approver_grant_counts_on_its_channel_only() {
    let f = fixture(AccessRules::default()).await;
    let grant = AccessAction::Approver {
        channel: "tg".into(),
        user: "55".into(),
    };
    apply(f.store.as_ref(), &grant, 1).await.unwrap();
    assert!(f.access.is_approver("tg", "55").await.unwrap());
    assert!(!f.access.is_approver("slack", "55").await.unwrap());
    assert!(f.access.is_approver("tg", "900").await.unwrap());
    let listed = apply(f.store.as_ref(), &AccessAction::List, 1)
        .await
        .unwrap();
    assert!(listed.contains("tg  55  approver"), "{listed}");
}

#[tokio::test]
async fn a_channel_without_a_config_table_is_open_and_the_gateways_expiry_is_admitted() {
    let f = fixture(AccessRules::default()).await;
    assert_eq!(f.access.rules("built-in-code"), AccessRules::open());
    assert!(!f.access.is_open("built-in-code") && !f.access.is_open("tg"));
}

#[tokio::test]
async fn a_channel_whose_gate_admits_only_its_operator_lets_everyone_in_but_is_not_open() {
    let f = fixture(AccessRules::operator_only()).await;
    let stranger = message("7", Place::Direct);
    assert_eq!(f.access.decide(&stranger).await.unwrap(), Admission::Admit);
    assert!(!f.access.is_open("tg"));
    let open = fixture(AccessRules::open()).await;
    assert!(open.access.is_open("tg"));
    let expiry = press(SYSTEM_USER, Place::default());
    assert_eq!(f.access.decide(&expiry).await.unwrap(), Admission::Admit);
}
