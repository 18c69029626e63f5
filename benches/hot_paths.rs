//! Micro-benchmarks of the gateway's hot paths: the inbox insert every event goes through,
//! the draft renderer every answer goes through, and the splitter.
//! Run with `cargo bench --bench hot_paths`; figures go to BENCHMARKS.md.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use switchboard::agent::AgentEvent;
use switchboard::agent::parse_tool_calls;
use switchboard::clock::Clock;
use switchboard::draft::{Draft, DraftSettings};
use switchboard::ids::InboxKind;
use switchboard::scrub::Scrubber;
use switchboard::store;
use switchboard_channel::{
    ChannelEvent, ConversationKey, Inbound, LengthUnit, Limits, UserRef, split_message,
};
use switchboard_standins::FakeChannel;
use tokio::runtime::Runtime;

fn inbox_insert(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let store = rt
        .block_on(store::connect(&format!(
            "sqlite://{}/bench.db",
            dir.path().display()
        )))
        .unwrap();
    let key = ConversationKey::new("bench", "chat");
    let n = AtomicU64::new(0);
    c.bench_function("inbox_insert_sqlite", |b| {
        b.to_async(&rt).iter(|| {
            let id = n.fetch_add(1, Ordering::Relaxed);
            let event = ChannelEvent::Message(Inbound {
                key: key.clone(),
                event_id: format!("evt-{id}"),
                user: UserRef {
                    id: "u1".into(),
                    name: None,
                },
                text: "hello there, how are you today?".into(),
                place: switchboard_channel::Place::Direct,
                attachments: Vec::new(),
            });
            let store = Arc::clone(&store);
            async move {
                store
                    .insert_event(&event, InboxKind::Message, Clock::wall().now_ms())
                    .await
                    .unwrap()
            }
        })
    });
}

/// One 2,000-character answer streamed as 500 four-character deltas through a draft.
fn draft_render(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let limits = Limits {
        min_edit_interval: Duration::ZERO,
        ..Limits::default()
    };
    let settings = DraftSettings {
        chunk_min_chars: 80,
        min_interval: Duration::ZERO,
        first_send_hold: Duration::ZERO,
    };
    let key = ConversationKey::new("bench", "chat");
    c.bench_function("draft_render_2000_chars", |b| {
        b.to_async(&rt).iter_batched(
            || FakeChannel::with_limits("bench", limits.clone(), None),
            |channel| {
                let key = key.clone();
                async move {
                    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                    for _ in 0..500 {
                        tx.send(Box::new(AgentEvent::TextChunk("abc ".into())))
                            .unwrap();
                    }
                    tx.send(Box::new(AgentEvent::Final("abc ".repeat(500))))
                        .unwrap();
                    Draft::new(channel, key, settings, Vec::new(), None)
                        .drive(rx)
                        .await
                        .unwrap()
                }
            },
            BatchSize::SmallInput,
        )
    });
}

fn splitter(c: &mut Criterion) {
    let code: String = (0..300).map(|i| format!("let x{i} = {i};\n")).collect();
    let text = format!(
        "{}\n\n```rust\n{code}```\n\n{}",
        "word ".repeat(2000),
        "end ".repeat(500)
    );
    c.bench_function("split_20k_chars_telegram", |b| {
        b.iter(|| split_message(&text, 4096, LengthUnit::Utf16))
    });
}

/// 1 MiB of mixed log-like text: mostly clean lines, some with credentials.
fn scrub_1mib(c: &mut Criterion) {
    let scrubber = Scrubber::new(["configured-bench-secret-value"]);
    let lines = [
        "2026-11-30T06:00:00Z INFO request handled path=/api/v1/items status=200 took=12ms\n",
        "let result = compute(&input).await?; // nothing secret here at all\n",
        "export OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345\n",
        "Authorization: Bearer abcdef.ghijkl-mnopqr\n",
        "the configured-bench-secret-value appeared in output\n",
        "plain prose about tokens and passwords without values in it\n",
    ];
    let mut input = String::new();
    let mut i = 0;
    while input.len() < 1 << 20 {
        // Credentials on roughly one line in ten.
        let line = if i % 10 == 0 {
            lines[2 + (i / 10) % 3]
        } else {
            lines[[0, 1, 5][i % 3]]
        };
        input.push_str(line);
        i += 1;
    }
    let mut group = c.benchmark_group("scrub");
    group.throughput(Throughput::Bytes(input.len() as u64));
    group.bench_function("scrub_1mib_mixed", |b| {
        b.iter(|| scrubber.scrub(&input).len())
    });
    group.finish();
}

fn tool_call_parsing(c: &mut Criterion) {
    let text = format!(
        "{}\n<tool_call>{{\"name\": \"shell\", \"arguments\": {{\"command\": \"ls -la\"}}}}</tool_call>",
        "Let me look at the directory first. ".repeat(20)
    );
    c.bench_function("parse_tool_calls_800_chars", |b| {
        b.iter(|| parse_tool_calls(&text, &["shell"]))
    });
}

criterion_group!(
    benches,
    inbox_insert,
    draft_render,
    splitter,
    scrub_1mib,
    tool_call_parsing
);
criterion_main!(benches);
