//! The Agent Skills format: a `SKILL.md` opening with YAML front matter between `---` lines
//! (`name`, `description`, and optionally `license`, `compatibility`, `metadata`,
//! `allowed-tools`), then a Markdown body. [`parse`] reads one and checks it to the
//! format's rules, as the format's reference validator (`skills-ref`) does: every problem
//! is reported, none is fixed up.
//!
//! Scalars are read as text, as the reference's YAML reader does (`version: 1.0` is the text
//! `1.0`, `name: 123` is a valid name), and names are compared after NFKC normalisation.

use std::collections::BTreeMap;

use serde_yaml_ng::Value;
use unicode_normalization::UnicodeNormalization;

/// Longest skill name, in characters.
pub const MAX_NAME_CHARS: usize = 64;
/// Longest description, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1024;
/// Longest `compatibility`, in characters.
pub const MAX_COMPATIBILITY_CHARS: usize = 500;
/// The front matter keys the format defines; any other is an error.
pub const FIELDS: &[&str] = &[
    "name",
    "description",
    "license",
    "allowed-tools",
    "metadata",
    "compatibility",
];

/// A parsed and valid `SKILL.md`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Manifest {
    /// The skill's name (NFKC, trimmed), equal to its folder's name.
    pub name: String,
    /// What it does and when to use it: the one line the model always sees.
    pub description: String,
    /// `license`, as written.
    pub license: Option<String>,
    /// `compatibility`: what the skill needs from its environment.
    pub compatibility: Option<String>,
    /// `metadata`: free key-value pairs.
    pub metadata: BTreeMap<String, String>,
    /// `allowed-tools`: the tools a turn using the skill may call (`None`: not narrowed).
    pub allowed_tools: Option<Vec<String>>,
    /// The Markdown after the front matter: loaded only when the model asks for it.
    pub body: String,
}

/// Whether `name` is a valid skill name on its own (the folder match aside).
pub fn check_name(name: &str) -> Result<(), String> {
    let problems = name_problems(name);
    match problems.is_empty() {
        true => Ok(()),
        false => Err(problems.join("; ")),
    }
}

/// Parse `text`, the `SKILL.md` of the folder named `folder`; every problem found, in the
/// reference's words where it has them.
pub fn parse(text: &str, folder: &str) -> Result<Manifest, Vec<String>> {
    let (front, body) = split(text).map_err(|e| vec![e])?;
    let fields = read_fields(front)?;
    let problems = check_fields(&fields, folder);
    if !problems.is_empty() {
        return Err(problems);
    }
    let text = |key: &str| fields.get(key).and_then(scalar);
    Ok(Manifest {
        name: text("name").unwrap_or_default().trim().nfkc().collect(),
        description: text("description").unwrap_or_default().trim().to_owned(),
        license: text("license"),
        compatibility: text("compatibility"),
        metadata: metadata(fields.get("metadata")),
        allowed_tools: fields.get("allowed-tools").map(allowed_tools),
        body: body.trim().to_owned(),
    })
}

/// The front matter's fields by key, or why it cannot be read.
fn read_fields(front: &str) -> Result<BTreeMap<String, Value>, Vec<String>> {
    if let Some(line) = outside_subset(front) {
        return Err(vec![format!(
            "Invalid YAML in frontmatter: line {line} uses flow style, an anchor, an alias or a tag, which the format's YAML does not allow"
        )]);
    }
    let map = match serde_yaml_ng::from_str::<Value>(front) {
        Ok(Value::Mapping(map)) => map,
        Ok(_) => return Err(vec!["SKILL.md frontmatter must be a YAML mapping".into()]),
        Err(e) => return Err(vec![format!("Invalid YAML in frontmatter: {e}")]),
    };
    let mut fields = BTreeMap::new();
    for (key, value) in map {
        let Some(key) = scalar(&key) else {
            return Err(vec!["a frontmatter key is not text".into()]);
        };
        fields.insert(key, value);
    }
    Ok(fields)
}

/// The checks of a whole front matter, as the reference makes them.
fn check_fields(fields: &BTreeMap<String, Value>, folder: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let extra: Vec<&str> = (fields.keys())
        .map(String::as_str)
        .filter(|k| !FIELDS.contains(k))
        .collect();
    if !extra.is_empty() {
        problems.push(format!(
            "Unexpected fields in frontmatter: {}. Only {} are allowed.",
            extra.join(", "),
            FIELDS.join(", ")
        ));
    }
    let name = required(fields, "name", &mut problems).map(|n| n.trim().nfkc().collect::<String>());
    if let Some(name) = &name {
        let own = name_problems(name);
        if own.is_empty() && folder.nfkc().collect::<String>() != *name {
            problems.push(format!(
                "Directory name '{folder}' must match skill name '{name}'"
            ));
        }
        problems.extend(own);
    }
    let description = required(fields, "description", &mut problems);
    if let Some(d) = &description
        && d.chars().count() > MAX_DESCRIPTION_CHARS
    {
        problems.push(format!(
            "Description exceeds {MAX_DESCRIPTION_CHARS} character limit ({} chars)",
            d.chars().count()
        ));
    }
    match fields.get("compatibility").map(scalar) {
        Some(None) => problems.push("Field 'compatibility' must be a string".into()),
        Some(Some(c)) if c.chars().count() > MAX_COMPATIBILITY_CHARS => problems.push(format!(
            "Compatibility exceeds {MAX_COMPATIBILITY_CHARS} character limit ({} chars)",
            c.chars().count()
        )),
        _ => {}
    }
    problems
}

