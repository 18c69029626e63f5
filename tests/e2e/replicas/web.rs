//! The web chat across three replicas: a tab's socket is open on one replica, and its
//! conversation's turns run there (the others leave its events alone for one lease TTL), so
//! the live answers reach the tab; a tab that reconnects to another replica resyncs the
//! transcript written by the first, and its turns follow it there.

use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;

use super::harness::Cluster;
use super::{asked, not_once, tally};
use crate::web::{Door, Ws, connect, json_where, new_session, say};

const WEB: &str = "[channels.web]\nkind = \"web\"\n";

/// Replica `i`'s web chat; every replica shares the data directory, so one token opens all.
fn addr(cluster: &Cluster, i: usize) -> Door {
    let addr = SocketAddr::from(([127, 0, 0, 1], cluster.replicas[i].port));
    Door::at(addr, &cluster.data_dir())
}

/// Whether `frame` shows the bot's message holding `text`.
fn is_answer(frame: &Value, text: &str) -> bool {
    matches!(frame["type"].as_str(), Some("send" | "edit"))
        && frame["message"]["role"] == "bot"
        && frame["message"]["html"]
            .as_str()
            .unwrap_or_default()
            .contains(text)
}

/// Say `texts` one after another on `ws`, each answered live on the same socket.
async fn chat(ws: &mut Ws, texts: &[String]) {
    for text in texts {
        say(ws, &format!("id-{}", text.replace(' ', "-")), text).await;
        let answer = format!("You said: {text}");
        json_where(ws, |f| is_answer(f, &answer)).await;
    }
}

/// Open the tab's socket on replica `i` once its last transcript save has landed; the
/// sync frame must show each of `answers`.
async fn reconnect(cluster: &Cluster, i: usize, session: &str, answers: &[String]) -> Ws {
    tokio::time::sleep(Duration::from_millis(600)).await;
    let (ws, sync) = connect(&addr(cluster, i), session).await;
    let shown = sync.to_string();
    for text in answers {
        assert!(
            shown.contains(&format!("You said: {text}")),
            "replica {i} resynced without {text:?}: {sync:#}"
        );
    }
    ws
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_web_chat_runs_on_the_replica_holding_its_socket_and_resyncs_after_moving() {
    let Some(cluster) = Cluster::start_with(3, WEB, false).await else {
        return;
    };
    let session = new_session();
    let first: Vec<String> = (0..4).map(|m| format!("tab one m{m}")).collect();
    let second: Vec<String> = (0..3).map(|m| format!("tab two m{m}")).collect();
    let third: Vec<String> = (0..2).map(|m| format!("tab three m{m}")).collect();

    let (mut ws, _) = connect(&addr(&cluster, 1), &session).await;
    chat(&mut ws, &first).await;
    drop(ws);
    let mut ws = reconnect(&cluster, 2, &session, &first).await;
    chat(&mut ws, &second).await;
    drop(ws);
    // Back where it started: that replica's copy is older than the file and is reloaded.
    let mut ws = reconnect(&cluster, 1, &session, &second).await;
    chat(&mut ws, &third).await;

    let all: Vec<String> = [first, second, third].concat();
    let dups = not_once(&tally(&all, &asked(&cluster.llm)));
    assert!(dups.is_empty(), "asked other than once: {dups:?}");
    cluster.finish().await;
}
