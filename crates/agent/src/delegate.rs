//! Delegation: the `delegate` tool hands sub-tasks to child loops that run in parallel, each
//! with a fresh context, and returns their answers as the call's result. A child is made of
//! the loop's own types — an [`AgentLoop`] with the parent's gate, scrubber and scope — from
//! the parts a [`Spawner`] supplies (the embedding application's agent profiles). Its tools
//! are those the spawner built for it, kept only where the parent has a tool of the same name
//! (and the model asked for it, when it named some): never wider than the parent's. Every
//! event a child reports reaches the parent's `on_event` wrapped in
//! [`AgentEvent::FromChild`], so budgets, audit and metrics see children's work as the turn's.
//!
//! A child that needs an approval suspends; once every child has settled, the parent
//! suspends too, with the children's state in its [`Suspension`] (`delegation`). Each waiting
//! child is resumed on its own ([`AgentLoop::resume_at`] with its path), and the parent goes
//! on once none waits.

use std::sync::Arc;

use async_trait::async_trait;
use futures::StreamExt;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::{AgentError, AgentEvent, AgentLoop, AgentRun, Resolution, Suspension};
use crate::provider::{ChatMessage, Provider, Role, ToolCall};
use crate::{Offload, Tool, ToolResult, ToolScope};

/// The tool's name (the loop recognises its calls by it).
pub const DELEGATE_TOOL: &str = "delegate";
/// Most sub-tasks one call may hand out (more than `max_parallel` wait their turn).
const MAX_TASKS: usize = 8;

/// What one child loop is made of, as the embedding application builds it for a profile.
pub struct ChildAgent {
    /// The model the child talks to.
    pub provider: Arc<dyn Provider>,
    /// Its system prompt.
    pub system_prompt: String,
    /// The tools the child's profile offers, bound to the child's own workspace; the loop
    /// keeps only those the parent has too.
    pub tools: Vec<Arc<dyn Tool>>,
    /// Where the child's long tool outputs go (its own workspace).
    pub offload: Option<Offload>,
}

/// Builds children: the seam to the application's agent profiles and workspaces.
pub trait Spawner: Send + Sync {
    /// The parts of sub-task `index` (from 0, stable for a resumed child) under agent profile
    /// `profile` (`None`: the parent's own), or why there is no such profile.
    fn child(&self, profile: Option<&str>, index: usize) -> Result<ChildAgent, String>;
}

/// How far delegation may go.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DelegationLimits {
    /// Children of one call running at once.
    pub max_parallel: usize,
    /// Levels of delegation below the conversation's own loop (1: children may not delegate).
    pub max_depth: usize,
    /// Tokens one child may use before it is stopped.
    pub child_max_tokens: u64,
    /// Tool runs one child may make; later calls are refused.
    pub child_max_tool_runs: usize,
    /// LLM round-trips one child may make.
    pub child_max_iterations: usize,
}

impl Default for DelegationLimits {
    fn default() -> Self {
        Self {
            max_parallel: 3,
            max_depth: 1,
            child_max_tokens: 50_000,
            child_max_tool_runs: 20,
            child_max_iterations: 10,
        }
    }
}

/// A loop's power to delegate: who builds children, within which limits, at which depth.
#[derive(Clone)]
pub struct Delegation {
    /// Builds each child's parts.
    pub spawner: Arc<dyn Spawner>,
    /// The limits.
    pub limits: DelegationLimits,
    /// This loop's depth (0: the conversation's own loop).
    pub depth: usize,
}

/// The `delegate` tool as the model sees it; its calls are run by the loop itself.
pub struct DelegateTool;

#[async_trait]
impl Tool for DelegateTool {
    fn name(&self) -> &str {
        DELEGATE_TOOL
    }

    fn description(&self) -> &str {
        "Hand independent sub-tasks to helper agents that run in parallel, each with a fresh \
         context and some of your tools; their answers come back as this call's result. \
         Write each task so it stands alone. Optionally name an agent `profile` and the \
         `tools` (a subset of yours) a sub-task may use."
    }

