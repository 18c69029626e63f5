//! Reading the config file: environment overrides applied to the TOML document, then one
//! typed parse whose errors name file, line, column and key, then checks serde cannot express
//! (the core's own, and every channel's `validate()`), located in the file by their key.

use std::fmt;
use std::net::SocketAddr;
use std::path::Path;

use toml_edit::{DocumentMut, Item, Value};

use super::deprecated::{Change, Origin, Use};
use super::{Config, ProviderKind};

/// Environment variables with this prefix override config keys (`__` separates the path).
pub const ENV_PREFIX: &str = "SWITCHBOARD__";

/// One thing wrong with a config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// Dotted key path, e.g. `gateway.listen`.
    pub key: String,
    /// 1-based line and column in the file, when known.
    pub position: Option<(usize, usize)>,
    /// What is wrong and, where possible, how to fix it.
    pub message: String,
}

/// Why the configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{file}: {source}")]
    Io {
        /// The path as given.
        file: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not valid, with every problem found.
    #[error("{}", render_problems(.file, .problems))]
    Invalid {
        /// The path as given.
        file: String,
        /// What is wrong.
        problems: Vec<Problem>,
    },
}

fn render_problems(file: &str, problems: &[Problem]) -> String {
    let lines: Vec<String> = problems
        .iter()
        .map(|p| match p.position {
            Some((line, col)) => format!("{file}:{line}:{col}: key `{}`: {}", p.key, p.message),
            None => format!("{file}: key `{}`: {}", p.key, p.message),
        })
        .collect();
    lines.join("\n")
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "key `{}`: {}", self.key, self.message)
    }
}

/// Load and validate the config at `path`, applying `SWITCHBOARD__…` overrides.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Io {
        file: file.clone(),
        source,
    })?;
    let overrides: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| k.starts_with(ENV_PREFIX))
        .collect();
    let mut config = parse(&text, &file, &overrides)?;
    config.sandbox.hidden = own_files(path);
    Ok(config)
}

/// The files a secret written without `${VAR}` could sit in, which no tool may read: the
/// config file, and env files (`.env`, `.env.*`, `*.env`) beside it or in the working
/// directory. Canonical paths, so the sandbox can cut them out of what it grants.
fn own_files(config: &Path) -> Vec<std::path::PathBuf> {
    let is_env = |name: &str| name == ".env" || name.starts_with(".env.") || name.ends_with(".env");
    let config = std::fs::canonicalize(config).unwrap_or_else(|_| config.to_path_buf());
    let dirs = [
        config.parent().map(Path::to_path_buf),
        std::env::current_dir().ok(),
    ];
    let mut files = vec![config.clone()];
    for dir in dirs.into_iter().flatten() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let env = entry.file_name().to_str().is_some_and(is_env);
            if env && let Ok(real) = std::fs::canonicalize(entry.path()) {
                files.push(real);
            }
        }
    }
    files.sort();
    files.dedup();
    files
}

/// Parse config `text` (named `file` in errors) with `(VARIABLE, value)` overrides.
/// Deprecated keys are first put in their current form (each use recorded in
/// [`Config::deprecated`]), so the typed parse still refuses every key it does not know.
pub fn parse(
    text: &str,
    file: &str,
    overrides: &[(String, String)],
) -> Result<Config, ConfigError> {
    let invalid = |problems| ConfigError::Invalid {
        file: file.to_owned(),
        problems,
    };
    let mut doc = document(text).map_err(|p| invalid(vec![p]))?;
    let mut deprecated =
        super::deprecated::apply_for_load(&mut doc, text, file).map_err(invalid)?;
    let rewritten = !deprecated.is_empty();
    let overridden =
        apply_overrides(&mut doc, overrides, &mut deprecated).map_err(|p| invalid(vec![p]))?;
    // Rewriting keeps every line where it was, so positions still point into the file.
    let text = if overrides.is_empty() && !rewritten {
        text.to_owned()
    } else {
        doc.to_string()
    };
    let mut config = typed_parse(&text, &overridden).map_err(|p| invalid(vec![p]))?;
    config.routing = super::agents::Routing::from_doc(&doc);
    config.deprecated = deprecated;
    let mut problems = validate(&config);
    for problem in &mut problems {
        if problem.position.is_none() {
            problem.position = super::locate::position(&text, &problem.key);
        }
        if let Some((_, var)) = overridden
            .iter()
            .find(|(path, _)| problem.key.starts_with(path.as_str()))
        {
            problem
                .message
                .push_str(&format!(" (value from environment variable {var})"));
        }
    }
    if problems.is_empty() {
        Ok(config)
    } else {
        Err(invalid(problems))
    }
}

/// `text` as a TOML document, or the syntax error with its position.
pub(super) fn document(text: &str) -> Result<DocumentMut, Problem> {
    text.parse().map_err(|e: toml_edit::TomlError| Problem {
        key: String::new(),
        position: e.span().map(|s| line_col(text, s.start)),
        message: e.message().trim().to_owned(),
    })
}

/// Sets each overridden key; returns (dotted path, variable) for each one set. A variable
/// naming a deprecated key is recorded in `deprecated` and set under the current name (or
/// ignored, for a removed key).
fn apply_overrides(
    doc: &mut DocumentMut,
    overrides: &[(String, String)],
    deprecated: &mut Vec<Use>,
) -> Result<Vec<(String, String)>, Problem> {
    let mut overridden = Vec::new();
    for (var, value) in overrides {
        let problem = |message| Problem {
            key: var.clone(),
            position: None,
            message,
        };
        let mut path = override_path(var).map_err(problem)?;
        if let Some(deprecation) = super::deprecated::find(&path) {
            deprecated.push(Use {
                deprecation,
                origin: Origin::Env(var.clone()),
            });
            match deprecation.change {
                Change::Renamed(new) => path = new.to_owned(),
                Change::Removed(_) => continue,
            }
        }
        set_override(doc, &path, value).map_err(problem)?;
        overridden.push((path, var.clone()));
    }
    Ok(overridden)
}

