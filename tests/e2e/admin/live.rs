//! The live stream: a pending approval made after the page opened is announced without a
//! reload, read from the database, so a request stored by another replica shows too.

use std::time::Duration;

use futures::StreamExt;
use switchboard::ids::{ApprovalId, ApprovalStatus};
use switchboard::store::Approval;
use switchboard_standins::eventually;

use super::{client, cookie};
use crate::app::TestApp;
use crate::helpers::{WAIT, key, postgres_url, wall_ms};

/// Read the stream until an event's data satisfies `done`.
async fn until(
    stream: &mut (impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Unpin),
    seen: &mut String,
    done: impl Fn(&str) -> bool,
) {
    eventually(WAIT, "the stream to announce it", async || {
        if !done(seen) {
            let chunk = stream.next().await.expect("open").unwrap();
            seen.push_str(&String::from_utf8_lossy(&chunk));
        }
        if done(seen) {
            Ok(())
        } else {
            Err(seen.clone())
        }
    })
    .await;
}

fn pending(chat: &str) -> Approval {
    let now = wall_ms();
    Approval {
        id: ApprovalId::random(),
        conversation: key(chat),
        tool: "shell".into(),
        args: "ls".into(),
        rule: "shell(ls)".into(),
        reason: "asks".into(),
        requester: "u1".into(),
        status: ApprovalStatus::Pending,
        decided_by: None,
        prompt_ref: None,
        state: "{}".into(),
        created_at: now,
        expires_at: now + 600_000,
    }
}

#[tokio::test]
async fn an_approval_stored_by_another_replica_appears_on_the_live_stream_and_the_page() {
    let Some(url) = postgres_url().await else {
        return;
    };
    let app = TestApp::builder().database(&url).start().await;
    let other_channel = switchboard_standins::FakeChannel::new("fake");
    let other = app.replica("replica-b", &other_channel).await;
    // Both replicas share the data directory, so the token opens either.
    let cookie = cookie(&app.config.gateway.data_dir);
    let response = client()
        .get(format!("http://{}/admin/events", other.addr()))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
    let mut stream = response.bytes_stream();
    let mut seen = String::new();
    until(&mut stream, &mut seen, |s| s.contains("\"approvals\":0")).await;
    // Stored through the first replica's store, read by the second one's page.
    app.store()
        .create_approval(&pending("elsewhere"))
        .await
        .unwrap();
    until(&mut stream, &mut seen, |s| s.contains("\"approvals\":1")).await;
    let page = client()
        .get(format!("http://{}/admin/approvals", other.addr()))
        .header(reqwest::header::COOKIE, &cookie)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(page.contains("fake:elsewhere"), "{page}");
    tokio::time::timeout(Duration::from_secs(10), other.shutdown())
        .await
        .expect("an open stream does not hold up the shutdown");
    drop(stream);
    app.shutdown().await;
    crate::helpers::drop_postgres(&url).await;
}
