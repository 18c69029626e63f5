//! `switchboard check --probe` through the real binary against the stand-ins: one tiny
//! request to the provider and to each platform, one line each saying what works.

use switchboard_standins::discord::{FAKE_TOKEN, FakeDiscord};
use switchboard_standins::slack::{FAKE_BOT_TOKEN as SLACK_TOKEN, FAKE_SIGNING_SECRET, FakeSlack};
use switchboard_standins::telegram::{FAKE_BOT_TOKEN as TELEGRAM_TOKEN, FakeTelegram};
use switchboard_standins::{FakeLlm, Reply};

/// Run `check --probe` on `text`; exit code and stdout.
async fn probe(text: String) -> (Option<i32>, String) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("probe.toml");
    std::fs::write(&file, text).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_switchboard"))
        .arg("check")
        .arg("--probe")
        .arg("--config")
        .arg(&file)
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code(), stdout)
}

fn config(
    llm: &FakeLlm,
    telegram: &FakeTelegram,
    slack_token: &str,
    discord: &FakeDiscord,
    slack: &FakeSlack,
) -> String {
    format!(
        "[provider]\nkind = \"openai\"\nbase_url = \"{}\"\napi_key = \"test-key-not-real\"\n\n\
         [channels.tg]\nkind = \"telegram\"\ntoken = \"{TELEGRAM_TOKEN}\"\napi_url = \"{}\"\n\n\
         [channels.sl]\nkind = \"slack\"\nbot_token = \"{slack_token}\"\n\
         signing_secret = \"{FAKE_SIGNING_SECRET}\"\napi_url = \"{}\"\n\n\
         [channels.dc]\nkind = \"discord\"\ntoken = \"{FAKE_TOKEN}\"\napi_url = \"{}\"\n",
        llm.openai_url(),
        telegram.api_url(),
        slack.api_url(),
        discord.api_url(),
    )
}

#[tokio::test]
async fn probe_reports_each_part_that_works_and_names_the_one_that_does_not() {
    let llm = FakeLlm::start().await;
    let telegram = FakeTelegram::start().await;
    let slack = FakeSlack::start().await;
    let discord = FakeDiscord::start().await;

    llm.push(Reply::text("pong"));
    let (code, out) = probe(config(&llm, &telegram, SLACK_TOKEN, &discord, &slack)).await;
    assert_eq!(code, Some(0), "{out}");
    for part in ["provider", "tg", "sl", "dc"] {
        assert!(out.contains(&format!("probe {part}: ok")), "{part}: {out}");
    }
    assert_eq!(llm.requests().len(), 1, "one tiny request");
    assert_eq!(llm.requests()[0]["max_tokens"], 1);
    assert_eq!(telegram.calls_to("getMe").len(), 1);

    llm.push(Reply::Status(404, None));
    let (code, out) = probe(config(&llm, &telegram, "xoxb-wrong-test", &discord, &slack)).await;
    assert_eq!(code, Some(1), "{out}");
    assert!(
        out.contains("probe provider: FAILED: the LLM API does not know model"),
        "{out}"
    );
    assert!(
        out.contains("probe sl: FAILED: HTTP 200: invalid_auth"),
        "{out}"
    );
    assert!(
        out.contains("probe tg: ok") && out.contains("probe dc: ok"),
        "{out}"
    );
    assert!(
        !out.contains(TELEGRAM_TOKEN),
        "the token never shows: {out}"
    );
}
