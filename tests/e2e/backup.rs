//! `switchboard backup` and `restore` through the real binary: a backup taken while the
//! gateway takes about 100 events a second restores every event acknowledged before it
//! began; a restore refuses a running gateway's database; modes come back as they were.

use std::collections::HashSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sqlx::Connection;
use switchboard_channel::Delivery;

use crate::app::TestApp;
use crate::helpers::{direct_message, key, wait_inbox_idle};

/// Run the real binary; its exit status and everything it printed.
fn switchboard(args: &[&str], config: &Path, file: &Path) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .args(args)
        .arg("--config")
        .arg(config)
        .arg(file)
        .output()
        .unwrap();
    let text = crate::helpers::output_text(&out);
    (out.status.success(), text)
}

/// A config file for the binary: the database `data_dir/test.db`, as the test app uses.
fn config_file(dir: &Path, data_dir: &Path) -> PathBuf {
    let file = dir.join("backup-test.toml");
    let text = format!(
        "[gateway]\nlisten = \"127.0.0.1:0\"\ndatabase_url = \"sqlite://{0}/test.db\"\n\
         data_dir = \"{0}\"\n[provider]\nkind = \"openai\"\nbase_url = \"http://127.0.0.1:9/v1\"\n\
         model = \"m\"\napi_key = \"not-used\"\n",
        data_dir.display()
    );
    std::fs::write(&file, text).unwrap();
    file
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

/// Deliver an event every 10 ms into the fake channel; every acknowledged id is recorded.
fn start_load(
    app: &TestApp,
    acked: Arc<Mutex<Vec<String>>>,
    stop: Arc<AtomicBool>,
) -> tokio::task::JoinHandle<()> {
    let channel = Arc::clone(&app.channel);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_millis(10));
        let mut n = 0u32;
        while !stop.load(Ordering::Relaxed) {
            tick.tick().await;
            let id = format!("ev-{n}");
            let event = direct_message(&key(&format!("load-{}", n % 20)), &id, "hello");
            if let Ok(Delivery::Stored) = channel.inject(event).await {
                acked.lock().unwrap().push(id);
            }
            n += 1;
        }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_taken_under_load_restores_every_event_acknowledged_before_it_began() {
    let app = TestApp::spawn().await;
    let config = config_file(app.dir(), app.dir());
    let acked = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let load = start_load(&app, Arc::clone(&acked), Arc::clone(&stop));
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before: Vec<String> = acked.lock().unwrap().clone();
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("backup.tar");
    let (cfg, file) = (config.clone(), archive.clone());
    let started = Instant::now();
    let (ok, text) = tokio::task::spawn_blocking(move || switchboard(&["backup"], &cfg, &file))
        .await
        .unwrap();
    let during = acked.lock().unwrap().len() - before.len();
    tokio::time::sleep(Duration::from_millis(300)).await;
    stop.store(true, Ordering::Relaxed);
    load.await.unwrap();
    assert!(ok, "{text}");
    assert!(
        before.len() >= 50,
        "the load ran: {} acknowledged in 1 s",
        before.len()
    );
    assert!(
        during > 0,
        "events were acknowledged while the backup ran ({:?})",
        started.elapsed()
    );
    assert_eq!(mode(&archive), 0o600);

    let fresh = tempfile::tempdir().unwrap();
    let data = fresh.path().join("data");
    let restored = config_file(fresh.path(), &data);
    let (ok, text) = switchboard(&["restore"], &restored, &archive);
    assert!(ok, "{text}");
    assert_eq!(mode(&data), 0o700);
    let url = format!("sqlite://{}/test.db", data.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    let stored: HashSet<String> =
        sqlx::query_scalar("SELECT event_id FROM inbox WHERE channel = 'fake'")
            .fetch_all(&mut conn)
            .await
            .unwrap()
            .into_iter()
            .collect();
    conn.close().await.unwrap();
    let missing: Vec<&String> = before.iter().filter(|id| !stored.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "acknowledged before the backup, missing after restore: {missing:?}"
    );
    app.shutdown().await;

    // A gateway started on the restored database answers whatever was still pending.
    let second = TestApp::builder().database(&url).start().await;
    wait_inbox_idle(&second.store()).await;
    second.shutdown().await;
}

#[tokio::test]
async fn restore_refuses_to_overwrite_a_running_gateways_database_even_with_force() {
    let mut app = TestApp::spawn().await;
    let config = config_file(app.dir(), app.dir());
    let out = tempfile::tempdir().unwrap();
    let archive = out.path().join("b.tar");
    let (ok, text) = switchboard(&["backup"], &config, &archive);
    assert!(ok, "{text}");
    let (ok, text) = switchboard(&["restore", "--force"], &config, &archive);
    assert!(!ok, "restored under a running gateway: {text}");
    assert!(text.contains("a gateway is running on"), "{text}");
    // Stopped, not dropped: its directory (and the config in it) stays.
    app.stop().await;
    let (ok, text) = switchboard(&["restore", "--force"], &config, &archive);
    assert!(ok, "once the gateway stopped: {text}");
}

/// A data_dir as a gateway leaves it: the database, tokens, a transcript, a Matrix store,
/// a workspace; each with its own mode.
async fn sample_data_dir(dir: &Path) {
    std::fs::create_dir_all(dir.join("web/site")).unwrap();
    std::fs::create_dir_all(dir.join("matrix/mx")).unwrap();
    std::fs::create_dir_all(dir.join("workspaces/c1")).unwrap();
    let files = [
        ("admin.token", 0o600),
        ("web/site.token", 0o600),
        ("web/site/s1.json", 0o640),
        ("matrix/mx/session.json", 0o600),
        ("skills.lock", 0o644),
        ("workspaces/c1/notes.txt", 0o664),
    ];
    for (name, m) in files {
        std::fs::write(dir.join(name), name).unwrap();
        std::fs::set_permissions(dir.join(name), std::fs::Permissions::from_mode(m)).unwrap();
    }
    std::fs::set_permissions(dir.join("matrix"), std::fs::Permissions::from_mode(0o750)).unwrap();
    for db in ["test.db", "matrix/mx/matrix-sdk-state.sqlite3"] {
        let url = format!("sqlite://{}?mode=rwc", dir.join(db).display());
        let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("CREATE TABLE t (v TEXT)")
            .execute(&mut conn)
            .await
            .unwrap();
        sqlx::query("INSERT INTO t VALUES ('kept')")
            .execute(&mut conn)
            .await
            .unwrap();
        // Left open: the rows are still in the WAL when the backup runs.
        std::mem::forget(conn);
        std::fs::set_permissions(dir.join(db), std::fs::Permissions::from_mode(0o600)).unwrap();
    }
}

#[tokio::test]
async fn restore_keeps_every_files_mode_and_workspaces_come_only_with_the_flag() {
    let root = tempfile::tempdir().unwrap();
    let source = root.path().join("source");
    sample_data_dir(&source).await;
    let config = config_file(root.path(), &source);
    for (flag, workspaces) in [(None, false), (Some("--workspaces"), true)] {
        let archive = root.path().join(format!("b-{workspaces}.tar"));
        let args: Vec<&str> = ["backup"].into_iter().chain(flag).collect();
        let (ok, text) = switchboard(&args, &config, &archive);
        assert!(ok, "{text}");
        let fresh = tempfile::tempdir().unwrap();
        let data = fresh.path().join("data");
        let (ok, text) = switchboard(&["restore"], &config_file(fresh.path(), &data), &archive);
        assert!(ok, "{text}");
        assert_eq!(mode(&data), 0o700);
        for name in [
            "admin.token",
            "web/site.token",
            "web/site/s1.json",
            "matrix",
            "matrix/mx/session.json",
            "skills.lock",
            "test.db",
            "matrix/mx/matrix-sdk-state.sqlite3",
        ] {
            assert_eq!(mode(&data.join(name)), mode(&source.join(name)), "{name}");
        }
        assert_eq!(
            std::fs::read(data.join("web/site/s1.json")).unwrap(),
            b"web/site/s1.json"
        );
        for db in ["test.db", "matrix/mx/matrix-sdk-state.sqlite3"] {
            let url = format!("sqlite://{}", data.join(db).display());
            let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
            let v: String = sqlx::query_scalar("SELECT v FROM t")
                .fetch_one(&mut conn)
                .await
                .unwrap();
            assert_eq!(v, "kept", "{db}");
        }
        let ws = data.join("workspaces/c1/notes.txt");
        assert_eq!(ws.exists(), workspaces, "workspaces restored: {workspaces}");
        if workspaces {
            assert_eq!(mode(&ws), 0o664);
        }
    }
}

/// A file-backed SQLite database at `path` in WAL mode (as the gateway and the Matrix SDK
/// keep theirs), created if missing.
async fn wal_database(path: &Path) -> sqlx::SqliteConnection {
    let url = format!("sqlite://{}?mode=rwc", path.display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    sqlx::query("PRAGMA journal_mode = WAL")
        .execute(&mut conn)
        .await
        .unwrap();
    conn
}

/// The files are copied one after another, so a cursor kept in `data_dir` (the Matrix SDK
/// saves its sync token in its own store) must be copied before the inbox that holds what
/// it confirms. A writer stores event `n`, then moves such a cursor to `n`, as fast as it
/// can while the backup runs; in the restored copy the cursor names no event the database
/// lacks. Copied the other way round the cursor comes out ahead, and a restore would skip
/// events that were acknowledged.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backups_cursors_are_never_newer_than_the_inbox_they_confirm() {
    let root = tempfile::tempdir().unwrap();
    let source = root.path().join("source");
    std::fs::create_dir_all(source.join("matrix/mx")).unwrap();
    let mut inbox = wal_database(&source.join("test.db")).await;
    let mut cursor = wal_database(&source.join("matrix/mx/matrix-sdk-state.sqlite3")).await;
    for sql in [
        "CREATE TABLE events (n INTEGER PRIMARY KEY)",
        // Bulk, so copying the inbox takes a while and the writer moves on meanwhile.
        "CREATE TABLE padding (b BLOB)",
        "INSERT INTO padding VALUES (randomblob(8 * 1024 * 1024))",
    ] {
        sqlx::query(sql).execute(&mut inbox).await.unwrap();
    }
    for sql in [
        "CREATE TABLE cursor (n INTEGER)",
        "INSERT INTO cursor VALUES (0)",
    ] {
        sqlx::query(sql).execute(&mut cursor).await.unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writer = tokio::spawn({
        let stop = Arc::clone(&stop);
        async move {
            let mut n = 0i64;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                sqlx::query("INSERT INTO events VALUES (?)")
                    .bind(n)
                    .execute(&mut inbox)
                    .await
                    .unwrap();
                sqlx::query("UPDATE cursor SET n = ?")
                    .bind(n)
                    .execute(&mut cursor)
                    .await
                    .unwrap();
            }
            n
        }
    });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let config = config_file(root.path(), &source);
    let archive = root.path().join("b.tar");
    let (cfg, file) = (config.clone(), archive.clone());
    let (ok, text) = tokio::task::spawn_blocking(move || switchboard(&["backup"], &cfg, &file))
        .await
        .unwrap();
    stop.store(true, Ordering::Relaxed);
    let written = writer.await.unwrap();
    assert!(ok, "{text}");

    let fresh = tempfile::tempdir().unwrap();
    let data = fresh.path().join("data");
    let (ok, text) = switchboard(&["restore"], &config_file(fresh.path(), &data), &archive);
    assert!(ok, "{text}");
    let stored: i64 = sqlx::query_scalar("SELECT max(n) FROM events")
        .fetch_one(&mut wal_database(&data.join("test.db")).await)
        .await
        .unwrap();
    let confirmed: i64 = sqlx::query_scalar("SELECT n FROM cursor")
        .fetch_one(&mut wal_database(&data.join("matrix/mx/matrix-sdk-state.sqlite3")).await)
        .await
        .unwrap();
    assert!(
        confirmed > 0,
        "the writer ran before the backup ({written} written)"
    );
    assert!(
        confirmed <= stored,
        "the restored cursor confirms event {confirmed}, but the restored inbox ends at {stored}"
    );
}
