//! Short answers: private Telegram messages, each answered with one short reply streamed
//! within 300 ms (4 characters every 25 ms); how long from the update to the complete answer
//! in the chat, and how many platform calls each answer took (one send is the goal).

use std::time::{Duration, Instant};

use serde_json::Value;
use switchboard_standins::Reply;
use switchboard_standins::telegram::{FakeUser, TelegramCall, UserMessage};

use super::{Env, launch, note, wait_turns};
use crate::report::{Measurement, Target};
use crate::stats::{ms, percentile};

const NAME: &str = "short-answer";
/// The first private chat (= user id); chat `i` is `FIRST_CHAT + i`.
const FIRST_CHAT: i64 = 710_001;
/// The answer every chat gets: shorter than the default `chunk_min_chars` (80).
const ANSWER: &str = "Sure, that works: see you at ten tomorrow.";
/// Characters per streamed chunk and the pause between chunks (11 chunks, 250 ms).
const CHUNK_CHARS: usize = 4;
const CHUNK_EVERY: Duration = Duration::from_millis(25);
/// Time between two chats' messages (the chats overlap, as they would in a busy gateway).
const SPACING: Duration = Duration::from_millis(50);

/// One run over `settings.short_answer_chats` chats.
pub async fn run(env: &Env) -> anyhow::Result<Vec<Measurement>> {
    let chats = env.settings.short_answer_chats.max(1);
    let running = launch(env, 300).await?;
    let (llm, telegram) = (&running.stands.llm, &running.stands.telegram);
    for _ in 0..chats {
        llm.push(Reply::paced(ANSWER, CHUNK_CHARS, CHUNK_EVERY));
    }
    let mut sent_at = Vec::with_capacity(chats);
    for i in 0..chats {
        let chat = FIRST_CHAT + i as i64;
        let user = FakeUser::human(chat as u64, "loadgen");
        sent_at.push(Instant::now());
        telegram.inject(&UserMessage::private(user, "Does ten tomorrow work?"));
        tokio::time::sleep(SPACING).await;
    }
    wait_turns(&running.gateway, chats as f64, Duration::from_secs(30)).await?;
    tokio::time::sleep(Duration::from_millis(500)).await;

    let calls = telegram.calls();
    let (mut latencies, mut per_answer) = (Vec::new(), Vec::new());
    for (i, sent) in sent_at.iter().enumerate() {
        let chat = FIRST_CHAT + i as i64;
        let draft: Vec<&TelegramCall> = calls
            .iter()
            .filter(|c| chat_of(&c.params) == Some(chat))
            .filter(|c| c.method == "sendMessage" || c.method == "editMessageText")
            .collect();
        per_answer.push(draft.len() as f64);
        let complete = draft.iter().find(|c| {
            c.outcome.is_ok() && c.params["text"].as_str().map(str::trim) == Some(ANSWER)
        });
        match complete {
            Some(c) => latencies.push(ms(c.at.into_std().saturating_duration_since(*sent))),
            None => anyhow::bail!("chat {chat} never showed the complete answer: {draft:?}"),
        }
    }
    let p = |samples: &[f64], q| percentile(samples, q).unwrap_or(f64::NAN);
    let one_send = per_answer.iter().filter(|n| **n == 1.0).count();
    note(format!(
        "{NAME}: {chats} chats, update → complete p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; \
         {one_send} answered in one call",
        p(&latencies, 50.0),
        p(&latencies, 99.0),
        p(&latencies, 100.0),
    ));
    Ok(vec![
        Measurement::new(
            NAME,
            "update → complete answer in the chat, p50 (streamed within 300 ms)",
            "ms",
            p(&latencies, 50.0),
        )
        .target(Target::AtMost(350.0)),
        Measurement::new(
            NAME,
            "update → complete answer in the chat, p99",
            "ms",
            p(&latencies, 99.0),
        ),
        Measurement::new(
            NAME,
            "platform calls per short answer (sendMessage + editMessageText), mean",
            "",
            per_answer.iter().sum::<f64>() / per_answer.len() as f64,
        )
        .target(Target::Exactly(1.0)),
    ])
}

/// The `chat_id` of a call, sent as a number (JSON) or a string (form).
fn chat_of(params: &Value) -> Option<i64> {
    let id = params.get("chat_id")?;
    id.as_i64().or_else(|| id.as_str()?.parse().ok())
}
