//! Streaming efficiency: one private Telegram message answered with a long reply streamed at
//! 50 tokens/s (4 characters every 20 ms); the platform calls the draft made, the gaps
//! between them, the time from the first token to the first visible text, and 429s.

use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_standins::Reply;
use switchboard_standins::telegram::{FakeUser, TelegramCall, UserMessage};

use super::{Env, launch, note, wait_turns};
use crate::report::{Measurement, Target};
use crate::stats::ms;

const NAME: &str = "streaming";
/// The private chat (= user id) the message comes from.
const CHAT: i64 = 700_001;
/// Characters per streamed chunk (about one token) and the pause between chunks: 50/s.
const CHUNK_CHARS: usize = 4;
const CHUNK_EVERY: Duration = Duration::from_millis(20);

/// One run.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let running = launch(env, 300).await?;
    let (llm, telegram) = (&running.stands.llm, &running.stands.telegram);
    let answer = answer_text(env.settings.stream_chars);
    llm.push(Reply::paced(answer.clone(), CHUNK_CHARS, CHUNK_EVERY));
    let user = FakeUser::human(CHAT as u64, "loadgen");
    telegram.inject(&UserMessage::private(user, "Please write a long answer."));

    // The fake streams the first chunk as soon as the request arrives (no first delay), so
    // the request's arrival, polled every millisecond, stands for the first token.
    let deadline = Instant::now() + Duration::from_secs(30);
    let first_token = loop {
        if !llm.requests().is_empty() {
            break Instant::now();
        }
        anyhow::ensure!(Instant::now() < deadline, "the LLM was never called");
        tokio::time::sleep(Duration::from_millis(1)).await;
    };
    let stream_secs = (answer.len() / CHUNK_CHARS) as u64 * CHUNK_EVERY.as_millis() as u64 / 1000;
    wait_turns(&running.gateway, 1.0, Duration::from_secs(stream_secs + 30)).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let calls: Vec<TelegramCall> = telegram
        .calls()
        .into_iter()
        .filter(|c| chat_of(&c.params) == Some(CHAT))
        .collect();
    let draft: Vec<&TelegramCall> = calls
        .iter()
        .filter(|c| c.method == "sendMessage" || c.method == "editMessageText")
        .collect();
    let sends = draft.iter().filter(|c| c.method == "sendMessage").count();
    let edits = draft.len() - sends;
    let other = calls.len() - draft.len();
    let rate_limited = calls
        .iter()
        .filter(|c| {
            c.outcome
                .as_ref()
                .is_err_and(|e| e.starts_with("Too Many Requests"))
        })
        .count();
    // Visible text: any non-empty beginning of the answer (the first token counts).
    let first_visible = draft
        .iter()
        .find(|c| {
            c.params["text"]
                .as_str()
                .map(str::trim)
                .is_some_and(|t| !t.is_empty() && answer.starts_with(t))
        })
        .map(|c| ms(c.at.into_std().saturating_duration_since(first_token)));
    let times: Vec<Instant> = draft.iter().map(|c| c.at.into_std()).collect();
    let min_gap = times
        .windows(2)
        .map(|w| ms(w[1].duration_since(w[0])))
        .fold(f64::INFINITY, f64::min);
    let busiest_second = times
        .iter()
        .map(|t| {
            times
                .iter()
                .filter(|u| **u >= *t && u.duration_since(*t) < Duration::from_secs(1))
                .count()
        })
        .max()
        .unwrap_or(0);
    let timeline: Vec<String> = calls
        .iter()
        .take(6)
        .map(|c| {
            let text: String = c.params["text"]
                .as_str()
                .unwrap_or_default()
                .chars()
                .take(24)
                .collect();
            format!(
                "{} {text:?} @{:.0} ms",
                c.method,
                ms(c.at.into_std().saturating_duration_since(first_token))
            )
        })
        .collect();
    note(format!(
        "{NAME}: first calls after the first token: {}",
        timeline.join(", ")
    ));
    let shown = telegram
        .messages(CHAT)
        .last()
        .map(|m| m.text.clone())
        .unwrap_or_default();
    let complete = squeeze(&shown) == squeeze(&answer);
    note(format!(
        "{NAME}: {sends} sendMessage + {edits} editMessageText ({other} other calls), first text \
         {first_visible:?} ms after the first token, min gap {min_gap:.0} ms, {rate_limited} 429s, complete: {complete}"
    ));
    Ok(vec![
        Measurement::new(
            NAME,
            format!(
                "platform calls per {}-char reply (sendMessage + editMessageText)",
                answer.len()
            ),
            "",
            draft.len() as f64,
        ),
        Measurement::new(
            NAME,
            "shortest gap between two draft calls (≤ 1 edit per 500 ms)",
            "ms",
            min_gap,
        )
        .target(Target::AtLeast(500.0)),
        Measurement::new(
            NAME,
            "most draft calls in any 1 s (Telegram allows about 1/s per chat)",
            "",
            busiest_second as f64,
        ),
        Measurement::new(
            NAME,
            "first token → first visible text",
            "ms",
            first_visible.unwrap_or(f64::NAN),
        )
        .target(Target::AtMost(600.0)),
        Measurement::new(NAME, "429 answers", "", rate_limited as f64).target(Target::Exactly(0.0)),
        Measurement::new(
            NAME,
            "other calls in the chat (e.g. typing)",
            "",
            other as f64,
        ),
        Measurement::new(
            NAME,
            "final message equals the answer (1 = yes)",
            "",
            f64::from(u8::from(complete)),
        )
        .target(Target::Exactly(1.0)),
    ])
}

/// `chars` characters of plain prose (no Markdown), so the visible text equals the answer.
fn answer_text(chars: usize) -> String {
    let mut text = String::new();
    let mut n = 1;
    while text.len() < chars {
        text.push_str(&format!(
            "Streaming sentence number {n} carries a few more words. "
        ));
        n += 1;
    }
    text.truncate(chars);
    text
}

fn squeeze(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The `chat_id` of a call, sent as a number (JSON) or a string (form).
fn chat_of(params: &Value) -> Option<i64> {
    let id = params.get("chat_id")?;
    id.as_i64().or_else(|| id.as_str()?.parse().ok())
}
