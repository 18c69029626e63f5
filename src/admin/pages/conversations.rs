//! Live and recent conversations: channel, profile, model, last activity, how many events
//! wait, whether a turn runs, and `/stop` for one that does (or has a queue).

use crate::admin::Admin;
use crate::admin::html::{Html, span};

/// How many conversations the page lists.
const LIMIT: usize = 100;

pub(super) async fn render(admin: &Admin, csrf: &str) -> anyhow::Result<String> {
    let now = admin.clock.now_ms();
    let base = admin.base();
    let list = admin.store.conversations(LIMIT).await?;
    let profiles = admin.registry.deps().agents.profiles();
    let mut html = Html::new(&admin.scrubber);
    if list.is_empty() {
        html.el("p", "empty", "No conversations yet.");
        return Ok(html.finish());
    }
    html.raw("<table><thead><tr><th>Conversation</th><th>Channel</th><th>Profile</th><th>Model</th><th>Last activity</th><th>Queue</th><th>State</th><th></th></tr></thead><tbody>");
    for c in &list {
        let profile = profiles.for_key(&c.key);
        let model = c
            .model
            .as_ref()
            .filter(|(p, m)| *p == profile.name && profile.allows(m))
            .map(|(_, m)| m.clone())
            .or_else(|| profile.models().first().cloned())
            .unwrap_or_default();
        let (class, state) = match (c.running, c.queued) {
            (true, _) => ("running", "answering"),
            (false, 0) => ("idle", "idle"),
            (false, _) => ("waiting", "waiting"),
        };
        html.raw("<tr><td>")
            .text(&c.key.to_string())
            .raw("</td><td>")
            .text(&c.key.channel)
            .raw("</td><td>")
            .text(&profile.name)
            .raw("</td><td>")
            .text(&model)
            .raw("</td><td>")
            .text(&format!("{} ago", span(now - c.last_activity)))
            .raw(&format!(
                "</td><td>{}</td><td><span class=\"state {class}\">{state}</span></td><td>",
                c.queued
            ));
        if c.running || c.queued > 0 {
            html.form(&format!("{base}/conversations/stop"), csrf, "inline")
                .hidden("conversation", &c.key.to_string())
                .raw("<button class=\"deny\">/stop</button></form>");
        }
        html.raw("</td></tr>");
    }
    html.raw("</tbody></table>");
    Ok(html.finish())
}
