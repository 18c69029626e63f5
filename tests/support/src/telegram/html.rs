//! Telegram's `parse_mode = "HTML"` as the Bot API checks it: only its tags, balanced, with
//! `<` and `&` always starting a tag or an entity. Returns the text the user would see (tags
//! gone, entities decoded), whose UTF-16 length is what the 4096 limit counts.

/// Tags Telegram accepts in HTML mode.
const TAGS: &[&str] = &[
    "b",
    "strong",
    "i",
    "em",
    "u",
    "ins",
    "s",
    "strike",
    "del",
    "span",
    "tg-spoiler",
    "a",
    "code",
    "pre",
    "blockquote",
    "tg-emoji",
];

/// The visible text of `html`, or the `can't parse entities` detail Telegram would answer.
pub fn parse(html: &str) -> Result<String, String> {
    let mut out = String::with_capacity(html.len());
    let mut open: Vec<String> = Vec::new();
    let bytes = html.as_bytes();
    let mut i = 0;
    while i < html.len() {
        match bytes[i] {
            b'<' => {
                let end = html[i..].find('>').map(|p| i + p).ok_or_else(|| {
                    format!("Can't find end of the tag starting at byte offset {i}")
                })?;
                tag(&html[i + 1..end], i, &mut open)?;
                i = end + 1;
            }
            b'&' => {
                let (decoded, len) = entity(&html[i..]).ok_or_else(|| {
                    format!("Can't find end of the entity starting at byte offset {i}")
                })?;
                out.push(decoded);
                i += len;
            }
            _ => {
                let c = html[i..].chars().next().expect("in bounds");
                out.push(c);
                i += c.len_utf8();
            }
        }
    }
    match open.last() {
        Some(name) => Err(format!(
            "Can't find end tag corresponding to start tag \"{name}\""
        )),
        None => Ok(out),
    }
}

fn tag(inner: &str, offset: usize, open: &mut Vec<String>) -> Result<(), String> {
    if let Some(name) = inner.strip_prefix('/') {
        let name = name.trim().to_ascii_lowercase();
        return match open.pop() {
            Some(top) if top == name => Ok(()),
            Some(top) => Err(format!(
                "Unmatched end tag at byte offset {offset}, expected \"</{top}>\", found \"</{name}>\""
            )),
            None => Err(format!("Unexpected end tag at byte offset {offset}")),
        };
    }
    let name_len = inner
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-'))
        .unwrap_or(inner.len());
    let name = inner[..name_len].to_ascii_lowercase();
    if name.is_empty() || !TAGS.contains(&name.as_str()) {
        return Err(format!(
            "Unsupported start tag \"{name}\" at byte offset {offset}"
        ));
    }
    let attrs = inner[name_len..].trim();
    if name == "span" && !attrs.contains("tg-spoiler") {
        return Err(format!(
            "Tag \"span\" must have class \"tg-spoiler\" at byte offset {offset}"
        ));
    }
    open.push(name);
    Ok(())
}

/// The character an entity at the start of `s` stands for, and the entity's byte length.
fn entity(s: &str) -> Option<(char, usize)> {
    let end = s.find(';').filter(|&e| e <= 10)?;
    let body = &s[1..end];
    let c = match body {
        "lt" => '<',
        "gt" => '>',
        "amp" => '&',
        "quot" => '"',
        _ => {
            let number = body.strip_prefix('#')?;
            let code = match number.strip_prefix(['x', 'X']) {
                Some(hex) => u32::from_str_radix(hex, 16).ok()?,
                None => number.parse().ok()?,
            };
            char::from_u32(code)?
        }
    };
    Some((c, end + 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn supported_markup_parses_to_its_visible_text() {
        let html = r#"<b>bold</b> <a href="https://x.test/?a=1&amp;b=2">link</a> &lt;3 <pre><code class="language-rust">fn</code></pre>"#;
        assert_eq!(parse(html).unwrap(), "bold link <3 fn");
    }

    #[test]
    fn unknown_unclosed_and_bare_characters_are_refused() {
        assert!(
            parse("<div>x</div>")
                .unwrap_err()
                .contains("Unsupported start tag")
        );
        assert!(parse("<b>x").unwrap_err().contains("Can't find end tag"));
        assert!(parse("<b>x</i>").unwrap_err().contains("Unmatched end tag"));
        assert!(parse("a < b").is_err());
        assert!(parse("fish & chips").is_err());
        assert!(parse("1 <2").is_err());
    }
}