    fn parameters_schema(&self) -> Value {
        json!({
            "type": "object",
            "properties": {
                "tasks": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": MAX_TASKS,
                    "items": {
                        "type": "object",
                        "properties": {
                            "task": {"type": "string", "minLength": 1, "description": "What the helper should do, self-contained."},
                            "profile": {"type": "string", "description": "An agent profile for the helper (default: yours)."},
                            "tools": {"type": "array", "items": {"type": "string"}, "description": "Tools the helper may use (default: all of yours its profile offers)."}
                        },
                        "required": ["task"],
                        "additionalProperties": false
                    }
                }
            },
            "required": ["tasks"],
            "additionalProperties": false
        })
    }

    /// It changes nothing by itself: each call a child makes passes the gate on its own.
    fn read_only(&self) -> bool {
        true
    }

    async fn execute(&self, _args: Value) -> ToolResult {
        ToolResult::err("delegate runs only inside an agent loop that may delegate")
    }
}

/// The children of a `delegate` call while one of them waits, as stored in a suspension.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Children {
    /// One entry per sub-task, in the order the model listed them.
    pub tasks: Vec<Child>,
}

/// One sub-task.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Child {
    /// What it was asked to do.
    pub task: String,
    /// Its agent profile (`None`: the parent's).
    pub profile: Option<String>,
    /// The tools it may use (already narrowed to the parent's).
    pub tools: Vec<String>,
    /// Where it stands.
    pub state: ChildState,
}

/// Where a stored sub-task stands.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ChildState {
    /// Finished (or failed): its result.
    Done(ToolResult),
    /// Suspended on an approval.
    Waiting(Box<Suspension>),
}

/// A sub-task's state as the draft shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// Waiting for a free slot (`max_parallel`).
    Queued,
    /// Its loop is running.
    Running,
    /// A call of it waits for a person's approval.
    Waiting,
    /// It answered.
    Done,
    /// It failed or was stopped; its error is its result.
    Failed,
}

impl Children {
    /// Paths (child index, then its own children's, …) of every sub-task waiting for an
    /// approval, with the suspension that holds its pending call.
    pub fn waiting(&self) -> Vec<(Vec<usize>, &Suspension)> {
        let mut out = Vec::new();
        for (i, child) in self.tasks.iter().enumerate() {
            if let ChildState::Waiting(s) = &child.state {
                match &s.delegation {
                    Some(grand) => {
                        for (mut path, s) in grand.waiting() {
                            path.insert(0, i);
                            out.push((path, s));
                        }
                    }
                    None => out.push((vec![i], s)),
                }
            }
        }
        out
    }

    /// The sub-task at `path` (its first index), for naming it in a prompt.
    pub fn task_at(&self, path: &[usize]) -> Option<&str> {
        let child = self.tasks.get(*path.first()?)?;
        Some(&child.task)
    }

    fn any_waiting(&self) -> bool {
        self.tasks
            .iter()
            .any(|c| matches!(c.state, ChildState::Waiting(_)))
    }

    /// The call's result once every sub-task is done: each answer under its task.
    fn combined(&self) -> ToolResult {
        let mut text = String::new();
        let mut succeeded = 0;
        for (i, child) in self.tasks.iter().enumerate() {
            let ChildState::Done(result) = &child.state else {
                continue;
            };
            succeeded += usize::from(result.success);
            let status = if result.success { "" } else { " (failed)" };
            text.push_str(&format!(
                "## Sub-task {}{status}: {}\n{}\n\n",
                i + 1,
                one_line(&child.task),
                result.to_model_text().trim_end()
            ));
        }
        let text = text.trim_end().to_owned();
        if succeeded == 0 {
            ToolResult::failed(text, "every sub-task failed")
        } else {
            ToolResult::ok(text)
        }
    }
}

/// The sub-tasks a `delegate` call asks for.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Args {
    tasks: Vec<TaskArgs>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TaskArgs {
    task: String,
    #[serde(default)]
    profile: Option<String>,
    #[serde(default)]
    tools: Option<Vec<String>>,
}

/// How one child's run begins.
enum ChildStart {
    Fresh(Vec<ChatMessage>),
    Resume(Box<Suspension>, Vec<usize>, Resolution),
}

/// One child ready to run.
struct Job {
    index: usize,
    agent: AgentLoop,
    provider: Arc<dyn Provider>,
    start: ChildStart,
}

/// Refuses a child's calls past its tool-run cap (after any narrowing of the parent's).
struct Capped {
    inner: Option<Arc<dyn ToolScope>>,
    max_runs: usize,
}

