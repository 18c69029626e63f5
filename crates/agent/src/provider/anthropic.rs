//! Anthropic Messages API with `stream: true`: `text_delta`s pass through, `tool_use`
//! blocks are assembled from `input_json_delta`s and emitted when their block stops.

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

/// API version header value this client speaks.
const API_VERSION: &str = "2023-06-01";

/// A client for the Anthropic Messages API.
pub struct AnthropicProvider {
    http: reqwest::Client,
    settings: HttpSettings,
    api_key: Secret,
}

impl AnthropicProvider {
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
        let system: Vec<&str> = request
            .messages
            .iter()
            .filter(|m| m.role == Role::System)
            .map(|m| m.content.as_str())
            .collect();
        let mut body = json!({
            "model": self.settings.model,
            "max_tokens": self.settings.max_tokens,
            "messages": messages_json(&request.messages),
            "stream": true,
        });
        if !system.is_empty() {
            body["system"] = json!(system.join("\n\n"));
        }
        if let Some(t) = self.settings.temperature {
            body["temperature"] = json!(t);
        }
        if !request.tools.is_empty() {
            body["tools"] = request
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "input_schema": &*t.parameters}))
                .collect();
        }
        body
    }

    async fn open(&self, body: &Value) -> Result<EventStream, ProviderError> {
        let mut request = self
            .http
            .post(format!("{}/v1/messages", self.settings.base_url))
            .header("anthropic-version", API_VERSION)
            .json(body);
        self.settings.refuse_without_key()?;
        let key_sent = self.api_key.is_set();
        if let Some(key) = self.api_key.expose() {
            request = request.header("x-api-key", key);
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
impl Provider for AnthropicProvider {
    fn name(&self) -> &str {
        "anthropic"
    }

    async fn stream(&self, request: &ChatRequest) -> Result<EventStream, ProviderError> {
        let body = self.body(request);
        retry::with_retries(self.settings.max_retries, || self.open(&body)).await
    }
}

/// Non-system messages as Anthropic content blocks; consecutive tool results share one
/// user message, as the API requires. Text-only content goes as a plain string (see
/// [`text_as_string`]).
fn messages_json(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out = blocks_json(messages);
    for message in &mut out {
        text_as_string(message);
    }
    out
}

/// A message whose content is text blocks only gets that text as a plain string. Both
/// forms are valid Anthropic; some Anthropic-compatible servers (LiteLLM's `/v1/messages`
/// in front of llama.cpp) answer an array of text blocks with nothing. Images and tool
/// results keep their blocks.
fn text_as_string(message: &mut Value) {
    let Some(blocks) = message["content"].as_array() else {
        return;
    };
    if blocks.is_empty() || blocks.iter().any(|b| b["type"] != "text") {
        return;
    }
    let texts: Vec<&str> = blocks.iter().filter_map(|b| b["text"].as_str()).collect();
    message["content"] = Value::String(texts.join("\n\n"));
}

/// Non-system messages as Anthropic content blocks.
fn blocks_json(messages: &[ChatMessage]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    for m in messages {
        let (role, blocks) = match m.role {
            Role::System => continue,
            Role::User => ("user", user_blocks(m)),
            Role::Tool => ("user", vec![tool_result_block(m)]),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !m.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": m.content}));
                }
                for c in &m.tool_calls {
                    let input = if c.args.is_object() {
                        c.args.clone()
                    } else {
                        json!({})
                    };
                    blocks.push(
                        json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}),
                    );
                }
                ("assistant", blocks)
            }
        };
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(content) = last["content"].as_array_mut() {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    out
}

/// A user message's blocks: its images (base64 `image` blocks) first, then its text.
fn user_blocks(m: &ChatMessage) -> Vec<Value> {
    m.images
        .iter()
        .map(image_block)
        .chain(std::iter::once(json!({"type": "text", "text": m.content})))
        .collect()
}

/// A tool message as a `tool_result` block: its text, and then its images when a tool
/// returned some (a result's content may hold text and image blocks).
fn tool_result_block(m: &ChatMessage) -> Value {
    let content = match m.images.is_empty() {
        true => json!(m.content),
        false => std::iter::once(json!({"type": "text", "text": m.content}))
            .chain(m.images.iter().map(image_block))
            .collect(),
    };
    json!({
        "type": "tool_result",
        "tool_use_id": m.tool_call_id.as_deref().unwrap_or_default(),
        "content": content,
    })
}

fn image_block(i: &ImagePart) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": i.mime, "data": i.data}})
}

/// A `tool_use` block being assembled.
struct PartialTool {
    id: String,
    name: String,
    json: String,
}

#[derive(Default)]
struct Decoder {
    tools: BTreeMap<u64, PartialTool>,
    stop: Option<StopReason>,
    usage: Usage,
    finished: bool,
}

impl Decoder {
    /// A `tool_use` block opens: its arguments arrive as JSON fragments.
    fn start_tool(&mut self, index: u64, block: &Value) {
        self.tools.insert(
            index,
            PartialTool {
                id: block["id"].as_str().unwrap_or_default().to_owned(),
                name: block["name"].as_str().unwrap_or_default().to_owned(),
                json: String::new(),
            },
        );
    }

    /// Text for the draft, or one more fragment of a tool call's arguments.
    fn delta(&mut self, index: u64, delta: &Value, out: &mut Vec<StreamEvent>) {
        match delta["type"].as_str() {
            Some("text_delta") => {
                let text = delta["text"].as_str().unwrap_or_default();
                if !text.is_empty() {
                    out.push(StreamEvent::TextDelta(text.to_owned()));
                }
            }
            Some("input_json_delta") => {
                if let Some(tool) = self.tools.get_mut(&index) {
                    tool.json
                        .push_str(delta["partial_json"].as_str().unwrap_or_default());
                }
            }
            _ => {}
        }
    }

