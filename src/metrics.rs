//! Prometheus metrics: one registry per gateway (so tests running several gateways in one
//! process stay apart), rendered in the text format at `GET /metrics`. Gauges that are
//! cheap to read from the source of truth (inbox depth, pending approvals) are set at scrape.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounterVec, IntGauge, IntGaugeVec, Opts, Registry,
    TextEncoder,
};

/// Every metric the gateway exports.
pub struct Metrics {
    registry: Registry,
    /// Inbound events by channel and outcome (stored, duplicate, error).
    pub inbound: IntCounterVec,
    /// Inbox rows waiting (set at scrape).
    pub inbox_pending: IntGauge,
    /// Turns by outcome (started, finished, failed, suspended).
    pub turns: IntCounterVec,
    /// Turn wall time.
    pub turn_seconds: HistogramVec,
    /// Time from turn start to the first visible text.
    pub first_token_seconds: HistogramVec,
    /// Tool calls by tool and policy decision.
    pub tool_calls: IntCounterVec,
    /// Draft operations by result (sent, coalesced, rate_limited).
    pub draft_edits: IntCounterVec,
    /// Approvals waiting (set at scrape).
    pub approvals_pending: IntGauge,
    /// Time from approval request to decision.
    pub approval_seconds: HistogramVec,
    /// Conversations with a live actor (set at scrape).
    pub active_conversations: IntGauge,
    /// LLM tokens counted against budgets, by channel.
    pub llm_tokens: IntCounterVec,
    /// Tool runs counted against budgets, by channel.
    pub tool_runs: IntCounterVec,
    /// Turns stopped or messages refused by a budget, by channel and budget.
    pub budget_stops: IntCounterVec,
    /// Replica coordination by event: leases taken, refused, lost, writes fenced, platform
    /// calls whose outcome is unknown after a lost lease, listener rescans.
    pub cluster: IntCounterVec,
    /// MCP tool calls by server and outcome (ok, tool_error, error).
    pub mcp_calls: IntCounterVec,
    /// LLM calls moved to the next provider of a profile's fallback chain, by provider.
    pub llm_fallbacks: IntCounterVec,
    /// Messages a platform refused for good, by channel and reason (set at scrape).
    pub channel_undelivered: IntGaugeVec,
    /// Failed calls to the `[memory.embeddings]` endpoint, by stage (`query`: a recall fell
    /// back to full text; `save`: memories wait for their vectors).
    pub memory_embedding_failures: IntCounterVec,
    /// LLM calls in flight, by provider (set at scrape).
    pub llm_in_flight: IntGaugeVec,
    /// LLM calls waiting for one in flight to end, by provider (set at scrape).
    pub llm_waiting: IntGaugeVec,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// A fresh registry with every metric registered.
    #[expect(
        clippy::too_many_lines,
        reason = "one field per metric, in the order of the struct: the registry's table of contents"
    )]
    pub fn new() -> Self {
        let r = Registry::new();
        Self {
            inbound: counter(
                &r,
                "switchboard_inbound_events_total",
                "Inbound events by channel and outcome.",
                &["channel", "outcome"],
            ),
            inbox_pending: gauge(
                &r,
                "switchboard_inbox_pending",
                "Inbox events not yet processed.",
            ),
            turns: counter(
                &r,
                "switchboard_turns_total",
                "Turns by outcome.",
                &["outcome"],
            ),
            turn_seconds: histogram(&r, "switchboard_turn_duration_seconds", "Turn wall time."),
            first_token_seconds: histogram(
                &r,
                "switchboard_llm_first_token_seconds",
                "Turn start to first visible text.",
            ),
            tool_calls: counter(
                &r,
                "switchboard_tool_calls_total",
                "Tool calls by tool and policy decision.",
                &["tool", "decision"],
            ),
            draft_edits: counter(
                &r,
                "switchboard_draft_operations_total",
                "Draft sends and edits by result.",
                &["result"],
            ),
            approvals_pending: gauge(
                &r,
                "switchboard_approvals_pending",
                "Approvals waiting for a decision.",
            ),
            approval_seconds: histogram(
                &r,
                "switchboard_approval_decision_seconds",
                "Approval request to decision.",
            ),
            active_conversations: gauge(
                &r,
                "switchboard_active_conversations",
                "Conversations with a live actor.",
            ),
            llm_tokens: budget_counter(&r, "llm_tokens"),
            tool_runs: budget_counter(&r, "tool_runs"),
            budget_stops: budget_counter(&r, "budget_stops"),
            cluster: cluster_counter(&r),
            mcp_calls: mcp_counter(&r),
            llm_fallbacks: fallback_counter(&r),
            channel_undelivered: undelivered_gauge(&r),
            memory_embedding_failures: counter(
                &r,
                "switchboard_memory_embedding_failures_total",
                "Failed calls to the memory embedding endpoint, by stage (query, save).",
                &["stage"],
            ),
            llm_in_flight: provider_gauge(
                &r,
                "switchboard_llm_calls_in_flight",
                "LLM calls in flight, by provider (at most its max_in_flight).",
            ),
            llm_waiting: provider_gauge(
                &r,
                "switchboard_llm_calls_waiting",
                "LLM calls waiting for a place under the provider's max_in_flight.",
            ),
            registry: r,
        }
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        let _ = TextEncoder::new().encode(&self.registry.gather(), &mut out);
        String::from_utf8(out).unwrap_or_default()
    }
}

