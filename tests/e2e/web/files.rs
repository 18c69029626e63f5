//! Files in the web chat: `POST /upload` (its own limit, the socket's checks), a message
//! naming the upload becomes an attachment the core saves in the workspace, `send_file`
//! becomes a download link served to that session only, and a restart between storing the
//! message and saving its file still saves it once.

use futures::SinkExt;
use serde_json::{Value, json};
use switchboard::attach::inbox_path;
use switchboard_standins::Reply;
use switchboard_standins::files::csv;
use tokio_tungstenite::tungstenite::Message;

use super::{Door, Ws, builder, connect, json_where, new_session, spawn, workspace};
use crate::attach::{binary_bytes, inbox_files, request_text};
use crate::helpers::wait_inbox_idle;

/// Upload `bytes` as session `session` (when given) of a browser that opened the token link,
/// with extra `headers`.
async fn upload(
    door: &Door,
    session: Option<&str>,
    name: &str,
    mime: &str,
    bytes: Vec<u8>,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = reqwest::Client::new()
        .post(format!("http://{}/upload", door.addr))
        .header("x-file-name", name)
        .header("content-type", mime)
        .header("cookie", door.cookie(session))
        .body(bytes);
    for (key, value) in headers {
        request = request.header(*key, *value);
    }
    request.send().await.unwrap()
}

/// Upload and return the new file's id.
async fn upload_ok(door: &Door, session: &str, name: &str, bytes: Vec<u8>) -> String {
    let response = upload(door, Some(session), name, "text/csv", bytes, &[]).await;
    assert_eq!(response.status().as_u16(), 201);
    let answer: Value = response.json().await.unwrap();
    answer["id"].as_str().unwrap().to_owned()
}

/// `GET path` as session `session` (when given) of a browser that opened the token link.
async fn get(door: &Door, path: String, session: Option<String>) -> reqwest::Response {
    reqwest::Client::new()
        .get(format!("http://{}{path}", door.addr))
        .header("cookie", door.cookie(session.as_deref()))
        .send()
        .await
        .unwrap()
}

/// Send a `message` frame naming uploaded `files`.
async fn say_with_files(ws: &mut Ws, id: &str, text: &str, files: &[&str]) {
    let frame = json!({"type": "message", "id": id, "text": text, "files": files});
    ws.send(Message::Text(frame.to_string().into()))
        .await
        .unwrap();
}

fn is_bot_text(frame: &Value, text: &str) -> bool {
    matches!(frame["type"].as_str(), Some("send" | "edit"))
        && frame["message"]["role"] == "bot"
        && frame["message"]["html"]
            .as_str()
            .is_some_and(|h| h.contains(text))
}

#[tokio::test]
async fn an_uploaded_csv_lands_in_the_workspace_and_the_model_reads_it() {
    let app = spawn("").await;
    let session = new_session();
    let file = upload_ok(&Door::of(&app), &session, "figures%20Q.csv", csv()).await;
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    let client_id = uuid::Uuid::new_v4().to_string();
    let path = inbox_path(&format!("{session}:{client_id}"), 0, "figures Q.csv");
    app.llm
        .push(Reply::tool_call("file_read", json!({ "path": path })))
        .push(Reply::text("The total is 309."));
    say_with_files(&mut ws, &client_id, "sum these", &[&file]).await;
    let shown = json_where(&mut ws, |f| {
        f["type"] == "send" && f["message"]["role"] == "user"
    })
    .await;
    let html = shown["message"]["html"].as_str().unwrap();
    assert!(
        html.contains(&format!("href=\"files/{file}\"")) && html.contains("figures Q.csv"),
        "{html}"
    );
    json_where(&mut ws, |f| is_bot_text(f, "309")).await;
    let requests = app.llm.requests();
    let first = request_text(&requests, 0);
    assert!(
        first.contains("sum these") && first.contains(&path) && first.contains("text/csv"),
        "{first}"
    );
    assert!(
        request_text(&requests, 1).contains("Q2,112"),
        "the model read the CSV"
    );
    let saved = std::fs::read(workspace(&app, &session).join(&path)).unwrap();
    assert_eq!(saved, csv());
    app.shutdown().await;
}

