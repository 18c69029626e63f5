//! Recall by meaning (`[memory.embeddings]`): the real all-MiniLM-L6-v2 model
//! (`tests/embeddings`) on SQLite and on a PostgreSQL with pgvector (a second server, named
//! by `SWITCHBOARD_TEST_PGVECTOR`; the machine's PostgreSQL has no pgvector), the endpoint's
//! failure modes through the stand-in, a change of model, and `[memory] max_per_scope`.
//! Without the model or the pgvector server a case is skipped with a `SKIPPED` notice; CI's
//! `SWITCHBOARD_REQUIRE_EMBEDDINGS=1` and `SWITCHBOARD_REQUIRE_PGVECTOR=1` make that a failure.

use std::sync::Arc;
use std::time::Duration;

use switchboard::config::{EmbeddingsConfig, ProviderConfig};
use switchboard::ids::MemoryScope;
use switchboard::memory::{Embedder, Recaller, Semantic, Step};
use switchboard::store::{self, Memory, Store, VectorModel};
use switchboard_channel::ConversationKey;
use switchboard_standins::TcpProxy;
use switchboard_standins::embeddings::{DIMS, FakeEmbeddings, MODEL, Mode, ModelServer};

use crate::helpers::sqlite_store;

fn scope() -> MemoryScope {
    MemoryScope::Conversation(ConversationKey::new("tg", "meaning"))
}

fn memory(key: &str, content: &str, at: i64) -> Memory {
    Memory {
        scope: scope(),
        key: key.into(),
        content: content.into(),
        category: "conversation".into(),
        updated_at: at,
    }
}

/// Recall by meaning through `base_url`'s `model` of `dims`.
fn semantic(base_url: &str, model: &str, dims: usize, timeout_secs: u64) -> Semantic {
    let text = format!(
        "base_url = \"{base_url}\"\nmodel = \"{model}\"\ndimensions = {dims}\ntimeout_secs = {timeout_secs}\n"
    );
    let config: EmbeddingsConfig = toml::from_str(&text).unwrap();
    let embedder = Embedder::new(&config, &ProviderConfig::default()).unwrap();
    Semantic::new(embedder, config.min_similarity)
}

/// Embed everything pending; how many were embedded.
async fn embed_all(semantic: &Semantic, store: &dyn Store) -> usize {
    let mut total = 0;
    loop {
        match semantic.embed_pending(store).await.unwrap() {
            Step::More(n) => total += n,
            Step::Embedded(n) => return total + n,
            Step::Failed => panic!("the embedding endpoint failed"),
        }
    }
}

/// A fresh database on the PostgreSQL with pgvector, or `None` with a notice.
async fn pgvector_url() -> Option<String> {
    use sqlx::Connection;
    let Ok(admin) = std::env::var("SWITCHBOARD_TEST_PGVECTOR") else {
        let why = "SWITCHBOARD_TEST_PGVECTOR is not set (tests/pgvector/start starts one)";
        if std::env::var("SWITCHBOARD_REQUIRE_PGVECTOR").as_deref() == Ok("1") {
            panic!("SWITCHBOARD_REQUIRE_PGVECTOR=1 but {why}");
        }
        eprintln!("SKIPPED: the PostgreSQL half: {why}");
        return None;
    };
    let mut conn = sqlx::PgConnection::connect(&admin)
        .await
        .expect("connect to SWITCHBOARD_TEST_PGVECTOR");
    let name = format!("sb_vec_{}", uuid::Uuid::new_v4().simple());
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&mut conn)
        .await
        .unwrap();
    let (base, _) = admin.rsplit_once('/').expect("a URL with a database");
    Some(format!("{base}/{name}"))
}

async fn drop_pgvector(url: &str) {
    use sqlx::Connection;
    let Ok(admin) = std::env::var("SWITCHBOARD_TEST_PGVECTOR") else {
        return;
    };
    let (_, name) = url.rsplit_once('/').unwrap();
    if let Ok(mut conn) = sqlx::PgConnection::connect(&admin).await {
        let _ = sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&mut conn)
            .await;
    }
}