impl ToolScope for Capped {
    fn refusal(&self, turn: &[ChatMessage], call: &ToolCall) -> Option<String> {
        if let Some(refusal) = self.inner.as_ref().and_then(|s| s.refusal(turn, call)) {
            return Some(refusal);
        }
        let runs = turn.iter().filter(|m| m.role == Role::Tool).count();
        (runs >= self.max_runs).then(|| {
            format!(
                "this sub-task may run at most {} tools; answer with what you have",
                self.max_runs
            )
        })
    }
}

impl AgentLoop {
    /// Whether `call` is a delegation this loop runs itself.
    pub(super) fn delegates(&self, call: &ToolCall) -> bool {
        call.name == DELEGATE_TOOL && self.delegation.is_some() && self.find(&call.name).is_some()
    }

    /// Run the sub-tasks of a `delegate` call: its result once all are done, or their state
    /// when one waits for an approval.
    pub(super) async fn delegate(
        &self,
        call: &ToolCall,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Result<ToolResult, Children> {
        let (mut children, jobs) = match self.plan_children(call) {
            Ok(planned) => planned,
            Err(refusal) => return Ok(ToolResult::err(refusal)),
        };
        self.run_jobs(&call.id, jobs, &mut children, on_event).await;
        if children.any_waiting() {
            return Err(children);
        }
        let result = children.combined();
        Ok(self.bound(call, result).await)
    }

    /// Resume the child at `path` of a suspended `delegate` call with `resolution`: the
    /// call's result once no sub-task waits any more, or the suspension still waiting.
    pub(super) async fn resume_child(
        &self,
        s: &mut Suspension,
        path: &[usize],
        resolution: Resolution,
        on_event: &mut impl FnMut(AgentEvent),
    ) -> Result<ToolResult, AgentError> {
        let mut children = s.delegation.take().expect("a delegated suspension");
        let (&first, rest) = path.split_first().expect("a child's path");
        let waiting = match children.tasks.get(first).map(|c| &c.state) {
            Some(ChildState::Waiting(waiting)) => Some(waiting.clone()),
            _ => None,
        };
        if let Some(waiting) = waiting {
            let child = &children.tasks[first];
            let start = ChildStart::Resume(waiting, rest.to_vec(), resolution);
            match self.job(first, child, start) {
                Ok(job) => {
                    self.run_jobs(&s.pending.id, vec![job], &mut children, on_event)
                        .await
                }
                Err(refusal) => {
                    children.tasks[first].state = ChildState::Done(ToolResult::err(refusal))
                }
            }
        }
        if children.any_waiting() {
            s.delegation = Some(children);
            return Err(AgentError::Suspended(Box::new(s.clone())));
        }
        let result = self.bound(&s.pending, children.combined()).await;
        Ok(result)
    }

    /// The children a `delegate` call asks for, checked against the parent's tools and the
    /// limits, with a job to start each.
    fn plan_children(&self, call: &ToolCall) -> Result<(Children, Vec<Job>), String> {
        let delegation = self.delegation.as_ref().expect("a loop that delegates");
        if delegation.depth >= delegation.limits.max_depth {
            return Err("delegation is not allowed this deep".into());
        }
        let args: Args = serde_json::from_value(call.args.clone())
            .map_err(|e| format!("invalid arguments for delegate: {e}"))?;
        if args.tasks.is_empty() || args.tasks.len() > MAX_TASKS {
            return Err(format!("give between 1 and {MAX_TASKS} tasks"));
        }
        let own: Vec<&str> = self.tools.iter().map(|t| t.name()).collect();
        let mut children = Children { tasks: Vec::new() };
        for task in &args.tasks {
            if let Some(wanted) = &task.tools
                && let Some(missing) = wanted.iter().find(|t| !own.contains(&t.as_str()))
            {
                return Err(format!(
                    "`{missing}` is not one of your tools; a sub-task may only get tools you have"
                ));
            }
            children.tasks.push(Child {
                task: task.task.clone(),
                profile: task.profile.clone(),
                tools: task.tools.clone().unwrap_or_default(),
                state: ChildState::Done(ToolResult::err("not started")),
            });
        }
        let mut jobs = Vec::new();
        for (index, task) in args.tasks.iter().enumerate() {
            let child = &mut children.tasks[index];
            let agent = delegation.spawner.child(task.profile.as_deref(), index)?;
            let messages = vec![
                ChatMessage::new(Role::System, agent.system_prompt.clone()),
                ChatMessage::new(Role::User, task.task.clone()),
            ];
            let tools = self.child_tools(&agent, task.tools.as_deref());
            child.tools = tools.iter().map(|t| t.name().to_owned()).collect();
            jobs.push(Job {
                index,
                provider: Arc::clone(&agent.provider),
                agent: self.child_loop(agent.offload, tools),
                start: ChildStart::Fresh(messages),
            });
        }
        Ok((children, jobs))
    }

    /// Rebuild the loop of a stored child to resume it.
    fn job(&self, index: usize, child: &Child, start: ChildStart) -> Result<Job, String> {
        let delegation = self.delegation.as_ref().expect("a loop that delegates");
        let agent = delegation.spawner.child(child.profile.as_deref(), index)?;
        let tools = self.child_tools(&agent, Some(&child.tools));
        Ok(Job {
            index,
            provider: Arc::clone(&agent.provider),
            agent: self.child_loop(agent.offload, tools),
            start,
        })
    }

    /// The child's tools: those its profile built that the parent has too (and that
    /// `wanted` names, when given); `delegate` only where the depth allows another level.
    fn child_tools(&self, agent: &ChildAgent, wanted: Option<&[String]>) -> Vec<Arc<dyn Tool>> {
        let delegation = self.delegation.as_ref().expect("a loop that delegates");
        let deeper = delegation.depth + 1 < delegation.limits.max_depth;
        let mut tools: Vec<Arc<dyn Tool>> = agent
            .tools
            .iter()
            .filter(|t| t.name() != DELEGATE_TOOL && self.find(t.name()).is_some())
            .filter(|t| wanted.is_none_or(|w| w.iter().any(|n| n == t.name())))
            .cloned()
            .collect();
        let asked = wanted.is_none_or(|w| w.iter().any(|n| n == DELEGATE_TOOL));
        if deeper && asked && self.find(DELEGATE_TOOL).is_some() {
            tools.push(Arc::new(DelegateTool));
        }
        tools
    }

    /// A child loop over `tools`: the parent's gate, scrubber and scope, the child's caps.
    fn child_loop(&self, offload: Option<Offload>, tools: Vec<Arc<dyn Tool>>) -> AgentLoop {
        let delegation = self.delegation.as_ref().expect("a loop that delegates");
        let limits = delegation.limits;
        let deeper = Delegation {
            depth: delegation.depth + 1,
            ..delegation.clone()
        };
        AgentLoop {
            tools,
            context: Vec::new(),
            max_iterations: limits.child_max_iterations.max(1),
            scrubber: Arc::clone(&self.scrubber),
            prompt_guided: self.prompt_guided,
            gate: self.gate.clone(),
            offload,
            before_change: None,
            scope: Some(Arc::new(Capped {
                inner: self.scope.clone(),
                max_runs: limits.child_max_tool_runs,
            })),
            delegation: Some(deeper),
            vision: self.vision,
        }
    }

    /// Run `jobs` at most `max_parallel` at a time, forwarding their events to `on_event`
    /// and setting each child's state from its outcome.
    async fn run_jobs(
        &self,
        call_id: &str,
        jobs: Vec<Job>,
        children: &mut Children,
        on_event: &mut impl FnMut(AgentEvent),
    ) {
        let delegation = self.delegation.as_ref().expect("a loop that delegates");
        let limits = delegation.limits;
        let (tx, mut rx) = mpsc::unbounded_channel();
        for job in &jobs {
            let task = one_line(&children.tasks[job.index].task);
            on_event(progress(call_id, job.index, &task, Progress::Queued));
        }
        let runs: Vec<_> = jobs
            .into_iter()
            .map(|job| run_child(job, tx.clone(), limits.child_max_tokens))
            .collect();
        drop(tx);
        let mut runs = futures::stream::iter(runs).buffer_unordered(limits.max_parallel.max(1));
        let forward = |on_event: &mut dyn FnMut(AgentEvent), index: usize, event| {
            let (call, task) = (call_id.to_owned(), one_line(&children.tasks[index].task));
            on_event(match event {
                Relay::Started => progress(&call, index, &task, Progress::Running),
                Relay::Event(event) => AgentEvent::FromChild {
                    call,
                    index,
                    event: Box::new(event),
                },
            });
        };
        let mut outcomes = Vec::new();
        loop {
            tokio::select! {
                Some((index, event)) = rx.recv() => forward(on_event, index, event),
                next = runs.next() => match next {
                    Some(outcome) => outcomes.push(outcome),
                    None => break,
                },
            }
        }
        while let Ok((index, event)) = rx.try_recv() {
            forward(on_event, index, event);
        }
        for (index, result) in outcomes {
            let state = settled(result);
            let shown = match &state {
                ChildState::Waiting(_) => Progress::Waiting,
                ChildState::Done(r) if r.success => Progress::Done,
                ChildState::Done(_) => Progress::Failed,
            };
            let task = one_line(&children.tasks[index].task);
            on_event(progress(call_id, index, &task, shown));
            children.tasks[index].state = state;
        }
    }
}

/// What a running child tells its parent.
enum Relay {
    /// It got a slot and began.
    Started,
    /// Something it reported.
    Event(AgentEvent),
}

/// One child's run, boxed (a child's loop may delegate again) and owning everything it uses.
/// Its events go to `tx`; using more than `max_tokens` stops it.
fn run_child(
    job: Job,
    tx: mpsc::UnboundedSender<(usize, Relay)>,
    max_tokens: u64,
) -> BoxFuture<'static, (usize, Result<AgentRun, AgentError>)> {
    Box::pin(async move {
        let index = job.index;
        let _ = tx.send((index, Relay::Started));
        let cancel = CancellationToken::new();
        let stop = cancel.clone();
        let mut spent = 0;
        let on_event = |event: AgentEvent| {
            if let AgentEvent::Usage(used) = &event {
                spent += used.input_tokens + used.output_tokens;
                if spent > max_tokens {
                    stop.cancel();
                }
            }
            if relayed(&event) {
                let _ = tx.send((index, Relay::Event(event)));
            }
        };
        let provider = job.provider.as_ref();
        let result = match job.start {
            ChildStart::Fresh(messages) => {
                job.agent
                    .run_until(provider, messages, &cancel, on_event)
                    .await
            }
            ChildStart::Resume(s, path, resolution) => {
                job.agent
                    .resume_at(provider, *s, &path, resolution, &cancel, on_event)
                    .await
            }
        };
        let result = match result {
            Err(AgentError::Cancelled { partial, .. }) if cancel.is_cancelled() => {
                Err(AgentError::Stopped {
                    reason: format!("it used more than its {max_tokens} tokens"),
                    partial,
                })
            }
            other => other,
        };
        (index, result)
    })
}

