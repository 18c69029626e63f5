//! Files people send and files the agent sends back, end to end on each channel's stand-in:
//! downloaded after the event is stored, saved in the workspace, described to the model,
//! refused clearly above the limit, and processed once across a restart.

mod discord;
mod providers;
mod slack;
mod telegram;
mod telegram_photo;
mod whatsapp;

use serde_json::Value;

/// Every text of every message of LLM request `n` (user messages, tool results), joined.
pub fn request_text(requests: &[Value], n: usize) -> String {
    requests
        .get(n)
        .and_then(|r| r["messages"].as_array())
        .map(|messages| {
            messages
                .iter()
                .map(|m| match &m["content"] {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
        .unwrap_or_default()
}

/// The files in a conversation workspace's `inbox/` folder, sorted.
pub fn inbox_files(workspace: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(workspace.join("inbox"))
        .map(|dir| {
            dir.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// Every byte value, a few times over, with CR/LF and a fake multipart boundary inside: a
/// file that only arrives intact if every hop is binary-safe.
pub fn binary_bytes() -> Vec<u8> {
    let mut bytes: Vec<u8> = (0..=255u8).cycle().take(64 * 1024).collect();
    bytes.extend_from_slice(b"\r\n--boundary\r\n\0tail");
    bytes
}

/// The data URL of the first image part in LLM request `n` (OpenAI format), if any.
pub fn image_url(requests: &[Value], n: usize) -> Option<String> {
    let messages = requests.get(n)?["messages"].as_array()?;
    messages.iter().find_map(|m| {
        let parts = m["content"].as_array()?;
        parts
            .iter()
            .find_map(|p| p["image_url"]["url"].as_str().map(str::to_owned))
    })
}

/// `bytes` as the data URL the gateway sends for a PNG.
pub fn png_data_url(bytes: &[u8]) -> String {
    use base64::Engine;
    format!(
        "data:image/png;base64,{}",
        base64::engine::general_purpose::STANDARD.encode(bytes)
    )
}
