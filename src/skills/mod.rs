//! Agent Skills: folders of instructions the agent loads when it needs them. A skill is a
//! folder with a `SKILL.md` (YAML front matter: `name`, `description`, optional `license`,
//! `compatibility`, `metadata`, `allowed-tools`; then a Markdown body) and optional
//! `scripts/`, `references/` and `assets/`. The directories in `[skills] dirs` hold them.
//!
//! At start-up every folder is read once, checked to the format's rules and hashed; a skill
//! loads only when its hash equals the one the operator trusted (`switchboard skills
//! trust`), and then from a verified copy ([`mount`]), never from its source folder. Only
//! each skill's name and description go into a profile's system prompt; the `skill` tool
//! ([`tool`]) hands the model the body when it asks, and says where the copy is: the file
//! tools read it there, the shell sees it mounted read-only in the sandbox, and scripts run
//! only through the shell tool, under the policy like any command. A skill's
//! `allowed-tools` narrows what the rest of a turn that loaded it may call ([`narrow`]).
//!
//! Layout: this file (scanning, states, the loaded skills and a profile's set of them);
//! `format` (parsing and validating `SKILL.md`); `pin` (content hash and lock file);
//! `mount` (the verified copy); `tool` (the `skill` tool); `narrow` (`allowed-tools`);
//! `report` (what `check`, `doctor`, `skills list` and `/skills` print); `cli`
//! (`switchboard skills`).

pub mod cli;
mod mount;
mod narrow;
mod pin;
pub mod report;
mod tool;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use switchboard_channel::html::escape_text;

pub use crate::skill_format::{MAX_DESCRIPTION_CHARS, MAX_NAME_CHARS, Manifest, check_name, parse};
pub use narrow::{Narrowing, tool_name};
pub use pin::{Contents, Pin, Pins};
pub use tool::{SKILL_TOOL, SkillTool};

use crate::config::Config;
use crate::config::agents::DEFAULT_AGENT;
use crate::config::skills::SkillsConfig;

/// Where a skill found on disk stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Its files hash to its pin: it loads.
    Trusted,
    /// Never trusted: it does not load until `switchboard skills trust <name>`.
    Untrusted,
    /// Its files changed since it was trusted: it does not load until trusted again.
    Changed {
        /// The hash that was trusted.
        pinned: String,
    },
    /// Not a valid skill, with every reason.
    Invalid(Vec<String>),
}

impl State {
    /// The one word `skills list` and the log use.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Trusted => "trusted",
            Self::Untrusted => "untrusted",
            Self::Changed { .. } => "changed",
            Self::Invalid(_) => "invalid",
        }
    }
}

/// One skill folder found in `[skills] dirs`.
#[derive(Debug, Clone)]
pub struct Found {
    /// The folder's name (the skill's name when it is valid).
    pub name: String,
    /// The folder.
    pub path: PathBuf,
    /// Whether it loads, and why not.
    pub state: State,
    /// Its parsed `SKILL.md`, when valid.
    pub manifest: Option<Manifest>,
    /// Its files and their hash, when they could be read.
    pub contents: Option<Contents>,
}

impl Found {
    /// What the operator does about a skill that does not load (`None` for a trusted one).
    pub fn fix(&self) -> Option<String> {
        let name = &self.name;
        match &self.state {
            State::Trusted => None,
            State::Untrusted => Some(format!(
                "review {}, then run `switchboard skills trust {name}`",
                self.path.display()
            )),
            State::Changed { .. } => Some(format!(
                "its files changed since it was trusted: review {}, then run `switchboard skills trust {name}` (or restore the reviewed files)",
                self.path.display()
            )),
            State::Invalid(reasons) => {
                Some(format!("{}: {}", self.path.display(), reasons.join("; ")))
            }
        }
    }
}

/// Every skill folder in `[skills] dirs`, with its state against the lock file.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// By directory order, then folder name.
    pub found: Vec<Found>,
    /// The pins read (empty when the lock file could not be read).
    pub pins: Pins,
    /// Why the lock file could not be read, if it could not (every skill is then untrusted).
    pub lock_error: Option<String>,
}

impl Catalog {
    /// Read, check and hash every skill folder of `config`, against its lock file.
    pub fn scan(config: &SkillsConfig, data_dir: &Path) -> Self {
        let file = config.lock_file(data_dir);
        let (pins, lock_error) = match Pins::read(&file) {
            Ok(pins) => (pins, None),
            Err(err) => (
                Pins {
                    file,
                    ..Pins::default()
                },
                Some(err),
            ),
        };
        let mut found: Vec<Found> = Vec::new();
        for dir in &config.dirs {
            for path in folders(dir, &mut found) {
                let mut skill = examine(&path, &pins);
                if let Some(first) = found.iter().find(|f| f.name == skill.name) {
                    let why = format!(
                        "a skill named {:?} is already in {}",
                        skill.name,
                        first.path.display()
                    );
                    skill.state = State::Invalid(vec![why]);
                }
                found.push(skill);
            }
        }
        Self {
            found,
            pins,
            lock_error,
        }
    }

