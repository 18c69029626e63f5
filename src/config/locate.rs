//! Where a dotted key sits in the config text, so a problem found after parsing (a channel's
//! `validate()`, two channels on one path) is reported with a line like a parse error is.
//! A key that is absent (a missing `secret_token`) points at the nearest table that is there.

use toml_edit::{ImDocument, Item, TableLike};

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
    fn an_absent_key_points_at_its_table() {
        assert_eq!(position(TEXT, "channels.tg.secret_token"), Some((4, 1)));
        assert_eq!(position(TEXT, "nowhere.at_all"), None);
    }
}
