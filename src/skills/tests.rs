use std::path::Path;

use serde_json::json;

use super::*;
use crate::agent::Tool;
use crate::provider::{ChatMessage, Role, ToolCall};

/// Write a skill folder `name` under `dir` with `front` as its front matter.
fn write_skill(dir: &Path, name: &str, front: &str, body: &str) {
    let skill = dir.join(name);
    std::fs::create_dir_all(skill.join("references")).unwrap();
    std::fs::write(
        skill.join("SKILL.md"),
        format!("---\n{front}\n---\n{body}\n"),
    )
    .unwrap();
    std::fs::write(skill.join("references/guide.md"), "the guide").unwrap();
}

fn config(skills: &Path, data: &Path) -> Config {
    let text = format!(
        "[gateway]\ndata_dir = \"{}\"\n[skills]\ndirs = [\"{}\"]\n\
         [agents.ops]\nskills = [\"deploy\"]\n[agents.none]\nskills = []\n",
        data.display(),
        skills.display()
    );
    crate::config::parse(&text, "t.toml", &[]).unwrap()
}

#[test]
fn a_skill_loads_only_once_trusted_and_not_after_it_changed() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(
        skills.path(),
        "deploy",
        "name: deploy\ndescription: Ship it.",
        "Steps.",
    );
    write_skill(
        skills.path(),
        "Bad_Name",
        "name: Bad_Name\ndescription: x",
        "",
    );
    let config = config(skills.path(), data.path());
    let mut catalog = Catalog::scan(&config.skills, data.path());
    assert_eq!(catalog.get("deploy").unwrap().state, State::Untrusted);
    let State::Invalid(why) = &catalog.get("Bad_Name").unwrap().state else {
        panic!("{catalog:?}")
    };
    assert!(why.iter().any(|w| w.contains("lowercase")), "{why:?}");
    assert!(
        Skills::load(&config).loaded.is_empty(),
        "untrusted: nothing loads"
    );
    assert!(
        catalog.trust("Bad_Name").is_err(),
        "an invalid skill cannot be trusted"
    );

    catalog.trust("deploy").unwrap();
    let loaded = Skills::load(&config);
    let skill = &loaded.loaded["deploy"];
    assert_eq!(skill.body, "Steps.");
    assert_eq!(skill.files, ["references/guide.md"]);
    assert!(
        skill.root.starts_with(data.path().join("skills")),
        "{:?}",
        skill.root
    );
    let copy = std::fs::read_to_string(skill.root.join("references/guide.md")).unwrap();
    assert_eq!(copy, "the guide", "conversations read the verified copy");

    std::fs::write(skills.path().join("deploy/references/guide.md"), "evil").unwrap();
    let rescanned = Catalog::scan(&config.skills, data.path());
    let changed = rescanned.get("deploy").unwrap();
    assert!(
        matches!(changed.state, State::Changed { .. }),
        "{:?}",
        changed.state
    );
    assert!(
        changed
            .fix()
            .unwrap()
            .contains("switchboard skills trust deploy")
    );
    assert!(
        Skills::load(&config).loaded.is_empty(),
        "a changed skill is refused"
    );
}

#[test]
fn a_profile_sees_only_its_own_skills_and_the_prompt_only_names_and_descriptions() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(
        skills.path(),
        "deploy",
        "name: deploy\ndescription: Ship <it>.",
        "SECRET BODY",
    );
    write_skill(
        skills.path(),
        "pdf",
        "name: pdf\ndescription: Fill forms.",
        "PDF BODY",
    );
    let config = config(skills.path(), data.path());
    let mut catalog = Catalog::scan(&config.skills, data.path());
    catalog.trust("deploy").unwrap();
    catalog.trust("pdf").unwrap();
    let loaded = Skills::load(&config);
    let ops = loaded.for_profile(config.agents["ops"].skills.as_deref());
    let all = loaded.for_profile(None);
    let none = loaded.for_profile(Some(&[]));
    assert_eq!(
        ops.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(),
        ["deploy"]
    );
    assert_eq!(all.iter().count(), 2);
    assert!(none.is_empty() && none.prompt().is_empty());
    let prompt = all.prompt();
    assert!(prompt.contains("<name>pdf</name><description>Fill forms.</description>"));
    assert!(prompt.contains("Ship &lt;it&gt;."), "escaped: {prompt}");
    assert!(
        !prompt.contains("BODY") && !prompt.contains("guide"),
        "{prompt}"
    );
    assert_eq!(profiles_using(&config, "pdf"), ["default"]);
    assert_eq!(profiles_using(&config, "deploy"), ["default", "ops"]);
}

#[tokio::test]
async fn the_skill_tool_hands_over_the_body_and_where_the_files_are() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(
        skills.path(),
        "deploy",
        "name: deploy\ndescription: Ship it.",
        "Run the steps.",
    );
    let config = config(skills.path(), data.path());
    Catalog::scan(&config.skills, data.path())
        .trust("deploy")
        .unwrap();
    let set = Arc::new(Skills::load(&config).for_profile(None));
    let tool = SkillTool::new(Arc::clone(&set));
    assert_eq!(
        tool.parameters_schema()["properties"]["name"]["enum"],
        json!(["deploy"])
    );
    let out = tool.execute(json!({"name": "deploy"})).await;
    assert!(
        out.success && out.output.contains("Run the steps."),
        "{out:?}"
    );
    let root = set.get("deploy").unwrap().root.display().to_string();
    assert!(out.output.contains(&root) && out.output.contains("references/guide.md"));
    let missing = tool.execute(json!({"name": "nope"})).await;
    assert!(!missing.success && missing.to_model_text().contains("available: deploy"));
}

