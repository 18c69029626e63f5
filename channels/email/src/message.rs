//! One received mail, parsed (by `mail-parser`: MIME, encodings, HTML bodies turned to text)
//! into the few things the channel acts on: who, which thread, the loop-protection headers,
//! the text the model reads (quoted history and signature trimmed) and the attachments.

use mail_parser::{HeaderValue, MessageParser, MimeHeaders};

/// A received mail, as the channel needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mail {
    /// `Message-ID` without angle brackets, when there is one.
    pub(crate) message_id: Option<String>,
    /// The From address, lower case.
    pub(crate) from: Option<String>,
    /// The From display name.
    pub(crate) from_name: Option<String>,
    pub(crate) subject: String,
    /// `In-Reply-To` ids, without angle brackets.
    pub(crate) in_reply_to: Vec<String>,
    /// `References` ids, oldest first, without angle brackets.
    pub(crate) references: Vec<String>,
    /// `Auto-Submitted`, lower case, when present.
    pub(crate) auto_submitted: Option<String>,
    /// `Precedence`, lower case, when present.
    pub(crate) precedence: Option<String>,
    /// Whether a `List-Id` (or `List-Unsubscribe`) header says a mailing list sent it.
    pub(crate) from_list: bool,
    /// `Return-Path`, lower case; `Some("")` for the null sender of a bounce.
    pub(crate) return_path: Option<String>,
    /// The body as text (HTML turned to text when there is no plain part), untrimmed.
    pub(crate) body: String,
    /// The files and inline images.
    pub(crate) parts: Vec<Part>,
}

/// One attachment or inline image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Part {
    pub(crate) name: String,
    pub(crate) mime: Option<String>,
    pub(crate) bytes: Vec<u8>,
}

/// `raw` parsed; `None` when it is not a mail at all.
pub(crate) fn parse(raw: &[u8]) -> Option<Mail> {
    let message = MessageParser::default().parse(raw)?;
    let from = message.from().and_then(|a| a.first());
    let lower = |name: &str| {
        message
            .header_raw(name)
            .map(|v| v.trim().to_ascii_lowercase())
    };
    let parts = message
        .attachments()
        .enumerate()
        .map(|(i, part)| Part {
            name: part
                .attachment_name()
                .map_or_else(|| format!("attachment-{}", i + 1), str::to_owned),
            mime: part.content_type().map(|ct| match ct.subtype() {
                Some(sub) => format!("{}/{sub}", ct.ctype()),
                None => ct.ctype().to_owned(),
            }),
            bytes: part.contents().to_vec(),
        })
        .collect();
    Some(Mail {
        message_id: message.message_id().map(bare_id),
        from: from
            .and_then(|a| a.address())
            .map(|a| a.trim().to_lowercase()),
        from_name: from.and_then(|a| a.name()).map(str::to_owned),
        subject: message.subject().unwrap_or_default().trim().to_owned(),
        in_reply_to: ids(message.in_reply_to()),
        references: ids(message.references()),
        auto_submitted: lower("Auto-Submitted"),
        precedence: lower("Precedence"),
        from_list: message.header_raw("List-Id").is_some()
            || message.header_raw("List-Unsubscribe").is_some(),
        return_path: lower("Return-Path")
            .map(|p| p.trim_matches(|c| c == '<' || c == '>').to_owned()),
        body: message.body_text(0).unwrap_or_default().into_owned(),
        parts,
    })
}

fn bare_id(id: &str) -> String {
    id.trim().trim_matches(|c| c == '<' || c == '>').to_owned()
}

fn ids(value: &HeaderValue<'_>) -> Vec<String> {
    match value {
        HeaderValue::Text(id) => vec![bare_id(id)],
        HeaderValue::TextList(list) => list.iter().map(|id| bare_id(id)).collect(),
        _ => Vec::new(),
    }
    .into_iter()
    .filter(|id| !id.is_empty())
    .collect()
}

/// What the model reads of a body: the new text only, without the quoted history a reply
/// carries below (or above) it and without the signature. A body that is nothing but a quote
/// (a forward) is kept whole.
pub(crate) fn trimmed(body: &str) -> String {
    let lines: Vec<&str> = body.lines().collect();
    let mut kept: Vec<&str> = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_end();
        if t == "--" || t == "-- " || line == &"-- " {
            break;
        }
        if is_history_start(t) {
            break;
        }
        let next_quoted = lines
            .get(i + 1)
            .is_some_and(|n| n.trim_start().starts_with('>'));
        if is_attribution(t) && (next_quoted || lines.get(i + 1).is_none()) {
            continue;
        }
        if t.trim_start().starts_with('>') {
            continue;
        }
        kept.push(line);
    }
    let text = kept.join("\n").trim().to_owned();
    if text.is_empty() {
        body.trim().to_owned()
    } else {
        text
    }
}

