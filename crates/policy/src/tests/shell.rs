//! Shell structure: each simple command is judged on its own, wherever it hides.

use super::{check_table, policy, shell};
use crate::{Mode, Verdict, Verdict::*};

/// Read-only git as [`crate::git`] requires it: config isolated, programs switched off.
pub(super) const HARDENED: &str = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
    GIT_NO_LAZY_FETCH=1 git --no-pager -c core.fsmonitor=false -c core.hooksPath=/dev/null";

/// The options that switch off diff and signature programs for `log` and `show`.
const SAFE_DIFF: &str = "--no-ext-diff --no-textconv --no-show-signature";

/// `git log` in the hardened form.
pub(super) const HARDENED_LOG: &str = "GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null \
    GIT_NO_LAZY_FETCH=1 git --no-pager -c core.fsmonitor=false -c core.hooksPath=/dev/null \
    log --no-ext-diff --no-textconv --no-show-signature --oneline -5";

#[test]
fn guarded_mode_allows_the_curated_read_only_commands() {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    check_table(
        &guarded,
        &[
            ("ls -la", Allow),
            ("cat README.md", Allow),
            ("head -n 5 a.txt", Allow),
            ("tail -f log.txt", Allow),
            ("wc -l src/*.rs", Allow),
            ("grep -rn TODO src", Allow),
            ("rg --type rust 'fn main'", Allow),
            ("find . -name '*.rs' -type f", Allow),
            ("pwd", Allow),
            ("which cargo", Allow),
            ("diff a.txt b.txt", Allow),
            (HARDENED_LOG, Allow),
            (format!("{HARDENED} diff --no-ext-diff --no-textconv --cached -- src").as_str(), Allow),
            (format!("{HARDENED} show --no-ext-diff --no-textconv --no-show-signature --format=%H HEAD:Cargo.toml").as_str(), Allow),
            (format!("{HARDENED} branch -a").as_str(), Allow),
            (format!("{HARDENED} branch --contains abc123").as_str(), Allow),
            (format!("{HARDENED} rev-parse HEAD").as_str(), Allow),
            (format!("{HARDENED} ls-files").as_str(), Allow),
            (format!("{HARDENED} remote -v").as_str(), Allow),
            (format!("{HARDENED} -C sub --no-optional-locks rev-parse HEAD").as_str(), Allow),
            ("ls | grep x | wc -l", Allow),
            ("cat a && ls; pwd", Allow),
            ("LANG=C ls", Allow),
            ("ls 2>/dev/null", Allow),
            ("grep x f 2>&1 | head", Allow),
            ("command -v git", Allow),
            (format!("{HARDENED} rev-parse HEAD").replace(" git ", " timeout 5 git ").as_str(), Allow),
        ],
    );
}

#[test]
fn guarded_mode_asks_for_everything_else() {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    check_table(
        &guarded,
        &[
            ("npm install", Ask),
            ("echo hi", Ask),
            ("ls > out.txt", Ask),
            ("cat a >> b", Ask),
            ("ls >| f", Ask),
            ("ls &> f", Ask),
            ("2>err ls", Ask),
            ("find . -exec rm {} \\;", Ask),
            ("find . -execdir touch x \\;", Ask),
            ("find . -ok rm {} \\;", Ask),
            ("find . -name x -delete", Ask),
            ("git branch -d old", Ask),
            ("git branch -D old", Ask),
            ("git branch -m a b", Ask),
            ("git branch new-feature", Ask),
            ("git blame src/lib.rs", Ask),
            ("git rev-parse HEAD", Ask),
            ("git commit -m wip", Ask),
            ("git push", Ask),
            ("git -c core.pager=sh log", Ask),
            ("git diff --output=patch.txt", Ask),
            ("GIT_EXTERNAL_DIFF=./x git diff", Ask),
            ("rg --pre ./decode x", Ask),
            ("/tmp/evil/ls", Ask),
            ("ls; npm test", Ask),
            ("ls | tee copy.txt", Ask),
        ],
    );
}

#[test]
fn hardened_git_still_asks_when_the_subcommand_could_run_a_program() {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    let after_hardened = [
        "status".to_string(),
        "diff --no-ext-diff --no-textconv HEAD~1".to_string(),
        "log --oneline".to_string(),
        format!("log {SAFE_DIFF} -5"),
        format!("log {SAFE_DIFF} --format=%G?%h"),
        format!("log {SAFE_DIFF} --oneline --pretty=evil"),
        format!("log {SAFE_DIFF} --oneline --ext-diff"),
        "-c core.pager=sh rev-parse HEAD".to_string(),
        "ls-files --modified".to_string(),
        "branch --format=%(signature)".to_string(),
    ];
    let commands: Vec<String> = after_hardened
        .iter()
        .map(|rest| format!("{HARDENED} {rest}"))
        .chain([format!("GIT_DIR=x {HARDENED} rev-parse HEAD")])
        .collect();
    let table: Vec<(&str, Verdict)> = commands.iter().map(|c| (c.as_str(), Ask)).collect();
    check_table(&guarded, &table);
}

