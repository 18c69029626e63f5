//! `switchboard check --probe`: one tiny real request to the provider (a one-token answer to
//! "ping") and to each configured platform (Telegram `getMe`, Slack `auth.test`, Discord
//! `users/@me`), printing what works and, for what does not, why (the classified provider
//! error; the platform's own description). Nothing is stored and nothing is sent to anyone.

use std::time::Duration;

use serde_json::Value;

use crate::config::{ChannelConfig, Config, ProviderConfig};
use crate::provider::{self, ChatMessage, ChatRequest, Role, StreamEvent};

/// How long one probe waits.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Probe everything `config` names; prints one line each. `true` when all answered.
pub async fn run(config: &Config) -> bool {
    let mut all_ok = report("provider", probe_provider(&config.provider).await);
    let http = match reqwest::Client::builder().timeout(PROBE_TIMEOUT).build() {
        Ok(http) => http,
        Err(err) => return report("platforms", Err(format!("no HTTP client: {err}"))),
    };
    for (name, channel) in &config.channels {
        if let Some(key) = channel.settings().missing_credential() {
            println!("probe {name}: skipped ({key} unset)");
            continue;
        }
        if let Some(result) = probe_channel(&http, channel).await {
            all_ok &= report(name, result);
        }
    }
    all_ok & probe_mcp(config).await
}

/// Start each `[mcp]` server once through the sandbox and list its tools.
async fn probe_mcp(config: &Config) -> bool {
    if config.mcp.servers.is_empty() {
        return true;
    }
    let data_dir = &config.gateway.data_dir;
    let sandbox = std::sync::Arc::new(crate::sandbox::Sandbox::new(&config.sandbox, data_dir));
    let mut all_ok = true;
    for line in crate::mcp::probe_lines(&config.mcp, sandbox, data_dir).await {
        all_ok &= !line.contains(": FAILED: ");
        println!("probe {line}");
    }
    all_ok
}

fn report(what: &str, result: Result<String, String>) -> bool {
    match result {
        Ok(detail) => {
            println!("probe {what}: ok ({detail})");
            true
        }
        Err(detail) => {
            println!("probe {what}: FAILED: {detail}");
            false
        }
    }
}

/// A one-token answer to "ping" (no retries: the probe says what happens right now).
async fn probe_provider(config: &ProviderConfig) -> Result<String, String> {
    let tiny = ProviderConfig {
        max_tokens: 1,
        max_retries: 0,
        timeout_secs: PROBE_TIMEOUT.as_secs(),
        ..config.clone()
    };
    let provider = provider::from_config(&tiny).map_err(|e| format!("{e:#}"))?;
    let request = ChatRequest {
        messages: vec![ChatMessage::new(Role::User, "ping")],
        tools: Default::default(),
    };
    let mut stream = provider.stream(&request).await.map_err(|e| e.to_string())?;
    while let Some(event) = stream.next().await {
        if let StreamEvent::Done { .. } = event.map_err(|e| e.to_string())? {
            break;
        }
    }
    Ok(format!(
        "model {} answered at {}",
        &*config.model,
        config.base_url()
    ))
}

/// `getMe`, `auth.test` or `users/@me`; `None` for a channel with nothing to ask (web).
async fn probe_channel(
    http: &reqwest::Client,
    channel: &ChannelConfig,
) -> Option<Result<String, String>> {
    let (request, name_at) = match channel {
        #[cfg(feature = "telegram")]
        ChannelConfig::Telegram(c) => {
            let token = c.token.expose().unwrap_or_default();
            let url = format!("{}/bot{token}/getMe", c.api_url.trim_end_matches('/'));
            (http.get(url), "/result/username")
        }
        #[cfg(feature = "slack")]
        ChannelConfig::Slack(c) => {
            let url = format!("{}/auth.test", c.api_url.trim_end_matches('/'));
            let token = c.bot_token.expose().unwrap_or_default();
            (http.post(url).bearer_auth(token), "/user")
        }
        #[cfg(feature = "discord")]
        ChannelConfig::Discord(c) => {
            let url = format!("{}/api/v10/users/@me", c.api_url.trim_end_matches('/'));
            let token = c.token.expose().unwrap_or_default();
            let auth = format!("Bot {token}");
            (http.get(url).header("authorization", auth), "/username")
        }
        // The business number's own record: its display number answers for the token.
        #[cfg(feature = "whatsapp")]
        ChannelConfig::WhatsApp(c) => {
            let base = c.api_url.trim_end_matches('/');
            let url = format!("{base}/{}?fields=display_phone_number", c.phone_number_id);
            let token = c.access_token.expose().unwrap_or_default();
            (http.get(url).bearer_auth(token), "/display_phone_number")
        }
        // Logging in would make a device; the homeserver answering its versions is the check.
        #[cfg(feature = "matrix")]
        ChannelConfig::Matrix(c) => return Some(probe_matrix(http, c).await),
        // Logs in to both servers (IMAP, then SMTP submission) and reads the mailbox's size.
        #[cfg(feature = "email")]
        ChannelConfig::Email(c) => {
            let probe = tokio::time::timeout(PROBE_TIMEOUT * 3, switchboard_email::probe(c));
            return Some(
                probe
                    .await
                    .unwrap_or_else(|_| Err("no answer in time".into())),
            );
        }
        // The daemon's version, and whether it serves the configured account.
        #[cfg(feature = "signal")]
        ChannelConfig::Signal(c) => return Some(probe_signal(http, c).await),
        #[allow(
            unreachable_patterns,
            reason = "reached only when a channel's cargo feature is off"
        )]
        _ => return None,
    };
    Some(ask(request, name_at).await)
}