    /// The skill folder called `name`.
    pub fn get(&self, name: &str) -> Option<&Found> {
        self.found.iter().find(|f| f.name == name)
    }

    /// Trust `name` as its files are now: record its hash in the lock file. Refused for a
    /// skill that is not valid, or that is not there.
    pub fn trust(&mut self, name: &str) -> Result<String, String> {
        if let Some(err) = &self.lock_error {
            return Err(format!(
                "the lock file cannot be read, so it is left alone: {err}"
            ));
        }
        let found = self
            .get(name)
            .ok_or_else(|| format!("no skill folder named {name:?} in [skills] dirs"))?;
        if let State::Invalid(reasons) = &found.state {
            return Err(format!(
                "{name} is not a valid skill: {}",
                reasons.join("; ")
            ));
        }
        let contents = found
            .contents
            .as_ref()
            .ok_or("its files could not be read")?;
        let pin = Pin {
            sha256: contents.hash.clone(),
            path: std::path::absolute(&found.path).unwrap_or_else(|_| found.path.clone()),
        };
        let hash = pin.sha256.clone();
        self.pins.skills.insert(name.to_owned(), pin);
        self.pins.write()?;
        for found in self.found.iter_mut().filter(|f| f.name == name) {
            found.state = State::Trusted;
        }
        Ok(hash)
    }
}

/// The sub-folders of `dir` (hidden ones left out), sorted; a dir that cannot be read is
/// recorded in `found` as an invalid entry.
fn folders(dir: &Path, found: &mut Vec<Found>) -> Vec<PathBuf> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(err) => {
            found.push(Found {
                name: dir.display().to_string(),
                path: dir.to_path_buf(),
                state: State::Invalid(vec![format!("[skills] dirs: cannot read it: {err}")]),
                manifest: None,
                contents: None,
            });
            return Vec::new();
        }
    };
    let mut paths: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .filter(|e| std::fs::metadata(e.path()).is_ok_and(|m| m.is_dir()))
        .map(|e| e.path())
        .collect();
    paths.sort();
    paths
}

/// Read, check and hash one skill folder.
fn examine(path: &Path, pins: &Pins) -> Found {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut found = Found {
        name: name.clone(),
        path: path.to_path_buf(),
        state: State::Untrusted,
        manifest: None,
        contents: None,
    };
    let invalid = |why: Vec<String>| State::Invalid(why);
    if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        found.state = invalid(vec!["the skill folder is a symbolic link".into()]);
        return found;
    }
    let contents = match Contents::read(path) {
        Ok(contents) => contents,
        Err(err) => {
            found.state = invalid(vec![err]);
            return found;
        }
    };
    let skill_md = contents
        .file("SKILL.md")
        .or_else(|| contents.file("skill.md"));
    let parsed = match skill_md.map(|f| std::str::from_utf8(&f.bytes)) {
        None => Err(vec!["Missing required file: SKILL.md".to_owned()]),
        Some(Err(_)) => Err(vec!["SKILL.md is not UTF-8 text".to_owned()]),
        Some(Ok(text)) => parse(text, &name),
    };
    found.state = match (&parsed, pins.skills.get(&name)) {
        (Err(why), _) => invalid(why.clone()),
        (Ok(_), None) => State::Untrusted,
        (Ok(_), Some(pin)) if pin.sha256 == contents.hash => State::Trusted,
        (Ok(_), Some(pin)) => State::Changed {
            pinned: pin.sha256.clone(),
        },
    };
    found.manifest = parsed.ok();
    found.contents = Some(contents);
    found
}

/// A loaded skill: trusted, and copied where conversations read it.
#[derive(Debug, Clone)]
pub struct Skill {
    /// Its name.
    pub name: String,
    /// What it does and when to use it (what the system prompt carries).
    pub description: String,
    /// The tools a turn that loaded it may call (`None`: not narrowed).
    pub allowed_tools: Option<Vec<String>>,
    /// The body of its `SKILL.md`, handed to the model by the `skill` tool.
    pub body: String,
    /// Its verified copy (absolute): read-only to every tool.
    pub root: PathBuf,
    /// Its files other than `SKILL.md`, relative to `root`.
    pub files: Vec<String>,
}

