//! Prompt-guided tool calls: models without native tool calling write calls into their text.
//! `parse_tool_calls` is a pure function that finds them, in priority order
//! `<tool_call>{json}</tool_call>`, `<invoke name="…">` with parameters, fenced
//! ```` ```tool_call ```` blocks, then GLM-style `name\n{json}`, strips `<think>` sections, and
//! keeps the text around the calls as the thought.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

use crate::provider::ToolCall;

/// Text and calls found in a response.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Parsed {
    /// What remains once calls and `<think>` sections are removed.
    pub text: String,
    /// Calls in the order they appear.
    pub calls: Vec<ToolCall>,
}

static THINK: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<think>.*?(?:</think>|\z)").unwrap());
static TOOL_CALL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)<tool_call>(.*?)(?:</tool_call>|\z)").unwrap());
static INVOKE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?s)<invoke\s+name\s*=\s*["']([^"']+)["']\s*>(.*?)</invoke>"#).unwrap()
});
static PARAM: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?s)<parameter\s+name\s*=\s*["']([^"']+)["']\s*>(.*?)</parameter>"#).unwrap()
});
static WRAPPER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"</?(?:function_calls|antml:function_calls)\s*>").unwrap());
static FENCE: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?s)```tool_call[ \t]*\n(.*?)(?:```|\z)").unwrap());

/// Find the tool calls in `text`. `known_tools` enables GLM-style `name\n{json}` calls, which
/// are only recognised for names the model was actually offered.
pub fn parse_tool_calls(text: &str, known_tools: &[&str]) -> Parsed {
    let mut found: Vec<(usize, String, Value)> = Vec::new();
    let mut rest = THINK.replace_all(text, "").into_owned();

    rest = extract(
        &rest,
        &TOOL_CALL,
        |c| Some(json_call_or_malformed(c)),
        &mut found,
    );
    rest = extract(
        &rest,
        &INVOKE,
        |c| {
            let name = c.get(1)?.as_str().trim().to_owned();
            let mut args = serde_json::Map::new();
            for p in PARAM.captures_iter(c.get(2).map_or("", |m| m.as_str())) {
                let raw = p[2].trim();
                let value =
                    serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()));
                args.insert(p[1].to_owned(), value);
            }
            Some((name, Value::Object(args)))
        },
        &mut found,
    );
    rest = WRAPPER.replace_all(&rest, "").into_owned();
    rest = extract(
        &rest,
        &FENCE,
        |c| Some(json_call_or_malformed(c)),
        &mut found,
    );
    rest = extract_glm(&rest, known_tools, &mut found);

    found.sort_by_key(|(pos, _, _)| *pos);
    let calls = found
        .into_iter()
        .enumerate()
        .map(|(i, (_, name, args))| ToolCall {
            id: format!("call_{i}"),
            name,
            args,
        })
        .collect();
    Parsed {
        text: tidy(&rest),
        calls,
    }
}

