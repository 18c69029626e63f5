//! Reading Bot API call parameters the way Telegram does: from a JSON body, a urlencoded form,
//! a multipart form (teloxide sends `setWebhook` that way) or the query string, all into one
//! JSON object. Form values stay strings; the accessors read numbers from either shape.

use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

/// The call's parameters as one JSON object.
pub(super) fn parse(headers: &HeaderMap, query: Option<&str>, body: &[u8]) -> Value {
    let mut params = Map::new();
    if let Some(query) = query {
        extend(
            &mut params,
            serde_urlencoded::from_str(query).unwrap_or_default(),
        );
    }
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if content_type.starts_with("application/json") {
        if let Ok(Value::Object(body)) = serde_json::from_slice::<Value>(body) {
            params.extend(body);
        }
    } else if content_type.starts_with("application/x-www-form-urlencoded") {
        extend(
            &mut params,
            serde_urlencoded::from_bytes(body).unwrap_or_default(),
        );
    } else if let Some(boundary) = content_type.split("boundary=").nth(1) {
        let boundary = boundary.trim_matches('"');
        extend(
            &mut params,
            multipart(&String::from_utf8_lossy(body), boundary),
        );
    }
    Value::Object(params)
}

fn extend(params: &mut Map<String, Value>, fields: Vec<(String, String)>) {
    for (name, value) in fields {
        // Nested values (reply_markup, allowed_updates) travel as JSON text in forms.
        let value = match serde_json::from_str::<Value>(&value) {
            Ok(nested @ (Value::Object(_) | Value::Array(_))) => nested,
            _ => Value::String(value),
        };
        params.insert(name, value);
    }
}

/// Text fields of a `multipart/form-data` body.
fn multipart(body: &str, boundary: &str) -> Vec<(String, String)> {
    let delimiter = format!("--{boundary}");
    body.split(delimiter.as_str())
        .filter_map(|part| {
            let part = part.strip_prefix("\r\n")?;
            let (head, value) = part.split_once("\r\n\r\n")?;
            let name = head.split("name=\"").nth(1)?.split('"').next()?;
            let value = value.strip_suffix("\r\n").unwrap_or(value);
            Some((name.to_owned(), value.to_owned()))
        })
        .collect()
}

/// An integer parameter, sent as a number or as text.
pub(super) fn int(params: &Value, key: &str) -> Option<i64> {
    match params.get(key)? {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    }
}

/// A text parameter.
pub(super) fn text(params: &Value, key: &str) -> Option<String> {
    match params.get(key)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multipart_fields_become_strings_and_nested_json() {
        let body = "--XyZ\r\nContent-Disposition: form-data; name=\"url\"\r\n\r\nhttps://bot.test/hook\r\n\
                    --XyZ\r\nContent-Disposition: form-data; name=\"allowed_updates\"\r\n\r\n[\"message\"]\r\n--XyZ--\r\n";
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "multipart/form-data; boundary=XyZ".parse().unwrap(),
        );
        let params = parse(&headers, None, body.as_bytes());
        assert_eq!(
            text(&params, "url").as_deref(),
            Some("https://bot.test/hook")
        );
        assert_eq!(params["allowed_updates"], serde_json::json!(["message"]));
    }

    #[test]
    fn numbers_are_read_from_json_numbers_and_form_text() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::CONTENT_TYPE,
            "application/x-www-form-urlencoded".parse().unwrap(),
        );
        let params = parse(&headers, Some("timeout=5"), b"chat_id=-100123");
        assert_eq!(int(&params, "chat_id"), Some(-100_123));
        assert_eq!(int(&params, "timeout"), Some(5));
        assert_eq!(int(&serde_json::json!({ "offset": 7 }), "offset"), Some(7));
    }
}
