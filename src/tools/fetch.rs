//! `http_fetch`: GET a URL on an allow-listed host and port and return its text, capped.
//! Redirects are followed only to allowed hosts and ports; every address a name resolves to
//! is checked (see [`super::hosts`]); with no hosts configured every URL is refused.

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::agent::{Tool, ToolResult};
use crate::config::HttpFetchConfig;
use crate::hosts::{Allowed, CheckingResolver};

/// Fetches web pages from allowed hosts.
pub struct HttpFetchTool {
    client: reqwest::Client,
    allowed: Allowed,
    max_bytes: usize,
}

impl HttpFetchTool {
    /// Build from `[tools.http_fetch]`. The client connects directly, never through a proxy
    /// from the environment, so the address it checks is the address it connects to.
    pub fn new(config: &HttpFetchConfig) -> Self {
        let allowed = Allowed::new(config.allowed_hosts.clone());
        let for_redirects = allowed.clone();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs.max(1)))
            .no_proxy()
            .dns_resolver(Arc::new(CheckingResolver(allowed.clone())))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                let ok = target(attempt.url()).is_ok_and(|(host, port)| {
                    for_redirects.check(&host, port).is_ok()
                        && literal_ok(&for_redirects, attempt.url()).is_ok()
                });
                if ok && attempt.previous().len() < 5 {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .expect("static client settings");
        Self {
            client,
            allowed,
            max_bytes: config.max_bytes,
        }
    }
}

/// The host and port `url` connects to.
fn target(url: &reqwest::Url) -> Result<(String, u16), String> {
    let host = url.host_str().unwrap_or_default().to_owned();
    let port = url
        .port_or_known_default()
        .ok_or_else(|| format!("{url} names no port"))?;
    Ok((host, port))
}

/// An address written in the URL is never resolved, so it is checked here.
fn literal_ok(allowed: &Allowed, url: &reqwest::Url) -> Result<(), String> {
    let host = url.host_str().unwrap_or_default();
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    match bare.parse::<IpAddr>() {
        Ok(ip) => allowed.check_addr(host, ip),
        Err(_) => Ok(()),
    }
}

/// The message of `err` and of everything under it: the resolver's refusal sits deep in
/// reqwest's chain.
fn chain(err: reqwest::Error) -> String {
    let err = err.without_url();
    let mut text = err.to_string();
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[async_trait]
impl Tool for HttpFetchTool {
    fn name(&self) -> &str {
        "http_fetch"
    }

    fn description(&self) -> &str {
        "GET a web page or API (http/https) from an allowed host and return its text."
    }

    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"url": {"type": "string", "description": "Absolute http(s) URL."}}, "required": ["url"], "additionalProperties": false})
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let raw = args["url"].as_str().unwrap_or_default();
        let Ok(url) = reqwest::Url::parse(raw) else {
            return ToolResult::err(format!("{raw:?} is not an absolute URL"));
        };
        if !matches!(url.scheme(), "http" | "https") {
            return ToolResult::err("only http and https URLs can be fetched");
        }
        let checked = target(&url).and_then(|(host, port)| {
            self.allowed.check(&host, port)?;
            literal_ok(&self.allowed, &url)
        });
        if let Err(refused) = checked {
            return ToolResult::err(refused);
        }
        let response = match self.client.get(url).send().await {
            Ok(r) => r,
            Err(e) => return ToolResult::err(format!("request failed: {}", chain(e))),
        };
        let status = response.status();
        let mut body = Vec::new();
        let mut cut = false;
        let mut stream = response.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            let room = self.max_bytes.saturating_sub(body.len());
            body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if chunk.len() > room {
                cut = true;
                break;
            }
        }
        let mut text = String::from_utf8_lossy(&body).into_owned();
        if cut {
            text.push_str("\n[output truncated]");
        }
        if status.is_success() {
            ToolResult::ok(text)
        } else {
            ToolResult::failed(text, format!("HTTP {status}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_url_on_a_host_not_allowed_is_refused_without_a_request() {
        let tool = HttpFetchTool::new(&HttpFetchConfig::default());
        let out = tool.execute(json!({"url": "http://127.0.0.1:9/x"})).await;
        assert!(out.error.unwrap().contains("allowed_hosts"));
    }
}
