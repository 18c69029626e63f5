//! Budgets: what a conversation, and a user on one channel, may spend per UTC calendar day
//! in LLM tokens (the provider's usage figures, estimated when absent) and tool runs, as
//! `[budgets]` sets; characters spoken as voice notes are counted beside them, not limited. A turn carries a [`Meter`] loaded from the store: the turn refuses to
//! start when a budget is already spent, stops cleanly when it crosses one, and adds what
//! it used when it ends. `/usage` shows the figures ([`report`]).

use switchboard_channel::ConversationKey;

use crate::clock::Clock;
use crate::config::budgets::BudgetsConfig;
use crate::store::{Spent, StoreError, UsageStore, Used};

const DAY_MS: i64 = 86_400_000;

/// Which budget was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Budget {
    /// This conversation's tokens.
    ConversationTokens,
    /// This conversation's tool runs.
    ConversationToolRuns,
    /// The user's tokens.
    UserTokens,
    /// The user's tool runs.
    UserToolRuns,
}

impl Budget {
    /// What the user reads.
    fn describe(self) -> &'static str {
        match self {
            Self::ConversationTokens => "this conversation's daily token budget",
            Self::ConversationToolRuns => "this conversation's daily tool-run budget",
            Self::UserTokens => "your daily token budget",
            Self::UserToolRuns => "your daily tool-run budget",
        }
    }

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Self::ConversationTokens => "conversation_tokens",
            Self::ConversationToolRuns => "conversation_tool_runs",
            Self::UserTokens => "user_tokens",
            Self::UserToolRuns => "user_tool_runs",
        }
    }
}

/// A budget that is reached, and when it resets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reached {
    /// Which one.
    pub budget: Budget,
    /// Its limit.
    pub limit: u64,
    /// The next UTC midnight (Unix ms).
    pub resets_at: i64,
    /// "Now" when it was found (Unix ms).
    pub now: i64,
}

impl Reached {
    /// The one line the user sees.
    pub fn message(&self) -> String {
        let left = (self.resets_at - self.now).max(0) / 60_000;
        let unit = match self.budget {
            Budget::ConversationTokens | Budget::UserTokens => "tokens",
            Budget::ConversationToolRuns | Budget::UserToolRuns => "tool runs",
        };
        format!(
            "🛑 Stopped: {} ({} {unit}) is used up. It resets at 00:00 UTC, in {} h {} min.",
            self.budget.describe(),
            self.limit,
            left / 60,
            left % 60
        )
    }
}

/// The scope a conversation's usage is counted under.
pub fn conversation_scope(key: &ConversationKey) -> String {
    format!("conversation:{key}")
}

/// The scope a user's usage is counted under (per channel: ids are per platform).
pub fn user_scope(key: &ConversationKey, user: &str) -> String {
    format!("user:{}:{user}", key.channel)
}

/// One turn's budgets: what its scopes had used today when it began, and what it used since.
#[derive(Debug, Clone)]
pub struct Meter {
    limits: BudgetsConfig,
    scopes: [String; 2],
    before: [Used; 2],
    /// What this turn used so far.
    pub turn: Used,
    day: i64,
    clock: Clock,
}

impl Meter {
    /// The meter of a turn in `key` for `user`, loaded with today's usage when a limit is
    /// set (without one nothing is enforced, so the turn reads nothing and only adds).
    pub async fn load(
        store: &dyn UsageStore,
        limits: BudgetsConfig,
        key: &ConversationKey,
        user: &str,
        clock: &Clock,
    ) -> Result<Self, StoreError> {
        let meter = Self::new(limits, key, user, clock);
        if limits.any() {
            meter.read(store).await
        } else {
            Ok(meter)
        }
    }

    /// This meter with today's usage of its scopes read from the store.
    async fn read(mut self, store: &dyn UsageStore) -> Result<Self, StoreError> {
        for (scope, before) in self.scopes.iter().zip(&mut self.before) {
            *before = store.usage(scope, self.day).await?;
        }
        Ok(self)
    }

