//! The escape suite, continued: ways out that do not go through a file read or write the
//! first suite covers. A planted `.tmp` link, a quoting shape two shells read differently,
//! the gateway's own config file, unix datagrams, a sibling workspace's permissions, and
//! listening or UDP with TCP ports allowed. Each runs through the real supervisor binary.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixDatagram;
use std::path::Path;
use std::time::Duration;

use crate::helpers::TestApp;
use crate::sandbox::{POSTURES, shell, spawn};

/// Tools without approvals; `extra` goes after the `[tools]` table, so it may open others.
fn tools_config(extra: &str) -> String {
    format!(
        "[tools]\nenabled = [\"shell\", \"file_read\", \"file_write\", \"file_list\"]\n\
         [tools.shell]\ntimeout_secs = 10\n{extra}\n"
    )
}

/// Whether `python3` (the socket client here) is installed where tools find it.
fn python() -> bool {
    let found = Path::new("/usr/bin/python3").exists();
    if !found {
        eprintln!("skipped: /usr/bin/python3 (used as the socket client) is not installed");
    }
    found
}

/// A directory everyone may enter, so the sandbox user meets only the sandbox's rules.
fn open_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
    dir
}

#[tokio::test]
async fn a_tmp_link_planted_by_a_tool_is_never_followed_when_the_workspace_is_prepared() {
    for posture in POSTURES {
        let app = spawn(posture).await;
        // Like /usr/local/bin: searchable by anyone, writable only by its owner.
        let outer = tempfile::tempdir().unwrap();
        std::fs::set_permissions(outer.path(), std::fs::Permissions::from_mode(0o711)).unwrap();
        let target = outer.path().join("bin");
        std::fs::create_dir(&target).unwrap();
        std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755)).unwrap();
        let planted = shell(
            &app,
            "plant",
            &format!(
                "rm -rf .tmp && ln -s {} .tmp && echo planted",
                target.display()
            ),
        )
        .await;
        assert!(planted.contains("planted"), "{posture}: {planted}");
        let out = shell(
            &app,
            "plant",
            "chmod 0777 .tmp/ 2>&1; [ -L .tmp ] && echo still-a-link; [ -d .tmp ] && echo tmp-ok",
        )
        .await;
        let meta = std::fs::metadata(&target).unwrap();
        // SAFETY: geteuid has no arguments and cannot fail.
        let me = unsafe { libc::geteuid() };
        assert_eq!(meta.uid(), me, "{posture}: the link's target was chowned");
        if me == 0 {
            assert_eq!(meta.mode() & 0o777, 0o755, "{posture}: {out}");
        }
        assert!(
            !out.contains("still-a-link") && out.contains("tmp-ok"),
            "{posture}: the next call's TMPDIR is a directory of its own again: {out}"
        );
    }
}

#[tokio::test]
async fn a_quoting_shape_bash_reads_as_inert_runs_nothing_in_any_mode() {
    let shape = r#"ls $'\'' x' $(touch pwned) ' #'"#;
    for policy in [
        "mode = \"guarded\"",
        "mode = \"read_only\"",
        "mode = \"autonomous\"\ndeny = [\"shell(touch *)\"]",
    ] {
        let app = TestApp::spawn_with(&tools_config(&format!("[policy]\n{policy}"))).await;
        let out = shell(&app, "quote", shape).await;
        let ws = app.config.gateway.data_dir.join("workspaces/fake/quote");
        assert!(
            !ws.join("pwned").exists(),
            "{policy}: a command the policy never saw ran: {out}"
        );
    }
}

#[tokio::test]
async fn the_gateway_config_and_env_files_cannot_be_read_by_a_tool() {
    let conf = open_dir();
    let (file, env) = (
        conf.path().join("switchboard.toml"),
        conf.path().join(".env"),
    );
    std::fs::write(&file, "api_key = \"sk-live-CONFIG-SECRET-4d2e\"\n").unwrap();
    std::fs::write(&env, "SLACK_SIGNING_SECRET=ENV-SECRET-91ab\n").unwrap();
    for path in [&file, &env] {
        // A root gateway's file readable by all, like most of /etc; a non-root gateway's
        // file is the tools' own uid's anyway.
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
    }
    for posture in POSTURES {
        let extra = format!(
            "[policy]\nmode = \"autonomous\"\n[sandbox]\n{posture}\nextra_read = [\"{}\"]",
            conf.path().display()
        );
        let mut app = TestApp::spawn_with(&tools_config(&extra)).await;
        // What loading the config from `file` sets; the restart measures the posture anew.
        app.config.sandbox.hidden = vec![file.clone(), env.clone()];
        app.restart().await;
        let out = shell(
            &app,
            "cfg",
            &format!(
                "grep -E 'api_key|SECRET' {} {} | rev; ls {}; echo listed",
                file.display(),
                env.display(),
                conf.path().display()
            ),
        )
        .await;
        for secret in ["CONFIG-SECRET", "ENV-SECRET"] {
            let reversed: String = secret.chars().rev().collect();
            assert!(
                !out.contains(&reversed) && !out.contains(secret),
                "{posture}: {secret} readable: {out}"
            );
        }
        assert!(out.contains("listed"), "{posture}: {out}");
    }
}