/// The homeserver's `/versions`: it answers, and which Matrix version it speaks last.
#[cfg(feature = "matrix")]
async fn probe_matrix(
    http: &reqwest::Client,
    c: &switchboard_matrix::MatrixConfig,
) -> Result<String, String> {
    let base = c.homeserver.trim_end_matches('/');
    let url = format!("{base}/_matrix/client/versions");
    ask_json(http.get(url)).await.map(|body| {
        format!(
            "homeserver {base} answers (Matrix {}); {} logs in when the gateway starts",
            body["versions"]
                .as_array()
                .and_then(|v| v.last())
                .and_then(Value::as_str)
                .unwrap_or("?"),
            c.user_id
        )
    })
}

/// signal-cli's `version` and `listAccounts` over its JSON-RPC endpoint.
#[cfg(feature = "signal")]
async fn probe_signal(
    http: &reqwest::Client,
    c: &switchboard_signal::SignalConfig,
) -> Result<String, String> {
    let url = format!("{}/api/v1/rpc", c.daemon_url.trim_end_matches('/'));
    let call = |method: &str| {
        let body = serde_json::json!({ "jsonrpc": "2.0", "method": method, "id": method });
        http.post(url.as_str()).json(&body)
    };
    let version = ask_json(call("version")).await?;
    if let Some(why) = version["error"]["message"].as_str() {
        return Err(format!(
            "signal-cli at {} refused `version`: {why}",
            c.daemon_url
        ));
    }
    let version = version["result"]["version"]
        .as_str()
        .unwrap_or("?")
        .to_owned();
    let accounts = ask_json(call("listAccounts")).await?;
    let listed = accounts["result"].as_array().is_some_and(|list| {
        list.iter().any(|a| {
            [&a["number"], &a["aci"], &a["uuid"]].iter().any(|v| {
                v.as_str()
                    .is_some_and(|v| v.eq_ignore_ascii_case(&c.account))
            })
        })
    });
    // A daemon started with `-a` answers for its one account and may not list it.
    if accounts["error"].is_null() && !listed && accounts["result"].is_array() {
        return Err(format!(
            "signal-cli {version} at {} does not serve account {}: register or link it first",
            c.daemon_url, c.account
        ));
    }
    Ok(format!(
        "signal-cli {version} at {} serves {}",
        c.daemon_url, c.account
    ))
}

/// Send `request`; the bot's name at JSON pointer `name_at` when the platform says ok.
async fn ask(request: reqwest::RequestBuilder, name_at: &str) -> Result<String, String> {
    let body = ask_json(request).await?;
    let name = body.pointer(name_at).and_then(Value::as_str).unwrap_or("?");
    Ok(format!("bot {name}"))
}

/// Send `request`; its JSON body when the platform says ok.
async fn ask_json(request: reqwest::RequestBuilder) -> Result<Value, String> {
    // The URL may carry the token (Telegram): never print reqwest's text with it.
    let response = request
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    let body: Value = response.json().await.unwrap_or(Value::Null);
    let refused = body["ok"] == Value::Bool(false);
    if !status.is_success() || refused {
        let why = body["description"]
            .as_str()
            .or(body["error"].as_str())
            .or(body["message"].as_str())
            .unwrap_or("no explanation");
        return Err(format!("HTTP {}: {why}", status.as_u16()));
    }
    Ok(body)
}
