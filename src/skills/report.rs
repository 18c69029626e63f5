//! What people read about skills: `switchboard check`'s lines, `switchboard skills list`'s
//! table and the `/skills` chat reply. `doctor` builds its findings from the same
//! [`Catalog`] (`crate::doctor`).

use super::{Catalog, SkillSet, State, profiles_using};
use crate::config::Config;

/// `check`'s lines about skills, and whether one of them is a problem (a skill that will
/// not load, or a profile naming a skill that does not).
pub fn check_lines(config: &Config, catalog: &Catalog) -> (Vec<String>, bool) {
    let mut lines = Vec::new();
    let mut bad = false;
    if let Some(err) = &catalog.lock_error {
        lines.push(format!(
            "skills: the lock file cannot be read, so no skill loads: {err}"
        ));
        bad = true;
    }
    for found in &catalog.found {
        match found.fix() {
            None => {
                let files = found.contents.as_ref().map_or(0, |c| c.files.len());
                lines.push(format!("skill {}: trusted ({files} files)", found.name));
            }
            Some(fix) => {
                bad = true;
                let state = found.state.label();
                lines.push(format!("skill {}: {state}, not loaded: {fix}", found.name));
            }
        }
    }
    for (profile, spec) in &config.agents {
        for name in spec.skills.iter().flatten() {
            let state = catalog.get(name).map(|f| &f.state);
            if state == Some(&State::Trusted) {
                continue;
            }
            bad = true;
            let why = state.map_or("no such skill folder in [skills] dirs", State::label);
            lines.push(format!(
                "agents.{profile}.skills: {name:?} will not load ({why})"
            ));
        }
    }
    (lines, bad)
}

/// `switchboard skills list`: each skill, its state and the profiles that may use it.
pub fn list(config: &Config, catalog: &Catalog) -> String {
    if catalog.found.is_empty() {
        return "no skills: [skills] dirs holds no skill folder\n".into();
    }
    let width = catalog
        .found
        .iter()
        .map(|f| f.name.len())
        .max()
        .unwrap_or(0);
    let mut out = String::new();
    for found in &catalog.found {
        let profiles = profiles_using(config, &found.name).join(", ");
        out.push_str(&format!(
            "{:width$}  {:9}  profiles: {}\n",
            found.name,
            found.state.label(),
            if profiles.is_empty() {
                "none"
            } else {
                &profiles
            }
        ));
        if let Some(fix) = found.fix() {
            out.push_str(&format!("{:width$}  ↳ {fix}\n", ""));
        }
    }
    out
}

/// The `/skills` reply: the skills this conversation's profile may use.
pub fn chat_list(skills: &SkillSet) -> String {
    if skills.is_empty() {
        return "No skills for this conversation.".into();
    }
    let lines: Vec<String> = skills
        .iter()
        .map(|s| format!("• `{}`: {}", s.name, first_sentence(&s.description)))
        .collect();
    format!(
        "Skills for this conversation:\n{}\n\nI load one when a request matches it.",
        lines.join("\n")
    )
}

/// The start of `text`, up to about 160 characters.
fn first_sentence(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default();
    match line.char_indices().nth(160) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_owned(),
    }
}
