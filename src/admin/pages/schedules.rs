//! Active schedules, the operator's `[[schedules]]` and those made in conversations, with
//! when each fires next (in its own zone).

use crate::admin::Admin;
use crate::admin::html::Html;
use crate::schedule::when;
use crate::store::JobSource;

pub(super) async fn render(admin: &Admin) -> anyhow::Result<String> {
    let mut list = admin.store.active_schedules(None).await?;
    list.sort_by_key(|s| s.next_fire_at.unwrap_or(i64::MAX));
    let schedules = &admin.registry.deps().schedules;
    let mut html = Html::new(&admin.scrubber);
    if list.is_empty() {
        html.el("p", "empty", "No active schedules.");
        return Ok(html.finish());
    }
    html.raw("<table><thead><tr><th>Name</th><th>From</th><th>Conversation</th><th>When</th><th>Next fire</th><th>Prompt</th></tr></thead><tbody>");
    for s in &list {
        let source = match s.job.source {
            JobSource::Config => "config",
            JobSource::Chat => "chat",
        };
        let next = s.next_fire_at.map_or_else(
            || "—".to_owned(),
            |at| format!("{} ({})", when::local(at, &s.job.zone), s.job.zone),
        );
        let name = s.job.name.clone().unwrap_or_else(|| format!("#{}", s.id));
        html.raw("<tr><td>")
            .text(&name)
            .raw("</td><td>")
            .text(source)
            .raw("</td><td>")
            .text(&s.job.conversation.to_string())
            .raw("</td><td>")
            .text(&schedules.describe(s))
            .raw("</td><td>")
            .text(&next)
            .raw("</td><td>")
            .text(s.job.prompt.lines().next().unwrap_or_default())
            .raw("</td></tr>");
    }
    html.raw("</tbody></table>");
    Ok(html.finish())
}
