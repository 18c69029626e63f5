//! Commands that carry code of their own: a shell's `-c` string or standard input, `eval`'s
//! arguments, `find -exec` actions and git's `!` aliases. A carrier is transparent (judged only by what it runs)
//! unless its own variables, redirections or start-up options change what runs.

use super::part::{Part, Redirect};
use super::readonly::harmless_variable;
use super::words::basename;

/// Shells whose `-c` string (or standard input) is parsed as a command line of its own.
const SHELLS: &[&str] = &[
    "sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish",
];

/// `find` actions that run a command on each match.
const FIND_EXEC: &[&str] = &["-exec", "-execdir", "-ok", "-okdir"];

/// Whether a carrier runs only the code parsed out of it. Not when it is given variables
/// (`BASH_ENV`, `ENV`, `PS4` run code of their own), when its redirections write or read a
/// file, or when the shell reads start-up files (`-i`, `-l`, `--rcfile`) an earlier write
/// could have planted code in.
pub(crate) fn transparent(part: &Part) -> bool {
    // Input from a file the script could read as code; `/dev/null` is no file.
    let reads_a_file =
        |r: &Redirect| matches!(r.op.as_str(), "<" | "<>") && r.target != "/dev/null";
    let plain_redirects = part
        .redirects
        .iter()
        .all(|r| !r.writes() && !reads_a_file(r));
    part.assignments.iter().all(|n| harmless_variable(n))
        && plain_redirects
        && !reads_startup_files(&part.words)
}

/// `bash -i`, `bash -lc`, `sh --login`, `bash --rcfile F`: the shell runs files besides its script.
fn reads_startup_files(words: &[String]) -> bool {
    let Some(name) = words.first().map(|w| basename(w)) else {
        return false;
    };
    if !SHELLS.contains(&name) {
        return false;
    }
    let mut valued = false;
    for word in &words[1..] {
        if std::mem::take(&mut valued) {
            continue;
        }
        match word.as_str() {
            "--login" | "--rcfile" | "--init-file" | "--interactive" => return true,
            "--" | "-" => break,
            "-o" | "+o" | "-O" | "+O" => valued = true,
            w if w.starts_with("--") => {}
            w => match w.strip_prefix('-').or_else(|| w.strip_prefix('+')) {
                Some(flags) if flags.contains(['i', 'l']) => return true,
                Some(_) => {}
                None => break,
            },
        }
    }
    false
}

/// The command line a command runs as code of its own: the string after a shell's `-c`, a
/// shell's standard input (`bash <<EOF`, `sh <<< '…'`), or `eval`'s arguments.
pub(crate) fn inner_script(words: &[String], stdin: Option<&str>) -> Option<String> {
    let name = basename(words.first()?);
    if name == "eval" {
        return (words.len() > 1).then(|| words[1..].join(" "));
    }
    if !SHELLS.contains(&name) {
        return None;
    }
    let mut has_c = false;
    let mut i = 1;
    while let Some(word) = words.get(i).map(String::as_str) {
        if word == "--" || word == "-" {
            i += 1;
            break;
        }
        if matches!(word, "-o" | "+o" | "-O" | "+O" | "--rcfile" | "--init-file") {
            i += 2;
        } else if let Some(flags) = word.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            has_c |= flags.contains('c');
            i += 1;
        } else if word.starts_with("--") || word.starts_with('+') {
            i += 1;
        } else {
            break;
        }
    }
    match (words.get(i), has_c) {
        (Some(script), true) => Some(script.clone()),
        (None, false) => stdin.map(str::to_string),
        _ => None,
    }
}

/// Quotes bash reads as a string and POSIX shells (dash, ash, …) as `$` followed by a
/// quoted string, so the two disagree about where the words and substitutions are.
const BASH_ONLY_QUOTES: &[&str] = &["$'", "$\""];

/// Whether `script` means to the shell in `words` what the analysis reads, which models
/// bash: always for `eval` and bash itself, for another shell only without the quotes it
/// reads differently.
pub(crate) fn read_alike(words: &[String], script: &str) -> bool {
    let name = words.first().map_or("", |w| basename(w));
    matches!(name, "eval" | "bash") || !BASH_ONLY_QUOTES.iter().any(|q| script.contains(q))
}

