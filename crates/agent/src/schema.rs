//! Tool arguments checked against the tool's JSON Schema, with `boon`: a validator for drafts
//! 4, 6, 7, 2019-09 and 2020-12 that passes the JSON Schema test suite (MCP servers bring
//! arbitrary schemas). A schema without `$schema` is read as 2020-12. `format` is an
//! annotation, as those drafts say, unless the schema's draft asserts it.
//!
//! A schema may refer only to itself and to the drafts' metaschemas (built into `boon`): a
//! `$ref` to a file or a URL is a compile error, never a read or a request on the host.
//!
//! Why `boon` and not `jsonschema`: the same checks for far less code in the gateway binary
//! (`jsonschema` also brings a second regex engine, a reference resolver and big-number
//! arithmetic). Its `pattern` is the `regex` crate's (with ECMA-262 classes translated),
//! which has no look-around or back-references. A schema that compiles only without its
//! `pattern` keywords (an MCP server's, written for JavaScript) is checked without them:
//! everything else still holds, and the server checks its own patterns.

use boon::{Compiler, ErrorKind, Schemas, SchemeUrlLoader, ValidationError};
use serde_json::Value;

/// Where the schema sits while it is compiled; nothing is loaded from there.
const LOCATION: &str = "urn:switchboard:tool-arguments";

/// Whether `schema` compiles (with or without its patterns), so that arguments can be
/// checked against it.
pub fn usable(schema: &Value) -> bool {
    compile(schema).is_ok()
}

/// `Ok` when `args` satisfy `schema`; else every violation, each with the path of the
/// argument it is about (`/path: what is wrong`), joined by `; `.
pub fn check(schema: &Value, args: &Value) -> Result<(), String> {
    let (schemas, index) = compile(schema)?;
    let Err(error) = schemas.validate(args, index) else {
        return Ok(());
    };
    let mut problems = Vec::new();
    collect(&error, &mut problems);
    problems.dedup();
    Err(problems.join("; "))
}

fn compile(schema: &Value) -> Result<(Schemas, boon::SchemaIndex), String> {
    compile_as_is(schema).or_else(|error| {
        let mut lenient = schema.clone();
        if drop_patterns(&mut lenient) {
            compile_as_is(&lenient).map_err(|_| error)
        } else {
            Err(error)
        }
    })
}

fn compile_as_is(schema: &Value) -> Result<(Schemas, boon::SchemaIndex), String> {
    let mut compiler = Compiler::new();
    // No schemes registered: `boon` would otherwise read `file:` references from disk.
    compiler.use_loader(Box::new(SchemeUrlLoader::new()));
    let mut schemas = Schemas::new();
    let invalid = |e: boon::CompileError| format!("the tool's schema is invalid: {e}");
    compiler
        .add_resource(LOCATION, schema.clone())
        .map_err(invalid)?;
    let index = compiler.compile(LOCATION, &mut schemas).map_err(invalid)?;
    Ok((schemas, index))
}

/// Remove every `pattern` keyword (a string) from `schema`'s subschemas, leaving data
/// (`const`, `enum`, `default`, `examples`) as it is; whether there was one.
fn drop_patterns(schema: &mut Value) -> bool {
    match schema {
        Value::Object(map) => {
            let mut dropped = map.get("pattern").is_some_and(Value::is_string);
            if dropped {
                map.remove("pattern");
            }
            for (key, value) in map.iter_mut() {
                if !matches!(key.as_str(), "const" | "enum" | "default" | "examples") {
                    dropped |= drop_patterns(value);
                }
            }
            dropped
        }
        Value::Array(items) => items
            .iter_mut()
            .fold(false, |d, item| drop_patterns(item) | d),
        _ => false,
    }
}

