//! The agent loop on its own, as a program using this crate alone would run it: a real
//! OpenAI-compatible HTTP client against the in-process LLM stand-in, tool calls, unknown
//! tools, arguments checked against the schema, the iteration cap, concurrency of read-only
//! calls, a gate that suspends a call, a delegated sub-task. (Inside the gateway:
//! `tests/e2e/agent_loop.rs`.)

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use switchboard_agent::provider::{self, ChatMessage, Provider, ProviderConfig, Role, ToolCall};
use switchboard_agent::{
    AgentError, AgentEvent, AgentLoop, Decider, Decision, Gate, Matched, Resolution, RuleList,
    Tool, ToolResult, Verdict,
};
use switchboard_env::{EnvString, Secret};
use switchboard_standins::{FakeLlm, Reply};

/// Adds two numbers; optionally sleeps first and records when it ran.
struct Add {
    read_only: bool,
    sleep: Duration,
    spans: Mutex<Vec<(Instant, Instant)>>,
}

impl Add {
    fn new(read_only: bool, sleep: Duration) -> Arc<Self> {
        Arc::new(Self {
            read_only,
            sleep,
            spans: Mutex::new(Vec::new()),
        })
    }
}

#[async_trait]
impl Tool for Add {
    fn name(&self) -> &str {
        "add"
    }
    fn description(&self) -> &str {
        "Add two integers a and b."
    }
    fn parameters_schema(&self) -> Value {
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
    }
    fn read_only(&self) -> bool {
        self.read_only
    }
    async fn execute(&self, args: Value) -> ToolResult {
        let start = Instant::now();
        tokio::time::sleep(self.sleep).await;
        self.spans.lock().unwrap().push((start, Instant::now()));
        match (args["a"].as_i64(), args["b"].as_i64()) {
            (Some(a), Some(b)) => ToolResult::ok((a + b).to_string()),
            _ => ToolResult::err("a and b must be integers"),
        }
    }
}

fn provider_for(llm: &FakeLlm) -> Arc<dyn Provider> {
    provider::from_config(&ProviderConfig {
        base_url: Some(EnvString(llm.openai_url())),
        api_key: Secret::new("test-key-not-real"),
        max_retries: 0,
        ..ProviderConfig::default()
    })
    .unwrap()
}

/// The first tool result the model was sent (in the loop's second request).
fn first_tool_result(llm: &FakeLlm) -> String {
    let request = &llm.requests()[1];
    let message = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["role"] == "tool")
        .unwrap_or_else(|| panic!("no tool result in {request}"));
    message["content"].as_str().unwrap().to_owned()
}

fn user(text: &str) -> Vec<ChatMessage> {
    vec![
        ChatMessage::new(Role::System, "sys"),
        ChatMessage::new(Role::User, text),
    ]
}

#[tokio::test]
async fn the_model_calls_a_tool_and_answers_from_its_output() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::tool_call("add", json!({"a": 2, "b": 40})))
        .push(Reply::text("The sum is 42."));
    let agent = AgentLoop::builder()
        .tool(Add::new(false, Duration::ZERO))
        .max_iterations(10)
        .build();
    let mut events = Vec::new();
    let run = agent
        .run(provider_for(&llm).as_ref(), user("2+40?"), |e| {
            events.push(e)
        })
        .await
        .unwrap();
    assert_eq!(run.answer, "The sum is 42.");
    assert_eq!((run.tool_calls, run.iterations), (1, 2));
    assert_eq!(first_tool_result(&llm), "42");
    assert_eq!(run.messages.len(), 3, "assistant call, tool result, answer");
    assert!(
        events
            .iter()
            .any(|e| matches!(e, AgentEvent::ToolStarted { name, .. } if name == "add"))
    );
}

#[tokio::test]
async fn an_unknown_tool_yields_an_error_result_and_the_model_recovers() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::tool_call("no_such_tool", json!({})))
        .push(Reply::text("Sorry, I can't do that."));
    let agent = AgentLoop::builder()
        .tool(Add::new(false, Duration::ZERO))
        .build();
    let run = agent
        .run(provider_for(&llm).as_ref(), user("x"), |_| {})
        .await
        .unwrap();
    assert_eq!(run.answer, "Sorry, I can't do that.");
    let content = first_tool_result(&llm);
    assert!(content.contains("unknown tool"), "{content}");
}

#[tokio::test]
async fn arguments_that_break_the_schema_never_reach_the_tool_and_the_model_is_told_why() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::tool_call("add", json!({"a": "two", "c": 1})))
        .push(Reply::tool_call("add", json!({"a": 2, "b": 3})))
        .push(Reply::text("5"));
    let add = Add::new(false, Duration::ZERO);
    let agent = AgentLoop::builder().tool(add.clone()).build();
    let run = agent
        .run(provider_for(&llm).as_ref(), user("2+3?"), |_| {})
        .await
        .unwrap();
    assert_eq!(run.answer, "5");
    assert_eq!(
        add.spans.lock().unwrap().len(),
        1,
        "only the valid call ran"
    );
    let content = first_tool_result(&llm);
    assert!(content.contains("invalid arguments for add"), "{content}");
    assert!(
        content.contains("/a: ") && content.contains("integer"),
        "{content}"
    );
    assert!(
        content.contains("missing") && content.contains("'b'"),
        "{content}"
    );
}

