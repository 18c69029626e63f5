//! Several real gateway processes on one PostgreSQL database, under faults: events spread
//! over every replica's port, the Telegram leader killed or drained, the replica streaming
//! an answer killed or paused past its lease. Each test skips (with a notice)
//! without PostgreSQL, unless `SWITCHBOARD_REQUIRE_POSTGRES=1`.

mod approval;
mod db;
mod db_cut;
mod harness;
mod slack_spread;
mod takeover;
mod telegram_leader;
mod web;

use std::collections::BTreeMap;

/// The text of the last user message of each LLM request (the stand-in echoes it back).
fn asked(llm: &switchboard_standins::FakeLlm) -> Vec<String> {
    llm.requests()
        .iter()
        .filter_map(|body| {
            let messages = body["messages"].as_array()?;
            let last = messages.iter().rev().find(|m| m["role"] == "user")?;
            last["content"].as_str().map(str::to_owned)
        })
        .collect()
}

/// How many times each of `markers` occurs across `texts` (a text counts once per marker).
fn tally(markers: &[String], texts: &[String]) -> BTreeMap<String, usize> {
    markers
        .iter()
        .map(|m| {
            let n = texts.iter().filter(|t| contains_word(t, m)).count();
            (m.clone(), n)
        })
        .collect()
}

/// Whether `text` contains `marker` not followed by another digit (`c1 m1` is not in `c1 m10`).
fn contains_word(text: &str, marker: &str) -> bool {
    text.match_indices(marker).any(|(at, _)| {
        !text[at + marker.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_digit())
    })
}

/// Markers seen other than exactly once, as `marker → count`.
fn not_once(counts: &BTreeMap<String, usize>) -> BTreeMap<String, usize> {
    counts
        .iter()
        .filter(|(_, n)| **n != 1)
        .map(|(m, n)| (m.clone(), *n))
        .collect()
}