/// MCP tool calls by server and outcome.
fn mcp_counter(registry: &Registry) -> IntCounterVec {
    counter(
        registry,
        "switchboard_mcp_calls_total",
        "MCP tool calls by server and outcome (ok, tool_error, error).",
        &["server", "outcome"],
    )
}

/// `switchboard_channel_undelivered{channel, reason}` (see [`Metrics::channel_undelivered`]).
fn undelivered_gauge(registry: &Registry) -> IntGaugeVec {
    let opts = Opts::new(
        "switchboard_channel_undelivered",
        "Messages a platform refused for good since start (e.g. WhatsApp failed statuses, the 24-hour window), by channel and reason.",
    );
    let g = IntGaugeVec::new(opts, &["channel", "reason"]).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

/// `switchboard_llm_fallbacks_total{from, to}`: moves along a profile's provider chain.
/// A gauge family by provider name, registered in `registry`.
fn provider_gauge(registry: &Registry, name: &str, help: &str) -> IntGaugeVec {
    let g = IntGaugeVec::new(Opts::new(name, help), &["provider"]).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

fn fallback_counter(registry: &Registry) -> IntCounterVec {
    let help = "LLM calls moved on to the next provider before any token, by provider.";
    counter(
        registry,
        "switchboard_llm_fallbacks_total",
        help,
        &["from", "to"],
    )
}

/// One of the budget counters (`llm_tokens`, `tool_runs`, `budget_stops`), by channel.
fn budget_counter(registry: &Registry, which: &str) -> IntCounterVec {
    let (help, labels): (&str, &[&str]) = match which {
        "llm_tokens" => (
            "LLM tokens used (provider figures, estimated when absent), by channel.",
            &["channel"],
        ),
        "tool_runs" => (
            "Tool runs counted against budgets, by channel.",
            &["channel"],
        ),
        _ => (
            "Turns stopped or messages refused because a budget was reached.",
            &["channel", "budget"],
        ),
    };
    counter(
        registry,
        &format!("switchboard_{which}_total"),
        help,
        labels,
    )
}

/// A counter family registered in `registry`.
fn counter(registry: &Registry, name: &str, help: &str, labels: &[&str]) -> IntCounterVec {
    let c = IntCounterVec::new(Opts::new(name, help), labels).expect("valid metric");
    registry
        .register(Box::new(c.clone()))
        .expect("unique metric");
    c
}

/// Buckets of every duration histogram, in seconds: 50 ms up to the 5-minute approval timeout.
const SECONDS: &[f64] = &[0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0];

/// A duration histogram (no labels) registered in `registry`.
fn histogram(registry: &Registry, name: &str, help: &str) -> HistogramVec {
    let opts = HistogramOpts::new(name, help).buckets(SECONDS.to_vec());
    let h = HistogramVec::new(opts, &[]).expect("valid metric");
    registry
        .register(Box::new(h.clone()))
        .expect("unique metric");
    h
}

/// A gauge registered in `registry`.
fn gauge(registry: &Registry, name: &str, help: &str) -> IntGauge {
    let g = IntGauge::new(name, help).expect("valid metric");
    registry
        .register(Box::new(g.clone()))
        .expect("unique metric");
    g
}

/// `switchboard_cluster_events_total{event}` (see [`Metrics::cluster`]).
fn cluster_counter(registry: &Registry) -> IntCounterVec {
    counter(
        registry,
        "switchboard_cluster_events_total",
        "Replica coordination events: lease_acquired, lease_busy, lease_lost, fenced, unknown_outcome, rescan.",
        &["event"],
    )
}
