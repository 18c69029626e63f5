//! The browser in `guarded` mode: opening a host asks once per turn, and the turn that
//! waited for the approval remembers the host when it goes on, so a second page of the
//! same host opens without a second prompt; nothing is fetched before the approval.

use serde_json::json;
use switchboard_standins::Reply;

use super::site::{Page, Site};
use super::{chromium_present, private};
use crate::app::TestApp;
use crate::approvals::{buttons_channel, prompt};
use crate::helpers::{key, wait_inbox_idle, wait_transcript};

#[tokio::test]
async fn opening_a_host_asks_once_per_turn_even_across_the_approval() {
    if !chromium_present() {
        return;
    }
    let site = Site::start(|asked| match asked.path.as_str() {
        "/" => Page::html("<title>Home</title><p>front page</p>"),
        _ => Page::html("<title>More</title><p>second page</p>"),
    })
    .await;
    let config = format!(
        "[tools]\nenabled = [\"browser\"]\n\
         [tools.browser]\nallowed_hosts = [{}]\ntimeout_secs = 12\n\
         [policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n",
        private(&site)
    );
    let app = TestApp::spawn_on(buttons_channel(), &config).await;
    app.llm
        .push(Reply::tool_call(
            "browser",
            json!({"action": "open", "url": site.url("/")}),
        ))
        .push(Reply::tool_call(
            "browser",
            json!({"action": "open", "url": site.url("/more")}),
        ))
        .push(Reply::text("Browsed both."));
    let chat = key("g1");
    app.channel
        .say(&chat, "alice", "look around")
        .await
        .unwrap();
    let (once, _, _) = prompt(&app.channel, &chat).await;
    assert!(site.hits().is_empty(), "fetched before the approval");
    app.channel.press(&chat, "alice", &once).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| {
        t.last().is_some_and(|m| m == "Browsed both.")
    })
    .await;
    let prompts = app.channel.transcript(&chat);
    let asked = prompts
        .iter()
        .filter(|m| m.contains("Waiting for approval to run `browser`"))
        .count();
    assert_eq!(asked, 1, "one prompt for the host: {prompts:#?}");
    let pages: Vec<String> = (site.hits().into_iter())
        .filter(|p| !p.starts_with("/favicon"))
        .collect();
    assert_eq!(pages, ["/", "/more"]);
    wait_inbox_idle(&app.store()).await;
    let audit = app.store().audit(Some(&chat), 10).await.unwrap();
    let browser: Vec<_> = audit.iter().filter(|a| a.tool == "browser").collect();
    assert_eq!(browser.len(), 2, "{audit:#?}");
    assert!(
        browser
            .iter()
            .any(|a| a.decided_by.as_deref() == Some("alice")
                && a.output.starts_with(&format!("url: {}", site.url("/")))),
        "the approved open and its URL are in the audit: {browser:#?}"
    );
    app.shutdown().await;
}
