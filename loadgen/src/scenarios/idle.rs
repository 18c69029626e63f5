//! Idle: Telegram polling, Slack authenticated, one browser session on the web chat's
//! socket, no messages; the gateway's RSS after a fixed wait.

use std::time::Duration;

use anyhow::Context;
use futures::StreamExt;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;

use super::{Env, launch, mb, note};
use crate::child::{GatewayProcess, WEB_TOKEN, proc_status_kb};
use crate::report::{Measurement, Target};

/// One run.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let running = launch(env, 300).await?;
    let socket = open_web_session(&running.gateway).await?;
    let wait = env.settings.idle_wait_secs;
    tokio::time::sleep(Duration::from_secs(wait)).await;
    let rss = mb(running.gateway.rss_kb()?);
    // Where the resident bytes are: the heap, stacks and written data (anonymous) against the
    // binary's own pages the kernel mapped in as code ran (file-backed, shared with the page
    // cache). A smaller binary shrinks the second; only allocation work shrinks the first.
    let pid = running.gateway.pid();
    let anon = mb(proc_status_kb(pid, "RssAnon:")?);
    let file = mb(proc_status_kb(pid, "RssFile:")?);
    let polls = running.stands.telegram.calls_to("getUpdates").len();
    socket.abort();
    note(format!(
        "idle: RSS {rss:.2} MB after {wait} s (anonymous {anon:.2} MB, file-backed {file:.2} MB; \
         {polls} getUpdates long polls)"
    ));
    Ok(vec![
        Measurement::new(
            "idle",
            format!("RSS after {wait} s, Telegram + Slack + web connected"),
            "MB",
            rss,
        )
        .target(Target::AtMost(15.0)),
        Measurement::new(
            "idle",
            "… of which anonymous (heap, stacks, written data)",
            "MB",
            anon,
        ),
        Measurement::new(
            "idle",
            "… of which file-backed (the binary's mapped pages)",
            "MB",
            file,
        ),
    ])
}

/// Do what a browser that opened the token link does: load the page with the token's cookie
/// (the page sets the session cookie), then open the WebSocket with both cookies and the
/// page's origin. The socket is read (and so kept alive, pings answered) by a task until it
/// is aborted.
async fn open_web_session(gateway: &GatewayProcess) -> anyhow::Result<tokio::task::JoinHandle<()>> {
    let base = gateway.base_url();
    let token = format!("sb_web_token={WEB_TOKEN}");
    let page = reqwest::Client::new()
        .get(format!("{base}/"))
        .header("cookie", &token)
        .send()
        .await?
        .error_for_status()
        .context("loading the web chat's page")?;
    let cookies: Vec<String> = std::iter::once(token)
        .chain(
            page.headers()
                .get_all("set-cookie")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .filter_map(|v| v.split(';').next())
                .map(str::to_owned),
        )
        .collect();
    let mut request = format!("ws://127.0.0.1:{}/ws", gateway.port()).into_client_request()?;
    let headers = request.headers_mut();
    headers.insert("origin", HeaderValue::from_str(&base)?);
    headers.insert("cookie", HeaderValue::from_str(&cookies.join("; "))?);
    let (mut socket, _) = tokio_tungstenite::connect_async(request)
        .await
        .context("opening the web chat socket")?;
    Ok(tokio::spawn(async move {
        while let Some(Ok(_)) = socket.next().await {}
    }))
}
