//! The web chat's operator on a loopback listen: the generated token is the gate there too,
//! its link trades the token for a cookie that lasts until `--rotate`, and the person in the
//! chat reads their own approval as "Approved by you", not as their session's hash.

use serde_json::json;
use switchboard_standins::Reply;
use switchboard_web::token::{token_file, token_path};
use tokio_tungstenite::tungstenite;

use super::{
    Door, builder, connect, json_where, new_session, press_first_button, say, spawn, try_connect,
};

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_token_link_sets_an_http_only_strict_cookie_and_redirects_to_the_page_without_it() {
    let app = spawn("").await;
    let door = Door::of(&app);
    let http = no_redirects();
    let bare = http.get(app.url("/")).send().await.unwrap();
    assert_eq!(bare.status().as_u16(), 401, "loopback alone opens nothing");

    let opened = http.get(door.link()).send().await.unwrap();
    assert_eq!(opened.status().as_u16(), 303);
    assert_eq!(
        opened.headers()["location"],
        "/",
        "the token leaves the URL"
    );
    let cookie = opened
        .headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .find(|c| c.starts_with("sb_web_token="))
        .expect("a token cookie");
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let jar = cookie.split(';').next().unwrap().to_owned();
    let page = http
        .get(app.url("/"))
        .header("cookie", &jar)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 200, "the cookie opens the page");
    let session = new_session();
    assert!(try_connect(&door, &session, "").await.is_ok());

    // Until `switchboard web-token --rotate`: then the old cookie opens nothing.
    let file = token_file(token_path(app.dir(), "web"));
    let rotated = file.rotate().unwrap();
    match try_connect(&door, &session, "").await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 401),
        other => panic!(
            "the old cookie must stop working, got {:?}",
            other.map(|_| ())
        ),
    }
    let page = http
        .get(app.url("/"))
        .header("cookie", &jar)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status().as_u16(), 401);
    let renewed = format!("http://{}/?token={rotated}", app.addr());
    assert_eq!(
        http.get(renewed).send().await.unwrap().status().as_u16(),
        303
    );
    app.shutdown().await;
}

#[tokio::test]
async fn a_call_the_person_in_the_web_chat_approves_reads_approved_by_you() {
    let app = builder("")
        .config("[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\n")
        .start()
        .await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("Made it."));
    let session = new_session();
    let (mut ws, _) = connect(&Door::of(&app), &session).await;
    say(&mut ws, "ask", "make a file").await;
    press_first_button(&mut ws).await;
    let note = json_where(&mut ws, |f| f.to_string().contains("Approved by")).await;
    let note = note.to_string();
    assert!(note.contains("Approved by you"), "{note}");
    assert!(!note.contains(&session[..12]), "no session hash: {note}");
    json_where(&mut ws, |f| f.to_string().contains("Made it.")).await;
    app.shutdown().await;
}

/// Run the example config's first start for 4 seconds in `dir` on `port`, its stderr a
/// terminal (`tty`, through `script`; returns what the terminal showed) or `dir/log.txt`.
fn first_start(dir: &std::path::Path, port: u16, tty: bool) -> String {
    let bin = env!("CARGO_BIN_EXE_switchboard");
    let stderr = if tty {
        "&1".to_owned()
    } else {
        dir.join("log.txt").display().to_string()
    };
    let run =
        format!("timeout -s TERM 4 {bin} run --config config/switchboard.example.toml 2>{stderr}");
    let mut command = if tty {
        let mut script = super::first_run::switchboard_env(std::process::Command::new("script"));
        script.args(["-qec", &run, "/dev/null"]);
        script
    } else {
        let mut shell = super::first_run::switchboard_env(std::process::Command::new("sh"));
        shell.args(["-c", &run]);
        shell
    };
    let out = command
        .env("SWITCHBOARD__GATEWAY__LISTEN", format!("127.0.0.1:{port}"))
        .env(
            "SWITCHBOARD__GATEWAY__DATABASE_URL",
            format!("sqlite://{}/sb.db", dir.display()),
        )
        .env("SWITCHBOARD__GATEWAY__DATA_DIR", dir.join("data"))
        .env("NO_COLOR", "1")
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_first_start_shows_the_links_on_its_terminal_and_the_log_only_names_the_commands() {
    if !std::path::Path::new("/usr/bin/script").exists() {
        eprintln!("skipped: script (util-linux) gives the gateway a terminal here");
        return;
    }
    let (tty_dir, log_dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let port = crate::helpers::free_port();
    let terminal = first_start(tty_dir.path(), port, true);
    let token = std::fs::read_to_string(tty_dir.path().join("data/web/web.token")).unwrap();
    let admin = std::fs::read_to_string(tty_dir.path().join("data/admin.token")).unwrap();
    let chat = format!("http://127.0.0.1:{port}/?token={}", token.trim());
    let dashboard = format!("http://127.0.0.1:{port}/admin/?token={}", admin.trim());
    assert!(terminal.contains(&chat), "{terminal}");
    assert!(terminal.contains(&dashboard), "{terminal}");

    let port = crate::helpers::free_port();
    first_start(log_dir.path(), port, false);
    let log = std::fs::read_to_string(log_dir.path().join("log.txt")).unwrap();
    let token = std::fs::read_to_string(log_dir.path().join("data/web/web.token")).unwrap();
    let admin = std::fs::read_to_string(log_dir.path().join("data/admin.token")).unwrap();
    assert!(
        log.contains("switchboard web-token") && log.contains("switchboard admin-token"),
        "{log}"
    );
    assert!(
        !log.contains(token.trim()) && !log.contains(admin.trim()),
        "the log never holds a token: {log}"
    );
}
