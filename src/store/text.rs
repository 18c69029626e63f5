//! Free text stored exactly on both databases. PostgreSQL's `text` cannot hold U+0000 (NUL);
//! every other character, control characters included, is stored as it is on both.
//!
//! The encoding, applied only where needed: a text that contains NUL (on PostgreSQL, see
//! [`Dialect::escape_nul`](super::Dialect)) or that begins with [`MARKER`] (on both) is
//! stored as `MARKER` followed by the text as a JSON string literal (`"a\u0000b"`), which
//! PostgreSQL accepts. Everything else is stored verbatim, so stored rows stay readable and
//! searchable, and rows written before this encoding existed read back unchanged. Reading
//! decodes a marked value on both databases; a marked value that is not valid JSON (which
//! this module never writes) is returned as stored rather than refused.
//!
//! `MARKER` is U+FDD0, a Unicode noncharacter ("permanently reserved for internal use"), so
//! no platform or model text is expected to begin with it; if one does, it is encoded too
//! and still comes back exactly.
//!
//! Encoded columns: `messages.content`, `messages.tool_call_id`, `memories.key`,
//! `memories.content`, `audit.tool/call_id/args/output`, `approvals.tool/args/rule/reason`,
//! `allow_rules.rule`, `access_grants.user_name`, `pairing_requests.user_name` and
//! `inbox.error`. JSON columns (`inbox.payload`, `messages.tool_calls`, `approvals.state`)
//! need nothing: `serde_json` already writes NUL as `\u0000`. Platform ids (event, user,
//! chat) are never encoded: channels refuse ids with control characters at their edge.

use super::backend::Backend;

/// Opens an encoded value: U+FDD0, a noncharacter.
pub const MARKER: char = '\u{FDD0}';

/// `text` as stored by a database that cannot hold NUL (`escape_nul`) or can.
pub fn encode(text: &str, escape_nul: bool) -> String {
    if text.starts_with(MARKER) || (escape_nul && text.contains('\0')) {
        let json = serde_json::to_string(text).expect("a string always serialises");
        format!("{MARKER}{json}")
    } else {
        text.to_owned()
    }
}

/// A stored value back as the text that was written.
pub fn decode(stored: String) -> String {
    match stored.strip_prefix(MARKER) {
        Some(json) => serde_json::from_str(json).unwrap_or(stored),
        None => stored,
    }
}

/// `text` as database `DB` stores it.
pub(super) fn put<DB: Backend>(text: &str) -> String {
    encode(text, DB::DIALECT.escape_nul)
}

/// An optional text as database `DB` stores it.
pub(super) fn put_opt<DB: Backend>(text: Option<&str>) -> Option<String> {
    text.map(put::<DB>)
}

/// An optional stored value back as the text that was written.
pub(super) fn decode_opt(stored: Option<String>) -> Option<String> {
    stored.map(decode)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_and_control_characters_other_than_nul_are_stored_verbatim() {
        for text in ["hello", "tab\there\u{1}\u{7f}\u{85}", "שלום 👋", ""] {
            assert_eq!(encode(text, true), text);
            assert_eq!(encode(text, false), text);
        }
    }

    #[test]
    fn nul_is_escaped_only_where_the_database_needs_it_and_comes_back_exactly() {
        let text = "a\0b\u{1b}[31m\0";
        let stored = encode(text, true);
        assert!(!stored.contains('\0'), "{stored:?}");
        assert_eq!(decode(stored), text);
        assert_eq!(encode(text, false), text);
        assert_eq!(decode(encode(text, false)), text);
    }

    #[test]
    fn text_that_begins_with_the_marker_round_trips_on_both() {
        for escape_nul in [true, false] {
            for text in [
                "\u{FDD0}",
                "\u{FDD0}\"x\"",
                "\u{FDD0}not json",
                "\u{FDD0}\0",
            ] {
                let stored = encode(text, escape_nul);
                assert_eq!(decode(stored), text, "{text:?}");
            }
        }
    }

    #[test]
    fn a_marked_value_that_is_not_json_reads_back_as_stored() {
        let odd = format!("{MARKER}{{broken");
        assert_eq!(decode(odd.clone()), odd);
    }
}
