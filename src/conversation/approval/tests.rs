//! `Approvals` step by step on an injected clock: no expiry timer runs, so what decides an
//! answer's fate is the clock the test sets.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use switchboard_channel::{ButtonPress, Channel, ConversationKey, Limits, Place, UserRef};
use switchboard_standins::FakeChannel;

use super::decide::Decided;
use super::*;
use crate::access::Access;
use crate::agent::{Resolution, Suspension};
use crate::conversation::Channels;
use crate::conversation::{Outbox, Route};
use crate::draft::DraftSettings;
use crate::governor::Governor;
use crate::policy::{Decider, Decision, Verdict};
use crate::provider::{ChatMessage, Role, ToolCall};
use crate::scrub::Scrubber;
use crate::store::Store;
use switchboard_channel::AccessRules;

const TIMEOUT: Duration = Duration::from_secs(300);

/// A store, a buttons channel, and approvals over them, all on one manual clock.
struct Fixture {
    approvals: Approvals,
    out: Outbox,
    channel: Route,
    fake: Arc<FakeChannel>,
    store: Arc<dyn Store>,
    clock: Clock,
    key: ConversationKey,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    fixture_with(AccessRules::default()).await
}

/// The fixture with channel `fake` under `rules`.
async fn fixture_with(rules: AccessRules) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}/a.db", dir.path().display());
    let store = crate::store::connect(&url).await.unwrap();
    let limits = Limits {
        supports_buttons: true,
        min_edit_interval: Duration::ZERO,
        ..Limits::default()
    };
    let fake = FakeChannel::with_limits("fake", limits, None);
    let channel: Arc<dyn Channel> = fake.clone();
    let draft = DraftSettings {
        chunk_min_chars: 1,
        min_interval: Duration::ZERO,
        first_send_hold: Duration::ZERO,
    };
    let scrubber = Arc::new(Scrubber::new(Vec::<String>::new()));
    let out = Outbox::new(
        &Channels::from(vec![Arc::clone(&channel)]),
        Arc::new(Governor::new()),
        scrubber,
        draft,
    );
    let clock = Clock::manual(1_000_000);
    let metrics = Arc::new(Metrics::new());
    let approvers = BTreeMap::from([("fake".to_owned(), vec!["boss".to_owned()])]);
    let access = Access::from_parts(
        HashMap::from([("fake".to_owned(), rules)]),
        approvers,
        store.clone(),
        clock.clone(),
    );
    let (approvals, _expiries) = Approvals::new(
        Arc::clone(&store),
        TIMEOUT,
        Arc::new(access),
        clock.clone(),
        metrics,
    );
    let channel = out.route("fake").expect("configured");
    Fixture {
        approvals,
        out,
        channel,
        fake,
        store,
        clock,
        key: ConversationKey::new("fake", "c1"),
        _dir: dir,
    }
}

fn suspended() -> Suspended {
    let call = ToolCall {
        id: "call-1".into(),
        name: "shell".into(),
        args: json!({"command": "touch x"}),
    };
    Suspended {
        user: ChatMessage::new(Role::User, "make x"),
        suspension: Suspension {
            messages: Vec::new(),
            turn: Vec::new(),
            pending: call,
            decision: Decision {
                verdict: Verdict::Ask,
                rule: None,
                reason: "mode guarded: `touch x` is not read-only".into(),
                decided_by: Decider::Policy,
            },
            remaining: Vec::new(),
            iterations: 1,
            tool_calls: 0,
            delegation: None,
        },
        path: Vec::new(),
    }
}

fn alice() -> UserRef {
    UserRef {
        id: "alice".into(),
        name: None,
    }
}

fn press(key: &ConversationKey, button: &ApprovalButton) -> ButtonPress {
    ButtonPress {
        key: key.clone(),
        event_id: "p1".into(),
        user: alice(),
        payload: button.to_string(),
        message: None,
        reply_token: None,
        place: Place::Direct,
    }
}

impl Fixture {
    async fn suspend(&self) -> ApprovalId {
        let state = suspended();
        let durable = crate::store::Durable::new(tokio_util::sync::CancellationToken::new());
        self.approvals
            .suspend(
                &self.out,
                &self.channel,
                &self.key,
                "alice",
                state,
                &durable,
                None,
            )
            .await
            .unwrap()
            .remove(0)
    }

    async fn answer(&self, id: &ApprovalId, action: Action) -> Option<Decided> {
        self.answer_as(id, action, alice(), Place::Direct).await
    }

    /// `user` presses `action` on approval `id`, in a private chat or a group.
    async fn answer_as(
        &self,
        id: &ApprovalId,
        action: Action,
        user: UserRef,
        place: Place,
    ) -> Option<Decided> {
        let button = ApprovalButton {
            id: id.clone(),
            action,
        };
        let mut press = press(&self.key, &button);
        press.user = user;
        press.place = place;
        let request = Request {
            channel: &self.channel,
            key: &self.key,
            user: &press.user,
            button: &button,
            press: Some(&press),
            place: &press.place,
            fence: None,
        };
        self.approvals.decide(&self.out, request).await.unwrap()
    }
}

