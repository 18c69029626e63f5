//! Markdown → Signal: plain text plus style ranges (`start:length:STYLE`, in UTF-16 code
//! units, as signal-cli's `textStyle` takes them), so bold arrives bold instead of between
//! literal asterisks. Signal has BOLD, ITALIC, STRIKETHROUGH, MONOSPACE and SPOILER; headings
//! become bold lines, code spans and blocks monospace, links their text with the URL after it.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// A text ready for `send`: the message and its `textStyle` entries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Styled {
    pub(crate) text: String,
    pub(crate) styles: Vec<String>,
}

#[derive(Clone, Copy)]
enum Style {
    Bold,
    Italic,
    Strike,
    Mono,
}

impl Style {
    fn name(self) -> &'static str {
        match self {
            Self::Bold => "BOLD",
            Self::Italic => "ITALIC",
            Self::Strike => "STRIKETHROUGH",
            Self::Mono => "MONOSPACE",
        }
    }
}

/// The text being built and where in it (UTF-16) each open style began.
#[derive(Default)]
struct Builder {
    text: String,
    units: usize,
    open: Vec<(Style, usize)>,
    styles: Vec<String>,
    links: Vec<String>,
    lists: Vec<Option<u64>>,
}

impl Builder {
    fn push(&mut self, s: &str) {
        self.units += s.encode_utf16().count();
        self.text.push_str(s);
    }

    fn open(&mut self, style: Style) {
        self.open.push((style, self.units));
    }

    fn close(&mut self) {
        if let Some((style, start)) = self.open.pop()
            && self.units > start
        {
            self.styles
                .push(format!("{start}:{}:{}", self.units - start, style.name()));
        }
    }

    /// A paragraph break before a new block (none at the very start).
    fn block(&mut self) {
        if !self.text.is_empty() && !self.text.ends_with("\n\n") {
            let newline = if self.text.ends_with('\n') {
                "\n"
            } else {
                "\n\n"
            };
            self.push(newline);
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph | Tag::BlockQuote(_) => self.block(),
            Tag::Heading { .. } => {
                self.block();
                self.open(Style::Bold);
            }
            Tag::CodeBlock(_) => {
                self.block();
                self.open(Style::Mono);
            }
            Tag::List(first) => {
                if self.lists.is_empty() {
                    self.block();
                }
                self.lists.push(first);
            }
            Tag::Item => {
                if !self.text.is_empty() && !self.text.ends_with('\n') {
                    self.push("\n");
                }
                let depth = self.lists.len().saturating_sub(1);
                self.push(&"  ".repeat(depth));
                let bullet = match self.lists.last_mut() {
                    Some(Some(n)) => {
                        *n += 1;
                        format!("{}. ", *n - 1)
                    }
                    _ => "• ".to_owned(),
                };
                self.push(&bullet);
            }
            Tag::Emphasis => self.open(Style::Italic),
            Tag::Strong => self.open(Style::Bold),
            Tag::Strikethrough => self.open(Style::Strike),
            Tag::Link { dest_url, .. } => self.links.push(dest_url.into_string()),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Heading(_) | TagEnd::Emphasis | TagEnd::Strong | TagEnd::Strikethrough => {
                self.close();
            }
            TagEnd::CodeBlock => {
                while self.text.ends_with('\n') {
                    self.text.pop();
                    self.units -= 1;
                }
                self.close();
            }
            TagEnd::List(_) => {
                self.lists.pop();
            }
            TagEnd::Link => {
                if let Some(url) = self.links.pop()
                    && !self.text.ends_with(url.as_str())
                {
                    self.push(&format!(" ({url})"));
                }
            }
            _ => {}
        }
    }
}

/// Render `markdown` as Signal text with style ranges.
pub(crate) fn render(markdown: &str) -> Styled {
    let mut b = Builder::default();
    let parser = Parser::new_ext(markdown, Options::ENABLE_STRIKETHROUGH);
    for event in parser {
        match event {
            Event::Start(tag) => b.start(tag),
            Event::End(tag) => b.end(tag),
            Event::Text(t) | Event::Html(t) | Event::InlineHtml(t) => b.push(&t),
            Event::Code(t) => {
                b.open(Style::Mono);
                b.push(&t);
                b.close();
            }
            Event::SoftBreak | Event::HardBreak => b.push("\n"),
            Event::Rule => {
                b.block();
                b.push("———");
            }
            _ => {}
        }
    }
    while let Some(_open) = b.open.last() {
        b.close();
    }
    Styled {
        text: b.text.trim_end().to_owned(),
        styles: b.styles,
    }
}

/// The UTF-16 range `start..start+len` of `text` as a byte range, when it falls on
/// character boundaries.
pub(crate) fn utf16_range(text: &str, start: usize, len: usize) -> Option<std::ops::Range<usize>> {
    let mut units = 0;
    let mut from = None;
    let ends = text
        .char_indices()
        .chain(std::iter::once((text.len(), '\0')));
    for (byte, ch) in ends {
        if units == start && from.is_none() {
            from = Some(byte);
        }
        if units == start + len {
            return from.map(|f| f..byte);
        }
        if units > start + len {
            return None;
        }
        units += ch.len_utf16();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The text each style range covers, as a person's app shows it.
    fn spans(s: &Styled) -> Vec<(String, String)> {
        s.styles
            .iter()
            .map(|entry| {
                let mut parts = entry.splitn(3, ':');
                let start: usize = parts.next().unwrap().parse().unwrap();
                let len: usize = parts.next().unwrap().parse().unwrap();
                let style = parts.next().unwrap().to_owned();
                let range = utf16_range(&s.text, start, len).expect("on boundaries");
                (s.text[range].to_owned(), style)
            })
            .collect()
    }

    #[test]
    fn bold_italic_strike_and_code_become_ranges_without_their_markers() {
        let s = render("Say **hi** and _bye_, ~~not this~~, `ls -l`.");
        assert_eq!(s.text, "Say hi and bye, not this, ls -l.");
        assert_eq!(
            spans(&s),
            [
                ("hi".into(), "BOLD".into()),
                ("bye".into(), "ITALIC".into()),
                ("not this".into(), "STRIKETHROUGH".into()),
                ("ls -l".into(), "MONOSPACE".into()),
            ]
        );
    }

    #[test]
    fn a_styled_span_after_an_emoji_counts_the_emoji_as_two_units() {
        let s = render("🎉🎉 **done**");
        assert_eq!(s.text, "🎉🎉 done");
        assert_eq!(s.styles, ["5:4:BOLD"]);
        assert_eq!(spans(&s), [("done".into(), "BOLD".into())]);
    }

    #[test]
    fn paragraphs_lists_code_blocks_and_links_read_as_plain_text() {
        let s = render(
            "# Title\n\nOne\n\n- a\n- b\n\n```\nfn x() {}\n```\n\nSee [docs](https://example.com).",
        );
        assert_eq!(
            s.text,
            "Title\n\nOne\n\n• a\n• b\n\nfn x() {}\n\nSee docs (https://example.com)."
        );
        assert_eq!(
            spans(&s),
            [
                ("Title".into(), "BOLD".into()),
                ("fn x() {}".into(), "MONOSPACE".into())
            ]
        );
    }

    #[test]
    fn a_utf16_range_maps_to_bytes_only_on_character_boundaries() {
        assert_eq!(utf16_range("a🎉b", 1, 2), Some(1..5));
        assert_eq!(utf16_range("a🎉b", 2, 1), None);
        assert_eq!(utf16_range("ab", 2, 0), Some(2..2));
    }
}
