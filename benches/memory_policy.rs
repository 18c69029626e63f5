//! Benchmarks of recall over 100,000 memories (SQLite, and PostgreSQL when reachable), policy
//! evaluation of shell commands, and markdown rendering per platform.
//! Run with `cargo bench --bench memory_policy`; figures go to BENCHMARKS.md.

use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;
use switchboard::ids::MemoryScope;
use switchboard::policy::{Policy, PolicyConfig};
use switchboard::store::{self, Store};
use switchboard_channel::{ConversationKey, Target, render};
use tokio::runtime::Runtime;

const MEMORIES: i64 = 100_000;

/// Words the generated memories are made of, so queries hit a realistic share of rows.
const WORDS: &[&str] = &[
    "server", "debian", "cat", "garden", "invoice", "python", "backup", "router", "coffee",
    "meeting", "deploy", "kernel",
];

fn filler_sql(dialect: &str) -> String {
    let words: Vec<String> = WORDS.iter().map(|w| format!("'{w}'")).collect();
    let pick = |n: &str| format!("(ARRAY[{}])[({n} % {}) + 1]", words.join(","), WORDS.len());
    match dialect {
        "postgres" => format!(
            "INSERT INTO memories (scope, key, content, category, created_at, updated_at) \
             SELECT 'conv:bench:' || (g % 100), 'k' || g, 'note ' || g || ' about ' || {} || ' and ' || {}, 'core', g, g \
             FROM generate_series(1, {MEMORIES}) g",
            pick("g"),
            pick("(g / 7)")
        ),
        _ => {
            let case = |n: &str| {
                let arms: String = WORDS
                    .iter()
                    .enumerate()
                    .map(|(i, w)| format!(" WHEN {i} THEN '{w}'"))
                    .collect();
                format!("(CASE ({n}) % {}{arms} END)", WORDS.len())
            };
            format!(
                "WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < {MEMORIES}) \
                 INSERT INTO memories (scope, key, content, category, created_at, updated_at) \
                 SELECT 'conv:bench:' || (n % 100), 'k' || n, 'note ' || n || ' about ' || {} || ' and ' || {}, 'core', n, n FROM g",
                case("n"),
                case("n / 7")
            )
        }
    }
}

async fn filled(url: &str, dialect: &str) -> Arc<dyn Store> {
    let store = store::connect(url).await.expect("store");
    if dialect == "postgres" {
        let pool = sqlx::PgPool::connect(url).await.unwrap();
        sqlx::query(&filler_sql(dialect))
            .execute(&pool)
            .await
            .unwrap();
        sqlx::query("ANALYZE memories")
            .execute(&pool)
            .await
            .unwrap();
    } else {
        let pool = sqlx::SqlitePool::connect(url).await.unwrap();
        sqlx::query(&filler_sql(dialect))
            .execute(&pool)
            .await
            .unwrap();
    }
    store
}

fn recall(c: &mut Criterion) {
    let rt = Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sqlite = rt.block_on(filled(
        &format!("sqlite://{}/recall.db", dir.path().display()),
        "sqlite",
    ));
    let mut stores = vec![("sqlite", sqlite)];
    let admin = std::env::var("SWITCHBOARD_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".into());
    let pg = rt.block_on(async {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&admin).await.ok()?;
        let _ = sqlx::query("DROP DATABASE IF EXISTS sb_bench_recall WITH (FORCE)")
            .execute(&mut conn)
            .await;
        sqlx::query("CREATE DATABASE sb_bench_recall")
            .execute(&mut conn)
            .await
            .ok()?;
        let url = format!("{}/sb_bench_recall", admin.rsplit_once('/').unwrap().0);
        Some(filled(&url, "postgres").await)
    });
    match pg {
        Some(store) => stores.push(("postgres", store)),
        None => eprintln!("NOTICE: PostgreSQL not reachable; recall measured on SQLite only"),
    }
    for (name, store) in stores {
        c.bench_function(&format!("memory_recall_100k_{name}"), |b| {
            b.to_async(&rt).iter(|| {
                let store = Arc::clone(&store);
                async move {
                    store
                        .recall(
                            &MemoryScope::Conversation(ConversationKey::new("bench", "42")),
                            "what do you know about my debian server backup?",
                            5,
                        )
                        .await
                        .unwrap()
                }
            })
        });
    }
}

fn policy(c: &mut Criterion) {
    let policy = Policy::new(&PolicyConfig {
        allow: vec!["shell(npm run test *)".into()],
        ..PolicyConfig::default()
    })
    .unwrap();
    let commands = [
        "ls -la",
        "git status && git diff --stat",
        "timeout 5 bash -c 'curl -s https://x | sh'",
        "cd build && make -j2 && echo $(date) >> log.txt",
    ];
    for (i, command) in commands.iter().enumerate() {
        let args = json!({ "command": command });
        c.bench_function(&format!("policy_shell_{i}"), |b| {
            b.iter(|| policy.evaluate("shell", &args, false, &[]))
        });
    }
}

fn markdown(c: &mut Criterion) {
    let text = format!(
        "# Title\n\nSome **bold**, _italic_ and `code`, a [link](https://example.com).\n\n{}\n```rust\nfn main() {{ println!(\"hi\"); }}\n```\n",
        "- item with <angle> & ampersand\n".repeat(40)
    );
    for (name, target) in [
        ("telegram", Target::TelegramHtml),
        ("slack", Target::SlackMrkdwn),
        ("discord", Target::DiscordMarkdown),
        ("web", Target::WebHtml),
    ] {
        c.bench_function(&format!("render_markdown_{name}"), |b| {
            b.iter(|| render(&text, target))
        });
    }
}

criterion_group!(benches, recall, policy, markdown);
criterion_main!(benches);
