//! The typed outcome of the gate for one tool call, carried unchanged from the policy through
//! the agent loop's events to the turn, the audit log and the metrics. Nothing downstream
//! recovers a verdict, a rule or a decider from text: they read these fields.

use std::fmt;

use serde::{Deserialize, Serialize};

/// The outcome for one call, ordered by severity: `Allow < Ask < Deny`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Run it.
    Allow,
    /// Run it only after an authorised user approves.
    Ask,
    /// Do not run it.
    Deny,
}

impl Verdict {
    /// The lowercase name used in metrics labels and the audit text.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Which configured list a matching pattern came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RuleList {
    /// `[policy] deny`.
    Deny,
    /// `[policy] ask`.
    Ask,
    /// `[policy] allow`.
    Allow,
    /// The conversation's "always allow" rules (granted through an approval).
    AlwaysAllow,
}

impl RuleList {
    /// How the reason text names the list ("deny rule shell(…)").
    pub fn label(self) -> &'static str {
        match self {
            Self::Deny => "deny rule",
            Self::Ask => "ask rule",
            Self::Allow => "allow rule",
            Self::AlwaysAllow => "always-allow rule",
        }
    }
}

/// What matched, when a decision was not just the mode's default.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Matched {
    /// A configured (or "always allow") pattern.
    Rule {
        /// The list it is on.
        list: RuleList,
        /// The pattern as written.
        pattern: String,
    },
    /// A circuit breaker tripped (destructive commands ask in every mode).
    Breaker(String),
}

/// Who made the decision: the audit's `decided_by` comes from here, never from the reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Decider {
    /// The policy's rules or mode, with nobody asked.
    Policy,
    /// A person pressed a button or typed `/approve` / `/deny` (their platform user id).
    User(String),
    /// The gateway itself (an approval nobody answered in time).
    System,
}

impl Decider {
    /// The person who decided, if one did (the audit's `decided_by` column).
    pub fn user(&self) -> Option<&str> {
        match self {
            Self::User(id) => Some(id),
            Self::Policy | Self::System => None,
        }
    }
}

impl fmt::Display for Decider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Policy => f.write_str("policy"),
            Self::User(id) => write!(f, "user {id}"),
            Self::System => f.write_str("system"),
        }
    }
}

/// A verdict, what produced it, why, and who made it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// What to do.
    pub verdict: Verdict,
    /// The rule or breaker that matched; `None` when the mode's default applied.
    pub rule: Option<Matched>,
    /// Why, in words, for the approver and the audit log (e.g. "mode guarded: `npm install`
    /// is not read-only"). Shown, never parsed.
    pub reason: String,
    /// Who decided.
    pub decided_by: Decider,
}

impl Decision {
    /// A decision of the policy with no rule behind it (the mode's default).
    pub fn by_mode(verdict: Verdict, reason: impl Into<String>) -> Self {
        Self {
            verdict,
            rule: None,
            reason: reason.into(),
            decided_by: Decider::Policy,
        }
    }

    /// A decision of the policy because `rule` matched.
    pub fn by_rule(verdict: Verdict, rule: Matched) -> Self {
        let reason = match &rule {
            Matched::Rule { list, pattern } => format!("{} {pattern}", list.label()),
            Matched::Breaker(name) => format!("circuit breaker: {name}"),
        };
        Self {
            verdict,
            rule: Some(rule),
            reason,
            decided_by: Decider::Policy,
        }
    }

    /// The policy asked for `reason`, with no rule recorded (approvals stored before
    /// decisions were typed).
    pub fn asked(reason: impl Into<String>) -> Self {
        Self::by_mode(Verdict::Ask, reason)
    }

    /// Every call runs: what an agent loop without a gate reports.
    pub fn ungated() -> Self {
        Self::by_mode(Verdict::Allow, "no policy")
    }

    /// The same call, decided afterwards by `by` (an approval answered or expired).
    pub fn decided(self, verdict: Verdict, by: Decider) -> Self {
        Self {
            verdict,
            decided_by: by,
            ..self
        }
    }

    /// Whether a circuit breaker produced it.
    pub fn is_breaker(&self) -> bool {
        matches!(self.rule, Some(Matched::Breaker(_)))
    }

    /// The `decision` label of the tool-call metric: the verdict when the policy decided,
    /// `ask` when a person (or expiry) decided an ask.
    pub fn metric_label(&self) -> &'static str {
        match self.decided_by {
            Decider::Policy => self.verdict.as_str(),
            Decider::User(_) | Decider::System => Verdict::Ask.as_str(),
        }
    }
}

/// The one-line text the audit log shows: `allow (policy): allow rule shell(git *)`.
impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({}): {}", self.verdict, self.decided_by, self.reason)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_decision_decided_later_keeps_its_rule_and_reason_and_names_the_decider() {
        let asked = Decision::by_rule(
            Verdict::Ask,
            Matched::Rule {
                list: RuleList::Ask,
                pattern: "shell(echo *)".into(),
            },
        );
        assert_eq!(asked.reason, "ask rule shell(echo *)");
        let approved = asked
            .clone()
            .decided(Verdict::Allow, Decider::User("alice".into()));
        assert_eq!(approved.rule, asked.rule);
        assert_eq!(approved.decided_by.user(), Some("alice"));
        assert_eq!(approved.metric_label(), "ask");
        assert_eq!(
            approved.to_string(),
            "allow (user alice): ask rule shell(echo *)"
        );
    }

    #[test]
    fn a_decision_survives_a_json_round_trip() {
        let d = Decision::by_rule(Verdict::Ask, Matched::Breaker("rm -rf".into()));
        let json = serde_json::to_string(&d).unwrap();
        assert_eq!(serde_json::from_str::<Decision>(&json).unwrap(), d);
        assert!(d.is_breaker());
    }
}