/// The front matter and the body of `text`: the front matter runs from an opening `---`
/// line to the next line that is `---`.
fn split(text: &str) -> Result<(&str, &str), String> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) = text.strip_prefix("---") else {
        return Err("SKILL.md must start with YAML frontmatter (---)".into());
    };
    let Some(rest) = rest
        .strip_prefix('\n')
        .or_else(|| rest.strip_prefix("\r\n"))
    else {
        return Err("SKILL.md must start with YAML frontmatter (---)".into());
    };
    let mut at = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Ok((&rest[..at], &rest[at + line.len()..]));
        }
        at += line.len();
    }
    Err("SKILL.md frontmatter not properly closed with ---".into())
}

/// The 1-based line of `front` that leaves the YAML subset the format's reference reads
/// (no `{…}`/`[…]` flow collections, `&anchors`, `*aliases` or `!tags`), if one does.
/// Lines inside a block scalar (`|`, `>`) are text and are skipped.
fn outside_subset(front: &str) -> Option<usize> {
    let mut block: Option<usize> = None;
    for (i, line) in front.lines().enumerate() {
        let indent = line.len() - line.trim_start().len();
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        match block {
            Some(outer) if indent > outer => continue,
            _ => block = None,
        }
        let mut rest = line.trim_start();
        while let Some(item) = rest.strip_prefix("- ") {
            rest = item.trim_start();
        }
        let value = match rest.split_once(": ") {
            Some((_, value)) => value.trim(),
            None if rest.ends_with(':') => "",
            None => rest,
        };
        if value.starts_with(['{', '[', '&', '*', '!']) {
            return Some(i + 1);
        }
        if value.starts_with(['|', '>']) {
            block = Some(indent);
        }
    }
    None
}

/// A scalar as text (numbers and booleans as written in their plain form, null as empty);
/// `None` for a sequence or mapping.
fn scalar(value: &Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Null => Some(String::new()),
        Value::Tagged(tagged) => scalar(&tagged.value),
        Value::Sequence(_) | Value::Mapping(_) => None,
    }
}

/// A required text field, non-empty; `None` (with the problem noted) when it is not.
fn required(
    fields: &BTreeMap<String, Value>,
    key: &str,
    problems: &mut Vec<String>,
) -> Option<String> {
    let Some(value) = fields.get(key) else {
        problems.push(format!("Missing required field in frontmatter: {key}"));
        return None;
    };
    match scalar(value) {
        Some(text) if !text.trim().is_empty() => Some(text),
        _ => {
            problems.push(format!("Field '{key}' must be a non-empty string"));
            None
        }
    }
}

/// What is wrong with `name` (NFKC already applied): its length, case and characters.
fn name_problems(name: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if name.trim().is_empty() {
        return vec!["Field 'name' must be a non-empty string".into()];
    }
    let chars = name.chars().count();
    if chars > MAX_NAME_CHARS {
        problems.push(format!(
            "Skill name '{name}' exceeds {MAX_NAME_CHARS} character limit ({chars} chars)"
        ));
    }
    if name != name.to_lowercase() {
        problems.push(format!("Skill name '{name}' must be lowercase"));
    }
    if name.starts_with('-') || name.ends_with('-') {
        problems.push("Skill name cannot start or end with a hyphen".into());
    }
    if name.contains("--") {
        problems.push("Skill name cannot contain consecutive hyphens".into());
    }
    if !name.chars().all(|c| c.is_alphanumeric() || c == '-') {
        problems.push(format!(
            "Skill name '{name}' contains invalid characters. Only letters, digits, and hyphens are allowed."
        ));
    }
    problems
}

/// `metadata` as text pairs (anything else is left out: the format only defines pairs).
fn metadata(value: Option<&Value>) -> BTreeMap<String, String> {
    let Some(Value::Mapping(map)) = value else {
        return BTreeMap::new();
    };
    map.iter()
        .filter_map(|(k, v)| Some((scalar(k)?, scalar(v)?)))
        .collect()
}

