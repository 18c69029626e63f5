//! Table tests for the Telegram HTML, Slack mrkdwn and WhatsApp renderers.

use super::{Dialect, render};

fn check(dialect: Dialect, cases: &[(&str, &str)]) {
    for (input, expected) in cases {
        assert_eq!(
            render(input, dialect),
            *expected,
            "{dialect:?} rendering of {input:?}"
        );
    }
}

#[test]
fn telegram_html_renders_inline_styles_with_the_tags_telegram_accepts() {
    check(
        Dialect::Telegram,
        &[
            ("**bold**", "<b>bold</b>"),
            ("*italic* and _also_", "<i>italic</i> and <i>also</i>"),
            ("~~gone~~", "<s>gone</s>"),
            ("`x < y`", "<code>x &lt; y</code>"),
            ("***both***", "<i><b>both</b></i>"),
            (
                "**bold *and italic* inside**",
                "<b>bold <i>and italic</i> inside</b>",
            ),
            ("line one\nline two", "line one\nline two"),
            ("a  \nb", "a\nb"),
        ],
    );
}

#[test]
fn telegram_html_escapes_text_and_raw_html() {
    check(
        Dialect::Telegram,
        &[
            ("1 < 2 & 3 > 2", "1 &lt; 2 &amp; 3 &gt; 2"),
            ("say \"hi\"", "say \"hi\""),
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            (
                "inline <b>html</b> here",
                "inline &lt;b&gt;html&lt;/b&gt; here",
            ),
            ("AT&amp;T", "AT&amp;T"),
        ],
    );
}

#[test]
fn telegram_html_renders_blocks_as_lines() {
    check(
        Dialect::Telegram,
        &[
            ("# Title\n\nbody", "<b>Title</b>\n\nbody"),
            ("- one\n- two", "• one\n• two"),
            ("3. three\n4. four", "3. three\n4. four"),
            ("- a\n  - b\n- c", "• a\n  • b\n• c"),
            ("intro\n\n- x\n\noutro", "intro\n\n• x\n\noutro"),
            ("> quoted\n> more", "<blockquote>quoted\nmore</blockquote>"),
            (
                "z\n\n> q\n\nafter",
                "z\n\n<blockquote>q</blockquote>\n\nafter",
            ),
            (
                "> outer\n>> inner",
                "<blockquote>outer\n\ninner</blockquote>",
            ),
            ("- [x] done\n- [ ] todo", "• ☑ done\n• ☐ todo"),
            ("a\n\n---\n\nb", "a\n\n———\n\nb"),
            (
                "1. run\n   ```sh\n   ls\n   ```\n2. done",
                "1. run\n<pre><code class=\"language-sh\">ls</code></pre>\n\n2. done",
            ),
        ],
    );
}

#[test]
fn telegram_html_renders_code_blocks_with_their_language() {
    check(
        Dialect::Telegram,
        &[
            (
                "```rust\nfn main() { a < b; }\n```",
                "<pre><code class=\"language-rust\">fn main() { a &lt; b; }</code></pre>",
            ),
            ("```\nplain\n```", "<pre>plain</pre>"),
            ("    indented", "<pre>indented</pre>"),
            (
                "```\"><b>\nx\n```",
                "<pre><code class=\"language-b\">x</code></pre>",
            ),
            ("```\n**not bold**\n```", "<pre>**not bold**</pre>"),
        ],
    );
}

#[test]
fn telegram_html_links_only_safe_schemes() {
    check(
        Dialect::Telegram,
        &[
            (
                "[site](https://example.com/?a=1&b=\"2\")",
                "<a href=\"https://example.com/?a=1&amp;b=&quot;2&quot;\">site</a>",
            ),
            ("[click](javascript:alert(1))", "click"),
            ("[x](JAVASCRIPT:alert(1))", "x"),
            ("[rel](/local)", "rel"),
            (
                "<https://a.example>",
                "<a href=\"https://a.example\">https://a.example</a>",
            ),
            (
                "[`code` link](https://a.example)",
                "<a href=\"https://a.example\">code link</a>",
            ),
            (
                "![alt](https://img.example/p.png)",
                "<a href=\"https://img.example/p.png\">alt</a>",
            ),
            ("[me](tg://user?id=1)", "<a href=\"tg://user?id=1\">me</a>"),
            (
                "[](https://a.example/?x&y)",
                "<a href=\"https://a.example/?x&amp;y\">https://a.example/?x&amp;y</a>",
            ),
        ],
    );
}

