//! Pending approvals, each with its call (scrubbed, as the prompt showed it), why the
//! policy asked, who asked and when it expires, and Approve / Deny; then recent decisions,
//! which show who decided but never the call: once decided, the store forgets it.

use crate::admin::Admin;
use crate::admin::html::{Html, span, when};
use crate::ids::ApprovalStatus;

/// How many decided approvals are listed under the pending ones.
const RECENT: usize = 20;

#[expect(
    clippy::too_many_lines,
    reason = "one page's markup, read top to bottom as it appears"
)]
pub(super) async fn render(admin: &Admin, csrf: &str) -> anyhow::Result<String> {
    let now = admin.clock.now_ms();
    let mut pending = admin.store.pending_approvals().await?;
    pending.sort_by_key(|a| a.created_at);
    let base = admin.base();
    let mut html = Html::new(&admin.scrubber);
    html.raw("<section id=\"pending\"><h2>Waiting for a decision</h2>");
    if pending.is_empty() {
        html.el("p", "empty", "Nothing waits for approval.");
    }
    for a in &pending {
        html.raw("<article class=\"approval\"><header><code class=\"tool\">")
            .text(&a.tool)
            .raw("</code> in <span class=\"conv\">")
            .text(&a.conversation.to_string())
            .raw("</span></header><pre class=\"call\">")
            .text(&a.args)
            .raw("</pre><p class=\"reason\">")
            .text(&a.reason)
            .raw("</p><p class=\"meta\">asked by ")
            .text(&a.requester)
            .raw(" · ")
            .text(&format!("{} ago", span(now - a.created_at)))
            .raw(" · expires in ")
            .text(&span(a.expires_at - now))
            .raw("</p>");
        html.form(&format!("{base}/approvals/decide"), csrf, "actions")
            .hidden("id", a.id.as_str())
            .hidden("conversation", &a.conversation.to_string())
            .raw("<button name=\"action\" value=\"approve\" class=\"approve\">Approve</button>")
            .raw("<button name=\"action\" value=\"deny\" class=\"deny\">Deny</button></form></article>");
    }
    html.raw("</section><section><h2>Recently decided</h2>");
    let decided: Vec<_> = admin
        .store
        .list_approvals(false, RECENT + pending.len())
        .await?
        .into_iter()
        .filter(|a| a.status != ApprovalStatus::Pending)
        .take(RECENT)
        .collect();
    if decided.is_empty() {
        html.el("p", "empty", "No decisions yet.");
    } else {
        html.raw("<table><thead><tr><th>When</th><th>Conversation</th><th>Tool</th><th>Outcome</th><th>Decided by</th><th>Asked by</th></tr></thead><tbody>");
        for a in decided {
            html.raw("<tr><td>")
                .text(&when(a.created_at))
                .raw("</td><td>")
                .text(&a.conversation.to_string())
                .raw("</td><td><code>")
                .text(&a.tool)
                .raw(&format!(
                    "</code></td><td><span class=\"state {}\">",
                    a.status
                ))
                .text(&a.status.to_string())
                .raw("</span></td><td>")
                .text(a.decided_by.as_deref().unwrap_or("—"))
                .raw("</td><td>")
                .text(&a.requester)
                .raw("</td></tr>");
        }
        html.raw("</tbody></table>");
    }
    html.raw("</section>");
    Ok(html.finish())
}
