//! The config a test gateway starts from: the base sections every test shares, and the
//! `[channels.<name>]` tables that point each real platform client at its stand-in.

use switchboard::config::{self, Config};

/// Config for a test gateway talking to `llm`, with its database and workspaces in `dir`.
pub fn test_config(llm_url: &str, dir: &std::path::Path, extra: &str) -> Config {
    let dir = dir.display();
    let text = format!(
        r#"
[gateway]
listen = "127.0.0.1:0"
database_url = "sqlite://{dir}/test.db"
data_dir = "{dir}"
shutdown_grace_secs = 1
[provider]
kind = "openai"
base_url = "{llm_url}"
model = "fake-model"
api_key = "test-key-not-real"
timeout_secs = 5
max_retries = 2
[streaming]
chunk_min_chars = 20
edit_min_interval_ms = 50
{extra}
"#
    );
    let mut config = config::parse(&text, "test.toml", &[]).expect("test config is valid");
    // In-process gateways: the supervisor is the real binary, not this test binary (which,
    // re-executed with `supervise`, would run the test harness and report no posture).
    (config.sandbox.supervisor).get_or_insert_with(|| env!("CARGO_BIN_EXE_switchboard").into());
    config
}

/// The settings of one platform channel, beyond the credentials and API URL the builder
/// fills in for its stand-in.
#[derive(Clone, Debug)]
pub struct Table {
    /// Start from the example config's table (closed by default) rather than an open one.
    example: bool,
    /// `key = value` lines, the value already TOML.
    keys: Vec<(String, String)>,
}

impl Table {
    /// Anyone may write, in DMs and in groups, so a test needs no pairing step.
    pub fn open() -> Self {
        Self {
            example: false,
            keys: vec![
                ("allowed_users".into(), r#"["*"]"#.into()),
                ("dm_policy".into(), quoted("open")),
                ("group_policy".into(), quoted("open")),
            ],
        }
    }

    /// The example config's table as shipped (closed: pairing and allowlists), so a test
    /// checks what an operator who copies it gets.
    pub fn example() -> Self {
        Self {
            example: true,
            keys: Vec::new(),
        }
    }

    /// Set `key` to `value` (TOML, e.g. `"\"draft\""` or `1000`), replacing an earlier value.
    pub fn set(mut self, key: &str, value: impl Into<String>) -> Self {
        let value = value.into();
        match self.keys.iter_mut().find(|(k, _)| k == key) {
            Some(slot) => slot.1 = value,
            None => self.keys.push((key.into(), value)),
        }
        self
    }

    /// Leave `key` out (a platform without that setting).
    pub fn without(mut self, key: &str) -> Self {
        self.keys.retain(|(k, _)| k != key);
        self
    }

    /// The table for channel `name` of `kind`, with `fixed` keys (credentials, API URL) set
    /// first and this table's own keys over them.
    pub(super) fn render(self, name: &str, kind: &str, fixed: &[(&str, String)]) -> String {
        let fixed = Self {
            example: self.example,
            keys: fixed
                .iter()
                .map(|(k, v)| ((*k).into(), v.clone()))
                .collect(),
        };
        let table = self.keys.into_iter().fold(fixed, |t, (k, v)| t.set(&k, v));
        let pairs: Vec<(&str, String)> = table
            .keys
            .iter()
            .map(|(k, v)| (k.as_str(), v.clone()))
            .collect();
        if table.example {
            return example_table(name, &pairs);
        }
        let mut text = format!("[channels.{name}]\nkind = {}\n", quoted(kind));
        for (key, value) in pairs {
            text.push_str(&format!("{key} = {value}\n"));
        }
        text
    }
}

/// The example config's `[channels.<name>]` table, with `replace`d keys set to new values
/// (added when the example lacks them) and every other line kept as shipped.
pub fn example_table(name: &str, replace: &[(&str, String)]) -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/switchboard.example.toml"
    );
    let example = std::fs::read_to_string(path).expect("the example config exists");
    let start = example
        .find(&format!("[channels.{name}]"))
        .expect("the example config has the table");
    let rest = &example[start..];
    let end = rest[1..].find("\n[").map_or(rest.len(), |i| i + 1);
    let mut table = String::new();
    let mut used = Vec::new();
    for line in rest[..end].lines() {
        let key = line.split('=').next().unwrap_or_default().trim();
        match replace.iter().find(|(k, _)| *k == key) {
            Some((k, v)) => {
                table.push_str(&format!("{k} = {v}\n"));
                used.push(*k);
            }
            None => table.push_str(&format!("{line}\n")),
        }
    }
    for (k, v) in replace.iter().filter(|(k, _)| !used.contains(k)) {
        table.push_str(&format!("{k} = {v}\n"));
    }
    table
}

/// `text` as a TOML string.
pub fn quoted(text: &str) -> String {
    format!("{text:?}")
}
