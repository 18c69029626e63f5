//! The first-send hold, with paused time: a short answer goes out whole in one send, a long
//! one at the chunk threshold, a slow one when the hold ends, and tool progress at once.
//! On platforms without edits: finished paragraphs in ordered pieces, or one message.

use std::sync::Arc;
use std::time::Duration;

use switchboard_channel::{AnswerDelivery, Channel, ConversationKey, Limits};
use switchboard_standins::{FakeChannel, Op};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

use super::{Draft, DraftOutcome, DraftSettings};
use crate::agent::AgentEvent;
use crate::policy::Decision;

const HOLD: Duration = Duration::from_millis(400);

/// A Telegram-like chat (one edit a second) and a draft over it; events go into the sender.
fn start(fake: &Arc<FakeChannel>) -> (mpsc::UnboundedSender<AgentEvent>, JoinHandle<DraftOutcome>) {
    let channel: Arc<dyn Channel> = fake.clone();
    let settings = DraftSettings {
        chunk_min_chars: 80,
        min_interval: Duration::from_millis(500),
        first_send_hold: HOLD,
    };
    let draft = Draft::new(channel, key(), settings, Vec::new(), None);
    // The turn boxes its events; these tests send them plain, in order.
    let (tx, mut plain) = mpsc::unbounded_channel::<AgentEvent>();
    let (boxed, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(event) = plain.recv().await {
            if boxed.send(Box::new(event)).is_err() {
                break;
            }
        }
    });
    let task = tokio::spawn(async move { draft.drive(rx).await.expect("delivered") });
    (tx, task)
}

/// A chat whose platform cannot edit: `delivery` says how answers go out instead.
fn without_edits(delivery: AnswerDelivery) -> Arc<FakeChannel> {
    let limits = Limits {
        min_edit_interval: Duration::ZERO,
        max_message_len: 500,
        delivery,
        ..Limits::default()
    };
    FakeChannel::with_limits("fake", limits, None)
}

fn telegram_like() -> Arc<FakeChannel> {
    let limits = Limits {
        min_edit_interval: Duration::from_secs(1),
        ..Limits::default()
    };
    FakeChannel::with_limits("fake", limits, None)
}

fn key() -> ConversationKey {
    ConversationKey::new("fake", "c1")
}

fn text(t: &str) -> AgentEvent {
    AgentEvent::TextChunk(t.to_owned())
}

#[tokio::test(start_paused = true)]
async fn a_short_answer_streamed_within_the_hold_is_one_send_with_the_full_text() {
    let fake = telegram_like();
    let t0 = Instant::now();
    let (tx, task) = start(&fake);
    for chunk in ["You ", "said: ", "me", "ssage ", "received."] {
        tx.send(text(chunk)).unwrap();
        sleep(Duration::from_millis(50)).await;
    }
    tx.send(AgentEvent::Final("You said: message received.".into()))
        .unwrap();
    let outcome = task.await.unwrap();
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].op, Op::Send);
    assert_eq!(writes[0].text, "You said: message received.");
    assert!(
        writes[0].at - t0 < HOLD,
        "sent when the answer ended, not after the hold"
    );
    assert_eq!((outcome.sends, outcome.edits), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_long_answer_is_sent_at_the_chunk_threshold_before_the_hold_ends() {
    let fake = telegram_like();
    let t0 = Instant::now();
    let (tx, task) = start(&fake);
    tx.send(text(&"a".repeat(50))).unwrap();
    sleep(Duration::from_millis(100)).await;
    assert!(fake.writes().is_empty(), "50 characters are held");
    tx.send(text(&"b".repeat(40))).unwrap();
    sleep(Duration::from_millis(10)).await;
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].op, Op::Send);
    // The holdback may keep the last characters back (a credential's possible start).
    let shown = &writes[0].text;
    assert!(shown.chars().count() >= 80, "{shown:?}");
    assert!(format!("{}{}", "a".repeat(50), "b".repeat(40)).starts_with(shown.as_str()));
    assert!(writes[0].at - t0 < Duration::from_millis(150));
    tx.send(AgentEvent::Final(format!(
        "{}{}",
        "a".repeat(50),
        "b".repeat(40)
    )))
    .unwrap();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn when_the_hold_ends_before_the_answer_what_is_there_is_sent() {
    let fake = telegram_like();
    let t0 = Instant::now();
    let (tx, task) = start(&fake);
    tx.send(text("Thinking about ")).unwrap();
    sleep(Duration::from_millis(50)).await;
    tx.send(text("it")).unwrap();
    sleep(Duration::from_millis(600)).await;
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    let shown = &writes[0].text;
    assert!(shown.starts_with("Thinking about "), "{shown:?}");
    assert!("Thinking about it".starts_with(shown.as_str()), "{shown:?}");
    assert_eq!(writes[0].at - t0, HOLD, "sent exactly when the hold ended");
    tx.send(AgentEvent::Final("Thinking about it: done.".into()))
        .unwrap();
    let outcome = task.await.unwrap();
    assert_eq!((outcome.sends, outcome.edits), (1, 1));
    assert_eq!(fake.transcript(&key()), ["Thinking about it: done."]);
}

