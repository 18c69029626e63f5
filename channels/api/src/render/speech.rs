//! Markdown → what a listener needs to hear: the words, no markup. Code blocks and tables
//! become one short line saying they are in the text, links are read by their names (a bare
//! address as "a link"), images by their description, raw HTML not at all; every block ends
//! as a sentence so the engine pauses between them.

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

/// Said in place of a code block.
pub const CODE_LINE: &str = "The code is in the text.";
/// Said in place of a table.
pub const TABLE_LINE: &str = "The table is in the text.";
/// Said in place of a web address written out.
const LINK_WORDS: &str = "a link";

/// The spoken form of `markdown`.
pub(super) fn render(markdown: &str) -> String {
    let mut out = Speech::default();
    let mut skipping = 0usize;
    for event in Parser::new_ext(
        markdown,
        Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH,
    ) {
        match event {
            Event::Start(Tag::CodeBlock(_)) => {
                out.sentence(CODE_LINE);
                skipping += 1;
            }
            Event::Start(Tag::Table(_)) => {
                out.sentence(TABLE_LINE);
                skipping += 1;
            }
            Event::End(TagEnd::CodeBlock | TagEnd::Table) => skipping = skipping.saturating_sub(1),
            _ if skipping > 0 => {}
            Event::Text(text) | Event::Code(text) => out.words(&text),
            Event::SoftBreak | Event::HardBreak => out.words(" "),
            Event::End(
                TagEnd::Paragraph | TagEnd::Heading(_) | TagEnd::Item | TagEnd::BlockQuote(_),
            ) => out.end_sentence(),
            Event::FootnoteReference(_)
            | Event::Html(_)
            | Event::InlineHtml(_)
            | Event::Rule
            | Event::TaskListMarker(_)
            | Event::Start(_)
            | Event::End(_)
            | Event::InlineMath(_)
            | Event::DisplayMath(_) => {}
        }
    }
    out.finish()
}

/// The spoken text being built: sentences joined by single spaces.
#[derive(Default)]
struct Speech {
    done: String,
    current: String,
}

impl Speech {
    /// Words of the current sentence; a web address written out is read as "a link".
    fn words(&mut self, text: &str) {
        let mut first = true;
        for piece in text.split(' ') {
            if !first {
                self.current.push(' ');
            }
            first = false;
            let bare = piece.trim_end_matches(['.', ',', ';', ':', ')', '!', '?']);
            if bare.starts_with("http://") || bare.starts_with("https://") {
                self.current.push_str(LINK_WORDS);
                self.current.push_str(&piece[bare.len()..]);
            } else {
                self.current.push_str(piece);
            }
        }
    }

    /// A whole sentence of its own.
    fn sentence(&mut self, line: &str) {
        self.end_sentence();
        self.current.push_str(line);
        self.end_sentence();
    }

    /// End the current sentence with a full stop unless it has its own.
    fn end_sentence(&mut self) {
        let sentence: String = self
            .current
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        self.current.clear();
        let sentence = sentence.trim_end_matches(':').trim_end();
        if sentence.is_empty() {
            return;
        }
        if !self.done.is_empty() {
            self.done.push(' ');
        }
        self.done.push_str(sentence);
        if !sentence.ends_with(['.', '!', '?', '…']) {
            self.done.push('.');
        }
    }

    fn finish(mut self) -> String {
        self.end_sentence();
        self.done
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_goes_and_the_words_stay_as_sentences() {
        let spoken = render(
            "# Plan\n\nThis is **very** _important_ and `cargo test` runs it\n\n- one\n- two!",
        );
        assert_eq!(
            spoken,
            "Plan. This is very important and cargo test runs it. one. two!"
        );
    }

    #[test]
    fn code_blocks_and_tables_become_one_line_each() {
        let md =
            "Here it is:\n\n```rust\nfn main() {}\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nDone.";
        assert_eq!(
            render(md),
            format!("Here it is. {CODE_LINE} {TABLE_LINE} Done.")
        );
    }

    #[test]
    fn links_are_read_by_their_names_and_bare_addresses_as_a_link() {
        let md = "See [the docs](https://example.com/docs) or https://example.com/x. <https://example.org>";
        assert_eq!(render(md), "See the docs or a link. a link.");
    }

    #[test]
    fn raw_html_and_images_say_nothing_but_their_description() {
        let md = "<b>hi</b> there ![a cat](cat.png)";
        assert_eq!(render(md), "hi there a cat.");
    }
}
