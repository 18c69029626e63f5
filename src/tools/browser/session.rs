//! One conversation's browser: Chromium started through the tool sandbox as a long-lived
//! server (its profile in the workspace's `.browser`, its only network the proxy's port,
//! its own memory and CPU limits), one page attached over the DevTools pipe, and the steps
//! the tool's actions are made of.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncBufReadExt;

use super::cdp::Cdp;
use super::proxy::Proxy;
use crate::config::BrowserConfig;
use crate::hosts::Allowed;
use crate::sandbox::{Limits, Network, Sandbox, ServerAllowances, ServerProcess};

/// The profile directory, inside the conversation's workspace.
pub const PROFILE_DIR: &str = ".browser";

/// Flags for a headless Chromium inside our sandbox: its own sandbox needs namespaces ours
/// forbids, and there is no `/dev/shm` (shared memory goes through `TMPDIR`); nothing it
/// would fetch on its own (updates, sync, metrics) is wanted.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--no-zygote",
    "--disable-dev-shm-usage",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-sync",
    "--disable-breakpad",
    "--no-first-run",
    "--no-default-browser-check",
    "--mute-audio",
    "--remote-debugging-pipe",
    "--window-size=1200,900",
];

/// How long Chromium may take to answer its first command.
const START: Duration = Duration::from_secs(20);

/// Stderr lines kept to explain a browser that failed.
const STDERR_LINES: usize = 12;

/// A running browser with one page.
pub struct Session {
    cdp: Cdp,
    /// The page's DevTools session id.
    page: String,
    proxy: Proxy,
    stderr: Arc<Mutex<VecDeque<String>>>,
    /// Held: dropping it stops the browser's whole tree.
    _process: ServerProcess,
}

/// The Chromium binary: the configured one, else Debian's headless shell. Not `chromium`
/// itself: its process singleton needs a unix socket (and `listen`), which the tool
/// sandbox's seccomp filter refuses while the network is limited to ports.
pub fn chromium(config: &BrowserConfig) -> Option<PathBuf> {
    if let Some(path) = &config.chromium {
        return Some(path.clone()).filter(|p| p.exists());
    }
    Some(PathBuf::from(HEADLESS_SHELL)).filter(|p| p.exists())
}

/// Where Debian's `chromium-headless-shell` puts the binary.
pub const HEADLESS_SHELL: &str = "/usr/lib/chromium/chromium-headless-shell";

/// What the browser's processes get: `[sandbox.limits]` with the browser's own memory and
/// CPU, and room for its threads (each counts as a process).
pub fn limits(base: &Limits, config: &BrowserConfig) -> Limits {
    Limits {
        memory_mb: config.memory_mb,
        cpu_secs: config.cpu_secs,
        processes: base.processes.max(1024),
        open_files: base.open_files.max(4096),
        ..*base
    }
}

/// What a conversation's browser runs with, in one line (logged at start when the tool is
/// enabled, and shown by `doctor`).
pub fn posture(config: &BrowserConfig, base: &Limits) -> String {
    let binary = match chromium(config) {
        Some(path) => path.display().to_string(),
        None => {
            "no Chromium found (install chromium-headless-shell or set [tools.browser] chromium)"
                .into()
        }
    };
    let limits = limits(base, config);
    format!(
        "browser: {binary}; inside the tool sandbox with Chromium's own sandbox off (it needs \
         namespaces the tool sandbox forbids); network only through the gateway's checking \
         proxy on one loopback port; memory {} MiB for its process tree, {} CPU s and {} \
         processes; no /dev/shm (shared memory goes through files); profile in the \
         workspace's {PROFILE_DIR}, closed after {} s idle",
        limits.memory_mb, limits.cpu_secs, limits.processes, config.idle_secs
    )
}