#[tokio::test(start_paused = true)]
async fn tool_progress_is_shown_at_once_not_held() {
    let fake = telegram_like();
    let t0 = Instant::now();
    let (tx, task) = start(&fake);
    tx.send(AgentEvent::ToolStarted {
        id: "t1".into(),
        name: "shell".into(),
        summary: "ls".into(),
        args: serde_json::json!({"command": "ls"}),
        decision: Decision::ungated(),
    })
    .unwrap();
    sleep(Duration::from_millis(1)).await;
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].text, "⏳ shell: ls");
    assert!(writes[0].at - t0 < Duration::from_millis(1));
    tx.send(AgentEvent::Final("done".into())).unwrap();
    task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_empty_stream_is_not_held_and_the_final_answer_goes_out_at_once() {
    let fake = telegram_like();
    let t0 = Instant::now();
    let (tx, task) = start(&fake);
    tx.send(text("   ")).unwrap();
    tx.send(AgentEvent::Final("ok".into())).unwrap();
    let outcome = task.await.unwrap();
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].text, "ok");
    assert_eq!(writes[0].at, t0);
    assert_eq!(outcome.sends, 1);
}

const CHUNKS: AnswerDelivery = AnswerDelivery::Chunks { min_chunk: 100 };

/// A paragraph of `n` copies of `word`, words separated by spaces.
fn paragraph(word: &str, n: usize) -> String {
    vec![word; n].join(" ")
}