/// "On Mon, 1 Jan 2024, Alice <a@b> wrote:" and its translations end with a colon after a
/// verb of writing.
fn is_attribution(line: &str) -> bool {
    let l = line.trim().to_lowercase();
    [
        "wrote:",
        "schrieb:",
        "a écrit :",
        "a écrit:",
        "escribió:",
        "ha scritto:",
    ]
    .iter()
    .any(|w| l.ends_with(w))
}

/// Where clients that do not quote with `>` start the earlier mail (a forwarded mail's
/// header is not one: what is forwarded is what the person wants handled).
fn is_history_start(line: &str) -> bool {
    let l = line.trim();
    l.starts_with("-----Original Message-----")
        || l.starts_with("-------- Original Message --------")
        || l == "________________________________"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_keeps_only_the_new_text() {
        let body = "Yes, Tuesday works.\n\nAlice\n\nOn Mon, 7 Dec 2026, Bot <bot@example.org> wrote:\n> When shall we meet?\n> \n";
        assert_eq!(trimmed(body), "Yes, Tuesday works.\n\nAlice");
        let outlook = "Fine by me\n-----Original Message-----\nFrom: x\nold text";
        assert_eq!(trimmed(outlook), "Fine by me");
    }

    #[test]
    fn the_signature_is_cut_and_a_pure_quote_is_kept() {
        assert_eq!(trimmed("Hi\n-- \nAlice\nACME Corp"), "Hi");
        assert_eq!(trimmed("> only\n> quoted"), "> only\n> quoted");
    }

    #[test]
    fn headers_threads_and_loop_markers_are_read() {
        let raw = b"From: Alice <Alice@People.test>\r\nTo: bot@bot.test\r\nSubject: Re: plan\r\n\
Message-ID: <m2@people.test>\r\nIn-Reply-To: <b1@bot.test>\r\nReferences: <m1@people.test> <b1@bot.test>\r\n\
Auto-Submitted: Auto-Replied\r\nPrecedence: bulk\r\nList-Id: <l.example>\r\nReturn-Path: <>\r\n\r\nhello\r\n";
        let mail = parse(raw).unwrap();
        assert_eq!(mail.message_id.as_deref(), Some("m2@people.test"));
        assert_eq!(mail.from.as_deref(), Some("alice@people.test"));
        assert_eq!(mail.from_name.as_deref(), Some("Alice"));
        assert_eq!(mail.in_reply_to, ["b1@bot.test"]);
        assert_eq!(mail.references, ["m1@people.test", "b1@bot.test"]);
        assert_eq!(mail.auto_submitted.as_deref(), Some("auto-replied"));
        assert_eq!(mail.precedence.as_deref(), Some("bulk"));
        assert!(mail.from_list);
        assert_eq!(mail.return_path.as_deref(), Some(""));
        assert_eq!(mail.body.trim(), "hello");
    }

    #[test]
    fn an_html_only_mail_is_read_as_text_and_attachments_are_kept() {
        let raw = b"From: a@people.test\r\nSubject: x\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/mixed; boundary=\"b\"\r\n\r\n--b\r\nContent-Type: text/html\r\n\r\n\
<p>Hello <b>there</b></p>\r\n--b\r\nContent-Type: application/octet-stream\r\n\
Content-Disposition: attachment; filename=\"data.bin\"\r\nContent-Transfer-Encoding: base64\r\n\r\nAAEC/w==\r\n--b--\r\n";
        let mail = parse(raw).unwrap();
        assert!(mail.body.contains("Hello there"), "{}", mail.body);
        assert_eq!(mail.parts.len(), 1);
        assert_eq!(mail.parts[0].name, "data.bin");
        assert_eq!(mail.parts[0].bytes, [0, 1, 2, 255]);
    }

    #[test]
    fn an_inline_image_is_an_attachment_too() {
        let raw = b"From: a@people.test\r\nSubject: x\r\nMIME-Version: 1.0\r\n\
Content-Type: multipart/related; boundary=\"r\"\r\n\r\n--r\r\nContent-Type: text/html\r\n\r\n\
<p>see <img src=\"cid:pic\"></p>\r\n--r\r\nContent-Type: image/png\r\nContent-ID: <pic>\r\n\
Content-Disposition: inline; filename=\"pic.png\"\r\nContent-Transfer-Encoding: base64\r\n\r\niVBORw==\r\n--r--\r\n";
        let mail = parse(raw).unwrap();
        assert_eq!(mail.parts.len(), 1, "{:?}", mail.parts);
        assert_eq!(mail.parts[0].name, "pic.png");
        assert_eq!(mail.parts[0].mime.as_deref(), Some("image/png"));
        assert_eq!(mail.parts[0].bytes, [0x89, b'P', b'N', b'G']);
    }
}
