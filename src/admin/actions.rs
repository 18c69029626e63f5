//! What the operator does on the dashboard, each a POST behind the gate and the CSRF check
//! (`auth`), answered with a redirect back to its page and a note. Approve, Deny and `/stop`
//! go into the inbox as events from [`OPERATOR_USER`], so the conversation's own turn
//! decides them (once: the event id is derived from the approval) and the audit names the
//! operator; pairing and grants are the store's, as `switchboard access` does them.

use std::sync::Arc;

use axum::Form;
use axum::extract::State;
use axum::http::header::LOCATION;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde::Deserialize;
use switchboard_channel::{
    ButtonPress, ChannelEvent, ConversationKey, Delivery, Inbound, Place, UserRef,
};

use super::{Admin, OPERATOR_USER, auth};
use crate::command::{Action, ApprovalButton};
use crate::ids::{ApprovalId, ApprovalStatus};

/// The operator as events and the audit log name them.
fn operator() -> UserRef {
    UserRef {
        id: OPERATOR_USER.into(),
        name: Some("the operator (dashboard)".into()),
    }
}

/// Gate and CSRF check shared by every action; `Err` is the refusal to send.
#[expect(
    clippy::result_large_err,
    reason = "the refusal is built only for a refused request and sent at once; boxing it buys nothing"
)]
fn check(admin: &Admin, headers: &HeaderMap, csrf: &str) -> Result<(), Response> {
    admin.gate(headers, None)?;
    if !auth::action_allowed(headers, csrf, &admin.token_file) {
        let text = "refused: this action did not come from the dashboard's own page (CSRF check)";
        return Err((StatusCode::FORBIDDEN, text).into_response());
    }
    Ok(())
}

/// Back to `page` with `note` shown on it.
fn back(admin: &Admin, page: &str, note: &str) -> Response {
    let note = utf8_percent_encode(note, NON_ALPHANUMERIC);
    let to = format!("{}{page}?note={note}", admin.base());
    (StatusCode::SEE_OTHER, [(LOCATION, to)]).into_response()
}

/// A failure the operator should see briefly; the detail goes to the log.
fn failed(admin: &Admin, page: &str, what: &str, err: &dyn std::fmt::Display) -> Response {
    tracing::error!(error = %err, "dashboard: {what} failed");
    back(
        admin,
        page,
        &format!("{what} failed; see the gateway's log"),
    )
}

/// `POST /approvals/decide`.
#[derive(Deserialize)]
pub(super) struct DecideForm {
    csrf: String,
    id: String,
    action: String,
}

pub(super) async fn decide(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    Form(form): Form<DecideForm>,
) -> Response {
    if let Err(refused) = check(&admin, &headers, &form.csrf) {
        return refused;
    }
    let action = match form.action.as_str() {
        "approve" => Action::Once,
        "deny" => Action::Deny,
        _ => return (StatusCode::BAD_REQUEST, "action is approve or deny").into_response(),
    };
    let id = ApprovalId::new(form.id.trim());
    let approval = match admin.store.approval(&id).await {
        Ok(Some(a)) => a,
        Ok(None) => return back(&admin, "/approvals", "No such approval."),
        Err(err) => return failed(&admin, "/approvals", "Reading the approval", &err),
    };
    if approval.status != ApprovalStatus::Pending {
        return back(
            &admin,
            "/approvals",
            &format!("Already {}.", approval.status),
        );
    }
    let event = ChannelEvent::Button(ButtonPress {
        key: approval.conversation.clone(),
        // One operator answer per approval: a second press, or Deny after Approve, is a
        // duplicate the inbox drops.
        event_id: format!("admin:{id}"),
        user: operator(),
        payload: ApprovalButton {
            id: id.clone(),
            action,
        }
        .to_string(),
        message: None,
        reply_token: None,
        place: Place::Direct,
    });
    let verb = if action == Action::Deny {
        "Denied"
    } else {
        "Approved"
    };
    match admin.sink.deliver(event).await {
        Ok(Delivery::Stored) => back(
            &admin,
            "/approvals",
            &format!(
                "{verb} {} in {}; the conversation resumes.",
                approval.tool, approval.conversation
            ),
        ),
        Ok(Delivery::Duplicate) => {
            back(&admin, "/approvals", "Already answered from the dashboard.")
        }
        Ok(Delivery::Refused) => back(&admin, "/approvals", "The gateway refused the answer."),
        Err(err) => failed(&admin, "/approvals", "Answering the approval", &err.0),
    }
}

