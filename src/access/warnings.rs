//! What `switchboard check` (and start-up) warns about in the access settings: valid, but
//! risky. A channel anyone may write to while a tool that changes things is enabled (a web
//! chat answering public names without a token is one), and a Telegram `allowed_users`
//! entry that is a username (which can change hands).

use switchboard_channel::{DmPolicy, GroupPolicy};

use crate::config::Config;

/// Tools whose calls change the host (the rest only read).
const MUTATING_TOOLS: &[&str] = &["shell", "file_write", "file_edit"];

/// One warning per risky setting, each naming the channel and what to change.
pub fn warnings(config: &Config) -> Vec<String> {
    let mutating: Vec<&str> = config
        .tools
        .enabled
        .iter()
        .map(String::as_str)
        .filter(|t| MUTATING_TOOLS.contains(t))
        .collect();
    let mut out = Vec::new();
    for (name, channel) in &config.channels {
        let rules = channel.settings().access();
        let open_dm = rules.dm_policy == DmPolicy::Open;
        let open_groups = rules.group_policy == GroupPolicy::Open;
        if channel.kind() == "web" {
            if open_dm && !rules.operator_only && !mutating.is_empty() {
                out.push(format!(
                    "channels.{name}: public_hosts without access_token lets anyone who reaches \
                     those names use the chat while {} is enabled; anyone may ask, and only \
                     [policy.approvers] can approve (set access_token to keep it yours)",
                    mutating.join(", ")
                ));
            }
        } else if (open_dm || open_groups) && !mutating.is_empty() {
            let what = if open_dm { "dm_policy" } else { "group_policy" };
            out.push(format!(
                "channels.{name}: {what} = \"open\" lets anyone reach the agent while {} \
                 is enabled; anyone may ask, and only [policy.approvers] can approve",
                mutating.join(", ")
            ));
        }
        if channel.kind() == "telegram" {
            for entry in rules.allowed_users.iter().filter(|u| is_username(u)) {
                out.push(format!(
                    "channels.{name}.allowed_users: {entry:?} is a username, which can change \
                     hands; use the numeric id (`switchboard access pending` shows it)"
                ));
            }
        }
    }
    out
}

fn is_username(entry: &str) -> bool {
    entry != "*" && entry.parse::<u64>().is_err()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(channel: &str, tools: &str) -> Config {
        let text = format!(
            "[tools]\nenabled = [{tools}]\n[channels.tg]\nkind = \"telegram\"\ntoken = \"\"\n{channel}"
        );
        crate::config::parse(&text, "test.toml", &[]).expect("valid")
    }

    #[test]
    fn an_open_channel_with_shell_enabled_is_warned_about_and_a_closed_one_is_not() {
        let open = config(
            "dm_policy = \"open\"\nallowed_users = [\"*\"]\n",
            "\"shell\"",
        );
        let said = warnings(&open);
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("channels.tg: dm_policy") && said[0].contains("shell"));
        assert!(
            warnings(&config(
                "dm_policy = \"open\"\nallowed_users = [\"*\"]\n",
                "\"file_read\""
            ))
            .is_empty()
        );
        assert!(warnings(&config("", "\"shell\"")).is_empty());
    }

    #[test]
    fn a_web_chat_is_warned_about_only_when_it_answers_public_names_without_a_token() {
        let web = |keys: &str| {
            let text =
                format!("[tools]\nenabled = [\"shell\"]\n[channels.web]\nkind = \"web\"\n{keys}");
            warnings(&crate::config::parse(&text, "test.toml", &[]).expect("valid"))
        };
        assert!(web("").is_empty(), "loopback: the operator's own chat");
        let public = web("public_hosts = [\"chat.example.com\"]\n");
        assert_eq!(public.len(), 1, "{public:?}");
        assert!(public[0].contains("channels.web: public_hosts without access_token"));
        assert!(
            web("public_hosts = [\"c.example\"]\naccess_token = \"s3cret-token\"\n").is_empty()
        );
    }

    #[test]
    fn a_telegram_username_in_allowed_users_is_warned_about() {
        let said = warnings(&config("allowed_users = [\"@alice\", \"42\"]\n", ""));
        assert_eq!(said.len(), 1, "{said:?}");
        assert!(said[0].contains("\"@alice\""), "{said:?}");
    }
}
