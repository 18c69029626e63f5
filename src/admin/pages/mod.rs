//! The dashboard's pages, one file each; [`render`] picks one by path and returns its body
//! (the frame is `html::frame`).
//!
//! - `health`: channels, readiness, sandbox, replicas, the doctor's findings.
//! - `approvals`: pending calls with Approve / Deny; recent decisions (without their call).
//! - `access`: pairing requests with Allow / Refuse; grants with Revoke.
//! - `conversations`: live and recent conversations with their queue and `/stop`.
//! - `usage`: tokens and tool runs per day as a chart, per conversation, user and profile.
//! - `audit`: the audit log with filters and paging.
//! - `schedules`: active schedules with their next fire.

mod access;
mod approvals;
mod audit;
mod conversations;
mod health;
mod schedules;
mod usage;

use super::{Admin, PageQuery};

/// The body of page `path` (one of [`super::PAGES`]).
pub(super) async fn render(
    admin: &Admin,
    path: &str,
    query: &PageQuery,
    csrf: &str,
) -> anyhow::Result<String> {
    match path {
        "/approvals" => approvals::render(admin, csrf).await,
        "/access" => access::render(admin, csrf).await,
        "/conversations" => conversations::render(admin, csrf).await,
        "/usage" => usage::render(admin, query).await,
        "/audit" => audit::render(admin, query).await,
        "/schedules" => schedules::render(admin).await,
        _ => health::render(admin).await,
    }
}