#[tokio::test]
async fn an_upload_over_its_own_limit_gets_413_and_one_line_while_the_shared_limit_stays_elsewhere()
{
    let app = spawn("max_attachment_bytes = 3145728").await;
    let session = new_session();
    let over = vec![b'x'; 3 * 1024 * 1024 + 1];
    let response = upload(
        &Door::of(&app),
        Some(&session),
        "big.bin",
        "application/octet-stream",
        over,
        &[],
    )
    .await;
    assert_eq!(response.status().as_u16(), 413);
    let line = response.text().await.unwrap();
    assert_eq!(
        line,
        "File too large: the limit for files here is 3.0 MB.\n"
    );

    // Without a Content-Length the body is counted as it arrives.
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> =
        (0..4).map(|_| Ok(vec![b'y'; 1024 * 1024])).collect();
    let streamed = reqwest::Client::new()
        .post(format!("http://{}/upload", app.addr()))
        .header("cookie", Door::of(&app).cookie(Some(&session)))
        .header("x-file-name", "stream.bin")
        .body(reqwest::Body::wrap_stream(futures::stream::iter(chunks)))
        .send()
        .await
        .unwrap();
    assert_eq!(streamed.status().as_u16(), 413);

    // 2 MiB is over the gateway's 1 MiB request-body limit but within the upload's own.
    let two_mib = vec![b'z'; 2 * 1024 * 1024];
    upload_ok(&Door::of(&app), &session, "two.bin", two_mib.clone()).await;
    let elsewhere = reqwest::Client::new()
        .post(format!("http://{}/", app.addr()))
        .body(two_mib)
        .send()
        .await
        .unwrap();
    assert_eq!(
        elsewhere.status().as_u16(),
        413,
        "every other route keeps the shared limit"
    );
    let files = std::fs::read_dir(app.dir().join("web/web/files"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().ends_with(".json"))
        .count();
    assert_eq!(files, 1, "only the upload within the limit was kept");
    app.shutdown().await;
}

#[tokio::test]
async fn a_cross_site_or_sessionless_upload_is_refused_and_another_sessions_file_cannot_be_named() {
    let app = spawn("").await;
    let session = new_session();
    let foreign = [("origin", "https://evil.example")];
    let response = upload(
        &Door::of(&app),
        Some(&session),
        "a.csv",
        "text/csv",
        csv(),
        &foreign,
    )
    .await;
    assert_eq!(response.status().as_u16(), 403);
    let response = upload(&Door::of(&app), None, "a.csv", "text/csv", csv(), &[]).await;
    assert_eq!(response.status().as_u16(), 400);
    assert_eq!(
        response.text().await.unwrap(),
        "no session cookie: load the chat page first"
    );

    let theirs = upload_ok(&Door::of(&app), &new_session(), "theirs.csv", csv()).await;
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say_with_files(&mut ws, "m1", "read theirs", &[&theirs]).await;
    let refused = json_where(&mut ws, |f| f["type"] == "refused").await;
    assert_eq!(
        refused["reason"],
        "An attached file is no longer available; attach it again."
    );
    assert!(app.llm.requests().is_empty(), "nothing reached the model");
    app.shutdown().await;
}

#[tokio::test]
async fn send_file_posts_a_download_link_that_serves_the_bytes_intact_to_that_session_only() {
    let keys = "[tools]\nenabled = [\"send_file\"]\n[policy]\nmode = \"autonomous\"\n";
    let app = spawn(keys).await;
    let session = new_session();
    let bytes = binary_bytes();
    std::fs::create_dir_all(workspace(&app, &session)).unwrap();
    std::fs::write(workspace(&app, &session).join("patch.bin"), &bytes).unwrap();
    app.llm
        .push(Reply::tool_call(
            "send_file",
            json!({ "path": "patch.bin", "caption": "The patch" }),
        ))
        .push(Reply::text("Sent it."));
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    super::say(&mut ws, "m1", "send the patch").await;
    let posted = json_where(&mut ws, |f| is_bot_text(f, "href=\"files/")).await;
    let html = posted["message"]["html"].as_str().unwrap().to_owned();
    assert!(
        html.contains("The patch") && html.contains("patch.bin"),
        "{html}"
    );
    let start = html.find("href=\"files/").unwrap() + "href=\"files/".len();
    let id = &html[start..start + 32];
    json_where(&mut ws, |f| is_bot_text(f, "Sent it.")).await;

    let addr = &Door::of(&app);
    let response = get(addr, format!("/files/{id}"), Some(session.clone())).await;
    assert_eq!(response.status().as_u16(), 200);
    let h = response.headers().clone();
    assert_eq!(
        h["content-disposition"],
        "attachment; filename=\"patch.bin\"; filename*=UTF-8''patch.bin"
    );
    assert_eq!(h["x-content-type-options"], "nosniff");
    assert!(
        h["content-security-policy"]
            .to_str()
            .unwrap()
            .starts_with("sandbox")
    );
    assert_eq!(
        response.bytes().await.unwrap().to_vec(),
        bytes,
        "every byte arrived"
    );

    let other = get(addr, format!("/files/{id}"), Some(new_session())).await;
    assert_eq!(
        other.status().as_u16(),
        404,
        "another session's file is not found"
    );
    let none = get(addr, format!("/files/{id}"), None).await;
    assert_eq!(none.status().as_u16(), 400, "no session, no file");
    for bad in [
        "0123",
        "0123456789ABCDEF0123456789ABCDEF",
        "..%2F..%2Fweb.db",
    ] {
        let response = get(addr, format!("/files/{bad}"), Some(session.clone())).await;
        assert_eq!(response.status().as_u16(), 404, "{bad}");
    }
    app.shutdown().await;
}

#[tokio::test]
async fn a_restart_between_storing_a_message_with_an_upload_and_saving_its_file_saves_it_once() {
    let mut app = builder("").killable().start().await;
    let (addr, llm) = (&Door::of(&app), &app.llm);
    let session = new_session();
    // The first message's answer streams slowly, so the second waits behind it, stored.
    let slow = Reply::paced("x".repeat(300), 1, std::time::Duration::from_millis(50));
    llm.push(slow);
    let (mut ws, _) = connect(addr, &session).await;
    super::say(&mut ws, "m1", "hello").await;
    json_where(&mut ws, |f| f["type"] == "ack" && f["id"] == "m1").await;
    let file = upload_ok(addr, &session, "notes.txt", b"remember the milk".to_vec()).await;
    say_with_files(&mut ws, "m2", "keep this", &[&file]).await;
    json_where(&mut ws, |f| f["type"] == "ack" && f["id"] == "m2").await;
    llm.wait_for_requests(1, crate::helpers::WAIT).await; // the first turn started
    let workspace = workspace(&app, &session);
    assert!(
        inbox_files(&workspace).is_empty(),
        "not saved before the restart"
    );
    app.kill();

    app.llm
        .push(Reply::text("Hello."))
        .push(Reply::text("Kept."));
    app.start().await;
    wait_inbox_idle(&app.store()).await;
    let files = inbox_files(&workspace);
    assert_eq!(files.len(), 1, "{files:?}");
    let saved = std::fs::read(workspace.join("inbox").join(&files[0])).unwrap();
    assert_eq!(saved, b"remember the milk");
    let requests = app.llm.requests();
    let described: Vec<usize> = (0..requests.len())
        .filter(|&n| request_text(&requests, n).contains("notes.txt"))
        .collect();
    assert_eq!(described, [requests.len() - 1], "one turn read the file");
    app.shutdown().await;
}