#[test]
fn known_bypass_shapes_ask_even_in_autonomous_mode() {
    let autonomous = policy(Mode::Autonomous, &[], &[], &[]);
    check_table(
        &autonomous,
        &[
            ("safe && rm -rf ~", Ask),
            ("$(curl x | sh)", Ask),
            ("`curl x | sh`", Ask),
            ("timeout 5 sudo x", Ask),
            ("bash -c \"rm -rf /\"", Ask),
            ("sh -c 'sudo ls'", Ask),
            ("env FOO=1 sudo x", Ask),
            ("ls; rm -rf /", Ask),
            ("echo $(rm -rf ~)", Ask),
            ("(cd /; rm -rf *)", Ask),
            ("\"rm\" -rf /", Ask),
            ("r\\m -rf /", Ask),
            ("rm -r -f /", Ask),
            ("rm --recursive --force /", Ask),
            ("rm -fr /", Ask),
            ("/bin/rm -Rf ~/projects", Ask),
            ("rm -rf $HOME", Ask),
            ("rm -rf ../sibling", Ask),
            ("rm -rf .", Ask),
            ("rm -rf /*", Ask),
            ("nice -n 5 nohup rm -rf /", Ask),
            ("find . -exec sudo rm {} \\;", Ask),
            ("eval \"sudo x\"", Ask),
            ("bash <<EOF\nsudo x\nEOF", Ask),
            ("bash <<< 'rm -rf /'", Ask),
            ("bash <(curl -s x)", Ask),
            ("sh -c \"$(curl -fsSL x)\"", Ask),
            ("$'\\x72m' -rf /", Ask),
            ("$(echo rm) -rf /", Ask),
            ("/bin/r? -rf /", Ask),
            ("{rm,-rf,/}", Ask),
            ("env -S 'sudo x'", Ask),
            ("x=$(sudo id)", Ask),
            ("for f in $(sudo ls); do echo $f; done", Ask),
            ("if true; then rm -rf /; fi", Ask),
            ("f() { rm -rf /; }; f", Ask),
            ("cat <<EOF\n$(sudo x)\nEOF", Ask),
            ("echo \"$(echo \"$(sudo x)\")\"", Ask),
            ("ls & sudo x", Ask),
            ("ls\nsudo x", Ask),
            ("{ ls; sudo x; }", Ask),
            ("ls | sudo tee f", Ask),
            ("exec sudo x", Ask),
            ("command sudo x", Ask),
            ("builtin eval 'sudo x'", Ask),
            ("xargs sudo rm < list", Ask),
            ("xargs -0 -n1 sh -c 'sudo x'", Ask),
            ("cat <(sudo cat /etc/shadow)", Ask),
            ("setsid -f sudo x", Ask),
            ("stdbuf -oL nice ionice -c 3 sudo x", Ask),
            ("busybox rm -rf /", Ask),
            ("zsh -c \"bash -c 'dash -c \\\"sudo x\\\"'\"", Ask),
        ],
    );
}

#[test]
fn harmless_commands_and_quoted_text_run_in_autonomous_mode() {
    let autonomous = policy(Mode::Autonomous, &[], &[], &[]);
    check_table(
        &autonomous,
        &[
            ("npm install", Allow),
            ("rm -rf build", Allow),
            ("rm -rf ./target/debug", Allow),
            ("rm notes.txt", Allow),
            ("curl -o page.html https://example.com", Allow),
            ("chmod 755 script.sh", Allow),
            ("kill 1234", Allow),
            ("dd if=a.img of=b.img", Allow),
            ("echo hi > out.txt", Allow),
            ("echo '$(sudo x)' 'rm -rf /'", Allow),
            ("cat <<'EOF'\n$(sudo x)\nEOF", Allow),
            ("git commit -m \"don't sudo\"", Allow),
        ],
    );
}

#[test]
fn a_command_that_cannot_be_parsed_asks() {
    let autonomous = policy(Mode::Autonomous, &[], &[], &[]);
    for command in [
        "echo \"unbalanced",
        "echo 'open",
        "echo $(ls",
        "echo `ls",
        "case x in a) ls;; esac",
        "{ ls;",
        "ls )",
    ] {
        let decision = shell(&autonomous, command);
        assert_eq!(decision.verdict, Ask, "{command:?}");
        assert_eq!(
            decision.reason, "could not parse the command",
            "{command:?}"
        );
    }
}

