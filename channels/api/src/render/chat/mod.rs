//! Markdown → chat-app text (Telegram HTML, Slack mrkdwn, WhatsApp's marks): the
//! line-oriented targets of the renderer. Block structure becomes lines (bullets, bold headings), inline styles become
//! the platform's tags or marks, and everything else is escaped text.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::{code_language, has_safe_scheme};
use crate::html::{escape_into, escape_text_into};

/// Which of the two line-oriented formats to write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dialect {
    /// Telegram `parse_mode = "HTML"`.
    Telegram,
    /// Slack `mrkdwn`.
    Slack,
    /// WhatsApp's plain text with `*bold*`, `_italic_`, `~strike~`, `> ` quotes and
    /// backtick code; nothing is escaped (the app shows text as written).
    WhatsApp,
}

impl Dialect {
    fn schemes(self) -> &'static [&'static str] {
        match self {
            Self::Telegram => &["http", "https", "mailto", "tg"],
            Self::Slack | Self::WhatsApp => &["http", "https", "mailto"],
        }
    }

    /// Opening and closing marks for bold, italic, strikethrough.
    fn marks(self, style: Style) -> (&'static str, &'static str) {
        match (self, style) {
            (Self::Telegram, Style::Bold) => ("<b>", "</b>"),
            (Self::Telegram, Style::Italic) => ("<i>", "</i>"),
            (Self::Telegram, Style::Strike) => ("<s>", "</s>"),
            (Self::Slack | Self::WhatsApp, Style::Bold) => ("*", "*"),
            (Self::Slack | Self::WhatsApp, Style::Italic) => ("_", "_"),
            (Self::Slack | Self::WhatsApp, Style::Strike) => ("~", "~"),
        }
    }
}

#[derive(Clone, Copy)]
enum Style {
    Bold,
    Italic,
    Strike,
}

/// A link being written: where its text starts in the output, and its target when safe.
struct LinkFrame {
    start: usize,
    href: Option<String>,
}

/// Render `markdown` in `dialect`.
pub(super) fn render(markdown: &str, dialect: Dialect) -> String {
    // Tables stay off: neither platform has them, and the raw pipes read better than cells
    // flattened into lines.
    let options = Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let mut writer = Writer {
        dialect,
        out: String::with_capacity(markdown.len() + markdown.len() / 4),
        gap: 0,
        at_line_start: true,
        quote_depth: 0,
        quote_opened: false,
        lists: Vec::new(),
        links: Vec::new(),
        code_block: None,
    };
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    writer.out
}