#[tokio::test]
async fn a_press_a_second_before_the_deadline_approves_and_a_second_press_is_told_so() {
    let f = fixture().await;
    let id = f.suspend().await;
    f.clock.advance(TIMEOUT - Duration::from_secs(1));
    let decided = f.answer(&id, Action::Once).await.expect("resumes");
    assert_eq!(
        decided.resolution,
        Resolution::Approved { by: "alice".into() }
    );
    assert_eq!(decided.state.suspension.pending.id, "call-1");
    assert!(f.answer(&id, Action::Once).await.is_none());
    assert_eq!(
        f.fake.button_answers().last().map(String::as_str),
        Some("Already approved.")
    );
}

#[tokio::test]
async fn a_press_after_the_deadline_expires_the_request_even_before_its_timer_fires() {
    let f = fixture().await;
    let id = f.suspend().await;
    f.clock.advance(TIMEOUT + Duration::from_millis(1));
    let decided = f.answer(&id, Action::Always).await.expect("resumes");
    assert_eq!(decided.resolution, Resolution::Expired);
    let stored = f.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Expired);
    assert!(
        f.store.allow_rules(&f.key).await.unwrap().is_empty(),
        "an expired \"always allow\" grants nothing"
    );
    let answers = f.fake.button_answers();
    assert!(
        answers.iter().any(|a| a.starts_with("⌛ Expired")),
        "{answers:?}"
    );
}

#[tokio::test]
async fn only_the_gateway_itself_may_expire_a_request() {
    let f = fixture().await;
    let id = f.suspend().await;
    assert!(f.answer(&id, Action::Expire).await.is_none());
    assert_eq!(
        f.fake.button_answers().last().map(String::as_str),
        Some("Not yours to approve.")
    );
    let stored = f.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Pending);
}

fn boss() -> UserRef {
    UserRef {
        id: "boss".into(),
        name: Some("Boss".into()),
    }
}

#[tokio::test]
async fn in_a_group_the_requesters_own_approval_is_refused_privately_and_an_approver_runs_it() {
    let f = fixture().await;
    let id = f.suspend().await;
    let group = Place::group("c1");
    assert!(
        f.answer_as(&id, Action::Once, alice(), group.clone())
            .await
            .is_none()
    );
    let refusal = f.fake.button_answers().last().cloned().unwrap_or_default();
    assert!(
        refusal.starts_with("Not yours to approve here")
            && refusal.contains("`switchboard access approver fake alice`"),
        "the refusal names the command with the real ids: {refusal}"
    );
    let stored = f.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Pending, "the buttons stay");
    let decided = f.answer_as(&id, Action::Once, boss(), group.clone()).await;
    let decided = decided.expect("the approver's press resumes the turn");
    assert_eq!(
        decided.resolution,
        Resolution::Approved { by: "boss".into() }
    );
    assert!(
        f.answer_as(&id, Action::Once, boss(), group)
            .await
            .is_none(),
        "runs once"
    );
}

#[tokio::test]
async fn in_a_group_the_requester_may_still_deny_their_own_request() {
    let f = fixture().await;
    let id = f.suspend().await;
    let decided = f
        .answer_as(&id, Action::Deny, alice(), Place::group("c1"))
        .await;
    let decided = decided.expect("a denial by the requester counts");
    assert_eq!(
        decided.resolution,
        Resolution::Denied { by: "alice".into() }
    );
}

#[tokio::test]
async fn someone_else_in_a_private_chat_is_told_it_is_not_theirs() {
    let f = fixture().await;
    let id = f.suspend().await;
    let mallory = UserRef {
        id: "mallory".into(),
        name: None,
    };
    assert!(
        f.answer_as(&id, Action::Once, mallory, Place::Direct)
            .await
            .is_none()
    );
    assert_eq!(
        f.fake.button_answers().last().map(String::as_str),
        Some("Not yours to approve.")
    );
}

#[tokio::test]
async fn on_an_open_channel_the_requesters_own_approval_in_a_private_chat_is_refused() {
    let f = fixture_with(AccessRules::open()).await;
    let id = f.suspend().await;
    assert!(f.answer(&id, Action::Once).await.is_none());
    let refusal = f.fake.button_answers().last().cloned().unwrap_or_default();
    assert!(
        refusal.contains("`switchboard access approver fake alice`"),
        "{refusal}"
    );
    let stored = f.store.approval(&id).await.unwrap().unwrap();
    assert_eq!(stored.status, ApprovalStatus::Pending);
}

#[tokio::test]
async fn where_the_channels_own_gate_admits_only_its_operator_the_requester_approves() {
    let f = fixture_with(AccessRules::operator_only()).await;
    let id = f.suspend().await;
    let decided = f.answer(&id, Action::Once).await.expect("resumes");
    assert_eq!(
        decided.resolution,
        Resolution::Approved { by: "alice".into() }
    );
    let other = f.suspend().await;
    let mallory = UserRef {
        id: "mallory".into(),
        name: None,
    };
    let pressed = f.answer_as(&other, Action::Once, mallory, Place::Direct);
    assert!(pressed.await.is_none(), "still only the requester's");
    assert_eq!(
        f.fake.button_answers().last().map(String::as_str),
        Some("Not yours to approve.")
    );
}