    /// The meter with nothing used before this turn.
    fn new(limits: BudgetsConfig, key: &ConversationKey, user: &str, clock: &Clock) -> Self {
        let day = clock.now_ms().div_euclid(DAY_MS);
        let scopes = [conversation_scope(key), user_scope(key, user)];
        Self {
            limits,
            scopes,
            before: [Used::default(); 2],
            turn: Used::default(),
            day,
            clock: clock.clone(),
        }
    }

    /// Count one LLM round-trip's tokens.
    pub fn add_tokens(&mut self, tokens: u64) {
        self.turn.tokens += i64::try_from(tokens).unwrap_or(i64::MAX);
    }

    /// Count one tool run.
    pub fn add_tool_run(&mut self) {
        self.turn.tool_runs += 1;
    }

    /// Count the characters of an answer spoken as a voice note (counted, not limited).
    pub fn add_spoken(&mut self, chars: u64) {
        self.turn.spoken_chars += i64::try_from(chars).unwrap_or(i64::MAX);
    }

    /// The first budget that is used up (today's usage plus this turn's), if any.
    pub fn reached(&self) -> Option<Reached> {
        let l = &self.limits;
        let [conv, user] = self.before;
        let checks = [
            (
                Budget::ConversationTokens,
                l.conversation_tokens_per_day,
                conv.tokens,
            ),
            (
                Budget::ConversationToolRuns,
                l.conversation_tool_runs_per_day,
                conv.tool_runs,
            ),
            (Budget::UserTokens, l.user_tokens_per_day, user.tokens),
            (
                Budget::UserToolRuns,
                l.user_tool_runs_per_day,
                user.tool_runs,
            ),
        ];
        let turn = |b: Budget| match b {
            Budget::ConversationTokens | Budget::UserTokens => self.turn.tokens,
            Budget::ConversationToolRuns | Budget::UserToolRuns => self.turn.tool_runs,
        };
        let now = self.clock.now_ms();
        checks
            .into_iter()
            .find(|(b, limit, used)| *limit > 0 && used + turn(*b) >= *limit as i64)
            .map(|(budget, limit, _)| Reached {
                budget,
                limit,
                resets_at: (self.day + 1) * DAY_MS,
                now,
            })
    }

    /// This turn's usage for both scopes (on the day the turn began), if it used anything:
    /// written with the turn's completion (`Store::complete`).
    pub fn spent(&self) -> Option<Spent<'_>> {
        (self.turn != Used::default()).then_some(Spent {
            scopes: &self.scopes,
            day: self.day,
            used: self.turn,
        })
    }

    /// Add this turn's usage to both scopes now, for a turn that ends without a completion
    /// (one suspended for an approval, or handed back at shutdown).
    pub async fn record(&self, store: &dyn UsageStore) -> Result<(), StoreError> {
        match self.spent() {
            Some(spent) => store.add_usage(spent.scopes, spent.day, spent.used).await,
            None => Ok(()),
        }
    }
}

/// `/usage`: today's figures for this conversation and this user, against their limits.
pub async fn report(
    store: &dyn UsageStore,
    limits: BudgetsConfig,
    key: &ConversationKey,
    user: &str,
    clock: &Clock,
) -> Result<String, StoreError> {
    let meter = Meter::new(limits, key, user, clock).read(store).await?;
    let of = |used: i64, limit: u64| {
        if limit == 0 {
            format!("{used}")
        } else {
            format!("{used} / {limit}")
        }
    };
    let [conv, mine] = meter.before;
    let left = ((meter.day + 1) * DAY_MS - clock.now_ms()).max(0) / 60_000;
    let spoken = match conv.spoken_chars {
        0 => String::new(),
        n => format!("\n• spoken here as voice notes: {n} characters"),
    };
    Ok(format!(
        "📊 Usage today (UTC):\n• this conversation: {} tokens, {} tool runs\n• you: {} tokens, {} tool runs{spoken}\nResets at 00:00 UTC, in {} h {} min.",
        of(conv.tokens, limits.conversation_tokens_per_day),
        of(conv.tool_runs, limits.conversation_tool_runs_per_day),
        of(mine.tokens, limits.user_tokens_per_day),
        of(mine.tool_runs, limits.user_tool_runs_per_day),
        left / 60,
        left % 60
    ))
}