/// The innermost errors: the ones that say what is wrong, not which keyword led there.
fn collect(error: &ValidationError, out: &mut Vec<String>) {
    if !error.causes.is_empty() {
        for cause in &error.causes {
            collect(cause, out);
        }
        return;
    }
    let at = error.instance_location.to_string();
    let what = match &error.kind {
        // A leaf `Group` or `Schema` would only say that validation failed.
        ErrorKind::Group | ErrorKind::Schema { .. } => "the arguments do not match".to_owned(),
        kind => kind.to_string(),
    };
    out.push(if at.is_empty() {
        what
    } else {
        format!("{at}: {what}")
    });
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn add_schema() -> Value {
        json!({
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer", "minimum": 0}},
            "required": ["a", "b"],
            "additionalProperties": false
        })
    }

    #[test]
    fn arguments_that_fit_pass() {
        assert_eq!(check(&add_schema(), &json!({"a": 1, "b": 2})), Ok(()));
    }

    #[test]
    fn every_violation_is_named_with_its_path() {
        let err = check(&add_schema(), &json!({"a": "one", "b": -1, "c": true})).unwrap_err();
        let problems: Vec<&str> = err.split("; ").collect();
        assert_eq!(problems.len(), 3, "{err}");
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/a: ") && p.contains("integer")),
            "{err}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.starts_with("/b: ") && p.contains(">=0")),
            "{err}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("additionalProperties") || p.contains("'c'")),
            "{err}"
        );
    }

    #[test]
    fn a_missing_argument_is_named() {
        let err = check(&add_schema(), &json!({"a": 1})).unwrap_err();
        assert!(err.contains("missing") && err.contains("'b'"), "{err}");
    }

    #[test]
    fn nested_paths_and_choices_are_reported_at_the_value() {
        let schema = json!({
            "type": "object",
            "properties": {"items": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "null"}]}}}
        });
        assert_eq!(check(&schema, &json!({"items": ["x", null]})), Ok(()));
        let err = check(&schema, &json!({"items": ["x", 3]})).unwrap_err();
        assert!(
            err.split("; ").all(|p| p.starts_with("/items/1: ")),
            "{err}"
        );
    }

    #[test]
    fn older_drafts_and_local_references_are_understood() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "definitions": {"name": {"type": "string", "minLength": 2}},
            "type": "object",
            "properties": {"name": {"$ref": "#/definitions/name"}}
        });
        assert_eq!(check(&schema, &json!({"name": "ok"})), Ok(()));
        let err = check(&schema, &json!({"name": "x"})).unwrap_err();
        assert!(err.starts_with("/name: "), "{err}");
    }

    #[test]
    fn a_schema_that_refers_to_the_host_or_the_network_does_not_compile() {
        let dir = std::env::temp_dir().join(format!("schema-ref-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("s.json");
        std::fs::write(&file, r#"{"type": "string"}"#).unwrap();
        let by_file = json!({"$ref": format!("file://{}", file.display())});
        let by_url = json!({"properties": {"x": {"$ref": "http://127.0.0.1:9/s.json"}}});
        for schema in [by_file, by_url] {
            assert!(!usable(&schema), "{schema}");
            let err = check(&schema, &json!({})).unwrap_err();
            assert!(err.starts_with("the tool's schema is invalid"), "{err}");
        }
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_pattern_the_regex_engine_lacks_is_left_to_the_server_and_the_rest_still_holds() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "pattern": "^(?!admin$)"},
                "code": {"type": "string", "pattern": "^[a-z]+$"},
                "pattern": {"type": "string", "const": "keep"}
            },
            "required": ["name"]
        });
        assert!(usable(&schema));
        assert_eq!(
            check(&schema, &json!({"name": "admin", "code": "1"})),
            Ok(())
        );
        let err = check(&schema, &json!({"pattern": "other"})).unwrap_err();
        assert!(
            err.contains("'name'") && err.contains("/pattern: "),
            "{err}"
        );
        // A schema whose patterns all compile keeps them.
        let strict = json!({"properties": {"code": {"type": "string", "pattern": "^[a-z]+$"}}});
        assert!(
            check(&strict, &json!({"code": "1"}))
                .unwrap_err()
                .starts_with("/code: ")
        );
    }

    #[test]
    fn a_schema_that_is_not_one_is_unusable() {
        assert!(!usable(&json!({"type": "no-such-type"})));
        assert!(!usable(
            &json!({"type": "no-such-type", "pattern": "(?!x)"})
        ));
        assert!(!usable(&json!({"patternProperties": {"(?!x)": {}}})));
        assert!(!usable(&json!(42)));
        assert!(usable(&json!(true)));
        assert!(usable(&json!({})));
    }
}
