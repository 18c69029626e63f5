//! Usage per day as a chart (tokens and tool runs, drawn as inline SVG on the server: no
//! script, no external asset), then the span's totals (with the characters spoken as voice
//! notes) per conversation, per user and per profile (a conversation's usage counted under the profile it uses now).

use std::collections::BTreeMap;

use switchboard_channel::ConversationKey;

use crate::admin::html::Html;
use crate::admin::{Admin, PageQuery};
use crate::store::{ScopeDay, Used};

/// Days shown unless the query asks for another span (1 to [`MAX_DAYS`]).
const DAYS: i64 = 14;
const MAX_DAYS: i64 = 90;
const DAY_MS: i64 = 86_400_000;
/// Rows per totals table.
const TOP: usize = 15;

pub(super) async fn render(admin: &Admin, query: &PageQuery) -> anyhow::Result<String> {
    let days = query.days.unwrap_or(DAYS).clamp(1, MAX_DAYS);
    let today = admin.clock.now_ms().div_euclid(DAY_MS);
    let first = today - days + 1;
    let rows = admin.store.usage_since(first).await?;
    let mut per_day: BTreeMap<i64, Used> = (first..=today).map(|d| (d, Used::default())).collect();
    let mut conversations: BTreeMap<String, Used> = BTreeMap::new();
    let mut users: BTreeMap<String, Used> = BTreeMap::new();
    let mut profiles: BTreeMap<String, Used> = BTreeMap::new();
    let resolver = admin.registry.deps().agents.profiles();
    for ScopeDay { scope, day, used } in &rows {
        if let Some(key) = scope.strip_prefix("conversation:") {
            // Each turn counts under its conversation and its user: days sum one of them.
            add(per_day.entry(*day).or_default(), *used);
            add(conversations.entry(key.to_owned()).or_default(), *used);
            if let Ok(key) = key.parse::<ConversationKey>() {
                let name = resolver.for_key(&key).name.clone();
                add(profiles.entry(name).or_default(), *used);
            }
        } else if let Some(user) = scope.strip_prefix("user:") {
            add(users.entry(user.to_owned()).or_default(), *used);
        }
    }
    let base = admin.base();
    let mut html = Html::new(&admin.scrubber);
    html.raw("<nav class=\"span\">");
    for span in [7, 14, 30, 90] {
        let mark = if span == days {
            " aria-current=\"page\""
        } else {
            ""
        };
        html.raw(&format!(
            "<a href=\"{base}/usage?days={span}\"{mark}>{span} days</a>"
        ));
    }
    html.raw("</nav>");
    let series: Vec<(i64, Used)> = per_day.into_iter().collect();
    html.raw("<section><h2>Tokens per day</h2>")
        .raw(&chart(&series, |u| u.tokens, "tokens"))
        .raw("</section><section><h2>Tool runs per day</h2>")
        .raw(&chart(&series, |u| u.tool_runs, "runs"))
        .raw("</section><div class=\"columns\">");
    totals(&mut html, "Per conversation", &conversations);
    totals(&mut html, "Per user", &users);
    totals(&mut html, "Per profile", &profiles);
    html.raw("</div>");
    Ok(html.finish())
}

fn add(to: &mut Used, used: Used) {
    to.tokens += used.tokens;
    to.tool_runs += used.tool_runs;
    to.spoken_chars += used.spoken_chars;
}

/// A bar per day, scaled to the span's largest figure; each bar's title gives its figure.
fn chart(series: &[(i64, Used)], figure: impl Fn(&Used) -> i64, unit: &str) -> String {
    const W: i64 = 720;
    const H: i64 = 160;
    const TOP_PAD: i64 = 16;
    const AXIS: i64 = 18;
    let max = series
        .iter()
        .map(|(_, u)| figure(u))
        .max()
        .unwrap_or(0)
        .max(1);
    let n = series.len().max(1) as i64;
    let slot = W / n;
    let bar = (slot * 3 / 4).max(1);
    let mut svg = format!(
        "<svg class=\"chart\" viewBox=\"0 0 {W} {}\" role=\"img\" aria-label=\"{unit} per day\">",
        H + AXIS
    );
    svg.push_str(&format!(
        "<line class=\"axis\" x1=\"0\" y1=\"{H}\" x2=\"{W}\" y2=\"{H}\"></line>\
         <text class=\"max\" x=\"2\" y=\"11\">{max} {unit}</text>"
    ));
    let label_every = (n / 7).max(1);
    for (i, (day, used)) in series.iter().enumerate() {
        let i = i as i64;
        let value = figure(used);
        let height = value * (H - TOP_PAD) / max;
        let x = i * slot + (slot - bar) / 2;
        let date = date_of(*day);
        svg.push_str(&format!(
            "<rect class=\"bar\" x=\"{x}\" y=\"{}\" width=\"{bar}\" height=\"{height}\"><title>{date}: {value} {unit}</title></rect>",
            H - height
        ));
        if i % label_every == 0 {
            svg.push_str(&format!(
                "<text class=\"day\" x=\"{}\" y=\"{}\">{}</text>",
                x,
                H + 14,
                &date[5..]
            ));
        }
    }
    svg.push_str("</svg>");
    svg
}

/// `2026-01-31` for a day number.
fn date_of(day: i64) -> String {
    jiff::Timestamp::from_millisecond(day * DAY_MS)
        .map(|t| t.strftime("%Y-%m-%d").to_string())
        .unwrap_or_else(|_| day.to_string())
}

/// The largest [`TOP`] rows of `by`, by tokens.
fn totals(html: &mut Html<'_>, title: &str, by: &BTreeMap<String, Used>) {
    let mut rows: Vec<(&String, &Used)> = by.iter().collect();
    rows.sort_by(|a, b| b.1.tokens.cmp(&a.1.tokens).then(a.0.cmp(b.0)));
    html.raw("<section><h2>").text(title).raw("</h2>");
    if rows.is_empty() {
        html.el("p", "empty", "Nothing used in this span.");
    } else {
        html.raw(
            "<table><thead><tr><th></th><th>Tokens</th><th>Tool runs</th><th>Characters spoken</th></tr></thead><tbody>",
        );
        for (name, used) in rows.into_iter().take(TOP) {
            html.raw("<tr><td>").text(name).raw(&format!(
                "</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                used.tokens, used.tool_runs, used.spoken_chars
            ));
        }
        html.raw("</tbody></table>");
    }
    html.raw("</section>");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chart_scales_bars_to_the_largest_day_and_labels_them() {
        let series = vec![
            (
                20_000,
                Used {
                    tokens: 100,
                    tool_runs: 0,
                    ..Used::default()
                },
            ),
            (
                20_001,
                Used {
                    tokens: 50,
                    tool_runs: 2,
                    ..Used::default()
                },
            ),
        ];
        let svg = chart(&series, |u| u.tokens, "tokens");
        assert!(svg.contains("height=\"144\""), "{svg}");
        assert!(svg.contains("height=\"72\""), "{svg}");
        assert!(
            svg.contains("<title>2024-10-05: 50 tokens</title>"),
            "{svg}"
        );
        let empty = chart(&[(20_000, Used::default())], |u| u.tool_runs, "runs");
        assert!(
            empty.contains("height=\"0\""),
            "no division by zero: {empty}"
        );
    }
}