/// `POST /access/allow` and `/access/refuse`.
#[derive(Deserialize)]
pub(super) struct PairingForm {
    csrf: String,
    channel: String,
    code: String,
}

pub(super) async fn allow(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    Form(form): Form<PairingForm>,
) -> Response {
    answer_pairing(&admin, &headers, &form, true).await
}

pub(super) async fn refuse(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    Form(form): Form<PairingForm>,
) -> Response {
    answer_pairing(&admin, &headers, &form, false).await
}

/// Let in (`allow`) or turn away the person a live pairing code was sent to.
async fn answer_pairing(
    admin: &Admin,
    headers: &HeaderMap,
    form: &PairingForm,
    allow: bool,
) -> Response {
    if let Err(refused) = check(admin, headers, &form.csrf) {
        return refused;
    }
    let code = form.code.trim().to_ascii_uppercase();
    let now = admin.clock.now_ms();
    let (answered, doing) = if allow {
        ("Allowed", "Allowing")
    } else {
        ("Refused", "Refusing")
    };
    let result = if allow {
        admin.store.accept_pairing(&form.channel, &code, now).await
    } else {
        admin.store.refuse_pairing(&form.channel, &code, now).await
    };
    match result {
        Ok(Some(r)) => back(
            admin,
            "/access",
            &format!("{answered} {} on {}.", r.user_id, r.channel),
        ),
        Ok(None) => back(admin, "/access", "That code is no longer live."),
        Err(err) => failed(admin, "/access", doing, &err),
    }
}

/// `POST /access/revoke`.
#[derive(Deserialize)]
pub(super) struct RevokeForm {
    csrf: String,
    channel: String,
    user: String,
}

pub(super) async fn revoke(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    Form(form): Form<RevokeForm>,
) -> Response {
    if let Err(refused) = check(&admin, &headers, &form.csrf) {
        return refused;
    }
    match admin.store.revoke(&form.channel, &form.user).await {
        Ok(0) => back(&admin, "/access", "Nothing to revoke."),
        Ok(_) => back(
            &admin,
            "/access",
            &format!("Revoked {} on {}.", form.user, form.channel),
        ),
        Err(err) => failed(&admin, "/access", "Revoking", &err),
    }
}

/// `POST /conversations/stop`.
#[derive(Deserialize)]
pub(super) struct StopForm {
    csrf: String,
    conversation: String,
}

pub(super) async fn stop(
    State(admin): State<Arc<Admin>>,
    headers: HeaderMap,
    Form(form): Form<StopForm>,
) -> Response {
    if let Err(refused) = check(&admin, &headers, &form.csrf) {
        return refused;
    }
    let Ok(key) = form.conversation.parse::<ConversationKey>() else {
        return (StatusCode::BAD_REQUEST, "not a conversation key").into_response();
    };
    let event = ChannelEvent::Message(Inbound {
        key: key.clone(),
        event_id: format!("admin-stop:{}", uuid::Uuid::new_v4().simple()),
        user: operator(),
        text: "/stop".into(),
        place: Place::Direct,
        attachments: Vec::new(),
    });
    match admin.sink.deliver(event).await {
        Ok(Delivery::Stored | Delivery::Duplicate) => {
            back(&admin, "/conversations", &format!("Sent /stop to {key}."))
        }
        Ok(Delivery::Refused) => back(&admin, "/conversations", "The gateway refused /stop."),
        Err(err) => failed(&admin, "/conversations", "Stopping", &err.0),
    }
}
