//! Flood control: on a homeserver with a tight message rate (`SYNAPSE_STRICT_RATE=1`: 0.5
//! messages a second, a burst of 3), a streamed answer meets `M_LIMIT_EXCEEDED`, waits what
//! the server asks, and still arrives whole in one message.

use std::process::Command;
use std::time::Duration;

use switchboard_channel::{ChannelError, ConversationKey, Outbound};
use switchboard_standins::Reply;

use super::{Synapse, dm, synapse, wait_bot};

/// A homeserver of this test's own, stopped when dropped.
struct Strict {
    hs: Synapse,
    pid: String,
    _dir: tempfile::TempDir,
}

impl Drop for Strict {
    fn drop(&mut self) {
        let _ = Command::new("kill").arg(&self.pid).status();
    }
}

fn strict() -> Strict {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/matrix/synapse.sh"
    ))
    .arg(dir.path())
    .env("SYNAPSE_STRICT_RATE", "1")
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let value = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("export {name}=")))
            .unwrap_or_else(|| panic!("{name} in {text}"))
            .to_owned()
    };
    Strict {
        hs: Synapse::new(
            value("SWITCHBOARD_TEST_SYNAPSE"),
            value("SWITCHBOARD_TEST_SYNAPSE_SECRET"),
        ),
        pid: value("SWITCHBOARD_TEST_SYNAPSE_PID"),
        _dir: dir,
    }
}

#[tokio::test]
async fn a_streamed_answer_waits_out_m_limit_exceeded_and_arrives_whole() {
    // Only where a homeserver can be started (the same check as every Matrix test).
    if synapse().is_none() {
        return;
    }
    let strict = strict();
    let t = dm(&strict.hs, false, |_| String::new()).await;
    let me = t.bot.account.id.clone();
    // Four rooms answered at once: the homeserver limits the bot's account as a whole (a
    // burst of 3), while each room's own pacing stays under it.
    let mut rooms = vec![t.room.clone()];
    for _ in 0..3 {
        let room = t.alice.room(&me, true, false, &[]).await;
        super::wait_joined(&room, &me).await;
        rooms.push(room);
    }
    let answer: String = (1..=12)
        .map(|i| format!("Line {i} of a long answer.\n"))
        .collect();
    for room in &rooms {
        t.app.llm.push(Reply::paced(
            answer.clone(),
            30,
            Duration::from_millis(1000),
        ));
        t.alice.say(room, "tell me everything").await;
    }
    for room in &rooms {
        let seen = wait_bot(room, &me, |s| s.iter().any(|m| m.text.contains("Line 12"))).await;
        assert_eq!(seen.len(), 1, "one message: {seen:#?}");
        assert_eq!(seen[0].text.trim(), answer.trim(), "whole, nothing cut");
    }
    let url = format!("http://{}/metrics", t.app.gateway().addr());
    let metrics = reqwest::get(&url).await.unwrap().text().await.unwrap();
    let limited = metrics
        .lines()
        .find(|l| l.starts_with("switchboard_draft_operations_total{result=\"rate_limited\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap_or(0);
    assert!(
        limited >= 1,
        "the homeserver refused at least once: {metrics}"
    );
}

#[tokio::test]
async fn a_send_over_the_limit_is_rate_limited_with_the_servers_wait_not_retried_inside() {
    if synapse().is_none() {
        return;
    }
    let strict = strict();
    let t = dm(&strict.hs, false, |_| String::new()).await;
    let channel = t.app.built("matrix");
    let key = ConversationKey::new("matrix", t.room.room_id().as_str());
    let mut results = Vec::new();
    for i in 0..6 {
        results.push(channel.send(&key, &Outbound::text(format!("n{i}"))).await);
    }
    let limited: Vec<Duration> = results
        .iter()
        .filter_map(|r| match r {
            Err(ChannelError::RateLimited { retry_after }) => Some(*retry_after),
            _ => None,
        })
        .collect();
    assert!(!limited.is_empty(), "{results:?}");
    assert!(
        limited.iter().all(|wait| *wait <= Duration::from_secs(3)),
        "the server's own wait: {limited:?}"
    );
    assert!(
        results
            .iter()
            .all(|r| r.is_ok() || matches!(r, Err(ChannelError::RateLimited { .. }))),
        "{results:?}"
    );
}
