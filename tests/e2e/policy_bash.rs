//! The shell analyzer held against bash itself. Each line of `tests/policy/corpus.txt`, and
//! the shapes `generated` makes, is judged by the policy gate and run by a real bash in a
//! throw-away workspace under the real sandbox, where every program is a printer that records
//! the argv bash hands it and does nothing else. The test fails whenever the gate allows a
//! line in guarded mode while bash runs a command whose words the gate did not read, and when
//! a known bypass shape does not ask, is not refused by the deny rule naming what it hides, or
//! runs unasked in autonomous mode.

use std::collections::BTreeSet;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::json;
use switchboard::policy::{self, Mode, Policy, PolicyConfig, Verdict};
use switchboard::sandbox::{Sandbox, SandboxConfig};

/// Programs the printer stands in for: every name the corpus runs. A line the gate allows
/// must name only these, so that nothing it runs goes unrecorded.
const PRINTED: &[&str] = &[
    "awk", "bash", "cat", "diff", "echo", "env", "false", "find", "git", "grep", "head", "id",
    "ls", "nice", "printf", "pwd", "rg", "sed", "sh", "sort", "tail", "tar", "test", "timeout",
    "touch", "true", "wc", "which", "xargs", "[",
];

/// Builtins turned off, so bash looks them up on `PATH` and runs the printer.
const BUILTINS_OFF: &str = "echo printf test [ pwd true false";

/// Files in the workspace, so globs have something to find: option names and a program name.
const PLANTED: &[&str] = &["-delete", "-exec", "-fprint", "a.txt", "rm"];

/// Deny rules naming the programs the bypass shapes hide.
const DENY: &[&str] = &[
    "shell(touch *)",
    "shell(sh *)",
    "shell(sh)",
    "shell(bash *)",
    "shell(bash)",
];

/// Separates the printer's records, and the words of one record.
const RECORD: char = '\u{1e}';
const UNIT: char = '\u{1f}';

/// One corpus line and what it must do.
struct Case {
    line: String,
    expect: Expect,
}

/// What a line must do besides never being allowed unless bash runs what the gate read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// Nothing more.
    Free,
    /// A bypass shape: asks in guarded mode; with `deny`, refused by `DENY`; with `breaker`,
    /// asks in autonomous mode too (its words are unread, so a circuit breaker trips).
    Asks { deny: bool, breaker: bool },
}