#[test]
fn slack_mrkdwn_renders_inline_styles_with_marks() {
    check(
        Dialect::Slack,
        &[
            ("**bold**", "*bold*"),
            ("*italic*", "_italic_"),
            ("~~gone~~", "~gone~"),
            ("`a < b`", "`a &lt; b`"),
            ("**bold _and italic_**", "*bold _and italic_*"),
            ("# Heading", "*Heading*"),
            ("one\ntwo", "one\ntwo"),
        ],
    );
}

#[test]
fn slack_mrkdwn_escapes_control_characters_and_raw_html() {
    check(
        Dialect::Slack,
        &[
            ("a & b < c > d", "a &amp; b &lt; c &gt; d"),
            ("<!channel> hi", "&lt;!channel&gt; hi"),
            ("<div>block</div>", "&lt;div&gt;block&lt;/div&gt;"),
            ("ping <@U123>", "ping &lt;@U123&gt;"),
        ],
    );
}

#[test]
fn slack_mrkdwn_renders_blocks_lists_and_quotes() {
    check(
        Dialect::Slack,
        &[
            ("- one\n- two", "• one\n• two"),
            ("1. first\n2. second", "1. first\n2. second"),
            ("> quote\n> again", "> quote\n> again"),
            ("> one\n>\n> two\n\nafter", "> one\n>\n> two\n\nafter"),
            ("```python\nprint(1 < 2)\n```", "```\nprint(1 &lt; 2)\n```"),
            (
                "text\n\n```\ncode\n```\n\nmore",
                "text\n\n```\ncode\n```\n\nmore",
            ),
            ("- item\n  ```\n  x\n  ```", "• item\n```\nx\n```"),
            ("> # h\n> - a\n> - b\n\nz", "> *h*\n>\n> • a\n> • b\n\nz"),
            ("z\n\n> q", "z\n\n> q"),
        ],
    );
}

#[test]
fn slack_mrkdwn_links_use_angle_brackets_and_only_safe_schemes() {
    check(
        Dialect::Slack,
        &[
            (
                "[docs](https://example.com/a)",
                "<https://example.com/a|docs>",
            ),
            (
                "[**bold** docs](https://x.example)",
                "<https://x.example|*bold* docs>",
            ),
            ("<https://x.example>", "<https://x.example>"),
            (
                "[q](https://x.example/?a=1&b=2)",
                "<https://x.example/?a=1&amp;b=2|q>",
            ),
            (
                "[pipe](https://x.example/a|b)",
                "<https://x.example/a%7Cb|pipe>",
            ),
            ("[evil](javascript:alert(1))", "evil"),
            ("[data](data:text/html;base64,xx)", "data"),
            (
                "> [in quote](https://q.example)",
                "> <https://q.example|in quote>",
            ),
        ],
    );
}

#[test]
fn whatsapp_uses_its_own_marks_and_escapes_nothing() {
    check(
        Dialect::WhatsApp,
        &[
            ("**bold**", "*bold*"),
            ("*italic*", "_italic_"),
            ("~~gone~~", "~gone~"),
            ("`x < y & z`", "`x < y & z`"),
            ("```\nfn main() {}\n```", "```\nfn main() {}\n```"),
            (
                "[docs](https://example.com/a)",
                "docs (https://example.com/a)",
            ),
            ("<https://example.com>", "https://example.com"),
            ("[run](javascript:alert(1))", "run"),
            ("> quoted\n>\n> more", "> quoted\n>\n> more"),
            ("- one\n- two", "• one\n• two"),
        ],
    );
}