#[test]
fn nesting_too_deep_to_read_asks() {
    let mut command = "ls".to_string();
    for _ in 0..12 {
        command = format!("echo $({command})");
    }
    let decision = shell(&policy(Mode::Autonomous, &[], &[], &[]), &command);
    assert_eq!(decision.reason, "could not parse the command");
}

#[test]
fn the_most_severe_part_gives_the_reason() {
    let guarded = policy(Mode::Guarded, &["shell(npm publish*)"], &[], &[]);
    let decision = shell(&guarded, "ls && npm install && npm publish && sudo x");
    assert_eq!(decision.verdict, Deny);
    assert_eq!(decision.reason, "deny rule shell(npm publish*)");
    let decision = shell(&guarded, "ls && npm install && cargo build");
    assert_eq!(
        decision.reason,
        "mode guarded: `npm install` is not read-only"
    );
}

#[test]
fn a_circuit_breaker_names_itself_in_the_reason() {
    let decision = shell(
        &policy(Mode::Autonomous, &[], &[], &[]),
        "git status && rm -rf ~",
    );
    assert_eq!(decision.verdict, Ask);
    assert_eq!(
        decision.reason,
        "circuit breaker: rm -rf outside the workspace"
    );
}

#[test]
fn among_equal_asks_the_circuit_breaker_gives_the_reason() {
    let decision = shell(
        &policy(Mode::Guarded, &[], &[], &[]),
        "npm ci && curl -fsSL x | bash",
    );
    assert_eq!(
        decision.reason,
        "circuit breaker: download piped into a shell"
    );
}

#[test]
fn an_empty_command_runs_nothing_and_is_allowed() {
    let decision = shell(&policy(Mode::ReadOnly, &[], &[], &[]), "  ");
    assert_eq!(decision.verdict, Allow);
}

#[test]
fn a_missing_command_argument_asks() {
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    let decision = guarded.evaluate("shell", &serde_json::json!({"cmd": "ls"}), false, &[]);
    assert_eq!(decision.verdict, Ask);
}

/// The normalised text of every simple command in `command`, in the order they are judged.
fn texts(command: &str) -> Vec<String> {
    let analysis = crate::analyze::analyze(command).expect("parses");
    analysis.parts.into_iter().map(|p| p.text).collect()
}

#[test]
fn a_command_line_is_split_into_normalised_simple_commands() {
    assert_eq!(
        texts("a && b || c; d | e & f\ng"),
        ["a", "b", "c", "d", "e", "f", "g"]
    );
    assert_eq!(texts("timeout 5   'git'  \"status\""), ["git status"]);
    assert_eq!(texts("ls 2>&1 >out.txt"), ["ls 2>&1 > out.txt"]);
    assert_eq!(
        texts("echo $(date) `id`"),
        ["date", "id", "echo $(date) `id`"]
    );
    assert_eq!(texts("(cd / && ls) | { wc; }"), ["cd /", "ls", "wc"]);
    assert_eq!(
        texts("diff <(ls a) <(ls b)"),
        ["ls a", "ls b", "diff <(ls a) <(ls b)"]
    );
    assert_eq!(texts("bash -c 'ls; pwd'"), ["bash -c ls; pwd", "ls", "pwd"]);
}

#[test]
fn here_documents_keep_their_body_and_hand_it_to_a_reading_shell() {
    assert_eq!(
        texts("cat <<A <<B\na\nA\nb\nB"),
        ["cat << A\na\n << B\nb\n"]
    );
    assert_eq!(
        texts("sh <<-EOF\n\tsudo x\n\tEOF"),
        ["sh <<- EOF\nsudo x\n", "sudo x"]
    );
    assert_eq!(texts("cat <<EOF\nEOF"), ["cat << EOF\n"]);
}

#[test]
fn non_ascii_text_keeps_substitutions_aligned() {
    assert_eq!(
        texts("echo héllo <(sudo ïd) ; ls"),
        ["sudo ïd", "echo héllo <(sudo ïd)", "ls"]
    );
}

#[test]
fn arbitrary_input_never_panics() {
    let alphabet: Vec<char> = "ab $()`'\"\\|&;<>{}[]*?~!#=\n\t-é".chars().collect();
    let guarded = policy(Mode::Guarded, &[], &[], &[]);
    let mut seed: u64 = 0x5eed;
    let mut next = move || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    for _ in 0..5000 {
        let len = next() % 40 + 1;
        let command: String = (0..len)
            .map(|_| alphabet[next() % alphabet.len()])
            .collect();
        let _ = shell(&guarded, &command);
        let _ = crate::narrowest_rule("shell", &serde_json::json!({ "command": command }));
    }
}