#[tokio::test]
async fn the_analyzer_never_allows_a_line_whose_commands_bash_runs_with_other_words() {
    let cases = corpus();
    let guarded = policy_with(Mode::Guarded, &[]);
    let denying = policy_with(Mode::Guarded, DENY);
    let autonomous = policy_with(Mode::Autonomous, &[]);
    let bash = PrintingBash::new();
    let mut failures = Vec::new();
    let (mut allowed, mut asked) = (0, 0);
    for case in &cases {
        let verdict = |p: &Policy| p.evaluate("shell", &json!({"command": case.line}), false, &[]);
        let plain = verdict(&guarded).verdict;
        if let Expect::Asks { deny, breaker } = case.expect {
            let denied = verdict(&denying).verdict;
            let unasked = verdict(&autonomous).verdict;
            let wrong = plain != Verdict::Ask
                || (deny && denied != Verdict::Deny)
                || (breaker && unasked != Verdict::Ask);
            if wrong {
                failures.push(format!(
                    "{}: guarded {plain:?}, with deny rules {denied:?}, autonomous {unasked:?} \
                     (want {:?})",
                    case.line, case.expect
                ));
            }
        }
        if plain != Verdict::Allow {
            asked += 1;
            continue;
        }
        allowed += 1;
        if let Err(why) = bash.agrees(&case.line).await {
            failures.push(format!("{}: allowed, but {why}", case.line));
        }
    }
    eprintln!(
        "differential corpus: {} lines, {allowed} allowed and checked against bash, {asked} asked",
        cases.len()
    );
    assert!(allowed >= 20, "too few allowed lines to check anything");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The bypass shapes are real: bash runs an action the words as written do not show, so a
/// gate reading only the written words would have allowed them.
#[tokio::test]
async fn the_listed_bypasses_really_run_a_hidden_action_in_bash() {
    let bash = PrintingBash::new();
    for (line, hidden) in [
        ("find . -maxdepth 0 {-exec,touch,pd2,\\;}", "-exec"),
        ("find . -maxdepth 0 -exec$u sh -c \"id>pd3\" \\;", "-exec"),
        ("find . -maxdepth 0 -fprint${IFS}p8", "-fprint"),
        ("find . -maxdepth 0 {-fprint,p7}", "-fprint"),
        ("find . -maxdepth 0 -exe? touch x \\;", "-exec"),
    ] {
        let ran = bash.run(line).await;
        let find = ran.iter().find(|argv| argv[0] == "find").expect(line);
        assert!(
            find.iter().any(|w| w == hidden),
            "{line}: bash ran {find:?}"
        );
    }
}

fn policy_with(mode: Mode, deny: &[&str]) -> Policy {
    let config = PolicyConfig {
        mode,
        deny: deny.iter().map(|d| (*d).to_owned()).collect(),
        ..PolicyConfig::default()
    };
    Policy::new(&config).unwrap()
}

/// The corpus file's lines, then the generated shapes.
fn corpus() -> Vec<Case> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/policy/corpus.txt");
    let text = std::fs::read_to_string(&path).unwrap();
    let mut expect = Expect::Free;
    let mut cases = Vec::new();
    for line in text.lines().map(str::trim) {
        match line {
            "" => {}
            "[unread]" => {
                expect = Expect::Asks {
                    deny: true,
                    breaker: true,
                };
            }
            "[read]" => {
                expect = Expect::Asks {
                    deny: true,
                    breaker: false,
                };
            }
            "[free]" => expect = Expect::Free,
            _ if line.starts_with('#') => {}
            _ => cases.push(Case {
                line: line.to_owned(),
                expect,
            }),
        }
    }
    cases.extend(generated());
    cases
}

/// Each program with an action that runs or writes, hidden by each way bash has of making a
/// word: `{W}` is where the action's word goes, and the flag says whether the action runs a
/// program `DENY` names. The expansions (the first ten ways) leave words unread: they must
/// ask, be refused and trip a breaker. The quotings bash reads and the gate decodes too
/// (`$'…'`, glued quotes) must ask, and be refused where the action runs `touch` or `sh`.
fn generated() -> Vec<Case> {
    let templates = [
        ("find . -maxdepth 0 {W} touch x \\;", "-exec", true),
        ("find . -maxdepth 0 {W} out", "-fprint", false),
        ("find . -maxdepth 0 {W}", "-delete", false),
        ("rg {W} touch x .", "--pre", true),
        ("git log {W}=out", "--output", false),
        ("{W} x", "touch", true),
        ("ls | xargs {W} x", "touch", true),
        ("timeout 5 {W} x", "touch", true),
        ("sh {W} 'touch x'", "-c", true),
        ("env {W} x", "touch", true),
        ("sed {W} s/a/b/ a.txt", "-i", false),
        ("awk {W} prog.awk a.txt", "-f", false),
        ("tar -xf x.tar {W}=touch", "--to-command", false),
    ];
    const EXPANSIONS: usize = 10;
    let hide: [fn(&str) -> String; 14] = [
        |w| format!("{{{w},}}"),
        |w| format!("{w}$u"),
        |w| format!("{w}${{u}}"),
        |w| format!("{w}\"$u\""),
        |w| format!("$u{w}"),
        |w| format!("{w}${{IFS:0:0}}"),
        |w| format!("{w}$(true)"),
        |w| format!("{w}`true`"),
        |w| format!("{}?", &w[..w.len() - 1]),
        |w| format!("{w}${{IFS}}x"),
        |w| {
            format!(
                "{}$'\\x{:02x}'",
                &w[..w.len() - 1],
                w.as_bytes()[w.len() - 1]
            )
        },
        |w| format!("{}\"{}\"", &w[..1], &w[1..]),
        |w| format!("{}''{}", &w[..2], &w[2..]),
        |w| format!("'{w}'"),
    ];
    let mut cases = Vec::new();
    for (template, word, runs_denied) in templates {
        for (i, way) in hide.iter().enumerate() {
            let unread = i < EXPANSIONS;
            cases.push(Case {
                line: template.replace("{W}", &way(word)),
                expect: Expect::Asks {
                    deny: unread || runs_denied,
                    breaker: unread,
                },
            });
        }
    }
    cases
}