#[tokio::test]
async fn the_loop_stops_at_the_iteration_cap() {
    let llm = FakeLlm::start().await;
    for i in 0..5 {
        llm.push(Reply::tool_call("add", json!({"a": i, "b": 1})));
    }
    let agent = AgentLoop::builder()
        .tool(Add::new(false, Duration::ZERO))
        .max_iterations(3)
        .build();
    let err = agent
        .run(provider_for(&llm).as_ref(), user("loop"), |_| {})
        .await
        .unwrap_err();
    assert!(
        matches!(err, AgentError::MaxIterations { iterations: 3, .. }),
        "{err:?}"
    );
    assert_eq!(llm.requests().len(), 3);
    assert_eq!(
        err.partial().len(),
        6,
        "three calls and three results are kept"
    );
}

#[tokio::test]
async fn read_only_calls_in_one_response_run_concurrently() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::tool_calls(vec![
        ("add".into(), json!({"a": 1, "b": 1})),
        ("add".into(), json!({"a": 2, "b": 2})),
    ]))
    .push(Reply::text("done"));
    let tool = Add::new(true, Duration::from_millis(300));
    let agent = AgentLoop::builder().tool(tool.clone()).build();
    agent
        .run(provider_for(&llm).as_ref(), user("both"), |_| {})
        .await
        .unwrap();
    let spans = tool.spans.lock().unwrap().clone();
    assert_eq!(spans.len(), 2);
    let overlap = spans[0]
        .1
        .min(spans[1].1)
        .saturating_duration_since(spans[0].0.max(spans[1].0));
    assert!(
        overlap > Duration::from_millis(150),
        "calls did not overlap: {spans:?}"
    );
}

#[tokio::test]
async fn a_tool_call_cut_off_by_max_tokens_is_never_executed() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::Stream {
        text: "Calling".into(),
        tool_calls: vec![("add".into(), json!({"a": 1, "b": 2}))],
        chunk_chars: 8,
        first_delay: Duration::ZERO,
        delay: Duration::ZERO,
        max_tokens: true,
    });
    let tool = Add::new(false, Duration::ZERO);
    let agent = AgentLoop::builder().tool(tool.clone()).build();
    let run = agent
        .run(provider_for(&llm).as_ref(), user("x"), |_| {})
        .await
        .unwrap();
    assert!(tool.spans.lock().unwrap().is_empty());
    assert!(run.answer.contains("token limit"));
}

/// Asks about every call, naming a rule, as a policy with `ask = ["add"]` would.
struct AskEveryCall;

#[async_trait]
impl Gate for AskEveryCall {
    async fn check(&self, _call: &ToolCall, _read_only: bool) -> Decision {
        Decision {
            verdict: Verdict::Ask,
            rule: Some(Matched::Rule {
                list: RuleList::Ask,
                pattern: "add".into(),
            }),
            reason: "ask rule add".into(),
            decided_by: Decider::Policy,
        }
    }
}

#[tokio::test]
async fn a_gated_call_suspends_and_resumes_with_the_decision_carried_on_its_events() {
    let llm = FakeLlm::start().await;
    llm.push(Reply::tool_call("add", json!({"a": 1, "b": 2})))
        .push(Reply::text("It is 3."));
    let provider = provider_for(&llm);
    let agent = AgentLoop::builder()
        .tool(Add::new(false, Duration::ZERO))
        .gate(Arc::new(AskEveryCall))
        .build();
    let mut events = Vec::new();
    let suspended = agent
        .run(provider.as_ref(), user("1+2?"), |e| events.push(e))
        .await;
    let Err(AgentError::Suspended(suspension)) = suspended else {
        panic!("expected a suspension, got {suspended:?}");
    };
    assert!(matches!(
        events.last(),
        Some(AgentEvent::ApprovalRequested { decision, .. }) if decision.verdict == Verdict::Ask
    ));
    let approved = Resolution::Approved { by: "alice".into() };
    let mut events = Vec::new();
    let cancel = tokio_util::sync::CancellationToken::new();
    let run = agent
        .resume(provider.as_ref(), *suspension, approved, &cancel, |e| {
            events.push(e)
        })
        .await
        .unwrap();
    assert_eq!(run.answer, "It is 3.");
    let decided = |e: &AgentEvent| match e {
        AgentEvent::ApprovalResolved { decision, .. }
        | AgentEvent::ToolStarted { decision, .. } => Some(decision.clone()),
        _ => None,
    };
    let decisions: Vec<Decision> = events.iter().filter_map(decided).collect();
    assert_eq!(decisions.len(), 2, "resolved, then started: {events:#?}");
    for decision in decisions {
        assert_eq!(decision.verdict, Verdict::Allow);
        assert_eq!(decision.decided_by, Decider::User("alice".into()));
        assert_eq!(
            decision.reason, "ask rule add",
            "the rule stays with the call"
        );
    }
}

/// Asks before `add`; lets everything else (the `delegate` call itself) run.
struct AskForAdd;