struct Writer {
    dialect: Dialect,
    out: String,
    /// Line breaks owed before the next visible output; dropped at the end, so no message
    /// ends in blank lines.
    gap: usize,
    at_line_start: bool,
    quote_depth: usize,
    /// A quote has just opened: its first block starts on the quote's first line.
    quote_opened: bool,
    /// One entry per open list: the next number for ordered lists.
    lists: Vec<Option<u64>>,
    links: Vec<LinkFrame>,
    /// The language and text of the fenced block being read.
    code_block: Option<(Option<String>, String)>,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) => match &mut self.code_block {
                Some((_, code)) => code.push_str(&text),
                None => self.text(&text),
            },
            Event::Code(code) => self.inline_code(&code),
            Event::Html(html) | Event::InlineHtml(html) => match html.strip_suffix('\n') {
                Some(line) => {
                    self.text(line);
                    self.owe(1);
                }
                None => self.text(&html),
            },
            Event::SoftBreak | Event::HardBreak => self.owe(1),
            Event::Rule => {
                self.owe(1);
                self.raw("———");
                self.owe(2);
            }
            Event::TaskListMarker(done) => self.raw(if done { "☑ " } else { "☐ " }),
            // Footnotes and math are not enabled; their events never come.
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        if is_block(&tag) && !self.quote_opened {
            // A block starts on its own line, even right after the text of a tight list item.
            self.owe(1);
        }
        match tag {
            Tag::Heading { .. } => self.open(Style::Bold),
            Tag::BlockQuote(_) => {
                self.flush_gap();
                self.quote_depth += 1;
                // Telegram refuses nested blockquotes: only the outermost gets a tag.
                if self.dialect == Dialect::Telegram && self.quote_depth == 1 {
                    self.raw("<blockquote>");
                }
                self.quote_opened = true;
            }
            Tag::CodeBlock(kind) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => code_language(&info),
                    CodeBlockKind::Indented => None,
                };
                self.code_block = Some((lang, String::new()));
            }
            Tag::List(first) => {
                if !self.lists.is_empty() {
                    self.owe(1);
                }
                self.lists.push(first);
            }
            Tag::Item => self.item(),
            Tag::Emphasis => self.open(Style::Italic),
            Tag::Strong => self.open(Style::Bold),
            Tag::Strikethrough => self.open(Style::Strike),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => self.open_link(&dest_url),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.owe(2),
            TagEnd::Heading(_) => {
                self.close(Style::Bold);
                self.owe(2);
            }
            TagEnd::BlockQuote(_) => {
                if self.dialect == Dialect::Telegram && self.quote_depth == 1 {
                    self.out.push_str("</blockquote>");
                }
                self.quote_depth -= 1;
                self.owe(2);
            }
            TagEnd::CodeBlock => self.code_block_end(),
            TagEnd::List(_) => {
                self.lists.pop();
                self.owe(if self.lists.is_empty() { 2 } else { 1 });
            }
            TagEnd::Item => self.owe(1),
            TagEnd::Emphasis => self.close(Style::Italic),
            TagEnd::Strong => self.close(Style::Bold),
            TagEnd::Strikethrough => self.close(Style::Strike),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            _ => {}
        }
    }

    /// Ask for at least `n` line breaks before the next output.
    fn owe(&mut self, n: usize) {
        self.gap = self.gap.max(n);
    }

    /// Pay the owed line breaks; a blank line inside a Slack quote stays quoted.
    fn flush_gap(&mut self) {
        if self.out.is_empty() {
            self.gap = 0;
        }
        for i in 0..self.gap {
            if i > 0 && self.quote_depth > 0 && self.dialect != Dialect::Telegram {
                self.out.push('>');
            }
            self.out.push('\n');
            self.at_line_start = true;
        }
        self.gap = 0;
    }

    /// Write already-formatted output, line by line, quoting lines in a Slack blockquote.
    fn raw(&mut self, s: &str) {
        self.flush_gap();
        for (i, line) in s.split('\n').enumerate() {
            if i > 0 {
                self.out.push('\n');
                self.at_line_start = true;
            }
            if line.is_empty() {
                continue;
            }
            self.line_prefix();
            self.out.push_str(line);
            self.quote_opened = false;
        }
    }

    /// Start a line inside a Slack or WhatsApp blockquote with its `> `.
    fn line_prefix(&mut self) {
        if self.at_line_start && self.quote_depth > 0 && self.dialect != Dialect::Telegram {
            self.out.push_str("> ");
        }
        self.at_line_start = false;
    }

    fn text(&mut self, text: &str) {
        let mut escaped = String::with_capacity(text.len());
        self.escape(&mut escaped, text);
        self.raw(&escaped);
    }

    /// Text as the dialect must write it: HTML-escaped, except on WhatsApp, which shows
    /// `&`, `<` and `>` as written.
    fn escape(&self, out: &mut String, text: &str) {
        match self.dialect {
            Dialect::WhatsApp => out.push_str(text),
            Dialect::Telegram | Dialect::Slack => escape_text_into(out, text),
        }
    }

    fn open(&mut self, style: Style) {
        let (open, _) = self.dialect.marks(style);
        self.raw(open);
    }

    /// Closing marks do not pay the gap: they belong to the line they close.
    fn close(&mut self, style: Style) {
        let (_, close) = self.dialect.marks(style);
        self.out.push_str(close);
    }

    fn item(&mut self) {
        self.owe(1);
        let depth = self.lists.len().saturating_sub(1);
        let marker = match self.lists.last_mut() {
            Some(Some(n)) => {
                *n += 1;
                format!("{}. ", *n - 1)
            }
            _ => "• ".to_owned(),
        };
        self.raw(&format!("{}{marker}", "  ".repeat(depth)));
    }

    fn inline_code(&mut self, code: &str) {
        let mut escaped = String::with_capacity(code.len() + 13);
        match self.dialect {
            // Telegram refuses code inside a link: there it is plain text.
            Dialect::Telegram if !self.links.is_empty() => escape_text_into(&mut escaped, code),
            Dialect::Telegram => {
                escaped.push_str("<code>");
                escape_text_into(&mut escaped, code);
                escaped.push_str("</code>");
            }
            Dialect::Slack | Dialect::WhatsApp => {
                escaped.push('`');
                self.escape(&mut escaped, code);
                escaped.push('`');
            }
        }
        self.raw(&escaped);
    }

    fn code_block_end(&mut self) {
        let Some((lang, code)) = self.code_block.take() else {
            return;
        };
        let code = code.trim_end_matches('\n');
        let mut block = String::with_capacity(code.len() + 40);
        match (self.dialect, lang) {
            (Dialect::Telegram, Some(lang)) => {
                block.push_str("<pre><code class=\"language-");
                block.push_str(&lang);
                block.push_str("\">");
                escape_text_into(&mut block, code);
                block.push_str("</code></pre>");
            }
            (Dialect::Telegram, None) => {
                block.push_str("<pre>");
                escape_text_into(&mut block, code);
                block.push_str("</pre>");
            }
            (Dialect::Slack | Dialect::WhatsApp, _) => {
                block.push_str("```\n");
                self.escape(&mut block, code);
                block.push_str("\n```");
            }
        }
        self.raw(&block);
        self.owe(2);
    }

    fn open_link(&mut self, dest: &str) {
        let href = has_safe_scheme(dest, self.dialect.schemes()).then(|| dest.trim().to_owned());
        self.flush_gap();
        self.line_prefix();
        if let (Dialect::Telegram, Some(href)) = (self.dialect, &href) {
            let mut tag = String::from("<a href=\"");
            escape_into(&mut tag, href);
            tag.push_str("\">");
            self.raw(&tag);
        }
        self.links.push(LinkFrame {
            start: self.out.len(),
            href,
        });
    }

    fn close_link(&mut self) {
        let Some(frame) = self.links.pop() else {
            return;
        };
        let Some(href) = frame.href else {
            return; // unsafe target: its text stays, unlinked
        };
        if self.dialect == Dialect::Telegram {
            if self.out.len() == frame.start {
                escape_text_into(&mut self.out, &href); // `[](url)`: show the url
            }
            self.out.push_str("</a>");
            return;
        }
        // Slack wants `<url|text>`, WhatsApp `text (url)`: take the text written since the
        // link opened.
        let label = self.out.split_off(frame.start);
        if self.dialect == Dialect::WhatsApp {
            let link = match label.as_str() {
                "" => href,
                label if label == href => href,
                label => format!("{label} ({href})"),
            };
            self.out.push_str(&link);
            return;
        }
        let mut url = String::with_capacity(href.len());
        escape_text_into(&mut url, &href.replace('|', "%7C"));
        let mut link = format!("<{url}");
        if !label.is_empty() && label != url {
            link.push('|');
            link.push_str(&label.replace('\n', " "));
        }
        link.push('>');
        self.out.push_str(&link);
    }
}

/// Whether `tag` opens a block (which starts on a new line) rather than an inline span.
fn is_block(tag: &Tag<'_>) -> bool {
    matches!(
        tag,
        Tag::Paragraph
            | Tag::Heading { .. }
            | Tag::BlockQuote(_)
            | Tag::CodeBlock(_)
            | Tag::HtmlBlock
            | Tag::List(_)
            | Tag::Item
    )
}

#[cfg(test)]
mod tests;
