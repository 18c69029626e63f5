//! The one markdown → platform renderer: the core hands every channel markdown (model output,
//! untrusted), and each channel turns it into its platform's format here, just before it is
//! split to the platform's limit and sent. pulldown-cmark events in, one string out.

mod chat;
mod discord;
mod speech;
mod web;

pub use speech::{CODE_LINE, TABLE_LINE};

/// A platform's message format.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Target {
    /// Telegram Bot API `parse_mode = "HTML"`: only the tags Telegram accepts.
    TelegramHtml,
    /// Slack `mrkdwn`: `*bold*`, `_italic_`, `~strike~`, `<url|text>`, `&`/`<`/`>` escaped.
    SlackMrkdwn,
    /// Discord markdown: the source passed through with mentions defused.
    DiscordMarkdown,
    /// Safe HTML for the built-in web chat: no raw HTML, only http/https/mailto links.
    WebHtml,
    /// Matrix `org.matrix.custom.html`: the web chat's safe HTML, whose tags are all within
    /// the ones the Matrix spec lets clients show.
    MatrixHtml,
    /// WhatsApp: `*bold*`, `_italic_`, `~strike~`, ``` blocks; plain text otherwise.
    WhatsApp,
    /// What a speech engine reads aloud: words only; code blocks and tables as one line
    /// saying they are in the text, links by their names.
    Speech,
}

/// Render `markdown` for `target`.
///
/// The input is treated as untrusted: raw HTML is shown as text, links with schemes other
/// than http, https and mailto (plus `tg:` on Telegram) lose their link and keep their text,
/// and on Discord `@everyone`, `@here` and user/role mentions cannot ping.
pub fn render(markdown: &str, target: Target) -> String {
    match target {
        Target::TelegramHtml => chat::render(markdown, chat::Dialect::Telegram),
        Target::SlackMrkdwn => chat::render(markdown, chat::Dialect::Slack),
        Target::WhatsApp => chat::render(markdown, chat::Dialect::WhatsApp),
        Target::DiscordMarkdown => discord::render(markdown),
        Target::WebHtml | Target::MatrixHtml => web::render(markdown),
        Target::Speech => speech::render(markdown),
    }
}

/// Whether `url` is an absolute link with one of the `allowed` schemes (lowercase).
///
/// Anything else (`javascript:`, `data:`, relative paths) is not linked: model output is
/// untrusted and a link is the one thing in a message that acts when clicked.
fn has_safe_scheme(url: &str, allowed: &[&str]) -> bool {
    let url = url.trim();
    if url.chars().any(char::is_control) {
        return false;
    }
    let Some((scheme, rest)) = url.split_once(':') else {
        return false;
    };
    let scheme = scheme.to_ascii_lowercase();
    if !allowed.contains(&scheme.as_str()) {
        return false;
    }
    match scheme.as_str() {
        "http" | "https" => rest.starts_with("//") && rest.len() > 2,
        _ => !rest.is_empty(),
    }
}

/// The language of a fenced code block's info string, reduced to characters that are safe
/// inside an HTML attribute (`rust`, `c++`, `objective-c`, `c#`).
fn code_language(info: &str) -> Option<String> {
    let word = info.split_whitespace().next()?;
    let lang: String = word
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '#' | '.' | '-'))
        .collect();
    (!lang.is_empty()).then_some(lang)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_listed_absolute_schemes_are_safe() {
        let web = ["http", "https", "mailto"];
        let cases = [
            ("https://example.com/a?b=1", true),
            ("HTTP://EXAMPLE.COM", true),
            ("mailto:someone@example.com", true),
            ("javascript:alert(1)", false),
            ("JavaScript:alert(1)", false),
            ("data:text/html,<b>x</b>", false),
            ("vbscript:msgbox", false),
            ("/relative/path", false),
            ("example.com", false),
            ("https:", false),
            ("https:relative", false),
            ("https://exa\u{0}mple.com", false),
        ];
        for (url, safe) in cases {
            assert_eq!(has_safe_scheme(url, &web), safe, "{url}");
        }
        assert!(has_safe_scheme("tg://user?id=1", &["tg"]));
    }

    #[test]
    fn code_language_keeps_only_attribute_safe_characters() {
        assert_eq!(code_language("rust").as_deref(), Some("rust"));
        assert_eq!(code_language("c++ title=x").as_deref(), Some("c++"));
        assert_eq!(
            code_language("\"><script>").as_deref(),
            Some("script"),
            "quotes and brackets are dropped"
        );
        assert_eq!(code_language(""), None);
        assert_eq!(code_language("\"<>"), None);
    }

    #[test]
    fn every_target_renders_plain_text_unchanged() {
        for target in [
            Target::TelegramHtml,
            Target::SlackMrkdwn,
            Target::DiscordMarkdown,
        ] {
            assert_eq!(render("hello world", target), "hello world", "{target:?}");
        }
        assert_eq!(render("hello world", Target::WebHtml), "<p>hello world</p>");
    }
}