impl Session {
    /// Start Chromium for `workspace` under `sandbox`, behind a new proxy allowing
    /// `allowed`, and open its page.
    pub async fn start(
        sandbox: &Sandbox,
        workspace: &Path,
        config: &BrowserConfig,
        base: &Limits,
        allowed: Allowed,
    ) -> Result<Self, String> {
        let binary = chromium(config).ok_or_else(|| {
            "Chromium's headless shell is not installed: install Debian's chromium-headless-shell or set [tools.browser] chromium"
                .to_owned()
        })?;
        let workspace = sandbox
            .prepare_workspace(workspace)
            .map_err(|e| format!("cannot prepare the workspace: {e}"))?;
        let workspace = workspace.as_path();
        let proxy = Proxy::start(allowed)
            .await
            .map_err(|e| format!("cannot start the browser's proxy: {e}"))?;
        let mut argv = vec![binary.display().to_string()];
        argv.extend(FLAGS.iter().map(|f| (*f).to_owned()));
        argv.push(format!("--proxy-server=http://127.0.0.1:{}", proxy.port()));
        // Without this Chromium sends loopback straight out, past the proxy.
        argv.push("--proxy-bypass-list=<-loopback>".to_owned());
        argv.push(format!(
            "--user-data-dir={}",
            workspace.join(PROFILE_DIR).display()
        ));
        argv.push("about:blank".to_owned());
        let allow = ServerAllowances {
            network: Network::Ports(vec![proxy.port()]),
            limits: Some(limits(base, config)),
            pipe_fds: true,
            ..ServerAllowances::default()
        };
        let (mut process, output, input) = sandbox.spawn_server(workspace, &argv, &[], &allow)?;
        let stderr = Arc::new(Mutex::new(VecDeque::new()));
        if let Some(pipe) = process.take_stderr() {
            tokio::spawn(keep_tail(pipe, Arc::clone(&stderr)));
        }
        let cdp = Cdp::new(output, input);
        let mut session = Self {
            cdp,
            page: String::new(),
            proxy,
            stderr,
            _process: process,
        };
        session.page = match session.open_page().await {
            Ok(page) => page,
            Err(err) => return Err(session.explain(&err)),
        };
        Ok(session)
    }

    async fn open_page(&self) -> Result<String, String> {
        let target = self
            .cdp
            .call(
                None,
                "Target.createTarget",
                json!({"url": "about:blank"}),
                START,
            )
            .await?;
        let id = target["targetId"].as_str().unwrap_or_default();
        let attached = self
            .cdp
            .call(
                None,
                "Target.attachToTarget",
                json!({"targetId": id, "flatten": true}),
                START,
            )
            .await?;
        let page = attached["sessionId"]
            .as_str()
            .ok_or("the browser attached no session")?
            .to_owned();
        for method in ["Page.enable", "Runtime.enable", "Inspector.enable"] {
            self.cdp.call(Some(&page), method, json!({}), START).await?;
        }
        Ok(page)
    }

    /// `err`, with the last lines the browser wrote to stderr when it has exited.
    pub fn explain(&self, err: &str) -> String {
        let tail: Vec<String> = self
            .stderr
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        if self.cdp.closed().is_none() || tail.is_empty() {
            return err.to_owned();
        }
        format!("{err}; the browser said: {}", tail.join(" | "))
    }

    /// Whether the browser has exited (or its pipe closed).
    pub fn gone(&self) -> bool {
        self.cdp.closed().is_some()
    }

    /// The proxy's refusals since the last look.
    pub fn refusals(&self) -> Vec<super::proxy::Refusal> {
        self.proxy.take_refusals()
    }

    /// Whether the page crashed since the last look.
    pub fn crashed(&self) -> bool {
        self.cdp.take_crash()
    }

    /// A command to the page.
    pub async fn send(
        &self,
        method: &str,
        params: Value,
        within: Duration,
    ) -> Result<Value, String> {
        self.cdp
            .call(Some(&self.page), method, params, within)
            .await
    }

