//! Headless Chromium for browser tests: starts Debian's `chromedriver` on a free loopback
//! port and opens a WebDriver session (fantoccini) with a fresh profile. When Chromium or
//! chromedriver is missing the test is skipped with a visible NOTICE, unless
//! `SWITCHBOARD_REQUIRE_BROWSER=1` (set by CI), which makes their absence a failure.
//! `tests/browser/install.sh` installs both.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use fantoccini::{Client, ClientBuilder};
use serde_json::json;
use switchboard_standins::{Later, eventually, eventually_every};
use tokio::process::{Child, Command};

/// Flags that keep a headless Chromium quiet, sandbox-free (containers) and reproducible.
const CHROMIUM_FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1000,760",
];

/// How often a wait asks the page for its state: each ask is a WebDriver round trip.
const PAGE_EVERY: Duration = Duration::from_millis(40);

/// What `script` (a page function returning JSON) reports about the page now.
pub async fn page_state(client: &Client, script: &str) -> serde_json::Value {
    client
        .execute(script, Vec::new())
        .await
        .expect("page state")
}

/// Run `script` on the page until its report satisfies `done`, and return that report; past
/// the tests' `WAIT`, fail naming `what` with the last report.
pub async fn wait_for(
    client: &Client,
    script: &str,
    what: &str,
    done: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    eventually_every(crate::helpers::WAIT, PAGE_EVERY, what, async || {
        let now = page_state(client, script).await;
        if done(&now) {
            Ok(now)
        } else {
            Err(Later(move || format!("{now:#}")))
        }
    })
    .await
}

/// A browser session; dropping it kills chromedriver (and with it Chromium).
pub struct Browser {
    /// The WebDriver session.
    pub client: Client,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// End the session and stop chromedriver.
    pub async fn close(mut self) {
        let _ = self.client.clone().close().await;
        let _ = self.driver.kill().await;
    }

    /// Save a screenshot of the page as `target/artifacts/<name>.png` (`name` may hold a
    /// folder); returns its path.
    pub async fn screenshot(&self, name: &str) -> PathBuf {
        let png = self.client.screenshot().await.expect("a screenshot");
        let path = artifacts().join(format!("{name}.png"));
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, png).unwrap();
        path
    }
}

/// Where browser tests leave what they saw: `artifacts` in the target directory.
pub fn artifacts() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/target").into());
    target.join("artifacts")
}

fn find_binary(env: &str, candidates: &[&str]) -> Option<PathBuf> {
    if let Ok(path) = std::env::var(env) {
        return Some(PathBuf::from(path)).filter(|p| p.exists());
    }
    candidates.iter().map(PathBuf::from).find(|p| p.exists())
}

/// Start chromedriver and a headless Chromium session, or `None` (with a NOTICE) when they
/// are not installed and not required.
pub async fn launch() -> Option<Browser> {
    let chromium = find_binary(
        "CHROMIUM",
        &["/usr/bin/chromium", "/usr/bin/chromium-browser"],
    );
    let driver = find_binary("CHROMEDRIVER", &["/usr/bin/chromedriver"]);
    let (Some(chromium), Some(driver)) = (chromium, driver) else {
        let required = std::env::var("SWITCHBOARD_REQUIRE_BROWSER").is_ok_and(|v| v == "1");
        assert!(
            !required,
            "Chromium and chromedriver are required (SWITCHBOARD_REQUIRE_BROWSER=1) but missing; \
             run tests/browser/install.sh"
        );
        eprintln!(
            "NOTICE: chromium or chromedriver not found; skipping the browser test \
             (install them with tests/browser/install.sh)"
        );
        return None;
    };
    Some(start(&chromium, &driver).await)
}

async fn start(chromium: &Path, driver: &Path) -> Browser {
    let port = free_port();
    let mut child = Command::new(driver)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("chromedriver starts");
    let url = format!("http://127.0.0.1:{port}");
    wait_until_ready(&url, &mut child).await;
    let profile = tempfile::tempdir().unwrap();
    let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|s| s.to_string()).collect();
    args.push(format!("--user-data-dir={}", profile.path().display()));
    let capabilities = json!({
        "browserName": "chrome",
        "goog:chromeOptions": { "binary": chromium, "args": args },
    });
    let serde_json::Value::Object(capabilities) = capabilities else {
        unreachable!("built as an object")
    };
    let connector = hyper_util::client::legacy::connect::HttpConnector::new();
    let client = ClientBuilder::new(connector)
        .capabilities(capabilities)
        .connect(&url)
        .await
        .expect("a Chromium WebDriver session starts");
    Browser {
        client,
        driver: child,
        _profile: profile,
    }
}

fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    listener.local_addr().unwrap().port()
}

async fn wait_until_ready(url: &str, child: &mut Child) {
    let http = reqwest::Client::new();
    eventually(
        Duration::from_secs(20),
        "chromedriver to be ready",
        async || {
            if let Ok(response) = http.get(format!("{url}/status")).send().await
                && response.status().is_success()
            {
                return Ok(());
            }
            if let Ok(Some(status)) = child.try_wait() {
                panic!("chromedriver exited before it was ready: {status}");
            }
            Err(())
        },
    )
    .await;
}
