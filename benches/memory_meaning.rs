//! Recall by meaning, measured. Two parts, each printed as a table for BENCHMARKS.md:
//!
//! - The retrieval evaluation (`benches/recall_eval/`): 40 paraphrase and 40 exact cases,
//!   their 80 facts in one scope, recall@5 by full text alone, vectors alone and hybrid,
//!   through the real all-MiniLM-L6-v2 model (`tests/embeddings`; skipped with a notice
//!   when it is not installed).
//! - Latency: hybrid recall's store work (the full-text query, the vector query, the fusion)
//!   at 1,000 / 10,000 / 100,000 memories in one scope, with random 384-value vectors, p50
//!   and p99 over repeated queries, on SQLite and on the PostgreSQL with pgvector that
//!   `SWITCHBOARD_TEST_PGVECTOR` names (`tests/pgvector/start`).
//!
//! Run with `cargo bench --bench memory_meaning` (`-- eval` or `-- latency` for one part).

use std::sync::Arc;
use std::time::{Duration, Instant};

use switchboard::ids::MemoryScope;
use switchboard::memory::{Embedder, Recaller, Semantic, Step, fuse};
use switchboard::store::{self, Memory, Store, VectorModel, search_words};
use switchboard_channel::ConversationKey;
use switchboard_standins::embeddings::{DIMS, MODEL, ModelServer};

const PARAPHRASE: &str = include_str!("recall_eval/paraphrase.tsv");
const EXACT: &str = include_str!("recall_eval/exact.tsv");

fn scope() -> MemoryScope {
    MemoryScope::Conversation(ConversationKey::new("bench", "meaning"))
}

fn cases(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let (fact, question) = l.split_once('\t').expect("fact<TAB>question");
            (fact.to_owned(), question.to_owned())
        })
        .collect()
}

fn main() {
    let part = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let runtime = tokio::runtime::Runtime::new().unwrap();
    if part.as_deref().is_none_or(|p| p == "eval") {
        runtime.block_on(evaluation());
    }
    if part.as_deref().is_none_or(|p| p == "latency") {
        runtime.block_on(latency());
    }
}

async fn evaluation() {
    let paraphrase = cases(PARAPHRASE);
    let exact = cases(EXACT);
    for (fact, question) in &paraphrase {
        let (f, q) = (search_words(fact), search_words(question));
        let shared: Vec<_> = q.iter().filter(|w| f.contains(w)).collect();
        assert!(
            shared.is_empty(),
            "paraphrase case shares {shared:?}: {fact} / {question}"
        );
    }
    let Some(server) = ModelServer::start() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let store = store::connect(&format!("sqlite://{}/eval.db", dir.path().display()))
        .await
        .unwrap();
    let all: Vec<&(String, String)> = paraphrase.iter().chain(&exact).collect();
    for (i, (fact, _)) in all.iter().enumerate() {
        let memory = Memory {
            scope: scope(),
            key: format!("case{i}"),
            content: fact.clone(),
            category: "conversation".into(),
            updated_at: i as i64,
        };
        store.remember(&memory, false).await.unwrap();
    }
    let config = toml::from_str(&format!(
        "base_url = \"{}\"\nmodel = \"{MODEL}\"\ndimensions = {DIMS}\ntimeout_secs = 60\n",
        server.base_url()
    ))
    .unwrap();
    let embedder = Embedder::new(&config, &Default::default()).unwrap();
    let semantic = Arc::new(Semantic::new(embedder, 0.0));
    while let Step::More(_) = semantic.embed_pending(store.as_ref()).await.unwrap() {}
    let recaller = Recaller {
        store: Arc::clone(&store) as _,
        semantic: Some(Arc::clone(&semantic)),
        clock: switchboard::clock::Clock::wall(),
    };
    println!("| cases | full text | vectors | hybrid |");
    println!("|---|---|---|---|");
    let offsets = [
        ("paraphrase (40)", 0, &paraphrase),
        ("exact (40)", paraphrase.len(), &exact),
    ];
    for (name, offset, set) in offsets {
        let hits = score(&recaller, &semantic, set, offset).await;
        let n = set.len() as f64;
        let pct = |h: usize| format!("{:.0} % ({h})", h as f64 * 100.0 / n);
        println!(
            "| {name} | {} | {} | {} |",
            pct(hits[0]),
            pct(hits[1]),
            pct(hits[2])
        );
    }
}

