//! Loopback is not a credential. A sandboxed tool with network and a proxy on the gateway's
//! own host both reach it as 127.0.0.1, naming `Host: 127.0.0.1:<port>` and no proxy header,
//! exactly like a browser on this host. Without the token neither gets a dashboard page,
//! approves a call, reads the audit log, or becomes the web chat's operator; and a tool
//! cannot read the tokens from the data directory.

use reqwest::header::{HOST, ORIGIN};
use serde_json::json;
use switchboard::ids::ApprovalStatus;
use switchboard_standins::Reply;
use tokio_tungstenite::tungstenite;

use super::{client, csrf};
use crate::app::TestApp;
use crate::approvals::{buttons_channel, prompt};
use crate::helpers::{key, wait_transcript};
use crate::web::{Door, new_session, try_connect};

/// Shell calls run unasked (so the probe's call runs) except `chmod`, which asks; tools
/// have the whole network, the gateway's own port included.
const OPEN_NETWORK: &str = "[tools]\nenabled = [\"shell\"]\n[tools.shell]\ntimeout_secs = 20\n\
     [policy]\nmode = \"autonomous\"\nask = [\"shell(chmod *)\"]\napproval_timeout_secs = 300\n\
     [sandbox]\nnetwork = \"full\"\n";

/// A gateway with the web chat and a `chmod -R 777 .` waiting for approval in chat `victim`;
/// returns the approval's id.
async fn with_a_pending_call() -> (TestApp, String) {
    let app = TestApp::builder()
        .fake(buttons_channel())
        .web("")
        .config(OPEN_NETWORK)
        .start()
        .await;
    app.llm.push(Reply::tool_call(
        "shell",
        json!({"command": "chmod -R 777 ."}),
    ));
    let victim = key("victim");
    app.channel
        .say(&victim, "alice", "open everything up")
        .await
        .unwrap();
    prompt(&app.channel, &victim).await;
    let pending = app.store().pending_approvals().await.unwrap();
    assert_eq!(pending.len(), 1, "{pending:#?}");
    let id = pending[0].id.to_string();
    (app, id)
}

/// The approval is still waiting, and nobody was audited as deciding anything.
async fn still_pending(app: &TestApp, id: &str) {
    let pending = app.store().pending_approvals().await.unwrap();
    assert!(
        pending
            .iter()
            .any(|a| a.id.to_string() == id && a.status == ApprovalStatus::Pending),
        "the call must still wait for its operator: {pending:#?}"
    );
    let workspace = app.dir().join("workspaces/fake/victim");
    let mode = std::fs::metadata(&workspace).map(|m| {
        use std::os::unix::fs::PermissionsExt;
        m.permissions().mode() & 0o777
    });
    assert_ne!(mode.ok(), Some(0o777), "chmod never ran");
}

/// A script for the sandboxed shell: what a prompt-injected model would run to approve its
/// own call (read the CSRF field off the page, post Approve), read the audit log, open the
/// web chat, and read both token files; it prints each outcome.
fn probe(port: u16, id: &str, data_dir: &std::path::Path) -> String {
    let data = data_dir.display();
    let js = format!(
        r#"const base = "http://127.0.0.1:{port}";
const show = (what, r) => console.log(what, r.status);
(async () => {{
  const page = await fetch(base + "/admin/approvals");
  show("page", page);
  const m = (await page.text()).match(/name="csrf" content="([0-9a-f]+)"/);
  const body = new URLSearchParams({{csrf: m ? m[1] : "none", id: "{id}", action: "approve"}});
  show("decide", await fetch(base + "/admin/approvals/decide", {{method: "POST", body, redirect: "manual", headers: {{origin: base}}}}));
  show("audit", await fetch(base + "/admin/audit"));
  show("chat", await fetch(base + "/"));
  for (const f of ["admin.token", "web/web.token"]) {{
    try {{ console.log("read", f, require("fs").readFileSync("{data}/" + f, "utf8").length); }}
    catch (e) {{ console.log("unreadable", f, e.code); }}
  }}
}})();"#
    );
    format!("node -e '{js}'")
}

/// What the probe printed, as its tool result went back to the model.
fn probe_output(app: &TestApp) -> String {
    let requests = app.llm.requests();
    let mut tools = requests
        .iter()
        .flat_map(|r| r["messages"].as_array().cloned().unwrap_or_default())
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str().map(str::to_owned));
    let found = tools.rfind(|t| t.contains("page "));
    found.unwrap_or_else(|| panic!("no probe output among {requests:#?}"))
}

#[tokio::test]
async fn a_sandboxed_tool_with_network_cannot_open_the_dashboard_approve_its_own_call_or_read_a_token()
 {
    if !std::path::Path::new("/usr/bin/node").exists() {
        eprintln!("skipped: node (the tool's HTTP client) is not installed");
        return;
    }
    let (app, id) = with_a_pending_call().await;
    let command = probe(app.addr().port(), &id, app.dir());
    // Two answers after the call: one for the probe's turn, and one for the victim's,
    // should the probe's approval resume it.
    app.llm
        .push(Reply::tool_call("shell", json!({"command": command})))
        .push(Reply::text("probe done"))
        .push(Reply::text("probe done"));
    let chat = key("probe");
    app.channel.say(&chat, "u1", "look around").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.iter().any(|m| m == "probe done")).await;
    let out = probe_output(&app);
    for refused in ["page 401", "decide 401", "audit 401", "chat 401"] {
        assert!(out.contains(refused), "{refused}: {out}");
    }
    for file in ["admin.token", "web/web.token"] {
        assert!(out.contains(&format!("unreadable {file}")), "{file}: {out}");
    }
    still_pending(&app, &id).await;
    app.shutdown().await;
}

#[tokio::test]
async fn a_same_host_proxy_forwarding_without_the_token_gets_no_page_no_approval_no_audit_and_no_chat()
 {
    let (app, id) = with_a_pending_call().await;
    let port = app.addr().port();
    // What nginx's plain `proxy_pass http://127.0.0.1:<port>;` sends: a loopback peer, a
    // loopback `Host`, and no X-Forwarded-For.
    let proxied = format!("127.0.0.1:{port}");
    for path in ["/", "/approvals", "/audit", "/events"] {
        let response = client()
            .get(app.url(&format!("/admin{path}")))
            .header(HOST, &proxied)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 401, "/admin{path}");
        let body = response.text().await.unwrap();
        assert!(body.contains("switchboard admin-token"), "{body}");
    }
    // Even holding the page's CSRF field, a request without the token does not act.
    let csrf = csrf(&app).await;
    let form = [
        ("csrf", csrf.as_str()),
        ("id", id.as_str()),
        ("action", "approve"),
    ];
    let decide = client()
        .post(app.url("/admin/approvals/decide"))
        .header(HOST, &proxied)
        .header(ORIGIN, format!("http://{proxied}"))
        .form(&form)
        .send()
        .await
        .unwrap();
    assert_eq!(decide.status().as_u16(), 401);

    let chat = client()
        .get(app.url("/"))
        .header(HOST, &proxied)
        .send()
        .await
        .unwrap();
    assert_eq!(chat.status().as_u16(), 401, "the web chat's page");
    match try_connect(&Door::bare(app.addr()), &new_session(), "").await {
        Err(tungstenite::Error::Http(response)) => assert_eq!(response.status().as_u16(), 401),
        other => panic!(
            "the socket must refuse a token-less loopback peer, got {:?}",
            other.map(|_| ())
        ),
    }
    still_pending(&app, &id).await;
    app.shutdown().await;
}
