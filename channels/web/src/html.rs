//! Message text → the HTML fragment the page inserts. Everything is rendered here on the
//! server: the agent's markdown through the shared safe renderer, its leading progress lines
//! (⏳ ✅ ❌) as their own block, the person's own text escaped verbatim, and a message's
//! files as download links.

use switchboard_channel::html::escape_into;
use switchboard_channel::{Target, human_size, render};

use crate::files::FileLink;
use crate::ids::valid_file_id;

/// The first characters of a progress line the draft renderer puts above an answer.
const PROGRESS_MARKS: [char; 3] = ['⏳', '✅', '❌'];

/// HTML for one of the agent's messages.
pub(crate) fn bot_html(text: &str) -> String {
    let mut steps = Vec::new();
    let mut rest = text;
    while let Some(line) = rest.lines().next() {
        if !line.trim_start().starts_with(PROGRESS_MARKS) {
            break;
        }
        steps.push(line.trim());
        rest = &rest[line.len()..];
        rest = rest
            .strip_prefix("\r\n")
            .or(rest.strip_prefix('\n'))
            .unwrap_or(rest);
    }
    let mut out = String::new();
    if !steps.is_empty() {
        out.push_str("<div class=\"progress\">");
        for step in steps {
            out.push_str("<div class=\"step\">");
            escape_into(&mut out, step);
            out.push_str("</div>");
        }
        out.push_str("</div>");
    }
    out.push_str(&render(
        rest.trim_start_matches(['\n', '\r']),
        Target::WebHtml,
    ));
    out
}

/// HTML for a message the person typed: shown exactly as typed, never interpreted.
pub(crate) fn user_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 32);
    out.push_str("<p class=\"typed\">");
    escape_into(&mut out, text);
    out.push_str("</p>");
    out
}

/// Download links for a message's files (relative to the page, so `files/<id>` resolves
/// under its path), a spoken answer's with a player before it; empty without files. Ids are
/// checked, names escaped.
pub(crate) fn files_html(files: &[FileLink]) -> String {
    let mut out = String::new();
    let links: Vec<&FileLink> = files.iter().filter(|f| valid_file_id(&f.id)).collect();
    if links.is_empty() {
        return out;
    }
    out.push_str("<ul class=\"files\">");
    for file in links {
        out.push_str("<li>");
        if file.voice_ms.is_some() {
            out.push_str("<audio class=\"voice\" controls preload=\"metadata\" src=\"files/");
            out.push_str(&file.id);
            out.push_str("\"></audio> ");
        }
        out.push_str("<a class=\"file\" href=\"files/");
        out.push_str(&file.id);
        out.push_str("\" download>📎 ");
        escape_into(&mut out, &file.name);
        out.push_str("</a> <span class=\"size\">");
        out.push_str(&human_size(file.size));
        out.push_str("</span></li>");
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_progress_lines_are_set_apart_from_the_answer() {
        let html = bot_html("⏳ shell: ls\n✅ file_read (0.1 s)\n\nThe **answer**.");
        assert_eq!(
            html,
            "<div class=\"progress\"><div class=\"step\">⏳ shell: ls</div>\
             <div class=\"step\">✅ file_read (0.1 s)</div></div><p>The <strong>answer</strong>.</p>"
        );
    }

    #[test]
    fn progress_without_an_answer_yet_is_only_the_progress_block() {
        assert_eq!(
            bot_html("❌ shell (1.0 s): <denied>"),
            "<div class=\"progress\"><div class=\"step\">❌ shell (1.0 s): &lt;denied&gt;</div></div>"
        );
    }

    #[test]
    fn a_check_mark_inside_the_answer_stays_in_the_answer() {
        assert_eq!(bot_html("Done:\n✅ yes"), "<p>Done:\n✅ yes</p>");
    }

    #[test]
    fn model_markup_is_rendered_safely() {
        let html = bot_html("<img src=x onerror=alert(1)> [a](javascript:x) <script>x</script>");
        assert!(!html.contains("<img") && !html.contains("<script") && !html.contains("href"));
        assert!(
            html.contains("&lt;img src=x onerror=alert(1)&gt;"),
            "{html}"
        );
    }

    #[test]
    fn file_links_escape_names_and_skip_malformed_ids() {
        let files = [
            FileLink {
                id: "0123456789abcdef0123456789abcdef".into(),
                name: "<b>a</b>.csv".into(),
                size: 1536,
                voice_ms: None,
            },
            FileLink {
                id: "../secret".into(),
                name: "x".into(),
                size: 1,
                voice_ms: None,
            },
        ];
        assert_eq!(
            files_html(&files),
            "<ul class=\"files\"><li><a class=\"file\" href=\"files/0123456789abcdef0123456789abcdef\" \
             download>📎 &lt;b&gt;a&lt;/b&gt;.csv</a> <span class=\"size\">1.5 KB</span></li></ul>"
        );
        assert_eq!(files_html(&files[1..]), "");
    }

    #[test]
    fn a_spoken_answer_gets_a_player_beside_its_link() {
        let voice = [FileLink {
            id: "0123456789abcdef0123456789abcdef".into(),
            name: "voice.ogg".into(),
            size: 2048,
            voice_ms: Some(1500),
        }];
        let html = files_html(&voice);
        assert!(
            html.starts_with(
                "<ul class=\"files\"><li><audio class=\"voice\" controls preload=\"metadata\" \
                 src=\"files/0123456789abcdef0123456789abcdef\"></audio> <a class=\"file\""
            ),
            "{html}"
        );
    }

    #[test]
    fn typed_text_is_escaped_verbatim_and_not_markdown() {
        assert_eq!(
            user_html("*hi* <b>\"x\"</b> & 'y'"),
            "<p class=\"typed\">*hi* &lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; &#39;y&#39;</p>"
        );
    }
}
