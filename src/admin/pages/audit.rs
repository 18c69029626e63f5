//! The audit log, newest first, filtered by tool, decision and who decided, a page at a
//! time. Arguments and output are shown as stored: scrubbed when recorded, and scrubbed
//! again here with today's secrets.

use crate::admin::html::{Html, when};
use crate::admin::{Admin, PageQuery};
use crate::store::AuditFilter;

/// Entries per page.
const PER_PAGE: usize = 50;
/// Characters of arguments or output shown per entry.
const SHOWN: usize = 240;

#[expect(
    clippy::too_many_lines,
    reason = "one page's markup, read top to bottom as it appears"
)]
pub(super) async fn render(admin: &Admin, query: &PageQuery) -> anyhow::Result<String> {
    let filled = |v: &Option<String>| {
        v.as_deref()
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let filter = AuditFilter {
        tool: filled(&query.tool),
        decision: filled(&query.decision),
        decided_by: filled(&query.who),
    };
    let page = query.page.unwrap_or(0);
    // One more than a page, to know whether a next page exists.
    let mut entries = admin
        .store
        .audit_page(&filter, page * PER_PAGE, PER_PAGE + 1)
        .await?;
    let more = entries.len() > PER_PAGE;
    entries.truncate(PER_PAGE);
    let base = admin.base();
    let mut html = Html::new(&admin.scrubber);
    html.raw(&format!(
        "<form method=\"get\" class=\"filters\" action=\"{base}/audit\">"
    ));
    for (name, label, value) in [
        ("tool", "Tool", &filter.tool),
        ("decision", "Decision", &filter.decision),
        ("who", "Decided by", &filter.decided_by),
    ] {
        html.raw(&format!("<label>{label} <input name=\"{name}\" value=\""))
            .text(value.as_deref().unwrap_or_default())
            .raw("\"></label>");
    }
    html.raw("<button>Filter</button></form>");
    if entries.is_empty() {
        html.el("p", "empty", "No audit entries match.");
    } else {
        html.raw("<table class=\"audit\"><thead><tr><th>When</th><th>Conversation</th><th>Tool</th><th>Decision</th><th>By</th><th>Status</th><th>ms</th><th>Call</th></tr></thead><tbody>");
        for e in &entries {
            html.raw("<tr><td>")
                .text(&when(e.created_at))
                .raw("</td><td>")
                .text(&e.conversation.to_string())
                .raw("</td><td><code>")
                .text(&e.tool)
                .raw("</code></td><td>")
                .text(&e.decision)
                .raw("</td><td>")
                .text(e.decided_by.as_deref().unwrap_or("—"))
                .raw("</td><td>")
                .text(&e.status)
                .raw(&format!(
                    "</td><td>{}</td><td><code class=\"args\">",
                    e.duration_ms
                ))
                .text(&cut(&e.args))
                .raw("</code></td></tr>");
        }
        html.raw("</tbody></table>");
    }
    html.raw("<nav class=\"pages\">");
    let link = |p: usize| {
        let mut q = vec![format!("page={p}")];
        for (name, value) in [
            ("tool", &filter.tool),
            ("decision", &filter.decision),
            ("who", &filter.decided_by),
        ] {
            if let Some(v) = value {
                q.push(format!(
                    "{name}={}",
                    percent_encoding::utf8_percent_encode(v, percent_encoding::NON_ALPHANUMERIC)
                ));
            }
        }
        format!("{base}/audit?{}", q.join("&amp;"))
    };
    if page > 0 {
        html.raw(&format!(
            "<a rel=\"prev\" href=\"{}\">← newer</a>",
            link(page - 1)
        ));
    }
    html.raw(&format!("<span>page {}</span>", page + 1));
    if more {
        html.raw(&format!(
            "<a rel=\"next\" href=\"{}\">older →</a>",
            link(page + 1)
        ));
    }
    html.raw("</nav>");
    Ok(html.finish())
}

/// The first [`SHOWN`] characters of `text`, marked when cut.
fn cut(text: &str) -> String {
    match text.char_indices().nth(SHOWN) {
        Some((i, _)) => format!("{}…", &text[..i]),
        None => text.to_owned(),
    }
}
