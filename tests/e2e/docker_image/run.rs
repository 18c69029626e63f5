//! The release or debug binary run the way the image runs it, without a Docker engine: a
//! temporary root stands in for the container's (`/data` the working directory and volume,
//! an empty `/config`, the binary and the baked config copied where the Dockerfile puts
//! them), the environment is the Dockerfile's `ENV` and nothing else (no `.env`, no token),
//! and the process runs as `nobody` when the test runs as root.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use switchboard_standins::{Later, eventually};
use tokio_tungstenite::tungstenite::{self, client::IntoClientRequest};

use super::{image_copies, image_env, repo};

/// The image's user is not root; `nobody` stands in for it when the test runs as root.
const NOBODY: u32 = 65534;

/// A container's file system and environment, laid out under a temporary directory.
struct Container {
    root: tempfile::TempDir,
    env: Vec<(String, String)>,
    port: u16,
    /// Who the processes run as: `Some` (nobody) when the test runs as root.
    user: Option<u32>,
}

impl Container {
    fn new() -> Self {
        let root = tempfile::tempdir().unwrap();
        let user = (unsafe { libc::geteuid() } == 0).then_some(NOBODY);
        let port = std::net::TcpListener::bind("0.0.0.0:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut container = Self {
            env: Vec::new(),
            root,
            port,
            user,
        };
        container.lay_out();
        container
    }

    /// `/data`, `/config` and every file the Dockerfile copies, then the `ENV` with its
    /// paths moved under the root and its port replaced by a free one.
    fn lay_out(&mut self) {
        for dir in ["data", "config"] {
            std::fs::create_dir_all(self.path(&format!("/{dir}"))).unwrap();
        }
        let binary = PathBuf::from(env!("CARGO_BIN_EXE_switchboard"));
        let copies = image_copies().into_iter().map(|(s, d)| (repo().join(s), d));
        let builder = [(binary, "/usr/local/bin/switchboard".to_owned())];
        for (source, dest) in copies.chain(builder) {
            let dest = self.path(&dest);
            std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
            std::fs::copy(&source, &dest).unwrap();
        }
        let listen = image_env()
            .into_iter()
            .find(|(k, _)| k == "SWITCHBOARD__GATEWAY__LISTEN")
            .map(|(_, v)| v)
            .expect("the image sets its listen address");
        assert!(
            listen.starts_with("0.0.0.0:"),
            "the image listens on every interface: {listen}"
        );
        let root = self.root.path().display().to_string();
        let port = format!("0.0.0.0:{}", self.port);
        self.env = image_env()
            .into_iter()
            .map(|(k, v)| (k, inside(&root, &v.replace(&listen, &port))))
            .collect();
        self.env
            .push(("HOME".into(), self.path("/data").display().to_string()));
        let path = format!("{root}/usr/local/bin:/usr/bin:/bin");
        self.env.push(("PATH".into(), path));
        if let Some(uid) = self.user {
            for entry in walk(self.root.path()) {
                std::os::unix::fs::chown(&entry, Some(uid), Some(uid)).unwrap();
            }
        }
    }

    /// A path inside the container.
    fn path(&self, inside: &str) -> PathBuf {
        self.root.path().join(inside.trim_start_matches('/'))
    }

    /// `switchboard <args>` as the image runs it, output to `log` (or piped when `None`).
    fn command(&self, args: &[&str], log: Option<&Path>) -> Command {
        let mut command = Command::new(self.path("/usr/local/bin/switchboard"));
        command
            .args(args)
            .env_clear()
            .envs(self.env.iter().cloned())
            .current_dir(self.path("/data"))
            .stdin(Stdio::null());
        if let Some(log) = log {
            let file = std::fs::File::create(log).unwrap();
            command.stdout(file.try_clone().unwrap()).stderr(file);
        }
        if let Some(uid) = self.user {
            command.uid(uid).gid(uid);
        }
        command
    }

    /// `switchboard run` (the image's CMD), ready within the wait; its log goes to `log`.
    async fn start(&self, log: &Path) -> Child {
        let mut child = self.command(&["run"], Some(log)).spawn().unwrap();
        let url = format!("http://127.0.0.1:{}/readyz", self.port);
        eventually(
            Duration::from_secs(60),
            "/readyz to answer 200",
            async || {
                if let Ok(r) = reqwest::get(&url).await
                    && r.status().is_success()
                {
                    return Ok(());
                }
                if let Some(status) = child.try_wait().unwrap() {
                    panic!("exited with {status}: {}", read(log));
                }
                Err(Later(move || read(log)))
            },
        )
        .await;
        child
    }

