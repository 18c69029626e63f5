//! A byte-exact `multipart/form-data` reader for the stand-ins' upload endpoints (Telegram
//! `sendDocument`, Discord attachments, Slack's upload URL), so a test can check that an
//! uploaded file arrived with every byte intact.

use axum::http::{HeaderMap, header};

/// One part of a multipart body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The form field name.
    pub name: String,
    /// The file name, for a file part.
    pub filename: Option<String>,
    /// The part's `Content-Type`, when given.
    pub content_type: Option<String>,
    /// The raw bytes.
    pub bytes: Vec<u8>,
}

/// The boundary of a `multipart/form-data` request, if it is one.
pub fn boundary(headers: &HeaderMap) -> Option<String> {
    let ct = headers.get(header::CONTENT_TYPE)?.to_str().ok()?;
    if !ct.starts_with("multipart/") {
        return None;
    }
    let b = ct.split("boundary=").nth(1)?;
    Some(b.split(';').next()?.trim_matches('"').to_owned())
}

/// Every part of `body`, split at `--boundary` (binary-safe).
pub fn parse(body: &[u8], boundary: &str) -> Vec<Part> {
    let delimiter = format!("\r\n--{boundary}").into_bytes();
    // The first delimiter has no leading CRLF; add one so all are alike.
    let mut data = b"\r\n".to_vec();
    data.extend_from_slice(body);
    let mut parts = Vec::new();
    let mut at = match find(&data, &delimiter, 0) {
        Some(i) => i + delimiter.len(),
        None => return parts,
    };
    while let Some(next) = find(&data, &delimiter, at) {
        let chunk = &data[at..next];
        at = next + delimiter.len();
        let Some(chunk) = chunk.strip_prefix(b"\r\n") else {
            continue;
        };
        let Some(split) = find(chunk, b"\r\n\r\n", 0) else {
            continue;
        };
        let head = String::from_utf8_lossy(&chunk[..split]).into_owned();
        let bytes = chunk[split + 4..].to_vec();
        let field = |key: &str| {
            head.split(&format!("{key}=\""))
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .map(str::to_owned)
        };
        let content_type = head.lines().find_map(|line| {
            let (key, value) = line.split_once(':')?;
            let is_type = key.trim().eq_ignore_ascii_case("content-type");
            is_type.then(|| value.trim().to_owned())
        });
        parts.push(Part {
            name: field("; name").unwrap_or_default(),
            filename: field("filename"),
            content_type,
            bytes,
        });
    }
    parts
}

fn find(haystack: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    haystack
        .get(from..)?
        .windows(needle.len())
        .position(|w| w == needle)
        .map(|p| p + from)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_parts_come_back_byte_for_byte() {
        let file: Vec<u8> = (0..=255u8).chain(b"\r\n--x".iter().copied()).collect();
        let mut body = b"--B\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n--B\r\nContent-Disposition: form-data; name=\"document\"; filename=\"a.bin\"\r\nContent-Type: application/octet-stream\r\n\r\n".to_vec();
        body.extend_from_slice(&file);
        body.extend_from_slice(b"\r\n--B--\r\n");
        let parts = parse(&body, "B");
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].bytes, b"42");
        assert_eq!(parts[1].filename.as_deref(), Some("a.bin"));
        assert_eq!(parts[1].bytes, file);
    }
}
