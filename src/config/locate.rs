//! Where a dotted key sits in the config text, so a problem found after parsing (a channel's
//! `validate()`, two channels on one path) is reported with a line like a parse error is.
//! A key that is absent (a missing `secret_token`) points at the nearest table that is there.
//! And the other way round: which key a parse error's position falls in, so a type error
//! names its key without deserializing the whole config a second time through a path tracker
//! (that instantiated every config type's deserializer twice: 0.6 MiB of the binary).

use std::ops::Range;

use toml_edit::{ImDocument, Item, TableLike, Value};

/// 1-based line and column of `key` (e.g. `channels.tg.secret_token`) in `text`, or of its
/// deepest ancestor that has a position; `None` when nothing along the path does.
pub(super) fn position(text: &str, key: &str) -> Option<(usize, usize)> {
    let doc = ImDocument::parse(text).ok()?;
    let mut table: &dyn TableLike = doc.as_table();
    let mut found = None;
    for part in key.split('.').filter(|p| !p.is_empty()) {
        let Some((k, item)) = table.get_key_value(part) else {
            break;
        };
        found = k.span().map(|s| s.start).or(found);
        match item {
            Item::Table(t) => {
                // A `[a.b]` header is the clearer place to point at than an implicit key.
                found = t.span().map(|s| s.start).or(found);
                table = t;
            }
            Item::Value(v) => match v.as_inline_table() {
                Some(inline) => table = inline,
                None => break,
            },
            _ => break,
        }
    }
    found.map(|offset| super::load::line_col(text, offset))
}

/// The dotted key (`channels.tg.mode`, `mcp.servers[1].command`) whose name or value holds
/// byte `offset` of `text`, or whose table header does; empty when none does (the top level).
pub(super) fn key_at(text: &str, offset: usize) -> String {
    let Ok(doc) = ImDocument::parse(text) else {
        return String::new();
    };
    let mut path = Vec::new();
    in_table(doc.as_table(), offset, &mut path);
    let mut key = String::new();
    for part in path {
        if !key.is_empty() && !part.starts_with('[') {
            key.push('.');
        }
        key.push_str(&part);
    }
    key
}

fn holds(span: Option<Range<usize>>, offset: usize) -> bool {
    span.is_some_and(|span| span.contains(&offset))
}

/// Pushes onto `path` the keys down to the innermost entry of `table` that holds `offset`.
fn in_table(table: &dyn TableLike, offset: usize, path: &mut Vec<String>) -> bool {
    for (name, _) in table.iter() {
        let Some((key, item)) = table.get_key_value(name) else {
            continue;
        };
        path.push(name.to_owned());
        let found = holds(key.span(), offset)
            || match item {
                Item::Value(value) => in_value(value, offset, path),
                // A header's table holds its entries below the header, not inside its span.
                Item::Table(inner) => in_table(inner, offset, path) || holds(inner.span(), offset),
                Item::ArrayOfTables(tables) => tables.iter().enumerate().any(|(i, inner)| {
                    path.push(format!("[{i}]"));
                    let found = in_table(inner, offset, path) || holds(inner.span(), offset);
                    if !found {
                        path.pop();
                    }
                    found
                }),
                Item::None => false,
            };
        if found {
            return true;
        }
        path.pop();
    }
    false
}

fn in_value(value: &Value, offset: usize, path: &mut Vec<String>) -> bool {
    if !holds(value.span(), offset) {
        return false;
    }
    match value {
        Value::InlineTable(inline) => {
            in_table(inline, offset, path);
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                path.push(format!("[{i}]"));
                if in_value(item, offset, path) {
                    break;
                }
                path.pop();
            }
        }
        _ => {}
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "[gateway]\nlisten = \"x\"\n\n[channels.tg]\nkind = \"telegram\"\n\
                        mode = \"webhook\"\n\n[channels.web]\nkind = \"web\"\npath = \"/\"\n";

    #[test]
    fn a_present_key_is_found_on_its_own_line() {
        assert_eq!(position(TEXT, "gateway.listen"), Some((2, 1)));
        assert_eq!(position(TEXT, "channels.tg.mode"), Some((6, 1)));
        assert_eq!(position(TEXT, "channels.web.path"), Some((10, 1)));
    }

    #[test]
    fn an_offset_names_the_key_whose_name_value_or_header_holds_it() {
        let at = |needle: &str| key_at(TEXT, TEXT.find(needle).expect("in TEXT"));
        assert_eq!(at("listen"), "gateway.listen");
        assert_eq!(at("\"x\""), "gateway.listen");
        assert_eq!(at("[channels.tg]"), "channels.tg");
        assert_eq!(at("\"webhook\""), "channels.tg.mode");
        assert_eq!(at("path"), "channels.web.path");
        let text = "top = 1\n[[mcp.servers]]\nname = \"a\"\n[[mcp.servers]]\nname = \"b\"\n\
                    args = [\"x\", { k = 2 }]\n";
        let at = |needle: &str| key_at(text, text.find(needle).expect("in text"));
        assert_eq!(at("top"), "top");
        assert_eq!(at("\"b\""), "mcp.servers[1].name");
        assert_eq!(at("\"x\""), "mcp.servers[1].args[0]");
        assert_eq!(at("k = "), "mcp.servers[1].args[1].k");
        assert_eq!(key_at(text, text.len()), "");
    }

    #[test]
    fn an_absent_key_points_at_its_table() {
        assert_eq!(position(TEXT, "channels.tg.secret_token"), Some((4, 1)));
        assert_eq!(position(TEXT, "nowhere.at_all"), None);
    }
}
