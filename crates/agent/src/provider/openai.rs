//! OpenAI-compatible `/chat/completions` with `stream: true`: text deltas pass straight
//! through; tool-call fragments are accumulated per `index` and emitted whole at the finish.

use std::collections::BTreeMap;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::ProviderConfig;
use super::sse::{self, SseDecoder};
use super::{
    ChatMessage, ChatRequest, EventStream, HttpSettings, ImagePart, Provider, ProviderError, Role,
    StopReason, StreamEvent, ToolCall, Usage, retry,
};
use switchboard_env::Secret;

/// A client for any OpenAI-compatible chat-completions endpoint.
pub struct OpenAiProvider {
    http: reqwest::Client,
    settings: HttpSettings,
    api_key: Secret,
}

impl OpenAiProvider {
    /// Build from `[provider]`.
    pub fn new(config: &ProviderConfig) -> anyhow::Result<Self> {
        let settings = HttpSettings::from_config(config);
        Ok(Self {
            http: settings.client()?,
            settings,
            api_key: config.api_key.clone(),
        })
    }

    fn body(&self, request: &ChatRequest) -> Value {
        let mut body = json!({
            "model": self.settings.model,
            "messages": messages_json(&request.messages),
            "stream": true,
            "stream_options": { "include_usage": true },
            "max_tokens": self.settings.max_tokens,
        });
        if let Some(t) = self.settings.temperature {
            body["temperature"] = json!(t);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| {
                    json!({"type": "function", "function": {
                        "name": t.name, "description": t.description, "parameters": &*t.parameters,
                    }})
                })
                .collect();
        }
        body
    }

    async fn open(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let mut request = self
            .http
            .post(format!("{}/chat/completions", self.settings.base_url))
            .json(body);
        self.settings.refuse_without_key()?;
        let key_sent = self.api_key.is_set();
        if let Some(key) = self.api_key.expose() {
            request = request.bearer_auth(key);
        }
        let call = self.settings.call_info(key_sent);
        let response = sse::send(request, self.settings.timeout, &call).await?;
        Ok(sse::spawn_reader(
            response,
            Decoder::default(),
            self.settings.timeout,
        ))
    }
}

#[async_trait]
impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        "openai"
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let body = self.body(request);
        retry::with_retries(self.settings.max_retries, || self.open(&body)).await
    }
}

/// The messages as Chat Completions JSON. A tool message's content can only be text, so the
/// images tools returned follow the run of tool messages they came in, as one user message
/// (the tool messages must directly follow the assistant message that called them).
fn messages_json(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = Vec::with_capacity(messages.len());
    let mut images: Vec<&ChatMessage> = Vec::new();
    for (i, m) in messages.iter().enumerate() {
        out.push(message_json(m));
        if m.role == Role::Tool && !m.images.is_empty() {
            images.push(m);
        }
        let run_ends = messages
            .get(i + 1)
            .is_none_or(|next| next.role != Role::Tool);
        if run_ends && !images.is_empty() {
            out.push(tool_images(&images));
            images.clear();
        }
    }
    out
}

/// One user message with the images of `results`, each after a line naming its call.
fn tool_images(results: &[&ChatMessage]) -> Value {
    let mut parts = Vec::new();
    for m in results {
        let id = m.tool_call_id.as_deref().unwrap_or_default();
        let text = format!("The image returned by tool call {id}:");
        parts.push(json!({"type": "text", "text": text}));
        parts.extend(m.images.iter().map(image_url));
    }
    json!({"role": "user", "content": parts})
}

fn image_url(i: &ImagePart) -> Value {
    json!({"type": "image_url", "image_url": {"url": format!("data:{};base64,{}", i.mime, i.data)}})
}

fn message_json(m: &ChatMessage) -> Value {
    match m.role {
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": m.tool_call_id.as_deref().unwrap_or_default(),
            "content": m.content,
        }),
        Role::Assistant if !m.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": if m.content.is_empty() { Value::Null } else { json!(m.content) },
            "tool_calls": m.tool_calls.iter().map(|c| json!({
                "id": c.id, "type": "function",
                "function": {"name": c.name, "arguments": c.args.to_string()},
            })).collect::<Vec<_>>(),
        }),
        Role::User if !m.images.is_empty() => json!({"role": "user", "content": user_parts(m)}),
        role => json!({"role": role.as_str(), "content": m.content}),
    }
}

/// A user message with images: a text part, then one `image_url` part (a data URL) each.
fn user_parts(m: &ChatMessage) -> Vec<Value> {
    let text = json!({"type": "text", "text": m.content});
    std::iter::once(text)
        .chain(m.images.iter().map(image_url))
        .collect()
}

/// A tool call being assembled from fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    args: String,
}

#[derive(Default)]
struct Decoder {
    calls: BTreeMap<u64, PartialCall>,
    stop: Option<StopReason>,
    usage: Usage,
}

