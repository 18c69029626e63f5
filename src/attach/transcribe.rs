//! Voice notes to text through an OpenAI-compatible `POST <base_url>/audio/transcriptions`
//! (multipart: `file`, `model`; the answer's `text` is the transcript).

use std::time::Duration;

use crate::config::TranscriptionConfig;

/// The transcript of `bytes` (a voice note or audio file called `name`).
pub async fn transcribe(
    config: &TranscriptionConfig,
    name: &str,
    mime: &str,
    bytes: &[u8],
) -> Result<String, String> {
    let http = reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(config.timeout_secs.max(1)))
        .build()
        .map_err(|e| e.to_string())?;
    let boundary = format!("switchboard-{}", uuid::Uuid::new_v4().simple());
    let url = format!(
        "{}/audio/transcriptions",
        config.base_url.trim_end_matches('/')
    );
    let mut request = http
        .post(url)
        .header(
            "content-type",
            format!("multipart/form-data; boundary={boundary}"),
        )
        .body(body(&boundary, &config.model, name, mime, bytes));
    if let Some(key) = config.api_key.expose().filter(|k| !k.is_empty()) {
        request = request.bearer_auth(key);
    }
    let response = request
        .send()
        .await
        .map_err(|e| e.without_url().to_string())?;
    let status = response.status();
    let reply: serde_json::Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        return Err(format!("the transcription service answered {status}"));
    }
    let text = reply["text"].as_str().map(str::trim).unwrap_or_default();
    if text.is_empty() {
        return Err("the transcription was empty".into());
    }
    Ok(text.to_owned())
}

/// The multipart body: `model`, then the audio as `file`.
fn body(boundary: &str, model: &str, name: &str, mime: &str, bytes: &[u8]) -> Vec<u8> {
    let name = name.replace(['"', '\r', '\n'], "_");
    let mut out = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"model\"\r\n\r\n{model}\r\n\
         --{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{name}\"\r\nContent-Type: {mime}\r\n\r\n"
    )
    .into_bytes();
    out.extend_from_slice(bytes);
    out.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    out
}
