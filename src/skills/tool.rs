//! The `skill` tool: the model's way to load a skill's instructions when a request matches
//! its description. A tool rather than "read the SKILL.md with `file_read`": it works in a
//! profile without file tools, the model needs no host path to find a skill, and each load
//! is a call the gate sees, the audit records and `allowed-tools` narrowing keys on.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::SkillSet;
use crate::agent::{Tool, ToolResult};

/// The tool's name.
pub const SKILL_TOOL: &str = "skill";

/// Files of a skill listed in the tool's answer; the rest are summed up.
const LISTED_FILES: usize = 50;

/// Loads one of a profile's skills.
pub struct SkillTool {
    skills: Arc<SkillSet>,
}

impl SkillTool {
    /// The tool over `skills` (a profile's).
    pub fn new(skills: Arc<SkillSet>) -> Self {
        Self { skills }
    }
}

#[async_trait]
impl Tool for SkillTool {
    fn name(&self) -> &str {
        SKILL_TOOL
    }

    fn description(&self) -> &str {
        "Load the full instructions of a skill listed under available_skills, by name. Call it before acting on a request that matches a skill's description."
    }

    fn parameters_schema(&self) -> Value {
        let names: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
        json!({
            "type": "object",
            "properties": {"name": {"type": "string", "enum": names, "description": "The skill's name."}},
            "required": ["name"],
            "additionalProperties": false
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        let name = args["name"].as_str().unwrap_or_default();
        let Some(skill) = self.skills.get(name) else {
            let known: Vec<&str> = self.skills.iter().map(|s| s.name.as_str()).collect();
            return ToolResult::err(format!(
                "no skill {name:?} here; available: {}",
                known.join(", ")
            ));
        };
        let mut out = format!("# Skill: {}\n\n{}\n", skill.name, skill.body);
        if !skill.files.is_empty() {
            let root = skill.root.display();
            out.push_str(&format!(
                "\nThe skill's files are in {root} (read-only). Read them with file_read using \
                 that absolute path; run its scripts with the shell tool (e.g. `bash {root}/scripts/…`).\n"
            ));
            for file in skill.files.iter().take(LISTED_FILES) {
                out.push_str(&format!("- {file}\n"));
            }
            if skill.files.len() > LISTED_FILES {
                out.push_str(&format!(
                    "… and {} more\n",
                    skill.files.len() - LISTED_FILES
                ));
            }
        }
        ToolResult::ok(out)
    }
}
