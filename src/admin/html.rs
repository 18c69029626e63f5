//! Markup for the dashboard: every piece of text goes through the scrubber, then is
//! escaped ([`Html::text`]); only the page's own fixed markup is written raw. The frame
//! (head, navigation, note) is here too.

use switchboard_channel::html::escape_into;

use crate::scrub::Scrubber;

use super::{Admin, PAGES};

/// A page being written.
pub struct Html<'a> {
    out: String,
    scrubber: &'a Scrubber,
}

impl<'a> Html<'a> {
    /// An empty page body whose text passes `scrubber`.
    pub fn new(scrubber: &'a Scrubber) -> Self {
        Self {
            out: String::with_capacity(4096),
            scrubber,
        }
    }

    /// Fixed markup of the page's own.
    pub fn raw(&mut self, markup: &str) -> &mut Self {
        self.out.push_str(markup);
        self
    }

    /// Text from anywhere else: scrubbed, then escaped.
    pub fn text(&mut self, text: &str) -> &mut Self {
        let scrubbed = self.scrubber.scrub(text);
        escape_into(&mut self.out, &scrubbed);
        self
    }

    /// `<tag class="class">text</tag>`.
    pub fn el(&mut self, tag: &str, class: &str, text: &str) -> &mut Self {
        self.raw(&format!("<{tag} class=\"{class}\">"));
        self.text(text);
        self.raw(&format!("</{tag}>"))
    }

    /// A hidden form field (its value scrubbed and escaped like any text).
    pub fn hidden(&mut self, name: &str, value: &str) -> &mut Self {
        self.raw(&format!("<input type=\"hidden\" name=\"{name}\" value=\""));
        self.text(value);
        self.raw("\">")
    }

    /// The start of a POST form to `action` carrying the CSRF field.
    pub fn form(&mut self, action: &str, csrf: &str, class: &str) -> &mut Self {
        self.raw(&format!(
            "<form method=\"post\" class=\"{class}\" action=\"{action}\">"
        ));
        self.hidden("csrf", csrf)
    }

    /// The markup written so far.
    pub fn finish(self) -> String {
        self.out
    }
}

/// A body of one paragraph of text.
pub fn text_only(scrubber: &Scrubber, text: &str) -> String {
    let mut html = Html::new(scrubber);
    html.el("p", "error", text);
    html.finish()
}

/// The whole document (`page` is its title and path): head (with the CSRF field for
/// scripts), navigation (the current page marked), an action's note, the
/// body.
pub fn frame(
    admin: &Admin,
    page: (&str, &str),
    csrf: &str,
    note: Option<&str>,
    body: &str,
) -> String {
    let (title, current) = page;
    let base = admin.base();
    let mut html = Html::new(&admin.scrubber);
    html.raw("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">")
        .raw("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">")
        .raw("<title>")
        .text(title)
        .raw(" · Switchboard</title><meta name=\"csrf\" content=\"")
        .text(csrf)
        .raw("\">")
        .raw(&format!(
            "<link rel=\"stylesheet\" href=\"{base}/admin.css\">"
        ))
        .raw(&format!("<script src=\"{base}/admin.js\" defer></script>"))
        .raw(&format!(
            "</head><body data-events=\"{base}/events\" data-page=\""
        ))
        .text(current)
        .raw("\"><header><span class=\"brand\">Switchboard</span><nav>");
    for (path, name) in PAGES {
        let mark = if path == current {
            " aria-current=\"page\""
        } else {
            ""
        };
        html.raw(&format!("<a href=\"{base}{path}\"{mark}>"))
            .text(name);
        let badge = match path {
            "/approvals" => " <span class=\"badge\" data-count=\"approvals\" hidden></span>",
            "/access" => " <span class=\"badge\" data-count=\"pairing\" hidden></span>",
            _ => "",
        };
        html.raw(badge).raw("</a>");
    }
    html.raw("</nav><span class=\"live\" id=\"live\">live</span></header><main id=\"main\">")
        .raw("<h1>")
        .text(title)
        .raw("</h1>");
    if let Some(note) = note.filter(|n| !n.is_empty()) {
        html.el("p", "note", note);
    }
    html.raw(body).raw("</main></body></html>");
    html.finish()
}

/// A Unix-ms time as `2026-01-31 14:05 UTC`.
pub fn when(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .unwrap_or_else(|_| ms.to_string())
}

/// A duration in ms as `3 s`, `5 min`, `2 h`, `4 d`.
pub fn span(ms: i64) -> String {
    let s = ms.max(0) / 1000;
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min", s / 60),
        3600..86_400 => format!("{} h", s / 3600),
        _ => format!("{} d", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_scrubbed_before_it_is_escaped() {
        let scrubber = Scrubber::new(["hunter2-secret-value"]);
        let mut html = Html::new(&scrubber);
        html.text("<b>key=hunter2-secret-value</b> & 'x'");
        let out = html.finish();
        assert!(!out.contains("hunter2-secret-value"), "{out}");
        assert!(
            out.starts_with("&lt;b&gt;key=") && out.contains("&amp; &#39;x&#39;"),
            "{out}"
        );
    }

    #[test]
    fn times_and_spans_read_as_people_write_them() {
        assert_eq!(when(0), "1970-01-01 00:00 UTC");
        assert_eq!(span(59_000), "59 s");
        assert_eq!(span(3_600_000), "1 h");
        assert_eq!(span(-5), "0 s");
    }
}