/// Whether a child's event concerns the parent (its text and draft cues do not).
fn relayed(event: &AgentEvent) -> bool {
    !matches!(
        event,
        AgentEvent::TextChunk(_)
            | AgentEvent::Final(_)
            | AgentEvent::ClearProgress
            | AgentEvent::OfferContinue
            | AgentEvent::PlanProposed { .. }
    )
}

/// A child's state from how its run ended: a failure is a result the parent reads.
fn settled(result: Result<AgentRun, AgentError>) -> ChildState {
    match result {
        Ok(run) => ChildState::Done(ToolResult::ok(run.answer)),
        Err(AgentError::Suspended(s)) => ChildState::Waiting(s),
        Err(err) => {
            let why = err.paused().unwrap_or_else(|| err.to_string());
            ChildState::Done(ToolResult::err(format!(
                "the sub-task did not finish: {why}"
            )))
        }
    }
}

fn progress(call: &str, index: usize, task: &str, state: Progress) -> AgentEvent {
    AgentEvent::SubTask {
        call: call.to_owned(),
        index,
        task: task.to_owned(),
        state,
    }
}

/// A task's first line, at most 80 characters, for progress lines and headings.
fn one_line(task: &str) -> String {
    let line = task.lines().next().unwrap_or_default().trim();
    if line.chars().count() > 80 {
        format!("{}…", line.chars().take(80).collect::<String>())
    } else {
        line.to_owned()
    }
}