    /// A block closes; a finished tool call is emitted whole (unparseable arguments stay a
    /// string so the tool's schema check reports them to the model).
    fn stop_block(&mut self, index: u64, out: &mut Vec<StreamEvent>) {
        if let Some(tool) = self.tools.remove(&index) {
            let args = if tool.json.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&tool.json).unwrap_or(Value::String(tool.json))
            };
            out.push(StreamEvent::ToolCall(ToolCall {
                id: tool.id,
                name: tool.name,
                args,
            }));
        }
    }

    /// The stop reason and the output token count.
    fn message_delta(&mut self, v: &Value) {
        if let Some(reason) = v["delta"]["stop_reason"].as_str() {
            self.stop = Some(match reason {
                "end_turn" | "stop_sequence" => StopReason::EndTurn,
                "tool_use" => StopReason::ToolUse,
                "max_tokens" => StopReason::MaxTokens,
                other => StopReason::Other(other.to_owned()),
            });
        }
        if let Some(n) = v["usage"]["output_tokens"].as_u64() {
            self.usage.output_tokens = n;
        }
    }
}

impl SseDecoder for Decoder {
    fn on_event(
        &mut self,
        event: &str,
        data: &str,
        out: &mut Vec<StreamEvent>,
    ) -> Result<bool, ProviderError> {
        if data.trim().is_empty() {
            return Ok(false);
        }
        let v: Value =
            serde_json::from_str(data).map_err(|e| ProviderError::Decode(e.to_string()))?;
        let kind = if event.is_empty() {
            v["type"].as_str().unwrap_or("")
        } else {
            event
        };
        let index = v["index"].as_u64().unwrap_or(0);
        match kind {
            "message_start" => {
                self.usage.input_tokens =
                    v["message"]["usage"]["input_tokens"].as_u64().unwrap_or(0);
            }
            "content_block_start" if v["content_block"]["type"] == "tool_use" => {
                self.start_tool(index, &v["content_block"]);
            }
            "content_block_delta" => self.delta(index, &v["delta"], out),
            "content_block_stop" => self.stop_block(index, out),
            "message_delta" => self.message_delta(&v),
            "message_stop" => {
                self.finished = true;
                out.push(StreamEvent::Done {
                    stop_reason: self.stop.take().unwrap_or(StopReason::EndTurn),
                    usage: self.usage,
                });
                return Ok(true);
            }
            "error" => return Err(ProviderError::from_stream_error(&v["error"])),
            _ => {}
        }
        Ok(false)
    }

    fn on_eof(&mut self, _out: &mut Vec<StreamEvent>) -> Result<(), ProviderError> {
        if self.finished {
            Ok(())
        } else {
            Err(ProviderError::Stream(
                "the stream ended before message_stop".into(),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_result_with_an_image_holds_its_text_then_the_image() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls = vec![ToolCall {
            id: "t1".into(),
            name: "browser".into(),
            args: json!({"action": "screenshot"}),
        }];
        let mut shot = ChatMessage::tool_result("t1", "screenshot saved");
        shot.images = vec![ImagePart {
            mime: "image/png".into(),
            data: "iVBORw0KGgo=".into(),
        }];
        let msgs = vec![ChatMessage::new(Role::User, "look"), assistant, shot];
        let json = messages_json(&msgs);
        let result = &json[2]["content"][0];
        assert_eq!(result["type"], "tool_result");
        assert_eq!(result["content"][0]["text"], "screenshot saved");
        let image = &result["content"][1];
        assert_eq!(image["type"], "image");
        assert_eq!(image["source"]["media_type"], "image/png");
        assert_eq!(image["source"]["data"], "iVBORw0KGgo=");
    }

    #[test]
    fn tool_results_following_each_other_share_one_user_message() {
        let mut assistant = ChatMessage::new(Role::Assistant, "checking");
        assistant.tool_calls = vec![
            ToolCall {
                id: "t1".into(),
                name: "a".into(),
                args: json!({}),
            },
            ToolCall {
                id: "t2".into(),
                name: "b".into(),
                args: json!({}),
            },
        ];
        let msgs = vec![
            ChatMessage::new(Role::System, "sys"),
            ChatMessage::new(Role::User, "hi"),
            assistant,
            ChatMessage::tool_result("t1", "one"),
            ChatMessage::tool_result("t2", "two"),
        ];
        let json = messages_json(&msgs);
        assert_eq!(json.len(), 3);
        assert_eq!(json[2]["role"], "user");
        assert_eq!(json[2]["content"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn text_only_content_is_a_plain_string_and_tool_results_keep_their_blocks() {
        let mut assistant = ChatMessage::new(Role::Assistant, "");
        assistant.tool_calls.push(ToolCall {
            id: "call_1".into(),
            name: "a".into(),
            args: json!({}),
        });
        let msgs = vec![
            ChatMessage::new(Role::User, "hello there"),
            assistant,
            ChatMessage::tool_result("call_1", "done"),
        ];
        let json = messages_json(&msgs);
        assert_eq!(json[0]["content"], "hello there");
        assert_eq!(json[1]["content"][0]["type"], "tool_use");
        assert_eq!(json[2]["content"][0]["type"], "tool_result");
    }
}
