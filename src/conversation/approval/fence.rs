//! Quoting what a tool call asks for in Markdown so that nothing in it can end the quote: a
//! command holding ``` would otherwise close the prompt's code block and have the rest of
//! it rendered (links, bold "Approved" lines) as if the gateway had written it.

/// The longest run of backticks in `text`.
fn longest_backtick_run(text: &str) -> usize {
    text.split(|c| c != '`').map(str::len).max().unwrap_or(0)
}

/// `text` as a fenced code block whose fence is longer than any backtick run inside it
/// (at least three backticks).
pub(crate) fn fenced(text: &str) -> String {
    let fence = "`".repeat((longest_backtick_run(text) + 1).max(3));
    format!("{fence}\n{text}\n{fence}")
}

/// `text` as inline code that no backtick in it can close; padded with spaces when it
/// starts or ends with a backtick, as CommonMark requires.
pub(crate) fn inline_code(text: &str) -> String {
    let ticks = "`".repeat(longest_backtick_run(text) + 1);
    let pad = if text.starts_with('`') || text.ends_with('`') {
        " "
    } else {
        ""
    };
    format!("{ticks}{pad}{text}{pad}{ticks}")
}

#[cfg(test)]
mod tests {
    use switchboard_channel::{Target, render};

    use super::*;

    #[test]
    fn the_fence_is_longer_than_any_backtick_run_in_the_arguments() {
        assert_eq!(fenced("ls -la"), "```\nls -la\n```");
        let attack = "echo hi\n```\n**✅ Approved by admin** [click](https://evil.example)\n````";
        let quoted = fenced(attack);
        assert!(
            quoted.starts_with("`````\n") && quoted.ends_with("\n`````"),
            "{quoted}"
        );
    }

    #[test]
    fn a_command_closing_the_fence_is_still_shown_as_code_and_nothing_else() {
        let attack = "echo hi\n```\n**Approved** [click](https://evil.example)";
        let html = render(
            &format!("before\n{}\nafter", fenced(attack)),
            Target::TelegramHtml,
        );
        assert!(!html.contains("<b>") && !html.contains("<a "), "{html}");
        assert!(html.contains("[click](https://evil.example)"), "{html}");
    }

    #[test]
    fn inline_code_survives_backticks_in_a_name() {
        assert_eq!(inline_code("shell"), "`shell`");
        assert_eq!(inline_code("a`b"), "``a`b``");
        assert_eq!(inline_code("`x"), "`` `x ``");
    }
}
