//! One browser action as the model asks for it (`action` and its arguments), and the tool
//! result it gets back: the page, with every request the proxy refused meanwhile.

use serde_json::Value;

use super::proxy::Refusal;
use crate::agent::ToolResult;

/// The tool result of an action, with what the proxy refused meanwhile.
pub fn finish(result: Result<String, String>, refused: &[Refusal]) -> ToolResult {
    let mut notes = String::new();
    for refusal in refused {
        notes.push_str(&format!(
            "refused: {} ({})\n",
            refusal.target, refusal.reason
        ));
    }
    match result {
        Ok(text) if notes.is_empty() => ToolResult::ok(text),
        // After the page's url and title, which the audit's cut output keeps first.
        Ok(text) => match text.split_once("\n\n") {
            Some((head, body)) => ToolResult::ok(format!("{head}\n{notes}\n{body}")),
            None => ToolResult::ok(format!("{notes}\n{text}")),
        },
        Err(err) => ToolResult::failed(notes, err),
    }
}

/// One action the model asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    Open(String),
    Read,
    Click(u64),
    Type {
        n: u64,
        text: String,
        submit: bool,
        /// The model says the field is a password field (which the policy always asks for).
        password: bool,
    },
    Select {
        n: u64,
        option: String,
    },
    Scroll {
        down: bool,
    },
    Back,
    Screenshot,
    Close,
}

impl Action {
    /// The action `args` describe, or what is missing.
    pub fn parse(args: &Value) -> Result<Self, String> {
        let text = |key: &str| {
            args[key]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| format!("this action needs `{key}`"))
        };
        let reference = || {
            args["ref"]
                .as_u64()
                .filter(|n| *n > 0)
                .ok_or_else(|| "this action needs `ref`, a number from the page text".to_owned())
        };
        Ok(match args["action"].as_str().unwrap_or_default() {
            "open" => Self::Open(text("url")?),
            "read" => Self::Read,
            "click" => Self::Click(reference()?),
            "type" => Self::Type {
                n: reference()?,
                text: text("text")?,
                submit: args["submit"].as_bool().unwrap_or(false),
                password: args["password"].as_bool().unwrap_or(false),
            },
            "select" => Self::Select {
                n: reference()?,
                option: text("option")?,
            },
            "scroll" => Self::Scroll {
                down: args["direction"].as_str() != Some("up"),
            },
            "back" => Self::Back,
            "screenshot" => Self::Screenshot,
            "close" => Self::Close,
            other => return Err(format!("unknown action {other:?}")),
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn actions_name_what_they_are_missing() {
        let click = Action::parse(&json!({"action": "click", "ref": 3})).unwrap();
        assert_eq!(click, Action::Click(3));
        let missing = Action::parse(&json!({"action": "click"})).unwrap_err();
        assert!(missing.contains("`ref`"), "{missing}");
        assert!(Action::parse(&json!({"action": "type", "ref": 1})).is_err());
        assert!(Action::parse(&json!({"action": "fly"})).is_err());
        let up = Action::parse(&json!({"action": "scroll", "direction": "up"})).unwrap();
        assert_eq!(up, Action::Scroll { down: false });
    }

    #[test]
    fn refusals_follow_the_page_address_and_stay_on_an_error() {
        let refused = [Refusal {
            target: "169.254.169.254:80".into(),
            reason: "not allowed".into(),
        }];
        let page = finish(Ok("url: http://a/\ntitle: A\n\nbody".into()), &refused);
        assert_eq!(
            page.output,
            "url: http://a/\ntitle: A\nrefused: 169.254.169.254:80 (not allowed)\n\nbody"
        );
        let failed = finish(Err("the page did not load".into()), &refused);
        assert!(
            failed
                .to_model_text()
                .contains("refused: 169.254.169.254:80")
        );
    }
}
