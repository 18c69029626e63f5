//! Who may talk to the bot: people waiting with a pairing code (Allow / Refuse), and the
//! grants in the database (Revoke). The config's `allowed_users` come on top and are not
//! listed here.

use crate::admin::Admin;
use crate::admin::html::{Html, span, when};

#[expect(
    clippy::too_many_lines,
    reason = "one page's markup, read top to bottom as it appears"
)]
pub(super) async fn render(admin: &Admin, csrf: &str) -> anyhow::Result<String> {
    let now = admin.clock.now_ms();
    let base = admin.base();
    let requests = admin.store.pairing_requests(now).await?;
    let mut html = Html::new(&admin.scrubber);
    html.raw("<section id=\"pairing\"><h2>Pairing requests</h2>");
    if requests.is_empty() {
        html.el("p", "empty", "Nobody is waiting.");
    } else {
        html.raw("<table><thead><tr><th>Channel</th><th>Person</th><th>Code</th><th>Expires in</th><th></th></tr></thead><tbody>");
        for r in &requests {
            html.raw("<tr><td>")
                .text(&r.channel)
                .raw("</td><td>")
                .text(&who(&r.user_id, r.user_name.as_deref()))
                .raw("</td><td><code>")
                .text(&r.code)
                .raw("</code></td><td>")
                .text(&span(r.expires_at - now))
                .raw("</td><td>");
            for (action, label, class) in
                [("allow", "Allow", "approve"), ("refuse", "Refuse", "deny")]
            {
                html.form(&format!("{base}/access/{action}"), csrf, "inline")
                    .hidden("channel", &r.channel)
                    .hidden("code", &r.code)
                    .raw(&format!(
                        "<button class=\"{class}\">{label}</button></form>"
                    ));
            }
            html.raw("</td></tr>");
        }
        html.raw("</tbody></table>");
    }
    html.raw("</section><section><h2>Grants</h2>");
    let grants = admin.store.grants().await?;
    if grants.is_empty() {
        html.el(
            "p",
            "empty",
            "No grants (the config's allowed_users still apply).",
        );
    } else {
        html.raw("<table><thead><tr><th>Channel</th><th>Person</th><th>Role</th><th>Since</th><th></th></tr></thead><tbody>");
        for g in &grants {
            html.raw("<tr><td>")
                .text(&g.channel)
                .raw("</td><td>")
                .text(&who(&g.user_id, g.user_name.as_deref()))
                .raw("</td><td>")
                .text(&g.role.to_string())
                .raw("</td><td>")
                .text(&when(g.granted_at))
                .raw("</td><td>");
            html.form(&format!("{base}/access/revoke"), csrf, "inline")
                .hidden("channel", &g.channel)
                .hidden("user", &g.user_id)
                .raw("<button class=\"deny\">Revoke</button></form></td></tr>");
        }
        html.raw("</tbody></table>");
    }
    html.raw("</section>");
    Ok(html.finish())
}

fn who(id: &str, name: Option<&str>) -> String {
    match name {
        Some(name) => format!("{name} ({id})"),
        None => id.to_owned(),
    }
}
