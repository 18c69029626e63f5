//! The live stream (`/events`, server-sent events): what waits for the operator (pending
//! approvals and pairing requests), read from the database once a second and sent when it
//! changes, so a request made on any replica shows on every replica's page. The page's
//! script updates its badges and reloads the list it shows. The stream ends when the
//! gateway stops, so it never holds up a graceful shutdown.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use futures::Stream;
use sha2::{Digest, Sha256};

use super::Admin;

/// How often the stream reads what waits.
const POLL: Duration = Duration::from_secs(1);

/// What waits, as one event's data.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub(super) struct Waiting {
    /// Pending approvals.
    approvals: usize,
    /// Live pairing requests.
    pairing: usize,
    /// Changes whenever an item comes or goes (ids hashed), so a page reloads its list.
    version: String,
}

/// Read what waits now.
pub(super) async fn waiting(admin: &Admin) -> anyhow::Result<Waiting> {
    let approvals = admin.store.pending_approvals().await?;
    let now = admin.clock.now_ms();
    let pairing = admin.store.pairing_requests(now).await?;
    let mut ids: Vec<String> = approvals.iter().map(|a| a.id.to_string()).collect();
    ids.sort();
    ids.extend(pairing.iter().map(|p| format!("{}:{}", p.channel, p.code)));
    let digest = Sha256::digest(ids.join("\n").as_bytes());
    Ok(Waiting {
        approvals: approvals.len(),
        pairing: pairing.len(),
        version: digest[..8].iter().map(|b| format!("{b:02x}")).collect(),
    })
}

pub(super) async fn events(State(admin): State<Arc<Admin>>, headers: HeaderMap) -> Response {
    if let Err(refused) = admin.gate(&headers, None) {
        return refused;
    }
    Sse::new(stream(admin))
        .keep_alive(KeepAlive::default())
        .into_response()
}

/// One `waiting` event now, then one per change, until the gateway stops.
fn stream(admin: Arc<Admin>) -> impl Stream<Item = Result<Event, Infallible>> {
    let state = (admin, None::<Waiting>);
    futures::stream::unfold(state, |(admin, last)| async move {
        let mut first = last.is_none();
        loop {
            if !first {
                tokio::select! {
                    () = admin.closing.cancelled() => return None,
                    () = tokio::time::sleep(POLL) => {}
                }
            }
            first = false;
            let now = match waiting(&admin).await {
                Ok(now) => now,
                Err(err) => {
                    tracing::debug!(error = %format!("{err:#}"), "dashboard stream: read failed");
                    continue;
                }
            };
            if last.as_ref() != Some(&now) {
                let event = Event::default()
                    .event("waiting")
                    .json_data(&now)
                    .unwrap_or_default();
                return Some((Ok(event), (admin, Some(now))));
            }
        }
    })
}
