//! Opening one MCP session: a stdio server started through the sandbox's long-lived launch
//! mode, or a streamable-HTTP endpoint through reqwest; both speak the protocol through
//! `rmcp`'s client and finish its initialize handshake before they count as up. A stdio
//! server that fails its handshake is explained by the last lines of its stderr.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{RoleClient, ServiceExt};

use super::stderr::StderrTail;
use crate::config::mcp::McpServerConfig;
use crate::sandbox::{Sandbox, ServerAllowances, ServerProcess};
use crate::scrub::Scrubber;

/// A live session with one server.
pub struct Session {
    /// The protocol client.
    pub service: RunningService<RoleClient, ()>,
    /// The stdio server's process (stopped with its tree when dropped); `None` over HTTP.
    pub process: Option<std::sync::Mutex<ServerProcess>>,
    /// The last lines of the stdio server's stderr, which say why it died.
    pub stderr: StderrTail,
}

impl Session {
    /// Whether the stdio server has exited (an HTTP session is judged by its calls).
    pub fn exited(&self) -> bool {
        self.process
            .as_ref()
            .is_some_and(|p| p.lock().map(|mut p| p.exited()).unwrap_or(true))
    }

    /// `error` followed by the server's last stderr lines (scrubbed of `config`'s secrets).
    pub fn explain(&self, error: String, config: &McpServerConfig) -> String {
        self.stderr.explain(error, &secrets_of(config))
    }
}

/// A scrubber for what one server may print: its own environment and header values (it
/// sees no other secret) and the usual credential shapes.
pub fn secrets_of(config: &McpServerConfig) -> Scrubber {
    let values = config.env.values().chain(config.headers.values());
    Scrubber::new(values.filter_map(crate::config::Secret::expose))
}

/// Where and how a stdio server runs.
pub struct Launch<'a> {
    /// The sandbox every tool process goes through.
    pub sandbox: &'a Sandbox,
    /// Its working directory (shared servers get one of their own).
    pub workspace: &'a Path,
}

/// Start `config`'s server (named `name`) and complete the handshake within its timeout.
pub async fn open(
    name: &str,
    config: &McpServerConfig,
    launch: &Launch<'_>,
) -> Result<Session, String> {
    let limit = Duration::from_secs(config.timeout_secs.max(1));
    let opening = async {
        match (&config.command, &config.url) {
            (Some(command), _) => stdio(name, command, config, launch).await,
            (None, Some(url)) => http(url, config).await,
            (None, None) => Err("neither `command` nor `url` is set".to_owned()),
        }
    };
    tokio::time::timeout(limit, opening)
        .await
        .unwrap_or_else(|_| {
            Err(format!(
                "no answer to the handshake within {}s",
                limit.as_secs()
            ))
        })
}

async fn stdio(
    name: &str,
    command: &str,
    config: &McpServerConfig,
    launch: &Launch<'_>,
) -> Result<Session, String> {
    let argv: Vec<String> = std::iter::once(command.to_owned())
        .chain(config.args.iter().cloned())
        .collect();
    let env: Vec<(String, String)> = config
        .env
        .iter()
        .filter_map(|(k, v)| Some((k.clone(), v.expose()?.to_owned())))
        .collect();
    let allow = ServerAllowances {
        extra_read: config.extra_read.clone(),
        extra_write: config.extra_write.clone(),
        network: config.network.clone(),
        ..ServerAllowances::default()
    };
    let (mut process, stdout, stdin) =
        launch
            .sandbox
            .spawn_server(launch.workspace, &argv, &env, &allow)?;
    let stderr = match process.take_stderr() {
        Some(pipe) => StderrTail::drain(name, pipe),
        None => StderrTail::default(),
    };
    let service = match ().serve((stdout, stdin)).await {
        Ok(service) => service,
        Err(e) => {
            let error = format!("the handshake failed: {e}");
            return Err(stderr.explain_settled(error, &secrets_of(config)).await);
        }
    };
    Ok(Session {
        service,
        process: Some(std::sync::Mutex::new(process)),
        stderr,
    })
}

async fn http(url: &str, config: &McpServerConfig) -> Result<Session, String> {
    let mut headers = reqwest::header::HeaderMap::new();
    for (key, value) in &config.headers {
        let name = reqwest::header::HeaderName::from_bytes(key.as_bytes())
            .map_err(|_| format!("header name {key:?} is not valid"))?;
        let mut value = reqwest::header::HeaderValue::from_str(value.expose().unwrap_or_default())
            .map_err(|_| format!("header {key:?} has a value that cannot be sent"))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    let client = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
    let transport = StreamableHttpClientTransport::with_client(
        client,
        StreamableHttpClientTransportConfig::with_uri(Arc::<str>::from(url)),
    );
    let service = ().serve(transport).await.map_err(|e| format!("the handshake failed: {e}"))?;
    Ok(Session {
        service,
        process: None,
        stderr: StderrTail::default(),
    })
}