#[test]
fn allowed_tools_narrow_a_turn_that_loaded_the_skill_and_never_widen_it() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let front = "name: deploy\ndescription: Ship it.\nallowed-tools: Bash(git:*) file_read";
    write_skill(skills.path(), "deploy", front, "");
    write_skill(
        skills.path(),
        "notes",
        "name: notes\ndescription: Notes.",
        "",
    );
    write_skill(
        skills.path(),
        "web",
        "name: web\ndescription: W.\nallowed-tools: WebFetch Read",
        "",
    );
    let config = config(skills.path(), data.path());
    let mut catalog = Catalog::scan(&config.skills, data.path());
    for name in ["deploy", "notes", "web"] {
        catalog.trust(name).unwrap();
    }
    let set = Skills::load(&config).for_profile(None);
    let call = |name: &str, args| ToolCall {
        id: "c".into(),
        name: name.into(),
        args,
    };
    let loaded = |skill: &str| {
        let mut m = ChatMessage::new(Role::Assistant, String::new());
        m.tool_calls = vec![call(SKILL_TOOL, json!({"name": skill}))];
        m
    };
    assert_eq!(set.narrowing(&[]), None, "nothing loaded: not narrowed");
    assert_eq!(
        set.narrowing(&[loaded("notes")]),
        None,
        "no allowed-tools: not narrowed"
    );
    let n = set.narrowing(&[loaded("deploy")]).unwrap();
    assert!(n.allows(&call("shell", json!({}))) && n.allows(&call("file_read", json!({}))));
    assert!(n.allows(&call(SKILL_TOOL, json!({}))));
    assert!(!n.allows(&call("http_fetch", json!({}))));
    assert!(n.reason(&call("http_fetch", json!({}))).contains("deploy"));
    let both = set.narrowing(&[loaded("deploy"), loaded("web")]).unwrap();
    let left: Vec<&str> = both.allowed.iter().map(String::as_str).collect();
    assert_eq!(
        left,
        ["file_read", SKILL_TOOL],
        "two skills: only what both allow"
    );
}

#[test]
fn check_reports_an_invalid_skill_with_its_path_and_a_profile_naming_a_missing_one() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    write_skill(skills.path(), "broken", "name: other\ndescription: x", "");
    std::fs::create_dir(skills.path().join("empty")).unwrap();
    let config = config(skills.path(), data.path());
    let catalog = Catalog::scan(&config.skills, data.path());
    let (lines, bad) = report::check_lines(&config, &catalog);
    let text = lines.join("\n");
    assert!(bad);
    let broken = skills.path().join("broken").display().to_string();
    assert!(
        text.contains(&format!("skill broken: invalid, not loaded: {broken}")),
        "{text}"
    );
    assert!(text.contains("must match skill name 'other'"), "{text}");
    assert!(text.contains("Missing required file: SKILL.md"), "{text}");
    assert!(
        text.contains("agents.ops.skills: \"deploy\" will not load"),
        "{text}"
    );
}

/// The figure in BENCHMARKS.md ("system prompt with 50 skills"): what 50 installed skills
/// add to a profile's system prompt, each with a description of about 200 characters and a 5 kB body.
/// Printed with `--nocapture`; what is checked is that only names and descriptions count.
#[test]
fn fifty_skills_grow_the_system_prompt_by_their_names_and_descriptions_only() {
    let (skills, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let description = "Turns a meeting transcript into minutes with decisions, owners and \
        due dates. Use when someone shares a transcript or recording notes and asks for a \
        summary, minutes or action items.";
    let body = "Step. ".repeat(850);
    let names: Vec<String> = (1..=50).map(|i| format!("skill-{i:02}")).collect();
    for name in &names {
        let front = format!("name: {name}\ndescription: {description}");
        write_skill(skills.path(), name, &front, &body);
    }
    let config = config(skills.path(), data.path());
    let mut catalog = Catalog::scan(&config.skills, data.path());
    for name in &names {
        catalog.trust(name).unwrap();
    }
    let set = Skills::load(&config).for_profile(None);
    let prompt = set.prompt();
    let entries: usize = names
        .iter()
        .map(|n| {
            format!("<skill><name>{n}</name><description>{description}</description></skill>\n")
                .len()
        })
        .sum();
    let preamble = prompt.len() - entries;
    assert!(!prompt.contains("Step."), "no body");
    assert!(preamble < 400, "one fixed preamble: {preamble} bytes");
    let bodies = names.len() * body.len();
    eprintln!(
        "50 skills: the system prompt grows by {} bytes ({entries} of names and descriptions, \
         {preamble} of fixed preamble); their bodies ({bodies} bytes) stay out",
        prompt.len()
    );
}
