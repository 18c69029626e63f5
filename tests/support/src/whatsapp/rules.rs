//! What WhatsApp refuses in a message body, with Meta's codes: an empty or over-long text,
//! more than three reply buttons or a title over 20 characters, an interactive body over
//! 1,024 characters, a list of more than ten rows, and a template parameter holding
//! newlines, tabs or more than four spaces in a row.

use serde_json::Value;

/// What WhatsApp refuses in a message body: `Some((code, details))`.
pub(super) fn check(body: &Value) -> Option<(i64, &'static str)> {
    let chars = |v: &Value| v.as_str().map_or(0, |s| s.chars().count());
    if body["messaging_product"] != "whatsapp" {
        return Some((100, "messaging_product must be whatsapp"));
    }
    match body["type"].as_str().unwrap_or("text") {
        "text" if chars(&body["text"]["body"]) > 4096 => {
            Some((100, "text body is longer than 4096"))
        }
        "text" if chars(&body["text"]["body"]) == 0 => Some((100, "text body is empty")),
        "interactive" => {
            let i = &body["interactive"];
            let buttons = i["action"]["buttons"].as_array().map_or(0, Vec::len);
            let long_title = i["action"]["buttons"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|b| chars(&b["reply"]["title"]) > 20);
            let rows = i["action"]["sections"][0]["rows"]
                .as_array()
                .map_or(0, Vec::len);
            if chars(&i["body"]["text"]) > 1024 || chars(&i["body"]["text"]) == 0 {
                Some((131_009, "interactive body must have 1 to 1024 characters"))
            } else if i["type"] == "button" && (buttons == 0 || buttons > 3 || long_title) {
                Some((
                    131_009,
                    "1 to 3 buttons with titles of at most 20 characters",
                ))
            } else if i["type"] == "list" && (rows == 0 || rows > 10) {
                Some((131_009, "a list has 1 to 10 rows"))
            } else {
                None
            }
        }
        "template" => {
            let p = body["template"]["components"][0]["parameters"][0]["text"]
                .as_str()
                .unwrap_or("");
            (p.contains('\n') || p.contains('\t') || p.contains("     ")).then_some((
                132_018,
                "parameter has newlines, tabs or more than 4 spaces",
            ))
        }
        _ => None,
    }
}