/// Hits at 5 of one set of cases (their facts stored as `case<offset + i>`): by full text,
/// by vectors, hybrid.
async fn score(
    recaller: &Recaller,
    semantic: &Semantic,
    set: &[(String, String)],
    offset: usize,
) -> [usize; 3] {
    let store = &recaller.store;
    let mut hits = [0usize; 3];
    for (i, (_, question)) in set.iter().enumerate() {
        let want = format!("case{}", i + offset);
        let text = store.recall(&scope(), question, 5).await.unwrap();
        let vector = semantic
            .query_vector(question)
            .await
            .expect("the model answers");
        let near = store
            .recall_by_vector(&scope(), semantic.model(), &vector, 5)
            .await
            .unwrap();
        let hybrid = recaller.recall(&scope(), question, 5).await.unwrap();
        hits[0] += usize::from(text.iter().any(|m| m.key == want));
        hits[1] += usize::from(near.iter().any(|(m, _)| m.key == want));
        hits[2] += usize::from(hybrid.iter().any(|m| m.key == want));
    }
    hits
}

/// Words of the generated memories (a query matches a realistic share of them).
const WORDS: &[&str] = &[
    "server", "debian", "cat", "garden", "invoice", "python", "backup", "router", "coffee",
    "meeting", "deploy", "kernel",
];

async fn latency() {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = format!("sqlite://{}/latency.db", dir.path().display());
    let mut places = vec![("SQLite", sqlite)];
    match std::env::var("SWITCHBOARD_TEST_PGVECTOR") {
        Ok(url) => places.push(("PostgreSQL + pgvector", fresh_pg(&url).await)),
        Err(_) => eprintln!("SKIPPED: PostgreSQL latency: SWITCHBOARD_TEST_PGVECTOR is not set"),
    }
    println!(
        "| database | memories in the scope | full text p50 / p99 | vectors p50 / p99 | hybrid p50 / p99 |"
    );
    println!("|---|---|---|---|---|");
    for (name, url) in places {
        let store = store::connect(&url).await.unwrap();
        let model = VectorModel {
            name: "bench".into(),
            dims: DIMS,
        };
        store.prepare_vectors(&model).await.unwrap();
        let mut held = 0;
        for size in [1_000, 10_000, 100_000] {
            fill(&store, &model, held, size).await;
            held = size;
            let row = measure(&store, &model, size).await;
            println!("| {name} | {size} | {row} |");
        }
    }
}

async fn fresh_pg(admin: &str) -> String {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(admin).await.unwrap();
    let name = format!("sb_bench_{}", std::process::id());
    let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name}"))
        .execute(&mut conn)
        .await;
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let (base, _) = admin.rsplit_once('/').unwrap();
    format!("{base}/{name}")
}

/// A small deterministic generator, so every run measures the same data.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn vector(&mut self) -> Vec<f32> {
        (0..DIMS)
            .map(|_| (self.next() % 2001) as f32 / 1000.0 - 1.0)
            .collect()
    }
}

/// Memories `from..to` of the scope, each with a random vector.
async fn fill(store: &Arc<dyn Store>, model: &VectorModel, from: usize, to: usize) {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ from as u64);
    for n in from..to {
        let content = format!(
            "note {n} about {} and {}",
            WORDS[n % WORDS.len()],
            WORDS[(n / 7) % WORDS.len()]
        );
        let memory = Memory {
            scope: scope(),
            key: format!("k{n}"),
            content,
            category: "core".into(),
            updated_at: n as i64,
        };
        store.remember(&memory, false).await.unwrap();
    }
    loop {
        let pending = store.unembedded(model, 500).await.unwrap();
        if pending.is_empty() {
            break;
        }
        for memory in &pending {
            store
                .save_vector(memory, model, &rng.vector())
                .await
                .unwrap();
        }
    }
}

/// p50 / p99 of each part of hybrid recall over repeated queries.
async fn measure(store: &Arc<dyn Store>, model: &VectorModel, size: usize) -> String {
    let runs = if size >= 100_000 { 50 } else { 200 };
    let mut rng = Rng(42);
    let (mut text, mut vector, mut hybrid) = (Vec::new(), Vec::new(), Vec::new());
    for i in 0..runs {
        let query = format!("what about the {} {}", WORDS[i % WORDS.len()], i);
        let q = rng.vector();
        let t = Instant::now();
        let found = store.recall(&scope(), &query, 20).await.unwrap();
        text.push(t.elapsed());
        let v = Instant::now();
        let near = store
            .recall_by_vector(&scope(), model, &q, 20)
            .await
            .unwrap();
        vector.push(v.elapsed());
        let fused = fuse(found, near.into_iter().map(|(m, _)| m).collect(), 5);
        assert!(!fused.is_empty());
        hybrid.push(t.elapsed());
    }
    format!(
        "{} | {} | {}",
        pair(&mut text),
        pair(&mut vector),
        pair(&mut hybrid)
    )
}

fn pair(samples: &mut [Duration]) -> String {
    samples.sort();
    let at = |p: f64| samples[((samples.len() - 1) as f64 * p).round() as usize];
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    format!("{:.1} / {:.1} ms", ms(at(0.5)), ms(at(0.99)))
}
