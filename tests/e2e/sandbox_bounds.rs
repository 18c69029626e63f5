//! What bounds a conversation as a whole rather than one process: the memory and processes
//! of a call (cgroups, where the gateway can delegate one), the disk a workspace may fill,
//! what `http_fetch` may reach, and how the posture states these layers.

use serde_json::{Value, json};

use crate::helpers::TestApp;
use crate::sandbox::{call, shell, spawn};

/// The sandbox entry of `/readyz`.
async fn readyz_sandbox(app: &TestApp) -> Value {
    let url = format!("http://{}/readyz", app.gateway().addr());
    let body: Value = reqwest::get(&url).await.unwrap().json().await.unwrap();
    body["checks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "sandbox")
        .unwrap()
        .clone()
}

#[tokio::test]
async fn the_posture_states_cgroups_the_config_file_and_datagrams() {
    let app = spawn("").await;
    let check = readyz_sandbox(&app).await;
    let detail = check["detail"].as_str().unwrap();
    assert!(
        detail.contains("cgroup memory+pids per call") || detail.contains("cgroups off ("),
        "{detail}"
    );
    for layer in [
        "config unreadable",
        "unix datagrams off",
        "workspaces private",
    ] {
        assert!(detail.contains(layer), "{layer}: {detail}");
    }
}

#[tokio::test]
async fn the_memory_of_a_whole_call_is_bounded_where_cgroups_can_be_delegated() {
    let app = spawn("[sandbox.limits]\nmemory_mb = 400").await;
    let detail = readyz_sandbox(&app).await["detail"]
        .as_str()
        .unwrap()
        .to_owned();
    if detail.contains("cgroups off (") {
        eprintln!("no cgroup here, and the posture says so: {detail}");
        return;
    }
    assert!(detail.contains("cgroup memory+pids per call"), "{detail}");
    if !std::path::Path::new("/usr/bin/python3").exists() {
        eprintln!("skipped: /usr/bin/python3 (used to hold memory) is not installed");
        return;
    }
    // Four processes of 300 MiB each: every one within its own limit, 1.2 GiB together.
    let out = shell(
        &app,
        "hogs",
        "for i in 1 2 3 4; do python3 -c \"import time; b = b'x' * (300 << 20); time.sleep(2); print('held')\" & done; wait; echo waited",
    )
    .await;
    assert!(out.contains("waited"), "{out}");
    assert!(
        out.lines().filter(|line| *line == "held").count() < 4,
        "four processes held 1.2 GiB under a 400 MiB call: {out}"
    );
}

#[tokio::test]
async fn a_workspace_over_its_disk_limit_is_reported_to_the_model_after_the_call() {
    let app = spawn("[sandbox.limits]\nworkspace_mb = 8\nfile_size_mb = 16").await;
    let first = shell(&app, "disk", "head -c 6M /dev/zero > a && echo first").await;
    assert!(first.contains("first"), "{first}");
    assert!(!first.contains("workspace_mb"), "{first}");
    let second = shell(&app, "disk", "head -c 6M /dev/zero > b && echo second").await;
    assert!(
        second.contains("over [sandbox.limits] workspace_mb = 8"),
        "{second}"
    );
    let freed = shell(&app, "disk", "rm a b && echo freed").await;
    assert!(
        freed.contains("freed") && !freed.contains("workspace_mb"),
        "{freed}"
    );
}

/// A gateway whose `http_fetch` allows `hosts` (TOML array items).
async fn fetcher(hosts: &str) -> TestApp {
    TestApp::spawn_with(&format!(
        "[tools]\nenabled = [\"http_fetch\"]\n[tools.http_fetch]\nallowed_hosts = [{hosts}]\n\
         [policy]\nmode = \"autonomous\""
    ))
    .await
}

#[tokio::test]
async fn http_fetch_refuses_a_port_its_entry_does_not_list() {
    let app = fetcher("\"localhost\"").await;
    let port = app.gateway().addr().port();
    let metrics = format!("http://localhost:{port}/metrics");
    let out = call(&app, "fetch", "http_fetch", json!({"url": metrics})).await;
    assert!(
        !out.contains("switchboard_"),
        "the loopback-only metrics: {out}"
    );
    assert!(out.contains(&format!("port {port}")), "{out}");
}

/// A one-page HTTP server on 127.0.0.1 answering `body`; returns its port.
async fn serve_text(body: &'static str) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let mut buf = [0u8; 2048];
            let _ = conn.read(&mut buf).await;
            let reply = format!(
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = conn.write_all(reply.as_bytes()).await;
        }
    });
    port
}

#[tokio::test]
async fn http_fetch_reaches_a_private_address_only_when_its_entry_says_so() {
    let port = serve_text("private-ok").await;
    for entry in [format!("localhost:{port}"), format!("127.0.0.1:{port}")] {
        let app = fetcher(&format!("\"{entry}\"")).await;
        let url = format!("http://{entry}/");
        let out = call(&app, "fetch", "http_fetch", json!({ "url": url })).await;
        assert!(
            !out.contains("private-ok") && out.contains("loopback"),
            "{entry}: {out}"
        );
    }
    let app = fetcher(&format!(
        "{{ host = \"localhost:{port}\", private = true }}"
    ))
    .await;
    let url = format!("http://localhost:{port}/");
    let out = call(&app, "fetch", "http_fetch", json!({ "url": url })).await;
    assert!(out.contains("private-ok"), "{out}");
}
