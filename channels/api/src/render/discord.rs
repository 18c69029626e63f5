//! Markdown → Discord markdown: Discord speaks markdown already, so the source passes through;
//! the renderer only defuses mentions (`@everyone`, `@here`, `<@id>`, `<@&id>`, `<@!id>`) and
//! unlinks links whose scheme is not http, https or mailto. Code is left byte for byte: Discord
//! never resolves mentions inside code, and code must stay copyable.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::has_safe_scheme;

/// Put after an `@` so Discord no longer reads a mention there.
const ZERO_WIDTH_SPACE: char = '\u{200B}';

/// What to do with one stretch of the source.
#[derive(Debug)]
enum Edit {
    /// Copy verbatim (code spans and blocks).
    Keep(Range<usize>),
    /// Leave out (the `[`, `](url)` around the text of an unsafe link).
    Drop(Range<usize>),
}

impl Edit {
    fn range(&self) -> &Range<usize> {
        match self {
            Self::Keep(r) | Self::Drop(r) => r,
        }
    }
}

/// A link being read: its whole source span, whether it is safe, and its text's span.
struct OpenLink {
    span: Range<usize>,
    safe: bool,
    inner: Option<Range<usize>>,
}

/// Render `markdown` for Discord.
pub(super) fn render(markdown: &str) -> String {
    let edits = plan(markdown);
    let mut out = String::with_capacity(markdown.len() + 8);
    let mut pos = 0;
    for edit in &edits {
        let range = edit.range();
        if range.start < pos {
            continue; // nested inside an edit already applied
        }
        defuse_into(&mut out, &markdown[pos..range.start]);
        if let Edit::Keep(r) = edit {
            out.push_str(&markdown[r.clone()]);
        }
        pos = range.end;
    }
    defuse_into(&mut out, &markdown[pos..]);
    out
}

/// The code to keep and the link syntax to drop, in source order.
fn plan(markdown: &str) -> Vec<Edit> {
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES;
    let mut edits = Vec::new();
    let mut links: Vec<OpenLink> = Vec::new();
    for (event, range) in Parser::new_ext(markdown, options).into_offset_iter() {
        match event {
            Event::Start(Tag::Link { dest_url, .. })
            | Event::Start(Tag::Image { dest_url, .. }) => {
                links.push(OpenLink {
                    span: range,
                    safe: has_safe_scheme(&dest_url, &["http", "https", "mailto"]),
                    inner: None,
                });
                continue;
            }
            Event::End(TagEnd::Link) | Event::End(TagEnd::Image) => {
                if let Some(link) = links.pop() {
                    close_link(link, &mut edits, &mut links);
                }
                continue;
            }
            Event::Code(_) | Event::Start(Tag::CodeBlock(_)) => {
                edits.push(Edit::Keep(range.clone()))
            }
            _ => {}
        }
        if let Some(link) = links.last_mut() {
            widen(&mut link.inner, &range);
        }
    }
    edits.sort_by_key(|e| e.range().start);
    edits
}

/// An unsafe link keeps only its text; the text counts as content of any enclosing link.
fn close_link(link: OpenLink, edits: &mut Vec<Edit>, open: &mut [OpenLink]) {
    if !link.safe {
        match &link.inner {
            Some(inner) => {
                edits.push(Edit::Drop(link.span.start..inner.start));
                edits.push(Edit::Drop(inner.end..link.span.end));
            }
            None => edits.push(Edit::Drop(link.span.clone())),
        }
    }
    if let Some(parent) = open.last_mut() {
        widen(&mut parent.inner, &link.span);
    }
}

fn widen(inner: &mut Option<Range<usize>>, range: &Range<usize>) {
    *inner = Some(match inner.take() {
        Some(r) => r.start.min(range.start)..r.end.max(range.end),
        None => range.clone(),
    });
}

/// Copy `text`, breaking every `@everyone`, `@here` and `<@…>` with a zero-width space.
fn defuse_into(out: &mut String, text: &str) {
    let mut prev = None;
    for (idx, c) in text.char_indices() {
        out.push(c);
        if c == '@' {
            let rest = &text[idx + 1..];
            if prev == Some('<') || rest.starts_with("everyone") || rest.starts_with("here") {
                out.push(ZERO_WIDTH_SPACE);
            }
        }
        prev = Some(c);
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    const ZWSP: &str = "\u{200B}";

    #[test]
    fn discord_markdown_passes_formatting_through() {
        for input in [
            "**bold** *italic* ~~strike~~ `code`",
            "# Heading\n\n- one\n- two\n\n> quote",
            "```rust\nfn main() {}\n```",
            "[site](https://example.com) and <https://x.example>",
            "1 < 2 & <b>raw</b> stays as typed",
            "mail me at someone@example.com",
        ] {
            assert_eq!(render(input), input);
        }
    }

    #[test]
    fn discord_markdown_defuses_every_kind_of_mention() {
        let cases = [
            ("hi @everyone", format!("hi @{ZWSP}everyone")),
            ("@here now", format!("@{ZWSP}here now")),
            ("user <@123>", format!("user <@{ZWSP}123>")),
            ("nick <@!123>", format!("nick <@{ZWSP}!123>")),
            ("role <@&456>", format!("role <@{ZWSP}&456>")),
            ("**@everyone**", format!("**@{ZWSP}everyone**")),
            (
                "[@here](https://x.example)",
                format!("[@{ZWSP}here](https://x.example)"),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(render(input), expected, "{input:?}");
        }
    }

    #[test]
    fn discord_markdown_leaves_code_byte_for_byte() {
        for input in ["`@everyone`", "```\n<@123> @here\n```"] {
            assert_eq!(render(input), input);
        }
        assert_eq!(
            render("`@here` but @here"),
            format!("`@here` but @{ZWSP}here")
        );
    }

    #[test]
    fn discord_markdown_unlinks_unsafe_schemes_and_keeps_their_text() {
        let cases = [
            ("[click](javascript:alert(1))", "click".to_owned()),
            (
                "a [**bold**](data:text/html,x) b",
                "a **bold** b".to_owned(),
            ),
            ("[`x`](javascript:y)", "`x`".to_owned()),
            ("[](javascript:y)!", "!".to_owned()),
            ("![img](javascript:y)", "img".to_owned()),
            ("[@everyone](vbscript:x)", format!("@{ZWSP}everyone")),
        ];
        for (input, expected) in cases {
            assert_eq!(render(input), expected, "{input:?}");
        }
    }
}