/// A bash whose programs only print their argv, run through the real sandbox.
struct PrintingBash {
    sandbox: Sandbox,
    /// Holds the printers; readable by the sandbox user.
    bin: tempfile::TempDir,
    /// The sandbox's data directory.
    data: tempfile::TempDir,
}

impl PrintingBash {
    fn new() -> Self {
        let bin = tempfile::tempdir().unwrap();
        let printer = bin.path().join("printer");
        // One write per command: a pipeline's commands run at once, and a record written in
        // several writes could interleave with another's (seen once under load in CI).
        std::fs::write(
            &printer,
            format!(
                "#!/bin/sh\nr=\"{RECORD}${{0##*/}}\"\n\
                 for a in \"$@\"; do r=\"$r{UNIT}$a\"; done\n\
                 printf '%s' \"$r\" >&9\n"
            ),
        )
        .unwrap();
        std::fs::set_permissions(&printer, std::fs::Permissions::from_mode(0o755)).unwrap();
        for name in PRINTED {
            std::os::unix::fs::symlink(&printer, bin.path().join(name)).unwrap();
        }
        std::fs::set_permissions(bin.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        let data = tempfile::tempdir().unwrap();
        let config = SandboxConfig {
            supervisor: Some(env!("CARGO_BIN_EXE_switchboard").into()),
            ..SandboxConfig::default()
        };
        let sandbox = Sandbox::new(&config, data.path());
        Self { sandbox, bin, data }
    }

    /// Every argv bash ran for `line`, in a fresh workspace.
    async fn run(&self, line: &str) -> Vec<Vec<String>> {
        let ws: PathBuf = self
            .data
            .path()
            .join(format!("workspaces/{}", uuid::Uuid::new_v4().simple()));
        let plant: String = PLANTED.iter().map(|f| format!(": > ./{f}; ")).collect();
        let script = format!(
            "exec 9>&1; {plant}PATH={}; enable -n {BUILTINS_OFF}\n{line}\n",
            self.bin.path().display()
        );
        let mut command = self
            .sandbox
            .command(&ws, &script, &[self.bin.path().to_path_buf()])
            .unwrap_or_else(|why| panic!("the sandbox cannot run bash here: {why}"));
        let out = tokio::time::timeout(Duration::from_secs(20), command.output())
            .await
            .expect("bash finished")
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        let home = self.sandbox.prepare_workspace(&ws).unwrap();
        stdout
            .split(RECORD)
            .skip(1)
            .map(|record| {
                record
                    .split(UNIT)
                    .map(|w| w.replace(&home.display().to_string(), "~"))
                    .collect()
            })
            .collect()
    }

    /// Whether every command bash runs for `line` is one the gate read, word for word.
    async fn agrees(&self, line: &str) -> Result<(), String> {
        let read = policy::read_commands(line).ok_or("the gate could not read it")?;
        let read: BTreeSet<Vec<String>> = read.into_iter().collect();
        for words in &read {
            let named = words.first().map(String::as_str).unwrap_or_default();
            if !PRINTED.contains(&named) {
                return Err(format!("`{named}` has no printer: add it to PRINTED"));
            }
        }
        for argv in self.run(line).await {
            let judged = policy::judged_words(&argv);
            if !read.iter().any(|words| same_words(words, &judged)) {
                return Err(format!("bash ran {judged:?}; the gate read {read:?}"));
            }
        }
        Ok(())
    }
}

/// Whether bash's words are the gate's. A glob the gate reads (`./*.txt`: it can make
/// neither an option nor a program name) stands for the one or more paths bash finds for it.
fn same_words(read: &[String], ran: &[String]) -> bool {
    let Some((word, rest)) = read.split_first() else {
        return ran.is_empty();
    };
    if !word.contains(['*', '?', '[']) {
        return ran.first() == Some(word) && same_words(rest, &ran[1..]);
    }
    (1..=ran.len()).any(|n| {
        ran[..n].iter().all(|path| glob_matches(word, path)) && same_words(rest, &ran[n..])
    })
}

/// Shell pattern matching for `*`, `?` and `[…]` (ranges, `!` or `^` negation); `*` and `?`
/// do not cross a `/`.
fn glob_matches(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    matches_from(&p, &t)
}

fn matches_from(p: &[char], t: &[char]) -> bool {
    match p.first() {
        None => t.is_empty(),
        Some('*') => (0..=t.len())
            .take_while(|&n| n == 0 || t[n - 1] != '/')
            .any(|n| matches_from(&p[1..], &t[n..])),
        Some('?') => t.first().is_some_and(|c| *c != '/') && matches_from(&p[1..], &t[1..]),
        Some('[') => match (p.iter().position(|c| *c == ']'), t.first()) {
            (Some(end), Some(c)) if end > 1 => {
                let class = &p[1..end];
                let (negated, class) = match class.first() {
                    Some('!' | '^') => (true, &class[1..]),
                    _ => (false, class),
                };
                let inside = class.iter().enumerate().any(|(i, x)| {
                    x == c
                        || (class.get(i + 1) == Some(&'-')
                            && class.get(i + 2).is_some_and(|hi| x <= c && c <= hi))
                });
                inside != negated && matches_from(&p[end + 1..], &t[1..])
            }
            _ => t.first() == Some(&'[') && matches_from(&p[1..], &t[1..]),
        },
        Some(c) => t.first() == Some(c) && matches_from(&p[1..], &t[1..]),
    }
}

/// Through the whole gateway: in guarded mode a shell call hiding `-exec` in braces asks
/// before anything runs, and with a deny rule one hiding it behind `$u` is refused and never
/// runs (both ran unasked before).
#[tokio::test]
async fn a_find_action_hidden_by_expansion_asks_and_a_deny_rule_refuses_it() {
    use crate::approvals::{buttons_channel, prompt, workspace_file};
    use crate::helpers::{TestApp, key, wait_transcript};
    use switchboard_standins::Reply;

    let config = |deny: &str| {
        format!(
            "[tools]\nenabled = [\"shell\"]\n[policy]\nmode = \"guarded\"\ndeny = [{deny}]\n\
             [policy.approvers]\nfake = [\"admin\"]\n"
        )
    };
    let app = TestApp::spawn_on(buttons_channel(), &config("")).await;
    let chat = key("braces");
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "find . -maxdepth 0 {-exec,touch,pd2,\\;}"}),
        ))
        .push(Reply::text("done"));
    app.channel.say(&chat, "alice", "go").await.unwrap();
    prompt(&app.channel, &chat).await;
    assert!(!workspace_file(&app, "braces", "pd2").exists());

    let app = TestApp::spawn_on(buttons_channel(), &config("\"shell(touch *)\"")).await;
    let chat = key("glued");
    app.llm
        .push(Reply::tool_call(
            "shell",
            json!({"command": "find . -maxdepth 0 -exec$u sh -c \"id>pd3\" \\;"}),
        ))
        .push(Reply::text("refused"));
    app.channel.say(&chat, "alice", "go").await.unwrap();
    wait_transcript(&app.channel, &chat, |t| t.iter().any(|m| m == "refused")).await;
    assert!(!workspace_file(&app, "glued", "pd3").exists());
    let told = app.llm.requests()[1]["messages"].to_string();
    assert!(told.contains("shell(touch *)"), "{told}");
}
