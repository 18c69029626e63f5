//! `http_fetch`: GET a URL on an allow-listed host and return its text, capped. Redirects are
//! followed only to allowed hosts; with no hosts configured every URL is refused.

use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use crate::agent::{Tool, ToolResult};
use crate::config::HttpFetchConfig;

/// Fetches web pages from allowed hosts.
pub struct HttpFetchTool {
    client: reqwest::Client,
    allowed: Vec<String>,
    max_bytes: usize,
}

/// Whether `host` is allowed by `patterns` (`example.com`, or `*.example.com`).
pub fn host_allowed(patterns: &[String], host: &str) -> bool {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    patterns.iter().any(|p| {
        let p = p.to_ascii_lowercase();
        match p.strip_prefix("*.") {
            Some(base) => host.ends_with(&format!(".{base}")),
            None => host == p,
        }
    })
}

impl HttpFetchTool {
    /// Build from `[tools.http_fetch]`.
    pub fn new(config: &HttpFetchConfig) -> Self {
        let allowed = config.allowed_hosts.clone();
        let for_redirects = allowed.clone();
        let client = reqwest::Client::builder()
            .timeout(Duration::from_secs(config.timeout_secs.max(1)))
            .redirect(reqwest::redirect::Policy::custom(move |attempt| {
                let ok = attempt
                    .url()
                    .host_str()
                    .is_some_and(|h| host_allowed(&for_redirects, h));
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
        let host = url.host_str().unwrap_or_default();
        if !host_allowed(&self.allowed, host) {
            return ToolResult::err(format!(
                "host {host} is not in [tools.http_fetch] allowed_hosts"
            ));
        }
        let response = match self.client.get(url).send().await {
            Ok(r) => r,
            Err(e) => return ToolResult::err(format!("request failed: {}", e.without_url())),
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
            ToolResult {
                success: false,
                output: text,
                error: Some(format!("HTTP {status}")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_match_exactly_or_by_wildcard_suffix() {
        let allowed = vec!["example.com".to_owned(), "*.docs.rs".to_owned()];
        assert!(host_allowed(&allowed, "example.com"));
        assert!(host_allowed(&allowed, "EXAMPLE.com."));
        assert!(!host_allowed(&allowed, "evil-example.com"));
        assert!(host_allowed(&allowed, "api.docs.rs"));
        assert!(!host_allowed(&allowed, "docs.rs.evil.com"));
        assert!(!host_allowed(&[], "example.com"));
    }

    #[tokio::test]
    async fn a_url_on_a_host_not_allowed_is_refused_without_a_request() {
        let tool = HttpFetchTool::new(&HttpFetchConfig::default());
        let out = tool.execute(json!({"url": "http://127.0.0.1:9/x"})).await;
        assert!(out.error.unwrap().contains("allowed_hosts"));
    }
}
