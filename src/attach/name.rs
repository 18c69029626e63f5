//! Where an attachment lands: `inbox/<event>-<n>-<name>`, with the name reduced to safe
//! characters. The path depends only on the event and the file's position in it, so a
//! retried turn finds (or overwrites) the same file instead of adding a second one.

/// Longest file name kept (the extension survives the cut).
const MAX_NAME: usize = 80;

/// `name` reduced to `[A-Za-z0-9._-]`, no leading dot, at most 80 characters, never empty.
pub fn sanitize_name(name: &str) -> String {
    let base = name.rsplit(['/', '\\']).next().unwrap_or(name);
    let clean: String = base
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let clean = clean.trim_start_matches('.').to_owned();
    if clean.is_empty() || clean.chars().all(|c| c == '_') {
        return "file".into();
    }
    if clean.len() <= MAX_NAME {
        return clean;
    }
    match clean.rfind('.').filter(|&dot| clean.len() - dot <= 12) {
        Some(dot) => format!(
            "{}{}",
            &clean[..MAX_NAME - (clean.len() - dot)],
            &clean[dot..]
        ),
        None => clean[..MAX_NAME].to_owned(),
    }
}

/// The workspace path of attachment `index` of event `event_id`. A long event id keeps its
/// last 40 characters: the web chat's ids are `<session>:<client id>`, whose session part
/// is the same for every message of the conversation (and of its workspace).
pub fn inbox_path(event_id: &str, index: usize, name: &str) -> String {
    let event = sanitize_name(event_id);
    // Sanitised names are ASCII, so any byte offset is a character boundary.
    let event = &event[event.len().saturating_sub(40)..];
    format!("inbox/{event}-{index}-{}", sanitize_name(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hostile_names_become_plain_file_names() {
        assert_eq!(sanitize_name("../../etc/passwd"), "passwd");
        assert_eq!(sanitize_name(".bashrc"), "bashrc");
        assert_eq!(sanitize_name("résumé final.pdf"), "r_sum__final.pdf");
        assert_eq!(sanitize_name(""), "file");
        assert_eq!(sanitize_name("..."), "file");
        let long = format!("{}.csv", "a".repeat(200));
        let short = sanitize_name(&long);
        assert!(
            short.len() == MAX_NAME && short.ends_with(".csv"),
            "{short}"
        );
    }

    #[test]
    fn the_same_event_and_position_always_give_the_same_path() {
        assert_eq!(
            inbox_path("u10001", 0, "data.csv"),
            "inbox/u10001-0-data.csv"
        );
        assert_eq!(
            inbox_path("u10001", 0, "data.csv"),
            inbox_path("u10001", 0, "data.csv")
        );
        assert_ne!(
            inbox_path("u10001", 1, "data.csv"),
            inbox_path("u10001", 0, "data.csv")
        );
    }

    #[test]
    fn two_web_chat_messages_of_one_session_never_share_a_path() {
        let session = "0123456789abcdef0123456789abcdef";
        let first = format!("{session}:6f1c2a90-0000-4000-8000-000000000001");
        let second = format!("{session}:6f1c2a90-0000-4000-8000-000000000002");
        assert_ne!(
            inbox_path(&first, 0, "a.csv"),
            inbox_path(&second, 0, "a.csv")
        );
        assert!(inbox_path(&first, 0, "a.csv").len() < 70);
    }
}