    /// [`Session::eval`] of a script that only reads the page, asked again while a navigation
    /// replaces the document under it (a slow `back` or click on a loaded machine), until
    /// `within` runs out.
    pub async fn read_eval(&self, expression: &str, within: Duration) -> Result<Value, String> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            match self.eval(expression, within).await {
                Err(err) if navigating(&err) && tokio::time::Instant::now() < deadline => {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                other => return other,
            }
        }
    }

    /// Evaluate `expression` in the page and return its JSON value; an `{error}` object it
    /// returns becomes the error.
    pub async fn eval(&self, expression: &str, within: Duration) -> Result<Value, String> {
        let params = json!({"expression": expression, "returnByValue": true, "awaitPromise": true});
        let answer = self.send("Runtime.evaluate", params, within).await?;
        if let Some(thrown) = answer.get("exceptionDetails") {
            let text = thrown["exception"]["description"]
                .as_str()
                .or(thrown["text"].as_str())
                .unwrap_or("the script failed");
            return Err(text.to_owned());
        }
        let value = answer["result"]["value"].clone();
        match value["error"].as_str() {
            Some(error) => Err(error.to_owned()),
            None => Ok(value),
        }
    }

    /// Go to `url` and wait for the page to load (at most `within`).
    pub async fn navigate(&self, url: &str, within: Duration) -> Result<(), String> {
        let answer = self
            .send("Page.navigate", json!({"url": url}), within)
            .await?;
        if let Some(error) = answer["errorText"].as_str() {
            return Err(format!("the page did not load: {error}"));
        }
        self.settle(within).await
    }

    /// Wait until the document has loaded, up to `within` (a page still loading then is read
    /// as it is).
    pub async fn settle(&self, within: Duration) -> Result<(), String> {
        let deadline = tokio::time::Instant::now() + within;
        // A click's navigation starts a moment after the click.
        tokio::time::sleep(Duration::from_millis(150)).await;
        while tokio::time::Instant::now() < deadline {
            let state = self.read_eval("document.readyState", within).await?;
            if state == "complete" {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Ok(())
    }

    /// A real mouse click at the middle of reference `n`.
    pub async fn click(&self, n: u64, within: Duration) -> Result<(), String> {
        let at = self.eval(&super::page::center(n), within).await?;
        let (x, y) = (
            at["x"].as_f64().unwrap_or(0.0),
            at["y"].as_f64().unwrap_or(0.0),
        );
        for kind in ["mouseMoved", "mousePressed", "mouseReleased"] {
            let params = json!({"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1});
            self.send("Input.dispatchMouseEvent", params, within)
                .await?;
        }
        self.settle(within).await
    }

    /// Replace the text of field `n` with `text`, typed as input events. A password field
    /// takes text only when the call said so (`password`), so the policy asked first.
    pub async fn type_text(
        &self,
        n: u64,
        text: &str,
        password: bool,
        within: Duration,
    ) -> Result<(), String> {
        let field = self.eval(&super::page::focus(n), within).await?;
        if field["password"] == true && !password {
            return Err(format!(
                "[{n}] is a password field: typing into one asks the person first; call again with password = true"
            ));
        }
        self.send("Input.insertText", json!({"text": text}), within)
            .await?;
        Ok(())
    }

    /// Press Enter in the focused element.
    pub async fn enter(&self, within: Duration) -> Result<(), String> {
        for kind in ["keyDown", "keyUp"] {
            let params = json!({"type": kind, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13, "text": "\r"});
            self.send("Input.dispatchKeyEvent", params, within).await?;
        }
        self.settle(within).await
    }

    /// A PNG of the visible page.
    pub async fn screenshot(&self, within: Duration) -> Result<Vec<u8>, String> {
        use base64::Engine;
        let shot = self
            .send("Page.captureScreenshot", json!({"format": "png"}), within)
            .await?;
        let data = shot["data"].as_str().ok_or("the browser sent no image")?;
        base64::engine::general_purpose::STANDARD
            .decode(data)
            .map_err(|e| format!("the screenshot is not base64: {e}"))
    }
}

/// Keep the last lines of the browser's stderr.
async fn keep_tail(pipe: impl tokio::io::AsyncRead + Unpin, tail: Arc<Mutex<VecDeque<String>>>) {
    let mut lines = tokio::io::BufReader::new(pipe).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        let mut tail = tail.lock().unwrap_or_else(|e| e.into_inner());
        if tail.len() == STDERR_LINES {
            tail.pop_front();
        }
        tail.push_back(line.chars().take(300).collect());
    }
}

/// Whether a DevTools error says the page's document was replaced while a script ran.
fn navigating(error: &str) -> bool {
    [
        "navigated or closed",
        "context was destroyed",
        "Cannot find context",
    ]
    .iter()
    .any(|said| error.contains(said))
}