#[async_trait]
impl Gate for AskForAdd {
    async fn check(&self, call: &ToolCall, read_only: bool) -> Decision {
        if call.name == "add" {
            return AskEveryCall.check(call, read_only).await;
        }
        Decision::ungated()
    }
}

/// Makes every child with `add` and a `mul` the parent does not have.
struct Children {
    provider: Arc<dyn Provider>,
}

impl switchboard_agent::Spawner for Children {
    fn child(
        &self,
        _profile: Option<&str>,
        _index: usize,
    ) -> Result<switchboard_agent::ChildAgent, String> {
        let mul = Add::new(true, Duration::ZERO);
        Ok(switchboard_agent::ChildAgent {
            provider: Arc::clone(&self.provider),
            system_prompt: "You are a helper.".into(),
            tools: vec![
                Add::new(false, Duration::ZERO),
                Arc::new(Renamed("mul", mul)),
            ],
            offload: None,
        })
    }
}

/// A tool under another name.
struct Renamed(&'static str, Arc<Add>);

#[async_trait]
impl Tool for Renamed {
    fn name(&self) -> &str {
        self.0
    }
    fn description(&self) -> &str {
        self.1.description()
    }
    fn parameters_schema(&self) -> Value {
        self.1.parameters_schema()
    }
    async fn execute(&self, args: Value) -> ToolResult {
        self.1.execute(args).await
    }
}

/// A loop with `add` (gated) that delegates to [`Children`] on `provider`.
fn delegating_agent(provider: &Arc<dyn Provider>) -> AgentLoop {
    let delegation = switchboard_agent::Delegation {
        spawner: Arc::new(Children {
            provider: Arc::clone(provider),
        }),
        limits: switchboard_agent::DelegationLimits::default(),
        depth: 0,
    };
    AgentLoop::builder()
        .tool(Add::new(false, Duration::ZERO))
        .gate(Arc::new(AskForAdd))
        .delegation(delegation)
        .build()
}

/// The chained id of a completed call (`<delegate call>/<sub-task>/<id>` for a child's).
fn completed_call(event: &AgentEvent) -> Option<String> {
    match event.innermost() {
        (chain, AgentEvent::ToolCompleted { id, .. }) => Some(format!("{chain}{id}")),
        _ => None,
    }
}

/// The names of the tools offered in `request`.
fn offered(request: &Value) -> Vec<String> {
    let tools = request["tools"].as_array().cloned().unwrap_or_default();
    tools
        .iter()
        .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
        .collect()
}

#[tokio::test]
async fn a_sub_task_that_asks_suspends_its_parent_and_resumes_on_its_own_with_only_the_parents_tools()
 {
    let llm = FakeLlm::start().await;
    let provider = provider_for(&llm);
    let task = json!({"tasks": [{"task": "sum-job: add 1 and 2"}]});
    llm.push(Reply::tool_call("delegate", task))
        .push(Reply::tool_call("add", json!({"a": 1, "b": 2})))
        .push(Reply::text("The helper found 3."))
        .push(Reply::text("Done: 3."));
    let agent = delegating_agent(&provider);
    let mut events = Vec::new();
    let suspended = agent
        .run(provider.as_ref(), user("delegate it"), |e| events.push(e))
        .await;
    let Err(AgentError::Suspended(suspension)) = suspended else {
        panic!("expected a suspension, got {suspended:?}");
    };
    assert_eq!(suspension.pending.name, "delegate");
    let children = suspension.delegation.clone().expect("its children");
    let waiting = children.waiting();
    let (path, asked) = (&waiting[0].0, &waiting[0].1.pending.name);
    assert_eq!(
        (waiting.len(), path.as_slice(), asked.as_str()),
        (1, [0].as_slice(), "add")
    );
    assert_eq!(
        children.tasks[0].tools,
        ["add"],
        "`mul` is not the parent's"
    );
    let child = offered(&llm.requests()[1]);
    assert_eq!(child, ["add"], "no `mul`, and no `delegate` at depth 1");
    assert!(events.iter().any(|e| matches!(
        e.innermost().1,
        AgentEvent::ApprovalRequested { name, .. } if name == "add"
    )));

    let approved = Resolution::Approved { by: "alice".into() };
    let cancel = tokio_util::sync::CancellationToken::new();
    let mut events = Vec::new();
    let on_event = |e| events.push(e);
    let resumed = agent.resume_at(
        provider.as_ref(),
        *suspension,
        &[0],
        approved,
        &cancel,
        on_event,
    );
    assert_eq!(resumed.await.unwrap().answer, "Done: 3.");
    let chained: Vec<String> = events.iter().filter_map(completed_call).collect();
    let expected = ["call_0_delegate/1/call_0_add", "call_0_delegate"];
    assert_eq!(chained, expected, "the child's call, then the delegation");
    let requests = llm.requests();
    let messages = requests[3]["messages"].as_array().unwrap();
    let result = messages.iter().find(|m| m["role"] == "tool").unwrap();
    let expected = "## Sub-task 1: sum-job: add 1 and 2\nThe helper found 3.";
    assert_eq!(result["content"], expected);
}
