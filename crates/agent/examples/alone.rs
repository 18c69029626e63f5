//! The agent loop with no gateway, store, channel, policy or sandbox: one question to an
//! OpenAI-compatible server, one tool the model may call, the answer streamed to stdout.
//!
//! ```sh
//! # any OpenAI-compatible endpoint: llama.cpp's server, Ollama, vLLM, OpenAI itself
//! AGENT_BASE_URL=http://127.0.0.1:8080/v1 AGENT_MODEL=smollm2 \
//!   cargo run -p switchboard-agent --example alone -- "How many words are in 'to be or not to be'?"
//! ```
//! `AGENT_API_KEY` is sent when set. Tool calls are described in the prompt when
//! `AGENT_NATIVE_TOOLS=false` (for models without native tool calling).

use std::io::Write;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard_agent::provider::{self, ChatMessage, ProviderConfig, Role};
use switchboard_agent::{AgentEvent, AgentLoop, Tool, ToolResult};
use switchboard_env::{EnvString, Secret};

/// Counts the words of a text: small enough to read, real enough for a model to call.
struct WordCount;

#[async_trait]
impl Tool for WordCount {
    fn name(&self) -> &str {
        "word_count"
    }

    fn description(&self) -> &str {
        "Count the words (separated by white space) in a text."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"]
        })
    }

    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, args: Value) -> ToolResult {
        match args["text"].as_str() {
            Some(text) => ToolResult::ok(text.split_whitespace().count().to_string()),
            None => ToolResult::err("text must be a string"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let question = std::env::args().nth(1).unwrap_or_else(|| {
        "How many words are in the sentence 'the quick brown fox jumps'?".to_owned()
    });
    let native = var("AGENT_NATIVE_TOOLS").is_none_or(|v| v != "false");
    let config = ProviderConfig {
        base_url: Some(EnvString(
            var("AGENT_BASE_URL").unwrap_or_else(|| "http://127.0.0.1:8080/v1".to_owned()),
        )),
        model: EnvString(var("AGENT_MODEL").unwrap_or_else(|| "default".to_owned())),
        api_key: Secret::new(var("AGENT_API_KEY").unwrap_or_default()),
        native_tools: native,
        ..ProviderConfig::default()
    };
    let provider = provider::from_config(&config)?;
    let agent = AgentLoop::builder()
        .tool(Arc::new(WordCount))
        .native_tools(native)
        .max_iterations(4)
        .build();
    let messages = vec![
        ChatMessage::new(Role::System, "Answer briefly. Use tools when they help."),
        ChatMessage::new(Role::User, question),
    ];
    let run = agent
        .run(provider.as_ref(), messages, |event| match event {
            AgentEvent::TextChunk(text) => {
                print!("{text}");
                let _ = std::io::stdout().flush();
            }
            AgentEvent::ToolStarted { name, summary, .. } => {
                eprintln!("\n[tool] {name}: {summary}")
            }
            AgentEvent::ToolCompleted { output, .. } => eprintln!("[tool] -> {output}"),
            _ => {}
        })
        .await?;
    println!();
    eprintln!(
        "[{} tool call(s), {} round-trip(s), {} tokens]",
        run.tool_calls,
        run.iterations,
        run.usage.input_tokens + run.usage.output_tokens
    );
    Ok(())
}