/// Shell commands git aliases defined on the line run (`git -c alias.x='!sudo id' x`). The git
/// command stays judged as itself; these are judged besides it.
pub(crate) fn git_shell_aliases(words: &[String]) -> Vec<String> {
    if words.first().map(|w| basename(w)) != Some("git") {
        return Vec::new();
    }
    words
        .windows(2)
        .filter(|pair| pair[0] == "-c")
        .filter_map(|pair| pair[1].strip_prefix("alias."))
        .filter_map(|alias| alias.split_once('=')?.1.strip_prefix('!'))
        .map(str::to_string)
        .collect()
}

/// The commands `find … -exec cmd {} ;` runs, one word list per action.
pub(crate) fn find_exec(words: &[String]) -> Vec<Vec<String>> {
    if words.first().map(|w| basename(w)) != Some("find") {
        return Vec::new();
    }
    let mut found = Vec::new();
    let mut i = 1;
    while i < words.len() {
        if FIND_EXEC.contains(&words[i].as_str()) {
            let start = i + 1;
            let len = words[start..]
                .iter()
                .position(|w| w == ";" || w == "+")
                .unwrap_or(words.len() - start);
            found.push(words[start..start + len].to_vec());
            i = start + len;
        }
        i += 1;
    }
    found
}

/// The programs `rg --pre PROG` (run on every file searched) and `rg --hostname-bin PROG`
/// start, each as a command of its own, so a deny rule naming the program sees it. The
/// preprocessor gets the file's path, written `{}` as `find -exec` writes it.
pub(crate) fn rg_programs(words: &[String]) -> Vec<Vec<String>> {
    if words.first().map(|w| basename(w)) != Some("rg") {
        return Vec::new();
    }
    let mut found = Vec::new();
    for (i, word) in words.iter().enumerate().skip(1) {
        if word == "--" {
            break;
        }
        for option in ["--pre", "--hostname-bin"] {
            let program = if word == option {
                words.get(i + 1).map(String::as_str)
            } else {
                word.strip_prefix(option).and_then(|r| r.strip_prefix('='))
            };
            found.extend(program.map(|p| vec![p.to_string(), "{}".to_string()]));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rg_pre_and_hostname_bin_are_commands() {
        let words: Vec<String> = "rg --pre touch x --hostname-bin=id . -- --pre y"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(rg_programs(&words), [vec!["touch", "{}"], vec!["id", "{}"]]);
    }

    #[test]
    fn a_posix_shell_reads_bash_only_quotes_differently() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        let script = "ls $'\\'' x' $(touch pwned) ' #'";
        assert!(read_alike(&words("bash -c x"), script));
        assert!(read_alike(&words("eval x"), script));
        assert!(!read_alike(&words("/bin/sh -c x"), script));
        assert!(!read_alike(&words("dash -c x"), "echo $\"x\""));
        assert!(read_alike(&words("sh -c x"), "echo '$x' \"$y\""));
    }

    #[test]
    fn shell_dash_c_strings_and_eval_are_inner_scripts() {
        let words = |s: &str| s.split(' ').map(String::from).collect::<Vec<_>>();
        assert_eq!(
            inner_script(&words("bash -lc ls"), None).as_deref(),
            Some("ls")
        );
        assert_eq!(
            inner_script(&words("/bin/sh -e -c ls x"), None).as_deref(),
            Some("ls")
        );
        assert_eq!(
            inner_script(&words("eval rm -rf /"), None).as_deref(),
            Some("rm -rf /")
        );
        assert_eq!(
            inner_script(&words("bash"), Some("sudo x")).as_deref(),
            Some("sudo x")
        );
        assert_eq!(inner_script(&words("bash script.sh"), Some("x")), None);
        assert_eq!(inner_script(&words("python -c x"), None), None);
    }

    #[test]
    fn find_exec_actions_are_commands() {
        let words: Vec<String> = "find . -name x -exec rm -rf {} ; -print -execdir sudo y {} +"
            .split(' ')
            .map(String::from)
            .collect();
        assert_eq!(
            find_exec(&words),
            [vec!["rm", "-rf", "{}"], vec!["sudo", "y", "{}"]]
        );
    }
}