/// Run `case` on a fresh SQLite store and, when there is one, a fresh database on the
/// PostgreSQL with pgvector.
async fn on_sqlite_and_pgvector<F, Fut>(case: F)
where
    F: Fn(Arc<dyn Store>) -> Fut,
    Fut: Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    case(sqlite_store(&dir).await).await;
    if let Some(url) = pgvector_url().await {
        case(store::connect(&url).await.expect("pgvector store")).await;
        drop_pgvector(&url).await;
    }
}

const REX: &str = "I adopted a puppy last spring, his name is Rex";
const FLIGHT: &str = "My flight to Lisbon is TP 1353, seat 14C";
const OTHERS: [&str; 6] = [
    "The quarterly report is due on the first Monday of the month",
    "I prefer my coffee black with no sugar",
    "The wifi password at the cabin is written on the fridge",
    "My sister lives in Glasgow and teaches chemistry",
    "We repainted the kitchen a pale green colour",
    "The car needs new tyres before winter",
];

#[tokio::test]
async fn the_dog_question_recalls_the_rex_memory_through_the_real_model() {
    let Some(server) = ModelServer::start() else {
        return;
    };
    let base = server.base_url();
    on_sqlite_and_pgvector(|store| {
        let base = base.clone();
        async move {
            let semantic = semantic(&base, MODEL, DIMS, 30);
            store.prepare_vectors(semantic.model()).await.unwrap();
            store.remember(&memory("rex", REX, 1), false).await.unwrap();
            store
                .remember(&memory("flight", FLIGHT, 2), false)
                .await
                .unwrap();
            for (i, text) in OTHERS.iter().enumerate() {
                let at = 3 + i as i64;
                store
                    .remember(&memory(&format!("m{i}"), text, at), false)
                    .await
                    .unwrap();
            }
            assert_eq!(embed_all(&semantic, store.as_ref()).await, 8);
            let question = "What's my dog called?";
            let by_text = store.recall(&scope(), question, 3).await.unwrap();
            assert!(
                by_text.iter().all(|m| m.key != "rex"),
                "full text alone shares no word with the Rex memory: {by_text:?}"
            );
            let recaller = Recaller {
                store: store.clone(),
                semantic: Some(Arc::new(semantic)),
                clock: switchboard::clock::Clock::wall(),
            };
            // Recall injects its best few: the Rex memory is among them, beside full text's
            // matches of "my" and "called" elsewhere.
            let found = recaller.recall(&scope(), question, 3).await.unwrap();
            assert!(found.iter().any(|m| m.key == "rex"), "{found:?}");
            let exact = recaller.recall(&scope(), "TP 1353", 3).await.unwrap();
            assert_eq!(
                exact.first().map(|m| m.key.as_str()),
                Some("flight"),
                "{exact:?}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn with_the_endpoint_down_recall_answers_by_full_text_and_saved_memories_are_embedded_when_it_returns()
 {
    let fake = FakeEmbeddings::start(Mode::Words).await;
    let proxy = TcpProxy::start(fake.addr()).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let failures =
        prometheus::IntCounterVec::new(prometheus::Opts::new("failures", "failures"), &["stage"])
            .unwrap();
    let url = format!("http://{}/v1", proxy.addr());
    let semantic = Arc::new(semantic(&url, "words", 64, 2).with_metrics(failures.clone()));
    proxy.cut();
    store
        .remember(&memory("flight", FLIGHT, 1), false)
        .await
        .unwrap();
    assert_eq!(
        semantic.embed_pending(store.as_ref()).await.unwrap(),
        Step::Failed
    );
    let recaller = Recaller {
        store: store.clone(),
        semantic: Some(Arc::clone(&semantic)),
        clock: switchboard::clock::Clock::wall(),
    };
    for _ in 0..3 {
        let found = recaller
            .recall(&scope(), "which seat on the Lisbon flight", 3)
            .await
            .unwrap();
        assert_eq!(found.len(), 1, "full text still answers");
    }
    assert!(semantic.is_down());
    assert_eq!(failures.with_label_values(&["save"]).get(), 1);
    assert!(
        failures.with_label_values(&["query"]).get() <= 1,
        "while known down, queries do not each try (and wait on) the endpoint"
    );
    let model = semantic.model().clone();
    assert_eq!(store.vector_counts(&model).await.unwrap().pending(), 1);
    proxy.restore();
    assert_eq!(
        semantic.embed_pending(store.as_ref()).await.unwrap(),
        Step::Embedded(1)
    );
    assert!(!semantic.is_down());
    assert_eq!(store.vector_counts(&model).await.unwrap().pending(), 0);
}

#[tokio::test]
async fn an_endpoint_that_errs_or_answers_the_wrong_length_stores_no_vector() {
    let fake = FakeEmbeddings::start(Mode::Status(500)).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    let semantic = semantic(&fake.base_url(), "words", 16, 2);
    store
        .remember(&memory("a", FLIGHT, 1), false)
        .await
        .unwrap();
    assert_eq!(
        semantic.embed_pending(store.as_ref()).await.unwrap(),
        Step::Failed
    );
    fake.set_mode(Mode::WrongLength);
    assert_eq!(
        semantic.embed_pending(store.as_ref()).await.unwrap(),
        Step::Failed
    );
    assert_eq!(
        store
            .vector_counts(semantic.model())
            .await
            .unwrap()
            .embedded,
        0
    );
    fake.set_mode(Mode::Words);
    assert_eq!(
        semantic.embed_pending(store.as_ref()).await.unwrap(),
        Step::Embedded(1)
    );
}

#[tokio::test]
async fn a_slow_endpoint_costs_a_recall_at_most_its_timeout() {
    let fake = FakeEmbeddings::start(Mode::Slow(Duration::from_secs(30))).await;
    let dir = tempfile::tempdir().unwrap();
    let store = sqlite_store(&dir).await;
    store
        .remember(&memory("a", FLIGHT, 1), false)
        .await
        .unwrap();
    let recaller = Recaller {
        store: store.clone(),
        semantic: Some(Arc::new(semantic(&fake.base_url(), "words", 16, 1))),
        clock: switchboard::clock::Clock::wall(),
    };
    let started = std::time::Instant::now();
    let found = recaller.recall(&scope(), "Lisbon flight", 3).await.unwrap();
    assert_eq!(found.len(), 1);
    // Not a timing figure: a bound far above the 1 s timeout and far below the 30 s answer.
    assert!(started.elapsed() < Duration::from_secs(15));
}

#[tokio::test]
async fn a_change_of_model_re_embeds_everything_and_never_compares_vectors_of_two_models() {
    on_sqlite_and_pgvector(|store| async move {
        let fake = FakeEmbeddings::start(Mode::Words).await;
        let old = semantic(&fake.base_url(), "words-v1", 16, 2);
        let new = semantic(&fake.base_url(), "words-v2", 16, 2);
        store.prepare_vectors(old.model()).await.unwrap();
        store
            .remember(&memory("a", FLIGHT, 1), false)
            .await
            .unwrap();
        store.remember(&memory("b", REX, 2), false).await.unwrap();
        assert_eq!(embed_all(&old, store.as_ref()).await, 2);
        let query = switchboard_standins::embeddings::words_vector("Rex puppy", 16);
        let under_new = store
            .recall_by_vector(&scope(), new.model(), &query, 5)
            .await
            .unwrap();
        assert!(
            under_new.is_empty(),
            "vectors of words-v1 compared under words-v2"
        );
        assert_eq!(store.vector_counts(new.model()).await.unwrap().pending(), 2);
        assert_eq!(embed_all(&new, store.as_ref()).await, 2);
        let found = store
            .recall_by_vector(&scope(), new.model(), &query, 5)
            .await
            .unwrap();
        assert_eq!(found.first().map(|(m, _)| m.key.as_str()), Some("b"));
        assert_eq!(store.vector_counts(old.model()).await.unwrap().embedded, 0);
        // A memory whose text changes loses its vector and is embedded again.
        store
            .remember(&memory("b", "Rex is now two years old", 3), false)
            .await
            .unwrap();
        assert_eq!(store.vector_counts(new.model()).await.unwrap().pending(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_full_scope_forgets_the_least_recently_recalled_and_audits_it() {
    crate::store_contract::on_both_databases(|store| async move {
        let key = ConversationKey::new("tg", "meaning");
        let clock = switchboard::clock::Clock::wall();
        for (i, k) in ["oldest", "recalled", "newest"].iter().enumerate() {
            store
                .remember(&memory(k, &format!("fact {k}"), i as i64), false)
                .await
                .unwrap();
        }
        store
            .stamp_recalled(&scope(), &["recalled".to_owned(), "oldest".to_owned()], 100)
            .await
            .unwrap();
        store
            .stamp_recalled(&scope(), &["oldest".to_owned()], 50)
            .await
            .unwrap();
        switchboard::memory::enforce_bound(store.as_ref(), &scope(), 2, &key, &clock).await;
        let left: Vec<String> = store
            .memories(Some(&scope()), 10)
            .await
            .unwrap()
            .into_iter()
            .map(|m| m.key)
            .collect();
        assert_eq!(left, ["recalled", "oldest"], "never recalled goes first");
        let audit = store.audit(Some(&key), 10).await.unwrap();
        let entry = audit
            .iter()
            .find(|e| e.tool == "memory_evict")
            .expect("audited");
        assert!(entry.output.contains("newest"), "{}", entry.output);
    })
    .await;
}

#[tokio::test]
async fn with_embeddings_a_postgresql_without_pgvector_stops_start_up_naming_the_extension() {
    let Some(url) = crate::helpers::postgres_url().await else {
        return;
    };
    let store = store::connect(&url).await.unwrap();
    let model = VectorModel {
        name: "m".into(),
        dims: 8,
    };
    let available: Option<i32> = {
        use sqlx::Connection;
        let mut conn = sqlx::PgConnection::connect(&url).await.unwrap();
        sqlx::query_scalar("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'")
            .fetch_optional(&mut conn)
            .await
            .unwrap()
    };
    if available.is_some() {
        eprintln!("SKIPPED: this PostgreSQL has pgvector, so its absence cannot be shown here");
    } else {
        let err = store.prepare_vectors(&model).await.unwrap_err().to_string();
        assert!(err.contains("`vector` (pgvector)"), "{err}");
    }
    drop(store);
    crate::helpers::drop_postgres(&url).await;
}

#[tokio::test]
async fn a_gateway_with_embeddings_recalls_the_rex_memory_when_asked_about_the_dog() {
    use crate::helpers::{key, wait_inbox_idle, wait_transcript};
    let Some(server) = ModelServer::start() else {
        return;
    };
    let app = crate::app::TestApp::spawn_with(&format!(
        "[memory.embeddings]\nbase_url = \"{}\"\nmodel = \"{MODEL}\"\ndimensions = {DIMS}\ntimeout_secs = 30\n",
        server.base_url()
    ))
    .await;
    let chat = key("rex");
    app.channel.say(&chat, "u1", REX).await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 1).await;
    wait_inbox_idle(&app.store()).await;
    let store = app.store();
    let model = VectorModel {
        name: MODEL.into(),
        dims: DIMS,
    };
    switchboard_standins::eventually(Duration::from_secs(60), "the memory embedded", async || {
        let counts = store.vector_counts(&model).await.unwrap();
        if counts.memories > 0 && counts.pending() == 0 {
            Ok(())
        } else {
            Err(counts)
        }
    })
    .await;
    app.channel
        .say(&chat, "u1", "What's my dog called?")
        .await
        .unwrap();
    wait_transcript(&app.channel, &chat, |t| t.len() == 2).await;
    let last = app.llm.requests().pop().unwrap();
    let messages = last["messages"].to_string();
    assert!(
        messages.contains("Relevant memory:") && messages.contains("his name is Rex"),
        "{messages}"
    );
}
