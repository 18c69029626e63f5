//! HTML escaping, once for every producer of markup: the markdown renderer (web, Telegram,
//! Matrix and Slack text), the web chat's page fragments, the dashboard's pages and the
//! skills list in a prompt. Text goes in escaped; nothing that the user, the model or a file
//! wrote is ever markup.

/// Append `text` to `out` with `& < > " '` escaped: safe as element text and inside a quoted
/// attribute value.
pub fn escape_into(out: &mut String, text: &str) {
    escape(out, text, true);
}

/// Append `text` to `out` with only `& < >` escaped: for element text where quotes must stay
/// as written (a platform that decodes no other entity, or a prompt a model reads).
pub fn escape_text_into(out: &mut String, text: &str) {
    escape(out, text, false);
}

/// `text` with `& < >` escaped (see [`escape_text_into`]).
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_text_into(&mut out, text);
    out
}

fn escape(out: &mut String, text: &str, quotes: bool) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' if quotes => out.push_str("&quot;"),
            '\'' if quotes => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_characters_are_escaped_and_quotes_only_where_asked() {
        let text = "<b>\"x\"</b> & 'y' é";
        let mut all = String::from("kept ");
        escape_into(&mut all, text);
        assert_eq!(
            all,
            "kept &lt;b&gt;&quot;x&quot;&lt;/b&gt; &amp; &#39;y&#39; é"
        );
        assert_eq!(
            escape_text(text),
            "&lt;b&gt;\"x\"&lt;/b&gt; &amp; 'y' é",
            "quotes stay as written"
        );
        assert_eq!(
            escape_text("AT&amp;T"),
            "AT&amp;amp;T",
            "escaped once, never skipped"
        );
    }
}
