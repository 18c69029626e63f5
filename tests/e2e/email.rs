//! The email channel in a whole gateway, against the real mail servers `tests/mail/start`
//! runs (Dovecot, Postfix, dnsmasq for `people.test`'s DKIM key) and the LLM stand-in: a
//! person's signed mail is answered once by the agent, in its thread; a gateway killed after
//! receiving and before answering answers once after it is back, and mail that arrived while
//! it was down is answered too; a prompt is decided by a reply; a lost SMTP connection is
//! retried.

use std::time::Duration;

use switchboard_standins::mail::{Draft, header, html_body, servers, table};
use switchboard_standins::{Reply, TcpProxy};

use crate::helpers::TestApp;

#[tokio::test]
async fn a_mail_killed_before_its_answer_is_answered_once_after_restart_in_its_thread() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let mut app = TestApp::builder()
        .config(&servers.table("mail", &bot, &[&person.address]))
        .killable()
        .start()
        .await;
    // The model stalls: the gateway is killed with the mail stored and no answer sent.
    app.llm.push(Reply::Stall(Duration::from_secs(60)));
    let first = person
        .send(
            &to,
            Draft {
                subject: "Plan".into(),
                body: "What is the plan?".into(),
                ..Draft::default()
            },
        )
        .await;
    app.llm.wait_for_requests(1, Duration::from_secs(30)).await;
    app.kill();

    let second = person
        .send(
            &to,
            Draft {
                subject: "Other".into(),
                body: "Written while you were away".into(),
                ..Draft::default()
            },
        )
        .await;
    app.llm.push(Reply::text("The plan is **simple**."));
    app.llm.push(Reply::text("Welcome back."));
    app.start().await;
    let inbox = person.wait_inbox(2).await;
    // Nothing more arrives: each mail answered once.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(person.inbox().await.len(), 2);
    let in_reply_to: Vec<Option<String>> = inbox.iter().map(|m| header(m, "In-Reply-To")).collect();
    assert!(
        in_reply_to.contains(&Some(format!("<{first}>"))),
        "{in_reply_to:?}"
    );
    assert!(
        in_reply_to.contains(&Some(format!("<{second}>"))),
        "{in_reply_to:?}"
    );
    let plan = inbox
        .iter()
        .find(|m| header(m, "In-Reply-To") == Some(format!("<{first}>")))
        .unwrap();
    assert_eq!(header(plan, "Subject").as_deref(), Some("Re: Plan"));
    // The two turns run at once after the restart, so either may have taken either reply.
    assert!(
        inbox.iter().any(|m| html_body(m)
            .unwrap_or_default()
            .contains("<strong>simple</strong>")),
        "the answer's HTML part"
    );
    app.shutdown().await;
}

/// How many times the shell tool ran, from the audit log.
async fn shell_runs(app: &TestApp) -> usize {
    let entries = app.store().audit(None, 50).await.expect("audit reads");
    entries
        .iter()
        .filter(|e| e.tool == "shell" && e.status == "ok")
        .count()
}

#[tokio::test]
async fn a_reply_approves_a_call_once_after_a_restart_and_a_second_reply_runs_nothing() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let policy = format!(
        "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\napproval_timeout_secs = 300\n[policy.approvers]\nmail = [\"{}\"]\n",
        person.address
    );
    let mut app = TestApp::builder()
        .config(&servers.table("mail", &bot, &[&person.address]))
        .config(&policy)
        .start()
        .await;
    app.llm
        .push(Reply::tool_call(
            "shell",
            serde_json::json!({"command": "touch made.txt"}),
        ))
        .push(Reply::text("Created it."));
    let first = person
        .send(
            &to,
            Draft {
                subject: "A file".into(),
                body: "make a file".into(),
                ..Draft::default()
            },
        )
        .await;
    // The paused turn's "waiting for approval" line, and the prompt naming the choices.
    let prompt = person
        .wait_inbox(2)
        .await
        .into_iter()
        .find(|m| html_body(m).unwrap_or_default().contains("approve"))
        .expect("a prompt naming the choices");
    let prompt_id = header(&prompt, "Message-ID").unwrap();
    let prompt_id = prompt_id.trim_matches(|c| c == '<' || c == '>').to_owned();
    let shown = html_body(&prompt).unwrap_or_default();
    assert!(
        shown.contains("approve"),
        "the choices are named: {shown}\n{}",
        String::from_utf8_lossy(&prompt)
    );

    app.restart().await;
    let reply = |body: &str| Draft {
        subject: "Re: A file".into(),
        body: body.into(),
        in_reply_to: Some(prompt_id.clone()),
        references: vec![first.clone(), prompt_id.clone()],
        ..Draft::default()
    };
    person
        .send(
            &to,
            reply("approve\n\nthanks!\n\nOn Mon, bot wrote:\n> Approval needed"),
        )
        .await;
    let inbox = person.wait_inbox(3).await;
    let bodies: Vec<String> = inbox
        .iter()
        .map(|m| html_body(m).unwrap_or_default())
        .collect();
    assert!(
        bodies[2].contains("Created it."),
        "the turn went on: {bodies:#?}"
    );
    assert_eq!(shell_runs(&app).await, 1);

    // Approved again: the decision stands, nothing runs twice, nothing more is mailed.
    person.send(&to, reply("approve")).await;
    tokio::time::sleep(Duration::from_secs(4)).await;
    assert_eq!(shell_runs(&app).await, 1);
    assert_eq!(person.inbox().await.len(), 3);
    app.shutdown().await;
}

#[tokio::test]
async fn a_lost_smtp_connection_is_retried_and_the_answer_arrives_once() {
    let Some(servers) = servers() else { return };
    let (bot, alice) = (servers.account().await, servers.account().await);
    let person = servers.person(&alice);
    let to = format!("{}@bot.test", bot.user);
    let proxy = TcpProxy::start(([127, 0, 0, 1], servers.smtp_port).into()).await;
    let mut config = servers.config(&bot, &[&person.address]);
    config["smtp"]["port"] = proxy.addr().port().into();
    let app = TestApp::builder()
        .config(&table("mail", config))
        .start()
        .await;
    app.llm.push(Reply::text("Sent after the outage."));
    proxy.cut();
    person
        .send(
            &to,
            Draft {
                subject: "Outage".into(),
                body: "still there?".into(),
                ..Draft::default()
            },
        )
        .await;
    app.llm.wait_for_requests(1, Duration::from_secs(30)).await;
    // The first attempts fail on the cut connection; the draft's delivery retries.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(person.inbox().await.is_empty());
    proxy.restore();
    let inbox = person.wait_inbox(1).await;
    assert!(
        html_body(&inbox[0])
            .unwrap()
            .contains("Sent after the outage.")
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(person.inbox().await.len(), 1, "sent once");
    app.shutdown().await;
}