/// Remove every match of `re` that `to_call` accepts, recording its position.
fn extract(
    text: &str,
    re: &Regex,
    to_call: impl Fn(&regex::Captures<'_>) -> Option<(String, Value)>,
    found: &mut Vec<(usize, String, Value)>,
) -> String {
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for caps in re.captures_iter(text) {
        let whole = caps.get(0).expect("match");
        if let Some((name, args)) = to_call(&caps) {
            out.push_str(&text[last..whole.start()]);
            found.push((out.len(), name, args));
            last = whole.end();
        }
    }
    out.push_str(&text[last..]);
    out
}

/// Name of the call a malformed `<tool_call>` block becomes, so the model is told (through
/// an "unknown tool" error result) instead of the syntax leaking into the chat.
pub const MALFORMED_CALL: &str = "(malformed tool call)";

fn json_call_or_malformed(caps: &regex::Captures<'_>) -> (String, Value) {
    let body = caps.get(1).map_or("", |m| m.as_str());
    json_call(body).unwrap_or_else(|| {
        (
            MALFORMED_CALL.to_owned(),
            serde_json::json!({"raw": body.trim()}),
        )
    })
}

/// `{"name": …, "arguments"|"parameters"|"args"|"input": …}`; arguments may be a JSON string.
fn json_call(body: &str) -> Option<(String, Value)> {
    let value: Value = first_json(body.trim())?.0;
    let name = value
        .get("name")
        .or_else(|| value.get("tool"))?
        .as_str()?
        .to_owned();
    let args = ["arguments", "parameters", "args", "input"]
        .iter()
        .find_map(|k| value.get(*k))
        .cloned()
        .unwrap_or(Value::Object(Default::default()));
    let args = match args {
        Value::String(s) => serde_json::from_str(&s).unwrap_or(Value::String(s)),
        other => other,
    };
    Some((name, args))
}

/// The first JSON value at the start of `s`, and how many bytes it took.
fn first_json(s: &str) -> Option<(Value, usize)> {
    let mut stream = serde_json::Deserializer::from_str(s).into_iter::<Value>();
    match stream.next() {
        Some(Ok(v)) => Some((v, stream.byte_offset())),
        _ => None,
    }
}

/// GLM-style: a line that is exactly a known tool name, then a JSON object.
fn extract_glm(text: &str, known: &[&str], found: &mut Vec<(usize, String, Value)>) -> String {
    if known.is_empty() {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    'scan: while !rest.is_empty() {
        let line_end = rest.find('\n');
        let line = &rest[..line_end.unwrap_or(rest.len())];
        if let (Some(end), true) = (line_end, known.contains(&line.trim())) {
            let after = &rest[end + 1..];
            let trimmed = after.trim_start();
            if trimmed.starts_with('{')
                && let Some((args @ Value::Object(_), used)) = first_json(trimmed)
            {
                found.push((out.len(), line.trim().to_owned(), args));
                rest = &trimmed[used..];
                continue 'scan;
            }
        }
        match line_end {
            Some(end) => {
                out.push_str(&rest[..=end]);
                rest = &rest[end + 1..];
            }
            None => {
                out.push_str(rest);
                rest = "";
            }
        }
    }
    out
}

fn tidy(text: &str) -> String {
    let mut out = text.trim().to_owned();
    while out.contains("\n\n\n") {
        out = out.replace("\n\n\n", "\n\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(p: &Parsed) -> Vec<(&str, Value)> {
        p.calls
            .iter()
            .map(|c| (c.name.as_str(), c.args.clone()))
            .collect()
    }

    #[test]
    fn every_listed_format_is_recognised() {
        let table: Vec<(&str, &str, Value, &str)> = vec![
            (
                "tool_call tag",
                "Let me look.\n<tool_call>{\"name\": \"shell\", \"arguments\": {\"command\": \"ls\"}}</tool_call>",
                json!({"command": "ls"}),
                "Let me look.",
            ),
            (
                "string arguments",
                "<tool_call>{\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}</tool_call>",
                json!({"command": "ls"}),
                "",
            ),
            (
                "invoke",
                "Checking.\n<function_calls>\n<invoke name=\"shell\">\n<parameter name=\"command\">ls -la</parameter>\n</invoke>\n</function_calls>",
                json!({"command": "ls -la"}),
                "Checking.",
            ),
            (
                "fenced",
                "Sure:\n```tool_call\n{\"name\": \"shell\", \"parameters\": {\"command\": \"pwd\"}}\n```\n",
                json!({"command": "pwd"}),
                "Sure:",
            ),
            (
                "glm",
                "I'll run it.\nshell\n{\"command\": \"date\"}",
                json!({"command": "date"}),
                "I'll run it.",
            ),
        ];
        for (label, text, args, thought) in table {
            let p = parse_tool_calls(text, &["shell"]);
            assert_eq!(names(&p), vec![("shell", args)], "{label}");
            assert_eq!(p.text, thought, "{label}");
        }
    }

    #[test]
    fn think_sections_are_stripped_even_when_unclosed() {
        let p = parse_tool_calls("<think>secret plan</think>Answer.", &[]);
        assert_eq!(p.text, "Answer.");
        assert_eq!(parse_tool_calls("Hi <think>never closed", &[]).text, "Hi");
    }

    #[test]
    fn several_calls_keep_their_order_and_get_distinct_ids() {
        let text = "<tool_call>{\"name\":\"a\",\"arguments\":{}}</tool_call> and <tool_call>{\"name\":\"b\",\"arguments\":{\"x\":1}}</tool_call>";
        let p = parse_tool_calls(text, &[]);
        assert_eq!(
            p.calls.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
            ["a", "b"]
        );
        assert_ne!(p.calls[0].id, p.calls[1].id);
        assert_eq!(p.text, "and");
    }

    #[test]
    fn plain_text_and_unknown_glm_names_are_left_alone() {
        let text = "Use the shell\n{\"not\": \"a call\"} — just prose.";
        let p = parse_tool_calls(text, &["file_read"]);
        assert!(p.calls.is_empty());
        assert_eq!(p.text, text);
        let malformed = parse_tool_calls("<tool_call>not json</tool_call>", &[]);
        assert_eq!(malformed.calls[0].name, MALFORMED_CALL);
        assert_eq!(malformed.text, "");
    }
}
