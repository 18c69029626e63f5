//! Files on Slack: the `files` of a message event as references (`url_private`), their
//! download with the bot token as Bearer (scope `files:read`), and uploads through the
//! external upload flow (`files.getUploadURLExternal`, the bytes to the upload URL,
//! `files.completeUploadExternal` to share it in the conversation; scope `files:write`).

use serde_json::{Value, json};
use switchboard_channel::{
    Attachment, AttachmentKind, ConversationKey, FileError, MessageRef, OutboundFile, read_capped,
};

use crate::api::WebApi;

/// Largest file Slack accepts through the external upload flow (1 GB).
const MAX_UPLOAD_BYTES: usize = 1024 * 1024 * 1024;

/// The files of a message event (`files: [...]`), as references.
pub(crate) fn attachments(files: &[Value]) -> Vec<Attachment> {
    files.iter().filter_map(attachment).collect()
}

fn attachment(file: &Value) -> Option<Attachment> {
    let id = file["id"].as_str()?.to_owned();
    let url = file["url_private_download"]
        .as_str()
        .or_else(|| file["url_private"].as_str())?
        .to_owned();
    let mime = file["mimetype"].as_str().map(str::to_owned);
    let kind = match (file["subtype"].as_str(), mime.as_deref()) {
        (Some("slack_audio"), _) => AttachmentKind::Voice,
        (_, Some(m)) if m.starts_with("image/") => AttachmentKind::Photo,
        (_, Some(m)) if m.starts_with("audio/") => AttachmentKind::Audio,
        _ => AttachmentKind::Document,
    };
    let name = file["name"]
        .as_str()
        .or_else(|| file["title"].as_str())
        .filter(|n| !n.trim().is_empty())
        .map_or_else(|| format!("{}.bin", kind.as_str()), str::to_owned);
    Some(Attachment {
        kind,
        id,
        url: Some(url),
        name,
        mime,
        size: file["size"].as_u64(),
    })
}

/// Slack's own hosts, where `url_private` may send the bot token.
fn slack_host(host: &str) -> bool {
    host == "slack.com" || host.ends_with(".slack.com")
}

impl WebApi {
    /// Fetch `url_private` with the bot token, refusing more than `max_bytes`.
    pub(crate) async fn download(
        &self,
        file: &Attachment,
        max_bytes: u64,
    ) -> Result<Vec<u8>, FileError> {
        let url = file.fetch_url(
            max_bytes,
            &self.base,
            slack_host,
            "url_private is not on Slack; the bot token is not sent there",
        )?;
        read_capped(self.http.get(url).bearer_auth(&self.token), max_bytes).await
    }

    /// Upload `file` and share it in `key` (in its thread, when there is one).
    pub(crate) async fn send_file(
        &self,
        key: &ConversationKey,
        file: &OutboundFile,
    ) -> Result<MessageRef, FileError> {
        if file.bytes.len() > MAX_UPLOAD_BYTES {
            return Err(FileError::TooLarge {
                limit: MAX_UPLOAD_BYTES as u64,
            });
        }
        let length = file.bytes.len().to_string();
        let form = [
            ("filename", file.name.as_str()),
            ("length", length.as_str()),
        ];
        let ticket = self.form_call("files.getUploadURLExternal", &form).await?;
        let (Some(upload_url), Some(file_id)) =
            (ticket["upload_url"].as_str(), ticket["file_id"].as_str())
        else {
            return Err(FileError::Transient(
                "files.getUploadURLExternal answered without an upload URL".into(),
            ));
        };
        let uploaded = self
            .http
            .post(upload_url)
            .header("content-type", "application/octet-stream")
            .body(file.bytes.clone())
            .send()
            .await
            .map_err(|e| FileError::Transient(e.without_url().to_string()))?;
        if !uploaded.status().is_success() {
            return Err(FileError::from_status(uploaded.status().as_u16(), "upload"));
        }
        let mut body = json!({
            "files": [{ "id": file_id, "title": file.name }],
            "channel_id": key.chat,
        });
        if let Some(thread) = &key.thread {
            body["thread_ts"] = json!(thread);
        }
        if !file.caption.is_empty() {
            body["initial_comment"] = json!(file.caption);
        }
        self.call("files.completeUploadExternal", &body)
            .await
            .map_err(|e| FileError::Fatal(e.to_string()))?;
        Ok(MessageRef::new(file_id))
    }

    /// A form-encoded Web API call (the upload methods take no JSON), as raw JSON.
    async fn form_call(&self, method: &str, form: &[(&str, &str)]) -> Result<Value, FileError> {
        let response = self
            .http
            .post(format!("{}/{method}", self.base))
            .bearer_auth(&self.token)
            .form(form)
            .send()
            .await
            .map_err(|e| FileError::Transient(e.without_url().to_string()))?;
        let status = response.status();
        let reply: Value = response.json().await.unwrap_or_default();
        if reply["ok"].as_bool() == Some(true) {
            return Ok(reply);
        }
        let code = reply["error"].as_str().unwrap_or("no reply").to_owned();
        Err(match (status.as_u16(), code.as_str()) {
            (429 | 500..=599, _) => FileError::Transient(code),
            (_, "missing_scope" | "not_authed" | "invalid_auth") => FileError::Forbidden(code),
            _ => FileError::Fatal(code),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slack_file_object_becomes_a_reference_with_its_private_url() {
        let files = [
            json!({
                "id": "F1", "name": "chart.png", "mimetype": "image/png", "size": 120,
                "url_private": "https://files.slack.test/F1/chart.png",
            }),
            json!({ "id": "F2", "name": "memo", "mimetype": "audio/webm", "subtype": "slack_audio",
            "url_private_download": "https://files.slack.test/F2/memo" }),
            json!({ "id": "F3" }),
        ];
        let refs = attachments(&files);
        assert_eq!(refs.len(), 2, "a file without a URL is skipped");
        assert_eq!(refs[0].kind, AttachmentKind::Photo);
        assert_eq!(
            refs[0].url.as_deref(),
            Some("https://files.slack.test/F1/chart.png")
        );
        assert_eq!(refs[1].kind, AttachmentKind::Voice);
    }

    #[test]
    fn the_bot_token_goes_only_to_slack_or_the_configured_api_host() {
        let trusted = |base: &str, url: &str| {
            let file = Attachment {
                kind: AttachmentKind::Document,
                id: "F1".into(),
                url: Some(url.into()),
                name: "a.png".into(),
                mime: None,
                size: None,
            };
            file.fetch_url(u64::MAX, base, slack_host, "refused")
                .is_ok()
        };
        let slack = "https://slack.com/api";
        assert!(trusted(
            slack,
            "https://files.slack.com/files-pri/T1-F1/a.png"
        ));
        assert!(!trusted(slack, "https://files.slack.com.evil.test/a.png"));
        assert!(!trusted(slack, "http://127.0.0.1:9/a.png"));
        let local = "http://127.0.0.1:4000/api";
        assert!(trusted(local, "http://127.0.0.1:4000/files-pri/F1/a.png"));
    }
}