/// `allowed-tools`: space-separated names, or a list of them. Anything else allows no
/// tool at all, since the field may only ever narrow.
fn allowed_tools(value: &Value) -> Vec<String> {
    match value {
        Value::Sequence(items) => items.iter().filter_map(scalar).collect(),
        other => scalar(other)
            .map(|s| s.split_whitespace().map(str::to_owned).collect())
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skill(front: &str) -> String {
        format!("---\n{front}\n---\n# Body\nDo the thing.\n")
    }

    #[test]
    fn a_valid_skill_keeps_its_fields_and_body() {
        let text = skill(
            "name: pdf-forms\ndescription: Fill PDF forms.\nlicense: MIT\n\
             allowed-tools: shell file_read\nmetadata:\n  version: 1.0\n  author: ops",
        );
        let m = parse(&text, "pdf-forms").unwrap();
        assert_eq!(m.name, "pdf-forms");
        assert_eq!(m.description, "Fill PDF forms.");
        assert_eq!(m.body, "# Body\nDo the thing.");
        assert_eq!(
            m.allowed_tools,
            Some(vec!["shell".into(), "file_read".into()])
        );
        assert_eq!(m.metadata["version"], "1.0");
        assert_eq!(m.license.as_deref(), Some("MIT"));
    }

    fn assert_reported(cases: &[(String, &str, &str)]) {
        for (text, folder, expected) in cases {
            let problems = parse(text, folder).unwrap_err();
            assert!(
                problems.iter().any(|p| p.contains(expected)),
                "{text:?}: {problems:?} lacks {expected:?}"
            );
        }
    }

    #[test]
    fn every_rule_of_the_format_is_reported() {
        let cases = [
            (
                skill("description: x"),
                "pdf",
                "Missing required field in frontmatter: name",
            ),
            (
                skill("name: pdf"),
                "pdf",
                "Missing required field in frontmatter: description",
            ),
            (
                skill("name: PDF\ndescription: x"),
                "PDF",
                "must be lowercase",
            ),
            (
                skill("name: a_b\ndescription: x"),
                "a_b",
                "invalid characters",
            ),
            (
                skill("name: -ab\ndescription: x"),
                "-ab",
                "start or end with a hyphen",
            ),
            (
                skill("name: a--b\ndescription: x"),
                "a--b",
                "consecutive hyphens",
            ),
            (
                skill("name: pdf\ndescription: x"),
                "other",
                "must match skill name",
            ),
            (
                skill("name: pdf\ndescription: \"\""),
                "pdf",
                "must be a non-empty string",
            ),
            (
                skill("name: pdf\ndescription: x\nversion: 2"),
                "pdf",
                "Unexpected fields",
            ),
        ];
        assert_reported(&cases);
    }

    #[test]
    fn a_front_matter_that_cannot_be_read_is_reported() {
        let cases = [
            (
                "# no front matter\n".into(),
                "pdf",
                "must start with YAML frontmatter",
            ),
            ("---\nname: pdf\n".into(), "pdf", "not properly closed"),
            (skill("name: [pdf\ndescription: x"), "pdf", "Invalid YAML"),
            (skill("- a\n- b"), "pdf", "must be a YAML mapping"),
            (
                skill("name: pdf\ndescription: x\nmetadata: {a: b}"),
                "pdf",
                "flow style",
            ),
            (
                skill("name: pdf\ndescription: &d x\nlicense: *d"),
                "pdf",
                "an anchor",
            ),
        ];
        assert_reported(&cases);
    }

    #[test]
    fn the_limits_count_characters() {
        let name = "a".repeat(MAX_NAME_CHARS);
        assert!(parse(&skill(&format!("name: {name}\ndescription: x")), &name).is_ok());
        let long = "a".repeat(MAX_NAME_CHARS + 1);
        let problems = parse(&skill(&format!("name: {long}\ndescription: x")), &long);
        assert!(problems.unwrap_err()[0].contains("64 character limit"));
        let desc = "é".repeat(MAX_DESCRIPTION_CHARS);
        assert!(parse(&skill(&format!("name: a\ndescription: {desc}")), "a").is_ok());
        let over = format!("name: a\ndescription: {desc}x");
        assert!(parse(&skill(&over), "a").unwrap_err()[0].contains("1024"));
        let compat = format!(
            "name: a\ndescription: x\ncompatibility: {}",
            "c".repeat(501)
        );
        assert!(parse(&skill(&compat), "a").unwrap_err()[0].contains("500"));
    }

    #[test]
    fn brackets_inside_text_and_block_scalars_are_text() {
        let text =
            skill("name: pdf\ndescription: |\n  [draft] fill {forms}\n  *carefully*\nlicense: MIT");
        let m = parse(&text, "pdf").unwrap();
        assert!(m.description.starts_with("[draft] fill {forms}"), "{m:?}");
        assert!(parse(&skill("name: pdf\ndescription: use [brackets]"), "pdf").is_ok());
    }

    #[test]
    fn scalars_are_text_and_unicode_names_are_normalised() {
        assert_eq!(
            parse(&skill("name: 123\ndescription: 4.5"), "123")
                .unwrap()
                .description,
            "4.5"
        );
        assert!(parse(&skill("name: café\ndescription: x"), "café").is_ok());
        assert!(check_name("ok-name-2").is_ok());
        assert!(check_name("Bad").is_err() && check_name("").is_err());
    }
}