    /// `switchboard web-token [extra]`: the one link it prints.
    fn web_token(&self, extra: &[&str]) -> String {
        let args: Vec<&str> = ["web-token"].iter().chain(extra).copied().collect();
        let out = self.command(&args, None).output().unwrap();
        let (stdout, stderr) = (read_bytes(&out.stdout), read_bytes(&out.stderr));
        assert!(out.status.success(), "{stdout}{stderr}");
        let lines: Vec<&str> = stdout.lines().collect();
        assert_eq!(lines.len(), 1, "one web chat, one link: {stdout}");
        lines[0].to_owned()
    }
}

/// An `ENV` value with its absolute path (`/data`, `sqlite:///data/…`) moved under `root`.
fn inside(root: &str, value: &str) -> String {
    if let Some((scheme, path)) = value.split_once(":///") {
        format!("{scheme}://{root}/{path}")
    } else if value.starts_with('/') {
        format!("{root}{value}")
    } else {
        value.to_owned()
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut all = vec![dir.to_owned()];
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            all.extend(walk(&path));
        } else {
            all.push(path);
        }
    }
    all
}

fn read(log: &Path) -> String {
    std::fs::read_to_string(log).unwrap_or_default()
}

fn read_bytes(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn stop(mut child: Child) {
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert!(status.success(), "clean stop on SIGTERM: {status}");
}

/// Whether the socket opens (and sends its first frame) with `token`, or is refused 401.
async fn socket_opens(port: u16, token: Option<&str>) -> bool {
    let query = token.map(|t| format!("?token={t}")).unwrap_or_default();
    let mut request = format!("ws://127.0.0.1:{port}/ws{query}")
        .into_client_request()
        .unwrap();
    let session = "sb_web_session=0123456789abcdef0123456789abcdef"
        .parse()
        .unwrap();
    request.headers_mut().insert("cookie", session);
    match tokio_tungstenite::connect_async(request).await {
        Ok(_) => true,
        Err(tungstenite::Error::Http(response)) => {
            assert_eq!(response.status().as_u16(), 401, "refused as unauthorised");
            false
        }
        Err(other) => panic!("socket failed otherwise: {other}"),
    }
}

/// The token in a link `http://<host>:<port>/?token=<token>`.
fn token_of(link: &str, port: u16) -> String {
    let prefix = format!("http://<host>:{port}/?token=");
    let token = link
        .strip_prefix(&prefix)
        .unwrap_or_else(|| panic!("{link}"));
    assert!(token.len() >= 32, "a strong token: {token}");
    token.to_owned()
}

#[tokio::test]
async fn the_image_starts_without_a_token_and_web_token_prints_the_link_that_opens_the_chat() {
    let container = Container::new();
    let port = container.port;
    let first_log = container.path("/first.log");
    let gateway = container.start(&first_log).await;

    let link = container.web_token(&[]);
    let token = token_of(&link, port);
    let log = read(&first_log);
    let hints: Vec<&str> = log.lines().filter(|l| l.contains("web-token")).collect();
    assert_eq!(hints.len(), 1, "one line names the command: {log}");
    assert!(
        hints[0].contains("docker compose exec switchboard switchboard web-token"),
        "{}",
        hints[0]
    );
    assert!(!log.contains(&token), "the log never holds the token");

    let stored = container.path("/data/web/web.token");
    let meta = std::fs::metadata(&stored).unwrap();
    assert_eq!(meta.permissions().mode() & 0o777, 0o600);
    assert_eq!(meta.uid(), container.user.unwrap_or(meta.uid()));
    assert!(socket_opens(port, Some(&token)).await, "the token opens it");
    assert!(!socket_opens(port, None).await, "without it: refused");
    assert!(!socket_opens(port, Some("wrong")).await);
    stop(gateway);

    let second_log = container.path("/second.log");
    let gateway = container.start(&second_log).await;
    assert_eq!(
        token_of(&container.web_token(&[]), port),
        token,
        "same token"
    );
    assert!(
        socket_opens(port, Some(&token)).await,
        "after a restart too"
    );
    assert!(!read(&second_log).contains(&token));

    let rotated = token_of(&container.web_token(&["--rotate"]), port);
    assert_ne!(rotated, token);
    assert!(
        socket_opens(port, Some(&rotated)).await,
        "the running gateway takes it"
    );
    assert!(
        !socket_opens(port, Some(&token)).await,
        "the old one is refused"
    );
    assert_eq!(token_of(&container.web_token(&[]), port), rotated);
    stop(gateway);
}
