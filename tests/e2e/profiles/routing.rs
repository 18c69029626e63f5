//! Channels and chats mapped to profiles: a Telegram group on a chat-only profile, a
//! Telegram private chat and a Slack DM on a coding profile, and a third channel (the fake
//! one) on the default profile; each request at the LLM stand-in carries its profile's
//! prompt, model and tools.

use std::time::{Duration, Instant};

use switchboard::{Gateway, channels};
use switchboard_standins::slack::{
    FAKE_BOT_TOKEN as SLACK_TOKEN, FAKE_SIGNING_SECRET, FakeSlack, SignedRequest, SlackMessage,
    dm_event,
};
use switchboard_standins::telegram::{
    FAKE_BOT_TOKEN, FAKE_BOT_USERNAME, FakeTelegram, FakeUser, UserMessage,
};
use switchboard_standins::{FakeChannel, FakeLlm};

use super::{request_saying, system_prompt, tool_names};
use crate::helpers::{WAIT, key, test_config, wait_transcript};

const GROUP: i64 = -100_555;

fn profiles(tg: &FakeTelegram, slack: &FakeSlack) -> String {
    format!(
        r#"
[tools]
enabled = ["file_read"]

[agents.family]
system_prompt = "You are the family helper. Keep it friendly."
models = ["family-model"]
tools = []

[agents.coder]
system_prompt = "You are the coding assistant."
models = ["coder-model", "coder-large"]
tools = ["shell", "file_read", "file_write"]

[channels.telegram]
kind = "telegram"
token = "{FAKE_BOT_TOKEN}"
api_url = "{}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
poll_timeout_secs = 1
agent = "coder"

[channels.telegram.chats."{GROUP}"]
agent = "family"

[channels.slack]
kind = "slack"
bot_token = "{SLACK_TOKEN}"
signing_secret = "{FAKE_SIGNING_SECRET}"
api_url = "{}"
allowed_users = ["*"]
dm_policy = "open"
group_policy = "open"
agent = "coder"
"#,
        tg.api_url(),
        slack.api_url()
    )
}

/// Wait until the LLM stand-in has a request whose user message contains `text`.
async fn wait_request(llm: &FakeLlm, text: &str) -> serde_json::Value {
    let deadline = Instant::now() + WAIT;
    loop {
        if let Some(body) = request_saying(llm, text) {
            return body;
        }
        assert!(
            Instant::now() < deadline,
            "no request saying {text:?}: {:#?}",
            llm.requests()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_group_on_a_chat_only_profile_never_sees_the_shell_while_a_dm_on_the_coding_profile_does()
{
    let slack = FakeSlack::start().await;
    let (tg, llm, dir) = (
        FakeTelegram::start().await,
        FakeLlm::start().await,
        tempfile::tempdir().unwrap(),
    );
    let config = test_config(&llm.openai_url(), dir.path(), &profiles(&tg, &slack));
    let fake = FakeChannel::new("fake");
    let mut gateway = Gateway::new(config.clone()).channel(fake.clone());
    for channel in channels::from_config(&config).unwrap() {
        gateway = gateway.channel(channel);
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let running = gateway.start(listener).await.unwrap();

    let alice = FakeUser::human(1001, "alice");
    let ask = format!("@{FAKE_BOT_USERNAME} hello family");
    tg.inject(&UserMessage::group(GROUP, alice.clone(), &ask));
    tg.inject(&UserMessage::private(alice, "hello coder"));
    fake.say(&key("dm-1"), "u1", "hello default").await.unwrap();
    let event = dm_event(&SlackMessage {
        text: "hello slack coder",
        ..SlackMessage::default()
    });
    let url = format!("http://{}/slack/slack/events", running.addr());
    let signed =
        SignedRequest::event(&event).build(&reqwest::Client::new(), &url, FAKE_SIGNING_SECRET);
    assert_eq!(signed.send().await.unwrap().status(), 200);

    let group = wait_request(&llm, "hello family").await;
    assert_eq!(group["model"], "family-model");
    assert_eq!(
        system_prompt(&group),
        "You are the family helper. Keep it friendly."
    );
    let offered = tool_names(&group);
    assert!(!offered.iter().any(|t| t == "shell"), "{offered:?}");
    assert!(
        !offered.iter().any(|t| t.starts_with("file_")),
        "{offered:?}"
    );

    let dm = wait_request(&llm, "hello coder").await;
    assert_eq!(dm["model"], "coder-model");
    assert_eq!(system_prompt(&dm), "You are the coding assistant.");
    let offered = tool_names(&dm);
    for tool in ["shell", "file_read", "file_write"] {
        assert!(
            offered.iter().any(|t| t == tool),
            "{tool} missing: {offered:?}"
        );
    }

    let slack_dm = wait_request(&llm, "hello slack coder").await;
    assert_eq!(slack_dm["model"], "coder-model");
    assert_eq!(system_prompt(&slack_dm), "You are the coding assistant.");
    assert!(tool_names(&slack_dm).iter().any(|t| t == "shell"));

    let default = wait_request(&llm, "hello default").await;
    assert_eq!(default["model"], "fake-model");
    assert!(system_prompt(&default).starts_with("You are Switchboard"));
    let offered = tool_names(&default);
    assert!(offered.iter().any(|t| t == "file_read"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "shell"), "{offered:?}");
    wait_transcript(&fake, &key("dm-1"), |t| {
        t.iter().any(|m| m.contains("You said"))
    })
    .await;
    running.shutdown().await;
}