#[tokio::test(start_paused = true)]
async fn without_edits_a_short_answer_is_one_message_when_the_turn_ends() {
    let fake = without_edits(CHUNKS);
    let (tx, task) = start(&fake);
    tx.send(text("Short ")).unwrap();
    sleep(Duration::from_secs(5)).await;
    assert!(fake.writes().is_empty(), "nothing is sent before the end");
    tx.send(text("answer.")).unwrap();
    tx.send(AgentEvent::Final("Short answer.".into())).unwrap();
    let outcome = task.await.unwrap();
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].op, Op::Send);
    assert_eq!(writes[0].text, "Short answer.");
    assert_eq!((outcome.sends, outcome.edits), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn without_edits_finished_paragraphs_go_out_in_order_as_they_finish() {
    let fake = without_edits(CHUNKS);
    let (tx, task) = start(&fake);
    let (one, two, three) = (
        paragraph("one", 30),
        paragraph("two", 30),
        paragraph("three", 5),
    );
    tx.send(text(&format!("{one}\n\n{}", &two[..20]))).unwrap();
    sleep(Duration::from_millis(10)).await;
    let writes = fake.writes();
    assert_eq!(
        writes.len(),
        1,
        "the first paragraph went out when it ended: {writes:#?}"
    );
    assert_eq!(writes[0].text, one);
    tx.send(text(&format!("{}\n\n{three}", &two[20..])))
        .unwrap();
    sleep(Duration::from_millis(10)).await;
    assert_eq!(fake.writes().len(), 2, "the second too");
    tx.send(AgentEvent::Final(format!("{one}\n\n{two}\n\n{three}")))
        .unwrap();
    let outcome = task.await.unwrap();
    let writes = fake.writes();
    assert!(
        writes.iter().all(|w| w.op == Op::Send),
        "never an edit: {writes:#?}"
    );
    let texts: Vec<&str> = writes.iter().map(|w| w.text.as_str()).collect();
    assert_eq!(texts, [one.as_str(), two.as_str(), three.as_str()]);
    assert_eq!((outcome.sends, outcome.edits), (3, 0));
}

#[tokio::test(start_paused = true)]
async fn without_edits_a_code_fence_is_never_split_at_its_blank_lines() {
    let fake = without_edits(CHUNKS);
    let (tx, task) = start(&fake);
    let code = format!(
        "```\n{}\n\n{}\n```",
        paragraph("let", 30),
        paragraph("x", 30)
    );
    tx.send(text(&format!("{code}\n\nafter"))).unwrap();
    sleep(Duration::from_millis(10)).await;
    let writes = fake.writes();
    assert_eq!(writes.len(), 1, "{writes:#?}");
    assert_eq!(writes[0].text, code, "the whole fence, once it closed");
    tx.send(AgentEvent::Final(format!("{code}\n\nafter")))
        .unwrap();
    task.await.unwrap();
    let texts: Vec<String> = fake.writes().into_iter().map(|w| w.text).collect();
    assert_eq!(texts, [code, "after".to_owned()]);
}

#[tokio::test(start_paused = true)]
async fn whole_delivery_sends_a_long_streamed_answer_once_at_the_end() {
    let fake = without_edits(AnswerDelivery::Whole);
    let (tx, task) = start(&fake);
    let answer = format!("{}\n\n{}", paragraph("one", 40), paragraph("two", 40));
    tx.send(text(&answer)).unwrap();
    tx.send(AgentEvent::ToolStarted {
        id: "t1".into(),
        name: "shell".into(),
        summary: "ls".into(),
        args: serde_json::json!({"command": "ls"}),
        decision: Decision::ungated(),
    })
    .unwrap();
    sleep(Duration::from_secs(30)).await;
    assert!(fake.writes().is_empty(), "no pieces and no progress lines");
    tx.send(AgentEvent::Final(answer.clone())).unwrap();
    let outcome = task.await.unwrap();
    let texts: Vec<String> = fake.writes().into_iter().map(|w| w.text).collect();
    assert_eq!(texts, [answer]);
    assert_eq!((outcome.sends, outcome.edits), (1, 0));
}

/// A long answer streamed in 100-character steps, 600 ms apart, into a chat whose platform
/// allows `max_edits` edits per message; the outcome and the calls.
async fn stream_capped(max_edits: Option<u32>) -> (DraftOutcome, Vec<switchboard_standins::Call>) {
    let limits = Limits {
        min_edit_interval: Duration::ZERO,
        delivery: AnswerDelivery::Edits { max_edits },
        ..Limits::default()
    };
    let fake = FakeChannel::with_limits("fake", limits, None);
    let (tx, task) = start(&fake);
    let mut answer = String::new();
    for i in 0..8 {
        let piece = format!("{}{i} ", "x".repeat(98));
        answer.push_str(&piece);
        tx.send(text(&piece)).unwrap();
        sleep(Duration::from_millis(600)).await;
    }
    let answer = answer.trim_end().to_owned();
    tx.send(AgentEvent::Final(answer.clone())).unwrap();
    let outcome = task.await.unwrap();
    assert_eq!(fake.transcript(&key()), [answer]);
    (outcome, fake.writes())
}

#[tokio::test(start_paused = true)]
async fn a_capped_platform_keeps_its_last_edit_for_the_final_answer() {
    let (uncapped, _) = stream_capped(None).await;
    assert!(
        uncapped.edits > 2,
        "the stream would edit more: {uncapped:?}"
    );
    let (capped, writes) = stream_capped(Some(2)).await;
    let edits = writes.iter().filter(|w| w.op == Op::Edit).count();
    assert_eq!(edits, 2, "{writes:#?}");
    assert_eq!(capped.sends, 1);
}

#[tokio::test(start_paused = true)]
async fn a_draft_without_edits_left_is_replaced_by_the_answer_and_deleted() {
    let (outcome, writes) = stream_capped(Some(0)).await;
    assert!(writes.iter().all(|w| w.op != Op::Edit), "{writes:#?}");
    let ops: Vec<&Op> = writes.iter().map(|w| &w.op).collect();
    assert_eq!(
        ops,
        [&Op::Send, &Op::Send, &Op::Delete],
        "draft, answer, draft deleted"
    );
    assert_eq!(outcome.messages.len(), 1);
}