/// Every loaded skill, by name.
#[derive(Debug, Clone, Default)]
pub struct Skills {
    loaded: BTreeMap<String, Arc<Skill>>,
}

impl Skills {
    /// Scan `[skills] dirs` and load every trusted skill, copying each where tools read
    /// it; each skill that does not load is logged with why and what to do.
    pub fn load(config: &Config) -> Self {
        if config.skills.dirs.is_empty() {
            return Self::default();
        }
        let data_dir = &config.gateway.data_dir;
        let catalog = Catalog::scan(&config.skills, data_dir);
        if let Some(err) = &catalog.lock_error {
            tracing::error!("skills: the lock file cannot be read, so no skill loads: {err}");
        }
        let root = std::path::absolute(data_dir.join("skills"))
            .unwrap_or_else(|_| data_dir.join("skills"));
        let mut loaded = BTreeMap::new();
        for found in &catalog.found {
            if let Some(fix) = found.fix() {
                let state = found.state.label();
                tracing::warn!(skill = %found.name, state, "skill not loaded: {fix}");
                continue;
            }
            match load_one(found, &root) {
                Ok(skill) => {
                    loaded.insert(skill.name.clone(), Arc::new(skill));
                }
                Err(err) => tracing::error!(skill = %found.name, "skill not loaded: {err}"),
            }
        }
        tracing::info!(skills = loaded.len(), "skills loaded");
        Self { loaded }
    }

    /// The skills called `names` that loaded (all of them for `None`).
    pub fn for_profile(&self, names: Option<&[String]>) -> SkillSet {
        let skills = match names {
            None => self.loaded.values().cloned().collect(),
            Some(names) => names
                .iter()
                .filter_map(|n| self.loaded.get(n).cloned())
                .collect(),
        };
        SkillSet { skills }
    }
}

/// A trusted skill's copy and what conversations see of it.
fn load_one(found: &Found, root: &Path) -> Result<Skill, String> {
    let (Some(manifest), Some(contents)) = (&found.manifest, &found.contents) else {
        return Err("its files were not read".into());
    };
    let dir = mount::ensure(root, &manifest.name, contents)?;
    let files = (contents.files.iter())
        .map(|f| f.path.clone())
        .filter(|p| p != "SKILL.md" && p != "skill.md")
        .collect();
    Ok(Skill {
        name: manifest.name.clone(),
        description: manifest.description.clone(),
        allowed_tools: manifest.allowed_tools.clone(),
        body: manifest.body.clone(),
        root: dir,
        files,
    })
}

/// The skills one profile may use, sorted by name.
#[derive(Debug, Clone, Default)]
pub struct SkillSet {
    skills: Vec<Arc<Skill>>,
}

impl SkillSet {
    /// Whether the profile has no skill (then no `skill` tool and no prompt section).
    pub fn is_empty(&self) -> bool {
        self.skills.is_empty()
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&Arc<Skill>> {
        self.skills.iter().find(|s| s.name == name)
    }

    /// Every skill of the set.
    pub fn iter(&self) -> impl Iterator<Item = &Arc<Skill>> {
        self.skills.iter()
    }

    /// The verified copies: read-only in the sandbox, readable through the file tools.
    pub fn roots(&self) -> Vec<PathBuf> {
        self.skills.iter().map(|s| s.root.clone()).collect()
    }

    /// What the system prompt gains: each skill's name and description, nothing more.
    pub fn prompt(&self) -> String {
        if self.skills.is_empty() {
            return String::new();
        }
        let mut text = format!(
            "\n\nSkills hold instructions for particular tasks. When a request matches a \
             skill's description, call the `{SKILL_TOOL}` tool with its name to load its \
             instructions before you act.\n<available_skills>\n"
        );
        for skill in &self.skills {
            text.push_str(&format!(
                "<skill><name>{}</name><description>{}</description></skill>\n",
                escape_text(&skill.name),
                escape_text(&skill.description)
            ));
        }
        text.push_str("</available_skills>");
        text
    }
}

/// The profiles of `config` that may use the skill called `name` (`default` first).
pub fn profiles_using(config: &Config, name: &str) -> Vec<String> {
    let uses = |list: Option<&Vec<String>>| list.is_none_or(|l| l.iter().any(|s| s == name));
    let mut out = Vec::new();
    if !config.agents.contains_key(DEFAULT_AGENT) {
        out.push(DEFAULT_AGENT.to_owned());
    }
    for (profile, spec) in &config.agents {
        if uses(spec.skills.as_ref()) {
            out.push(profile.clone());
        }
    }
    out
}

#[cfg(test)]
mod tests;