fn typed_parse(text: &str, overridden: &[(String, String)]) -> Result<Config, Problem> {
    toml::from_str::<Config>(text).map_err(|err| {
        let key = err
            .span()
            .map(|span| super::locate::key_at(text, span.start))
            .unwrap_or_default();
        let mut message = err.message().trim().to_owned();
        if let Some((_, var)) = overridden
            .iter()
            .find(|(path, _)| key.starts_with(path.as_str()))
        {
            message.push_str(&format!(" (value from environment variable {var})"));
        }
        Problem {
            key,
            position: err.span().map(|s| line_col(text, s.start)),
            message,
        }
    })
}

/// The dotted path (lower case) that `SWITCHBOARD__A__B__C` names.
fn override_path(var: &str) -> Result<String, String> {
    let path: Vec<String> = var[ENV_PREFIX.len()..]
        .split("__")
        .map(str::to_ascii_lowercase)
        .collect();
    if path.iter().any(String::is_empty) || path.len() < 2 {
        return Err("override must look like SWITCHBOARD__SECTION__KEY".into());
    }
    Ok(path.join("."))
}

/// Set the key at dotted `path` to `value`.
fn set_override(doc: &mut DocumentMut, path: &str, value: &str) -> Result<(), String> {
    let path: Vec<&str> = path.split('.').collect();
    let (last, parents) = path.split_last().expect("override_path has two parts");
    let mut table = doc.as_table_mut();
    for part in parents {
        let entry = table.entry(part).or_insert_with(toml_edit::table);
        table = entry
            .as_table_mut()
            .ok_or_else(|| format!("`{part}` is not a table"))?;
    }
    let was_string = table.get(last).and_then(Item::as_str).is_some();
    let parsed = if was_string {
        Value::from(value)
    } else {
        value
            .parse::<Value>()
            .unwrap_or_else(|_| Value::from(value))
    };
    table.insert(last, Item::Value(parsed));
    Ok(())
}

pub(super) fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

/// Checks that need more than one key or more than a type.
fn validate(config: &Config) -> Vec<Problem> {
    let mut problems = Vec::new();
    let mut problem = |key: &str, message: String| {
        problems.push(Problem {
            key: key.into(),
            position: None,
            message,
        })
    };
    server_problems(config, &mut problem);
    provider_problems(config, &mut problem);
    if config.agent.max_tool_iterations == 0 {
        problem("agent.max_tool_iterations", "must be at least 1".into());
    }
    for tool in &config.tools.enabled {
        if !super::TOOL_NAMES.contains(&tool.as_str()) {
            let known = super::TOOL_NAMES.join(", ");
            problem(
                "tools.enabled",
                format!("unknown tool {tool:?}; known: {known}"),
            );
        }
    }
    for (list, patterns) in [
        ("deny", &config.policy.deny),
        ("ask", &config.policy.ask),
        ("allow", &config.policy.allow),
    ] {
        for pattern in patterns {
            if let Err(e) = crate::policy::validate_pattern(pattern) {
                problem(&format!("policy.{list}"), format!("{pattern:?}: {e}"));
            }
        }
    }
    problems.extend(super::channels::problems(config));
    let mcp = super::mcp::problems(&config.mcp);
    let profiles = super::agents::problems(config);
    let providers = super::providers::problems(config);
    let skills = super::skills::problems(&config.skills);
    let voice = super::voice::problems(config.voice.as_ref());
    let memory = config.memory.problems(&config.gateway.database_url);
    for (key, message) in super::schedules::problems(config)
        .into_iter()
        .chain(config.admin.problems())
        .chain(config.delegation.problems())
        .chain(mcp)
        .chain(skills)
        .chain(profiles)
        .chain(providers)
        .chain(voice)
        .chain(memory)
    {
        problems.push(Problem {
            key,
            position: None,
            message,
        });
    }
    problems
}

/// `[gateway]`: the listen address, the database URL, the instance id.
fn server_problems(config: &Config, problem: &mut impl FnMut(&str, String)) {
    if config.gateway.listen.parse::<SocketAddr>().is_err() {
        problem(
            "gateway.listen",
            format!(
                "{:?} is not an address like 127.0.0.1:8080",
                &*config.gateway.listen
            ),
        );
    }
    let url = &*config.gateway.database_url;
    if !(url.starts_with("sqlite:")
        || url.starts_with("postgres://")
        || url.starts_with("postgresql://"))
    {
        problem(
            "gateway.database_url",
            "must start with sqlite: or postgres://".into(),
        );
    }
    if config.gateway.instance_id.as_deref() == Some("") {
        problem("gateway.instance_id", "must not be empty".into());
    }
    for (key, why) in config.cluster.problems() {
        problem(key, why);
    }
}

/// `[provider]`: a usable URL and model, and what Anthropic insists on.
fn provider_problems(config: &Config, problem: &mut impl FnMut(&str, String)) {
    let base = config.provider.base_url();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        problem(
            "provider.base_url",
            format!("{base:?} is not an http(s) URL"),
        );
    }
    if config.provider.model.is_empty() {
        problem("provider.model", "must name a model".into());
    }
    if config.provider.kind == ProviderKind::Anthropic && config.provider.max_tokens == 0 {
        problem(
            "provider.max_tokens",
            "Anthropic requires max_tokens > 0".into(),
        );
    }
}