#[tokio::test]
async fn unix_datagrams_never_leave_a_tool_while_the_network_is_closed() {
    if !python() {
        return;
    }
    let dir = open_dir();
    let path = dir.path().join("log.sock");
    let host = UnixDatagram::bind(&path).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
    host.set_nonblocking(true).unwrap();
    let send = format!(
        "python3 -c \"import socket\n\
         a, b = socket.socketpair(); a.send(b'x'); print('stream-pair', b.recv(1))\n\
         try:\n    d, _ = socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM); d.sendto(b'escaped', '{}'); print('dgram-sent')\n\
         except OSError as e:\n    print('dgram-denied', e.errno)\"",
        path.display()
    );
    for posture in POSTURES {
        for network in ["\"off\"", "[443]"] {
            let app = spawn(&format!("{posture}\nnetwork = {network}")).await;
            let out = shell(&app, "dgram", &send).await;
            assert!(out.contains("stream-pair"), "{posture} {network}: {out}");
            let mut buf = [0u8; 64];
            let got = host.recv(&mut buf);
            assert!(
                got.is_err() && out.contains("dgram-denied"),
                "{posture} {network}: a datagram reached the host: {out}"
            );
        }
    }
}

#[tokio::test]
async fn one_conversation_cannot_change_another_conversations_files() {
    let app = spawn("namespaces = true").await;
    let made = shell(&app, "victim", "echo mine > note && echo made").await;
    assert!(made.contains("made"), "{made}");
    let data = app.config.gateway.data_dir.clone();
    let victim = data.join("workspaces/fake/victim");
    let db = data.join("test.db");
    let before = (mode(&victim), mode(&db), mode(&victim.join("note")));
    let out = shell(
        &app,
        "attacker",
        &format!(
            "ls ..; chmod 000 ../victim ../victim/note {v} {v}/note {db}; \
             touch -d 2001-01-01 {v}/note; echo tried",
            v = victim.display(),
            db = db.display()
        ),
    )
    .await;
    assert!(out.contains("tried"), "{out}");
    assert!(!out.contains("victim\n"), "the sibling is listed: {out}");
    let after = (mode(&victim), mode(&db), mode(&victim.join("note")));
    assert_eq!(before, after, "permissions changed from outside: {out}");
    let year = std::fs::metadata(victim.join("note")).unwrap().mtime();
    assert!(year > 1_000_000_000, "its time was changed: {out}");
    let read = shell(&app, "victim", "cat note").await;
    assert!(read.contains("mine"), "{read}");
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().mode() & 0o7777
}

#[tokio::test]
async fn with_tcp_ports_allowed_a_tool_can_neither_listen_nor_send_udp() {
    if !python() {
        return;
    }
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    udp.set_read_timeout(Some(Duration::from_millis(200)))
        .unwrap();
    let port = udp.local_addr().unwrap().port();
    let attempt = format!(
        "python3 -c \"import socket\n\
         try:\n    s = socket.socket(); s.listen(); print('listening', s.getsockname())\n\
         except OSError as e:\n    print('listen-denied', e.errno)\n\
         try:\n    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); u.sendto(b'udp-out', ('127.0.0.1', {port})); print('udp-sent')\n\
         except OSError as e:\n    print('udp-denied', e.errno)\""
    );
    for posture in POSTURES {
        let app = spawn(&format!("{posture}\nnetwork = [443]")).await;
        let out = shell(&app, "listen", &attempt).await;
        assert!(
            out.contains("listen-denied") && out.contains("udp-denied"),
            "{posture}: {out}"
        );
        let mut buf = [0u8; 16];
        assert!(udp.recv(&mut buf).is_err(), "{posture}: UDP got out: {out}");
    }
}
