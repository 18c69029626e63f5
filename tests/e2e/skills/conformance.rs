//! Our verdict on skill folders against the format's reference validator (`agentskills
//! validate`, from the `skills-ref` package `.ci/run` installs into
//! `tests/skills-ref/.venv`): on every folder of a corpus of valid and invalid skills, both
//! say valid or both say invalid. Without the validator the test is skipped with a notice;
//! with `SWITCHBOARD_REQUIRE_SKILLS_REF=1` (CI) its absence fails.

use std::path::{Path, PathBuf};
use std::process::Command;

use switchboard::config::skills::SkillsConfig;
use switchboard::skills::{Catalog, State};

/// The corpus: folder name and `SKILL.md` text (`None`: the folder has no `SKILL.md`).
fn corpus() -> Vec<(String, Option<String>)> {
    let skill = |front: &str| Some(format!("---\n{front}\n---\n# Steps\n\nDo it.\n"));
    let long = |n: usize, c: &str| c.repeat(n);
    let mut cases: Vec<(String, Option<String>)> = vec![
        (
            "minimal".into(),
            skill("name: minimal\ndescription: The least a skill needs."),
        ),
        (
            "all-fields".into(),
            skill(
                "name: all-fields\ndescription: Every optional field.\nlicense: Apache-2.0\n\
             compatibility: Needs bash and python3\nmetadata:\n  author: ops\n  version: \"1.0\"\n\
             allowed-tools: Bash(git:*) Read",
            ),
        ),
        (
            "digits-2-hyphen".into(),
            skill("name: digits-2-hyphen\ndescription: x"),
        ),
        (
            "123".into(),
            skill("name: 123\ndescription: A number read as text."),
        ),
        (
            "café".into(),
            skill("name: café\ndescription: A lowercase letter beyond ASCII."),
        ),
        (
            "quoted".into(),
            skill("name: \"quoted\"\ndescription: \"with: a colon\""),
        ),
        (
            "block".into(),
            skill("name: block\ndescription: |\n  [draft] several\n  lines {here}"),
        ),
        (
            "tool-list".into(),
            skill("name: tool-list\ndescription: x\nallowed-tools:\n  - Bash\n  - Read"),
        ),
        (
            "no-body".into(),
            Some("---\nname: no-body\ndescription: x\n---".into()),
        ),
        (
            "crlf".into(),
            Some("---\r\nname: crlf\r\ndescription: x\r\n---\r\nbody\r\n".into()),
        ),
        ("max-name".into(), None),
        (
            "max-description".into(),
            skill(&format!(
                "name: max-description\ndescription: {}",
                long(1024, "d")
            )),
        ),
        ("Upper".into(), skill("name: Upper\ndescription: x")),
        (
            "under_score".into(),
            skill("name: under_score\ndescription: x"),
        ),
        ("-leading".into(), skill("name: -leading\ndescription: x")),
        ("trailing-".into(), skill("name: trailing-\ndescription: x")),
        (
            "double--hyphen".into(),
            skill("name: double--hyphen\ndescription: x"),
        ),
        ("mismatch".into(), skill("name: other-name\ndescription: x")),
        ("no-name".into(), skill("description: x")),
        ("no-description".into(), skill("name: no-description")),
        (
            "empty-description".into(),
            skill("name: empty-description\ndescription:"),
        ),
        (
            "list-description".into(),
            skill("name: list-description\ndescription:\n  - a"),
        ),
        (
            "long-description".into(),
            skill(&format!(
                "name: long-description\ndescription: {}",
                long(1025, "d")
            )),
        ),
        (
            "long-compatibility".into(),
            skill(&format!(
                "name: long-compatibility\ndescription: x\ncompatibility: {}",
                long(501, "c")
            )),
        ),
        (
            "list-compatibility".into(),
            skill("name: list-compatibility\ndescription: x\ncompatibility:\n  - a"),
        ),
        (
            "unknown-field".into(),
            skill("name: unknown-field\ndescription: x\nversion: 2"),
        ),
        (
            "flow-style".into(),
            skill("name: flow-style\ndescription: x\nmetadata: {a: b}"),
        ),
        (
            "anchor".into(),
            skill("name: anchor\ndescription: &d x\nlicense: *d"),
        ),
        (
            "duplicate-key".into(),
            skill("name: duplicate-key\nname: duplicate-key\ndescription: x"),
        ),
        ("no-front-matter".into(), Some("# Just markdown\n".into())),
        (
            "unclosed".into(),
            Some("---\nname: unclosed\ndescription: x\n".into()),
        ),
        ("not-a-mapping".into(), skill("- a\n- b")),
        ("bad-yaml".into(), skill("name: [bad-yaml\ndescription: x")),
        ("no-skill-md".into(), None),
    ];
    let max = long(64, "n");
    cases[10] = (max.clone(), skill(&format!("name: {max}\ndescription: x")));
    let over = long(65, "n");
    cases.push((
        over.clone(),
        skill(&format!("name: {over}\ndescription: x")),
    ));
    cases
}

/// The reference validator, or `None` with a notice (a failure under CI's variable).
fn reference() -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/skills-ref/.venv/bin/agentskills");
    if path.is_file() {
        return Some(path);
    }
    let install = "python3 -m venv tests/skills-ref/.venv && tests/skills-ref/.venv/bin/pip install -r tests/skills-ref/requirements.txt";
    if std::env::var("SWITCHBOARD_REQUIRE_SKILLS_REF").as_deref() == Ok("1") {
        panic!(
            "SWITCHBOARD_REQUIRE_SKILLS_REF=1 but {} is missing: {install}",
            path.display()
        );
    }
    eprintln!(
        "SKIPPED: the skills reference validator is not installed ({}); {install}",
        path.display()
    );
    None
}

#[test]
fn our_verdict_agrees_with_the_reference_validator_on_every_folder_of_the_corpus() {
    let dir = tempfile::tempdir().unwrap();
    let corpus = corpus();
    for (name, text) in &corpus {
        let folder = dir.path().join(name);
        std::fs::create_dir_all(&folder).unwrap();
        match text {
            Some(text) => std::fs::write(folder.join("SKILL.md"), text).unwrap(),
            None => std::fs::write(folder.join("README.md"), "no SKILL.md here").unwrap(),
        }
    }
    let settings = SkillsConfig {
        dirs: vec![dir.path().to_path_buf()],
        lock: Some(dir.path().join("unused.lock")),
    };
    let catalog = Catalog::scan(&settings, dir.path());
    let ours = |name: &str| {
        let found = catalog
            .get(name)
            .unwrap_or_else(|| panic!("{name} not scanned"));
        !matches!(found.state, State::Invalid(_))
    };
    let valid = corpus.iter().filter(|(n, _)| ours(n)).count();
    assert!(
        valid >= 10 && corpus.len() - valid >= 20,
        "the corpus has both kinds: {valid} valid"
    );
    let Some(validator) = reference() else {
        return;
    };
    let mut disagreements = Vec::new();
    for (name, _) in &corpus {
        let out = Command::new(&validator)
            .arg("validate")
            .arg(dir.path().join(name))
            .output()
            .unwrap();
        let theirs = match out.status.code() {
            Some(0) => true,
            Some(1) => false,
            other => panic!(
                "{name}: the validator exited {other:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            ),
        };
        if theirs != ours(name) {
            let why = String::from_utf8_lossy(&out.stderr).into_owned();
            disagreements.push(format!(
                "{name}: ours {} / reference {theirs} {why}",
                ours(name)
            ));
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}
