//! The escape checks for a stdio server's process: it runs under the same supervisor as the
//! shell, sees only its own configured environment (never the gateway's), and writes only
//! its working directory and its table's `extra_write`.

use std::sync::Once;

use serde_json::json;

use super::{call, script_server};
use crate::helpers::TestApp;

/// In the gateway's environment; must never reach a server.
const CANARY: &str = "SWITCHBOARD_MCP_E2E_CANARY";
const CANARY_VALUE: &str = "mcp-canary-51c2-never-leak";

fn plant_canary() {
    static ONCE: Once = Once::new();
    // SAFETY: set once, before this test's gateway starts; nothing else writes it.
    ONCE.call_once(|| unsafe { std::env::set_var(CANARY, CANARY_VALUE) });
}

#[tokio::test]
async fn a_stdio_server_cannot_read_the_gateways_environment_or_write_outside_its_table() {
    if super::everything_server().is_none() {
        return;
    }
    plant_canary();
    for posture in crate::sandbox::POSTURES {
        let allowed = tempfile::tempdir().unwrap();
        super::open_up(allowed.path(), 0o777);
        let more = format!(
            "extra_write = [\"{}\"]\nenv = {{ GIVEN = \"given-value\" }}",
            allowed.path().display()
        );
        let (_script, table) = script_server("box", &more);
        let config = format!(
            "[tools]\nenabled = []\n[policy]\nallow = [\"mcp(*)\"]\n{table}[sandbox]\n{posture}\n"
        );
        let app = TestApp::spawn_with(&config).await;
        let env = call(&app, "s", "box__env", json!({})).await;
        assert!(
            !env.contains(CANARY_VALUE) && !env.contains(CANARY),
            "{posture}: {env}"
        );
        // Its own variable is there; its value is a configured secret, so it comes back redacted.
        assert!(
            env.contains("\"GIVEN\":\"give"),
            "{posture}: its own env is there: {env}"
        );
        assert!(
            !env.contains("given-value"),
            "{posture}: the value is redacted: {env}"
        );

        let data = app.config.gateway.data_dir.clone();
        std::fs::write(data.join("secret.txt"), "DATA-DIR-SECRET").unwrap();
        let path = data.join("secret.txt").display().to_string();
        let read = call(&app, "s", "box__read", json!({"path": path})).await;
        assert!(!read.contains("DATA-DIR-SECRET"), "{posture}: {read}");
        let db = data.join("test.db").display().to_string();
        let read = call(&app, "s", "box__read", json!({"path": db})).await;
        assert!(!read.contains("SQLite format 3"), "{posture}: {read}");

        for outside in [
            data.join("owned"),
            std::env::temp_dir().join("mcp-owned-e2e"),
        ] {
            let path = outside.display().to_string();
            let wrote = call(&app, "s", "box__write", json!({"path": path})).await;
            assert!(!outside.exists(), "{posture}: wrote {path}: {wrote}");
        }
        let inside = allowed.path().join("ok.txt");
        let path = inside.display().to_string();
        let wrote = call(&app, "s", "box__write", json!({"path": path})).await;
        assert!(
            inside.exists(),
            "{posture}: extra_write is writable: {wrote}"
        );
        let own = call(&app, "s", "box__write", json!({"path": "own.txt"})).await;
        assert!(
            own.contains("wrote"),
            "{posture}: its working directory: {own}"
        );
    }
}
