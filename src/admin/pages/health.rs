//! The health page: the database, every channel's readiness, the sandbox's posture, MCP
//! servers, the replicas sharing the database with their heartbeat, what waits, and the
//! doctor's findings with their fixes.

use std::sync::Arc;
use std::time::Duration;

use crate::admin::Admin;
use crate::admin::html::{Html, span, when};
use crate::doctor::Severity;

/// How long the page waits for the database before saying it did not answer.
const DB_WAIT: Duration = Duration::from_millis(800);

pub(super) async fn render(admin: &Admin) -> anyhow::Result<String> {
    let mut html = Html::new(&admin.scrubber);
    html.raw("<section><h2>Readiness</h2><table><thead><tr><th>Check</th><th>State</th><th>Detail</th></tr></thead><tbody>");
    let db = match tokio::time::timeout(DB_WAIT, admin.store.ping()).await {
        Ok(Ok(())) => Ok("answers".to_owned()),
        Ok(Err(err)) => Err(err.to_string()),
        Err(_) => Err("no answer within 800 ms".to_owned()),
    };
    let (ok, detail) = match &db {
        Ok(d) => (true, d.as_str()),
        Err(d) => (false, d.as_str()),
    };
    row(&mut html, "database", ok, detail);
    for (name, health) in admin.health.channels.health() {
        row(
            &mut html,
            &format!("channel {name}"),
            health.ready,
            &health.detail,
        );
    }
    let sandbox = Arc::clone(&admin.health.sandbox);
    let posture = tokio::task::spawn_blocking(move || crate::sandbox::readyz_check(&sandbox)).await;
    let checks = posture
        .into_iter()
        .chain(admin.health.mcp.iter().flat_map(|m| m.readyz_checks()));
    for check in checks {
        let name = check["name"].as_str().unwrap_or("check");
        let detail = match &check["detail"] {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        row(
            &mut html,
            name,
            check["ok"].as_bool().unwrap_or(true),
            &detail,
        );
    }
    html.raw("</tbody></table></section>");
    if db.is_ok() {
        work(admin, &mut html).await?;
        replicas(admin, &mut html).await?;
    }
    findings(admin, &mut html).await;
    Ok(html.finish())
}

fn row(html: &mut Html<'_>, name: &str, ok: bool, detail: &str) {
    let (class, state) = if ok {
        ("ok", "ok")
    } else {
        ("bad", "not ready")
    };
    html.raw("<tr><td>")
        .text(name)
        .raw(&format!(
            "</td><td><span class=\"state {class}\">{state}</span></td><td>"
        ))
        .text(detail)
        .raw("</td></tr>");
}

/// What waits: inbox rows and approvals by state, live conversations on this replica.
async fn work(admin: &Admin, html: &mut Html<'_>) -> anyhow::Result<()> {
    let inbox = admin.store.inbox_counts().await?;
    let approvals = admin.store.approval_counts().await?;
    let figures = [
        ("events waiting", inbox.pending),
        ("events being answered", inbox.processing),
        ("events failed", inbox.failed),
        ("approvals pending", approvals.pending),
        ("conversations live here", admin.registry.active() as i64),
    ];
    html.raw("<section><h2>Work</h2><dl class=\"figures\">");
    let figures = figures.into_iter().map(|(label, n)| (label.to_owned(), n));
    for (label, n) in figures
        .chain(llm_calls(admin))
        .chain(memories(admin).await?)
    {
        html.raw("<div><dt>")
            .text(&label)
            .raw(&format!("</dt><dd>{n}</dd></div>"));
    }
    html.raw("</dl></section>");
    Ok(())
}

/// With recall by meaning: memories embedded with the configured model, and those waiting
/// for their vector (saved while the endpoint was down, or before a change of model).
/// Each provider's LLM calls in flight and waiting for a place under its `max_in_flight`.
fn llm_calls(admin: &Admin) -> Vec<(String, i64)> {
    let deps = admin.registry.deps();
    let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
    let mut out = Vec::new();
    for (name, bound) in deps.agents.profiles().in_flight() {
        let of = format!("of {}", bound.limit());
        out.push((
            format!("LLM calls in flight ({name}, {of})"),
            count(bound.in_flight()),
        ));
        out.push((
            format!("LLM calls waiting ({name})"),
            count(bound.waiting()),
        ));
    }
    out
}

async fn memories(admin: &Admin) -> anyhow::Result<Vec<(String, i64)>> {
    let Some(semantic) = admin.registry.deps().agents.semantic() else {
        return Ok(Vec::new());
    };
    let counts = admin.store.vector_counts(semantic.model()).await?;
    let down = i64::from(semantic.is_down());
    Ok(vec![
        ("memories embedded".into(), counts.embedded as i64),
        (
            "memories waiting for a vector".into(),
            counts.pending() as i64,
        ),
        ("embedding endpoint down".into(), down),
    ])
}

/// Every replica's heartbeat row (PostgreSQL); on SQLite the process is alone.
async fn replicas(admin: &Admin, html: &mut Html<'_>) -> anyhow::Result<()> {
    html.raw("<section><h2>Replicas</h2>");
    if !admin.store.shared() {
        html.el(
            "p",
            "muted",
            "One process on SQLite: there are no other replicas.",
        );
        html.raw("</section>");
        return Ok(());
    }
    let here = admin.registry.deps().lifecycle.owner().to_owned();
    let instances = admin.store.instances().await?;
    html.raw("<table><thead><tr><th>Instance</th><th>Started</th><th>Last heartbeat</th><th>State</th></tr></thead><tbody>");
    for i in instances {
        let state = if i.draining { "draining" } else { "running" };
        html.raw("<tr><td>").text(&i.id);
        if i.id == here {
            html.raw(" <span class=\"muted\">(this page)</span>");
        }
        html.raw("</td><td>")
            .text(&when(i.started_at))
            .raw("</td><td>")
            .text(&format!("{} ago", span(i.silent_ms)))
            .raw("</td><td>")
            .text(state)
            .raw("</td></tr>");
    }
    html.raw("</tbody></table></section>");
    Ok(())
}

async fn findings(admin: &Admin, html: &mut Html<'_>) {
    html.raw("<section><h2>Doctor</h2><ul class=\"findings\">");
    for f in admin.findings().await {
        let (class, label) = match f.severity {
            Severity::Critical => ("critical", "critical"),
            Severity::Warning => ("warning", "warning"),
            Severity::Note => ("note", "note"),
        };
        html.raw(&format!(
            "<li class=\"{class}\"><span class=\"sev\">{label}</span> "
        ))
        .text(&f.what)
        .raw("<div class=\"fix\">fix: ")
        .text(&f.fix)
        .raw("</div></li>");
    }
    html.raw("</ul></section>");
}
