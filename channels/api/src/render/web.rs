//! Markdown → safe HTML for the built-in web chat. Model output is untrusted, so nothing from
//! the source reaches the page unescaped: raw HTML becomes text, only http/https/mailto links
//! survive (with `rel="noopener noreferrer"`), and images become links instead of loading.

use pulldown_cmark::{CodeBlockKind, Event, Options, Parser, Tag, TagEnd};

use super::{code_language, has_safe_scheme};
use crate::html::escape_into;

/// Render `markdown` as an HTML fragment.
pub(super) fn render(markdown: &str) -> String {
    let options =
        Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TABLES | Options::ENABLE_TASKLISTS;
    let mut writer = Writer {
        out: String::with_capacity(markdown.len() * 3 / 2),
        links: Vec::new(),
        in_table_head: false,
    };
    for event in Parser::new_ext(markdown, options) {
        writer.event(event);
    }
    let trimmed = writer.out.trim_end().len();
    writer.out.truncate(trimmed);
    writer.out
}

struct Writer {
    out: String,
    /// One entry per open link or image: whether an `<a>` was written for it.
    links: Vec<bool>,
    in_table_head: bool,
}

impl Writer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(tag) => self.start(tag),
            Event::End(tag) => self.end(tag),
            Event::Text(text) | Event::Html(text) | Event::InlineHtml(text) => self.text(&text),
            Event::Code(code) => {
                self.out.push_str("<code>");
                self.text(&code);
                self.out.push_str("</code>");
            }
            Event::SoftBreak => self.out.push('\n'),
            Event::HardBreak => self.out.push_str("<br>\n"),
            Event::Rule => self.out.push_str("<hr>\n"),
            Event::TaskListMarker(done) => self.out.push_str(if done { "☑ " } else { "☐ " }),
            // Footnotes and math are not enabled; their events never come.
            _ => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>) {
        match tag {
            Tag::Paragraph => self.out.push_str("<p>"),
            Tag::Heading { level, .. } => {
                self.out.push('<');
                self.out.push_str(&level.to_string());
                self.out.push('>');
            }
            Tag::BlockQuote(_) => self.out.push_str("<blockquote>\n"),
            Tag::CodeBlock(kind) => {
                let lang = match kind {
                    CodeBlockKind::Fenced(info) => code_language(&info),
                    CodeBlockKind::Indented => None,
                };
                match lang {
                    Some(lang) => {
                        self.out.push_str("<pre><code class=\"language-");
                        escape_into(&mut self.out, &lang);
                        self.out.push_str("\">");
                    }
                    None => self.out.push_str("<pre><code>"),
                }
            }
            Tag::HtmlBlock => self.out.push_str("<p>"),
            Tag::List(Some(1)) => self.out.push_str("<ol>\n"),
            Tag::List(Some(start)) => self.out.push_str(&format!("<ol start=\"{start}\">\n")),
            Tag::List(None) => self.out.push_str("<ul>\n"),
            Tag::Item => self.out.push_str("<li>"),
            Tag::Table(_) => self.out.push_str("<table>"),
            Tag::TableHead => {
                self.in_table_head = true;
                self.out.push_str("<thead><tr>");
            }
            Tag::TableRow => self.out.push_str("<tr>"),
            Tag::TableCell => self
                .out
                .push_str(if self.in_table_head { "<th>" } else { "<td>" }),
            Tag::Emphasis => self.out.push_str("<em>"),
            Tag::Strong => self.out.push_str("<strong>"),
            Tag::Strikethrough => self.out.push_str("<del>"),
            Tag::Link { dest_url, .. } | Tag::Image { dest_url, .. } => self.open_link(&dest_url),
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd) {
        match tag {
            TagEnd::Paragraph | TagEnd::HtmlBlock => self.out.push_str("</p>\n"),
            TagEnd::Heading(level) => {
                self.out.push_str("</");
                self.out.push_str(&level.to_string());
                self.out.push_str(">\n");
            }
            TagEnd::BlockQuote(_) => self.out.push_str("</blockquote>\n"),
            TagEnd::CodeBlock => self.out.push_str("</code></pre>\n"),
            TagEnd::List(true) => self.out.push_str("</ol>\n"),
            TagEnd::List(false) => self.out.push_str("</ul>\n"),
            TagEnd::Item => self.out.push_str("</li>\n"),
            TagEnd::Table => self.out.push_str("</tbody></table>\n"),
            TagEnd::TableHead => {
                self.in_table_head = false;
                self.out.push_str("</tr></thead><tbody>");
            }
            TagEnd::TableRow => self.out.push_str("</tr>"),
            TagEnd::TableCell => {
                self.out
                    .push_str(if self.in_table_head { "</th>" } else { "</td>" })
            }
            TagEnd::Emphasis => self.out.push_str("</em>"),
            TagEnd::Strong => self.out.push_str("</strong>"),
            TagEnd::Strikethrough => self.out.push_str("</del>"),
            TagEnd::Link | TagEnd::Image => self.close_link(),
            _ => {}
        }
    }

    fn text(&mut self, text: &str) {
        escape_into(&mut self.out, text);
    }

    fn open_link(&mut self, dest: &str) {
        let safe = has_safe_scheme(dest, &["http", "https", "mailto"]);
        if safe {
            self.out.push_str("<a href=\"");
            escape_into(&mut self.out, dest.trim());
            self.out.push_str("\" rel=\"noopener noreferrer\">");
        }
        self.links.push(safe);
    }

    fn close_link(&mut self) {
        if self.links.pop() == Some(true) {
            self.out.push_str("</a>");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::render;

    fn check(cases: &[(&str, &str)]) {
        for (input, expected) in cases {
            assert_eq!(render(input), *expected, "web rendering of {input:?}");
        }
    }

    #[test]
    fn web_html_renders_inline_styles() {
        check(&[
            (
                "**b** *i* ~~s~~ `c`",
                "<p><strong>b</strong> <em>i</em> <del>s</del> <code>c</code></p>",
            ),
            ("***both***", "<p><em><strong>both</strong></em></p>"),
            ("a  \nb", "<p>a<br>\nb</p>"),
        ]);
    }

    #[test]
    fn web_html_escapes_everything_including_raw_html() {
        check(&[
            (
                "1 < 2 & \"q\" 'a'",
                "<p>1 &lt; 2 &amp; &quot;q&quot; &#39;a&#39;</p>",
            ),
            (
                "<script>alert(1)</script>",
                "<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>",
            ),
            (
                "hi <img src=x onerror=alert(1)>",
                "<p>hi &lt;img src=x onerror=alert(1)&gt;</p>",
            ),
            ("`<b>`", "<p><code>&lt;b&gt;</code></p>"),
        ]);
    }

    #[test]
    fn web_html_renders_blocks() {
        check(&[
            ("## Title", "<h2>Title</h2>"),
            ("- a\n- b", "<ul>\n<li>a</li>\n<li>b</li>\n</ul>"),
            (
                "3. c\n4. d",
                "<ol start=\"3\">\n<li>c</li>\n<li>d</li>\n</ol>",
            ),
            ("> q", "<blockquote>\n<p>q</p>\n</blockquote>"),
            ("- [x] done", "<ul>\n<li>☑ done</li>\n</ul>"),
            (
                "| a | b |\n|---|---|\n| 1 | 2 |",
                "<table><thead><tr><th>a</th><th>b</th></tr></thead><tbody><tr><td>1</td><td>2</td></tr></tbody></table>",
            ),
        ]);
    }

    #[test]
    fn web_html_renders_code_blocks_with_a_language_class() {
        check(&[
            (
                "```rust\nlet a = b < c;\n```",
                "<pre><code class=\"language-rust\">let a = b &lt; c;\n</code></pre>",
            ),
            ("```\nx\n```", "<pre><code>x\n</code></pre>"),
            (
                "```rust\"><script>\nx\n```",
                "<pre><code class=\"language-rustscript\">x\n</code></pre>",
            ),
        ]);
    }

    #[test]
    fn web_html_links_only_safe_schemes_with_noopener() {
        check(&[
            (
                "[site](https://example.com/?a=1&b=2)",
                "<p><a href=\"https://example.com/?a=1&amp;b=2\" rel=\"noopener noreferrer\">site</a></p>",
            ),
            (
                "[mail](mailto:a@example.com)",
                "<p><a href=\"mailto:a@example.com\" rel=\"noopener noreferrer\">mail</a></p>",
            ),
            ("[x](javascript:alert(1))", "<p>x</p>"),
            ("[x](&#106;avascript:alert(1))", "<p>x</p>"),
            ("[x](data:text/html,hi)", "<p>x</p>"),
            ("[x](/relative)", "<p>x</p>"),
            (
                "![cat](https://img.example/cat.png)",
                "<p><a href=\"https://img.example/cat.png\" rel=\"noopener noreferrer\">cat</a></p>",
            ),
            (
                "[a\"b](https://x.example/\"onmouseover=\"x)",
                "<p><a href=\"https://x.example/&quot;onmouseover=&quot;x\" rel=\"noopener noreferrer\">a&quot;b</a></p>",
            ),
        ]);
    }
}