impl Decoder {
    fn finish(&mut self, out: &mut Vec<StreamEvent>) {
        for (_, call) in std::mem::take(&mut self.calls) {
            let args = serde_json::from_str(&call.args).unwrap_or(Value::String(call.args));
            out.push(StreamEvent::ToolCall(ToolCall {
                id: call.id,
                name: call.name,
                args,
            }));
        }
        out.push(StreamEvent::Done {
            stop_reason: self.stop.take().unwrap_or(StopReason::EndTurn),
            usage: self.usage,
        });
    }

    fn on_chunk(&mut self, chunk: &Value, out: &mut Vec<StreamEvent>) {
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage.input_tokens = usage["prompt_tokens"].as_u64().unwrap_or(0);
            self.usage.output_tokens = usage["completion_tokens"].as_u64().unwrap_or(0);
        }
        let Some(choice) = chunk["choices"].get(0) else {
            return;
        };
        let delta = &choice["delta"];
        if let Some(text) = delta["content"].as_str().filter(|t| !t.is_empty()) {
            out.push(StreamEvent::TextDelta(text.to_owned()));
        }
        for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = fragment["index"].as_u64().unwrap_or(0);
            let call = self.calls.entry(index).or_default();
            if let Some(id) = fragment["id"].as_str() {
                call.id = id.to_owned();
            }
            if let Some(name) = fragment["function"]["name"].as_str() {
                call.name.push_str(name);
            }
            if let Some(args) = fragment["function"]["arguments"].as_str() {
                call.args.push_str(args);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            self.stop = Some(match reason {
                "stop" => StopReason::EndTurn,
                "tool_calls" | "function_call" => StopReason::ToolUse,
                "length" => StopReason::MaxTokens,
                other => StopReason::Other(other.to_owned()),
            });
        }
    }
}

impl SseDecoder for Decoder {
    fn on_event(
        &mut self,
        _event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        let data = data.trim();
        if data == "[DONE]" {
            self.finish(out);
            return Ok(true);
        }
        if data.is_empty() {
            return Ok(false);
        }
        let chunk: Value =
            serde_json::from_str(data).map_err(|e| ProviderError::Decode(e.to_string()))?;
        if let Some(error) = chunk.get("error") {
            return Err(ProviderError::from_stream_error(error));
        }
        self.on_chunk(&chunk, out);
        Ok(false)
    }

    fn on_eof(&mut self, out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        // Some servers omit [DONE]; a finish_reason is enough to know nothing was cut.
        if self.stop.is_some() {
            self.finish(out);
            Ok(())
        } else {
            Err(ProviderError::Stream(
                "the stream ended before the model finished".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(id: &str) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: "browser".into(),
            args: json!({"action": "screenshot"}),
        }
    }

    #[test]
    fn tool_images_follow_the_run_of_tool_messages_as_one_user_message() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls = vec![call("t1"), call("t2")];
        let mut shot = ChatMessage::tool_result("t1", "screenshot saved");
        shot.images = vec![ImagePart {
            mime: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }];
        let msgs = vec![
            ChatMessage::new(Role::User, "look"),
            assistant,
            shot,
            ChatMessage::tool_result("t2", "no image"),
            ChatMessage::new(Role::Assistant, "done"),
        ];
        let json = messages_json(&msgs);
        let roles: Vec<&str> = json.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(
            roles,
            ["user", "assistant", "tool", "tool", "user", "assistant"]
        );
        assert_eq!(json[2]["content"], "screenshot saved");
        let parts = json[4]["content"].as_array().unwrap();
        assert_eq!(parts.len(), 2);
        assert!(parts[0]["text"].as_str().unwrap().contains("t1"));
        assert_eq!(
            parts[1]["image_url"]["url"],
            "data:image/png;base64,iVBORw0KGgo="
        );
    }

    fn feed(decoder: &mut Decoder, data: &str) -> Vec<StreamEvent> {
        let mut out = Vec::new();
        decoder.on_event("", data, &mut out).unwrap();
        out
    }

    #[test]
    fn tool_call_fragments_are_accumulated_per_index() {
        let mut d = Decoder::default();
        feed(
            &mut d,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"a","function":{"name":"shell","arguments":"{\"comm"}},{"index":1,"id":"b","function":{"name":"file_list","arguments":"{}"}}]}}]}"#,
        );
        feed(
            &mut d,
            r#"{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"and\":\"ls\"}"}}]},"finish_reason":"tool_calls"}]}"#,
        );
        let out = feed(&mut d, "[DONE]");
        assert_eq!(out.len(), 3);
        assert_eq!(
            out[0],
            StreamEvent::ToolCall(ToolCall {
                id: "a".into(),
                name: "shell".into(),
                args: json!({"command": "ls"}),
            })
        );
        assert!(matches!(
            &out[2],
            StreamEvent::Done {
                stop_reason: StopReason::ToolUse,
                ..
            }
        ));
    }

    #[test]
    fn a_stream_cut_before_finish_is_an_error() {
        let mut d = Decoder::default();
        feed(&mut d, r#"{"choices":[{"delta":{"content":"Hel"}}]}"#);
        assert!(d.on_eof(&mut Vec::new()).is_err());
    }
}
