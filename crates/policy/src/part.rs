//! The simple commands a shell command line is read into, as the policy gate judges them:
//! words, redirections, and which command's output flows into which.

/// Operators that write to their target (`>&` only when the target is a file, not an fd).
const WRITES: &[&str] = &[">", ">>", ">|", "&>", "&>>", "<>"];

/// Targets a write to which changes nothing on disk.
const HARMLESS_TARGETS: &[&str] = &[
    "/dev/null",
    "/dev/stdout",
    "/dev/stderr",
    "/dev/fd/1",
    "/dev/fd/2",
];

/// One redirection of a simple command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// The file descriptor written before the operator (`2` in `2>err`), or empty.
    pub fd: String,
    /// The operator, e.g. `>>`.
    pub op: String,
    /// The unquoted target (the delimiter for a here-document).
    pub target: String,
    /// A here-document's body.
    pub body: Option<String>,
}

impl Redirect {
    /// Whether this redirection writes to a file.
    pub(crate) fn writes(&self) -> bool {
        let to_fd = self.target == "-" || self.target.chars().all(|c| c.is_ascii_digit());
        let writes = WRITES.contains(&self.op.as_str()) || (self.op == ">&" && !to_fd);
        let into_process = self.target.starts_with(">(") || self.target.starts_with("<(");
        writes && !into_process && !HARMLESS_TARGETS.contains(&self.target.as_str())
    }

    /// The redirection as it appears in a normalised command: `2>&1`, `> out.txt`.
    pub(crate) fn render(&self) -> String {
        let dup = matches!(self.op.as_str(), ">&" | "<&");
        match &self.body {
            Some(body) => format!("{}{} {}\n{}", self.fd, self.op, self.target, body),
            None if dup => format!("{}{}{}", self.fd, self.op, self.target),
            None => format!("{}{} {}", self.fd, self.op, self.target),
        }
    }
}

/// One simple command, wrappers stripped, as the policy judges it.
#[derive(Debug, Clone)]
pub(crate) struct Part {
    /// Its index in [`Analysis::parts`].
    pub id: usize,
    /// The command that runs, then its arguments, unquoted.
    pub words: Vec<String>,
    /// Variables assigned for it by leading `NAME=value` words or `env`.
    pub assignments: Vec<String>,
    /// The same assignments as written, unquoted (`LD_PRELOAD=./x.so`).
    pub prefix: Vec<String>,
    /// Run by `xargs`, which appends arguments read from its input.
    pub args_from_input: bool,
    /// The directory `env -C DIR` runs it in.
    pub chdir: Option<String>,
    /// Its redirections, in order.
    pub redirects: Vec<Redirect>,
    /// `sh -c`, `eval`, `bash <<EOF`: what it runs was parsed into parts of its own.
    pub carrier: bool,
    /// Run with a trailing `&`.
    pub background: bool,
    /// The innermost shell function whose body holds it.
    pub in_function: Option<String>,
    /// Words bash expands into something the analyzer cannot read (`{-exec,x}`, `-exec$u`,
    /// `*.txt`), unquoted: such a command is never read-only, and an allow rule must spell
    /// these out to grant it.
    pub unread: Vec<String>,
    /// Assignments, `env -C DIR`, `xargs` when it runs the command, words, redirections,
    /// joined by single spaces: what allow rules match and "Always allow" writes.
    pub text: String,
    /// Only the words and redirections: what deny and ask rules match, besides `text`.
    pub core: String,
}

impl Part {
    /// The command name, if it has one (`> file` alone has none).
    pub(crate) fn program(&self) -> Option<&str> {
        self.words.first().map(String::as_str)
    }
}

/// Every simple command of one command line, nested ones included.
#[derive(Debug, Default)]
pub(crate) struct Analysis {
    /// The simple commands, each substitution's before the command using it.
    pub parts: Vec<Part>,
    /// `(a, b)`: the output of part `a` reaches part `b` (pipe, substitution, `<(…)`).
    pub edges: Vec<(usize, usize)>,
}

impl Analysis {
    /// Whether output of some part matching `source` reaches part `to`, directly or not.
    pub(crate) fn fed_by(&self, to: usize, source: impl Fn(&Part) -> bool) -> bool {
        let mut seen = vec![false; self.parts.len()];
        let mut stack = vec![to];
        while let Some(node) = stack.pop() {
            for &(from, _) in self.edges.iter().filter(|(_, b)| *b == node) {
                if !seen[from] {
                    if source(&self.parts[from]) {
                        return true;
                    }
                    seen[from] = true;
                    stack.push(from);
                }
            }
        }
        false
    }
}
