//! Channels and chats mapped to profiles: a Telegram group on a chat-only profile, a
//! Telegram private chat and a Slack DM on a coding profile, and a third channel (the fake
//! one) on the default profile; each request at the LLM stand-in carries its profile's
//! prompt, model and tools.

use switchboard_standins::slack::{SignedRequest, SlackMessage, dm_event};
use switchboard_standins::telegram::{FAKE_BOT_USERNAME, FakeUser, UserMessage};
use switchboard_standins::{FakeLlm, Later, eventually};

use super::{request_saying, system_prompt, tool_names};
use crate::app::{Builder, Table, TestApp, quoted};
use crate::helpers::{WAIT, key, wait_transcript};

const GROUP: i64 = -100_555;

/// Two profiles besides the default, the Telegram and Slack channels on `coder` and the
/// Telegram group on `family`.
fn builder() -> Builder {
    const PROFILES: &str = r#"
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
"#;
    let coder = || Table::open().set("agent", quoted("coder"));
    let group = format!(
        "{{ {} = {{ agent = \"family\" }} }}",
        quoted(&GROUP.to_string())
    );
    TestApp::builder()
        .config(PROFILES)
        .telegram(coder().set("chats", group))
        .slack(coder())
}

/// Wait until the LLM stand-in has a request whose user message contains `text`.
async fn wait_request(llm: &FakeLlm, text: &str) -> serde_json::Value {
    let what = format!("a request saying {text:?}");
    eventually(WAIT, &what, async || {
        request_saying(llm, text).ok_or(Later(move || format!("{:#?}", llm.requests())))
    })
    .await
}

#[tokio::test]
async fn a_group_on_a_chat_only_profile_never_sees_the_shell_while_a_dm_on_the_coding_profile_does()
{
    let app = builder().start().await;
    let (tg, llm, fake) = (app.telegram(), &app.llm, &app.channel);

    let alice = FakeUser::human(1001, "alice");
    let ask = format!("@{FAKE_BOT_USERNAME} hello family");
    tg.inject(&UserMessage::group(GROUP, alice.clone(), &ask));
    tg.inject(&UserMessage::private(alice, "hello coder"));
    fake.say(&key("dm-1"), "u1", "hello default").await.unwrap();
    let event = dm_event(&SlackMessage {
        text: "hello slack coder",
        ..SlackMessage::default()
    });
    assert_eq!(
        app.slack_post("events", SignedRequest::event(&event)).await,
        200
    );

    let group = wait_request(llm, "hello family").await;
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

    let dm = wait_request(llm, "hello coder").await;
    assert_eq!(dm["model"], "coder-model");
    assert_eq!(system_prompt(&dm), "You are the coding assistant.");
    let offered = tool_names(&dm);
    for tool in ["shell", "file_read", "file_write"] {
        assert!(
            offered.iter().any(|t| t == tool),
            "{tool} missing: {offered:?}"
        );
    }

    let slack_dm = wait_request(llm, "hello slack coder").await;
    assert_eq!(slack_dm["model"], "coder-model");
    assert_eq!(system_prompt(&slack_dm), "You are the coding assistant.");
    assert!(tool_names(&slack_dm).iter().any(|t| t == "shell"));

    let default = wait_request(llm, "hello default").await;
    assert_eq!(default["model"], "fake-model");
    assert!(system_prompt(&default).starts_with("You are Switchboard"));
    let offered = tool_names(&default);
    assert!(offered.iter().any(|t| t == "file_read"), "{offered:?}");
    assert!(!offered.iter().any(|t| t == "shell"), "{offered:?}");
    wait_transcript(fake, &key("dm-1"), |t| {
        t.iter().any(|m| m.contains("You said"))
    })
    .await;
    app.shutdown().await;
}
