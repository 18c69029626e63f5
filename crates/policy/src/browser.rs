//! The browser tool's verdicts. `browser(HOST)` rules (a glob over the host of an `open`
//! call's URL) allow, ask or deny like any rule; without one, opening a page asks in
//! `guarded` and `manual` mode (the gate lets a host already opened in the same turn
//! through), the actions on an open page follow the mode, and typing into a password field
//! (`password = true`, which the tool demands for one) asks in every mode, whatever an
//! allow rule says.

use serde_json::Value;

use super::{Decision, Mode, Verdict};

/// Actions that only look at the page or move within what it already offers.
const LOOKING: &[&str] = &["read", "scroll", "screenshot", "back", "close"];

/// The decision for one browser call, given the first rule that `matched` it.
pub(crate) fn judge(mode: Mode, args: &Value, matched: Option<Decision>) -> Decision {
    let action = args["action"].as_str().unwrap_or_default();
    let password = action == "type" && args["password"].as_bool() == Some(true);
    match matched {
        Some(denied) if denied.verdict == Verdict::Deny => return denied,
        _ if password => {
            return Decision::by_mode(
                Verdict::Ask,
                "typing into a password field always asks".to_owned(),
            );
        }
        Some(decision) => return decision,
        None => {}
    }
    let verdict = match (mode, action) {
        (Mode::Autonomous, _) => Verdict::Allow,
        (Mode::ReadOnly, "open") => Verdict::Allow,
        (_, action) if LOOKING.contains(&action) => Verdict::Allow,
        (Mode::ReadOnly, _) => Verdict::Deny,
        (_, "open") => Verdict::Ask,
        (Mode::Manual, _) => Verdict::Ask,
        (_, _) => Verdict::Allow,
    };
    let reason = match verdict {
        Verdict::Ask if action == "open" => {
            format!("mode {mode}: opening a host not yet opened in this turn asks")
        }
        Verdict::Deny => format!("mode {mode}: the browser may only look, not `{action}`"),
        _ => format!("mode {mode}: browser `{action}` on a page already opened"),
    };
    Decision::by_mode(verdict, reason)
}
