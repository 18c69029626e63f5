//! Reads a shell command line into the simple commands the policy gate judges one by one:
//! split at `&&`, `||`, `;`, `|`, `&` and newlines, opened up at `( … )` subshells, `{ …; }`
//! groups, `$(…)`/backtick and `<(…)` substitutions, `sh -c`/`eval` strings and here-documents,
//! with wrappers stripped. It also records which command's output flows into which.

use std::mem::take;

use brush_parser::Token;

mod redirects;
mod rough;

pub(crate) use rough::rough;

use super::carrier::{
    find_exec, git_shell_aliases, inner_script, read_alike, rg_programs, transparent,
};
use super::command::{Stripped, Word, strip_wrappers};
use super::part::{Analysis, Part, Redirect};
use super::words::{Unparsable, substitutions, unquote};

use redirects::REDIRECTS;

/// How deep substitutions and `sh -c` strings may nest before the command counts as unparsable.
const MAX_DEPTH: usize = 8;

/// Splits a command line into its simple commands; an unbalanced quote, group or substitution
/// (or nesting deeper than [`MAX_DEPTH`]) makes it [`Unparsable`].
pub(crate) fn analyze(command: &str) -> Result<Analysis, Unparsable> {
    let mut analysis = Analysis::default();
    Scan::new(&mut analysis, 0).run(command)?;
    Ok(analysis)
}

/// A pipeline level: the top of the line or one `( … )`/`{ …; }` group.
#[derive(Default)]
struct Frame {
    /// Parts piped into the group itself, which every command inside it can read.
    inherited: Vec<usize>,
    /// Parts whose output the next command reads (the stage before the last `|`).
    sources: Vec<usize>,
    /// Parts of the current pipeline stage.
    stage: Vec<usize>,
    /// Parts of the current pipeline, for a trailing `&`.
    pipeline: Vec<usize>,
    /// Every part at this level and below, which a closing group hands to its parent.
    all: Vec<usize>,
    /// The function this group is the body of.
    function: Option<String>,
}

/// The simple command being read.
#[derive(Default)]
struct Pending {
    words: Vec<Word>,
    /// Where each word ends in the source, to tell `2>` (fd) from `2 >` (argument).
    ends: Vec<usize>,
    redirects: Vec<Redirect>,
    /// Parts whose output becomes its arguments or input.
    inflow: Vec<usize>,
    /// Parts that read its output (`>(…)`).
    outflow: Vec<usize>,
    /// Text on its standard input (here-document, here-string).
    stdin: Option<String>,
}

/// One command line being read at one nesting depth.
struct Scan<'a> {
    out: &'a mut Analysis,
    depth: usize,
    frames: Vec<Frame>,
    cmd: Pending,
    created: Vec<usize>,
    pending_function: Option<String>,
}

impl<'a> Scan<'a> {
    fn new(out: &'a mut Analysis, depth: usize) -> Self {
        Self {
            out,
            depth,
            frames: vec![Frame::default()],
            cmd: Pending::default(),
            created: Vec::new(),
            pending_function: None,
        }
    }

    /// Reads `src`; returns the ids of every part created, nested ones included.
    fn run(mut self, src: &str) -> Result<Vec<usize>, Unparsable> {
        if self.depth > MAX_DEPTH {
            return Err(Unparsable);
        }
        // The tokenizer is third-party code; a panic in it must not take the gateway down.
        let tokens = std::panic::catch_unwind(|| brush_parser::tokenize_str(src))
            .map_err(|_| Unparsable)?
            .map_err(|_| Unparsable)?;
        let chars: Vec<char> = src.chars().collect();
        let mut i = 0;
        while i < tokens.len() {
            i = match &tokens[i] {
                Token::Word(raw, span) => self.word(&tokens, i, raw, span.end.index)?,
                Token::Operator(op, span) => {
                    self.operator(&tokens, i, op, span.start.index, &chars)?
                }
            };
        }
        self.flush()?;
        if self.frames.len() != 1 {
            return Err(Unparsable);
        }
        Ok(self.created)
    }

    fn at_command_start(&self) -> bool {
        self.cmd.words.is_empty() && self.cmd.redirects.is_empty()
    }

    fn frame(&mut self) -> &mut Frame {
        self.frames
            .last_mut()
            .expect("the top frame is never popped")
    }

    fn word(
        &mut self,
        tokens: &[Token],
        i: usize,
        raw: &str,
        end: usize,
    ) -> Result<usize, Unparsable> {
        if self.at_command_start() {
            match raw {
                "{" => return self.open_group().map(|()| i + 1),
                "}" => return self.close_group().map(|()| i + 1),
                "if" | "then" | "elif" | "else" | "fi" | "do" | "done" | "while" | "until"
                | "!" => {
                    return Ok(i + 1);
                }
                "for" | "select" => return self.loop_header(tokens, i + 1),
                "function" => return self.function_keyword(tokens, i + 1),
                // Patterns with a bare `)` would be read as group ends; ask rather than guess.
                "case" | "coproc" => return Err(Unparsable),
                _ => {}
            }
            if is_operator(tokens.get(i + 1), "(") && is_operator(tokens.get(i + 2), ")") {
                self.pending_function = Some(unquote(raw));
                return Ok(i + 3);
            }
        }
        let ids = self.substituted(raw, true)?;
        self.cmd.inflow.extend(ids);
        self.cmd.words.push(Word {
            raw: raw.to_string(),
            value: unquote(raw),
        });
        self.cmd.ends.push(end);
        Ok(i + 1)
    }

    fn operator(
        &mut self,
        tokens: &[Token],
        i: usize,
        op: &str,
        start: usize,
        chars: &[char],
    ) -> Result<usize, Unparsable> {
        match op {
            "|" | "|&" => {
                self.flush()?;
                let frame = self.frame();
                frame.sources = take(&mut frame.stage);
            }
            "&&" | "||" | ";" | ";;" | ";&" | ";;&" | "\n" | "&" => {
                self.flush()?;
                self.end_pipeline(op == "&");
            }
            "(" => {
                self.flush()?;
                self.open_group()?;
            }
            ")" => {
                self.flush()?;
                self.close_group()?;
            }
            _ if REDIRECTS.contains(&op) => return self.redirect(tokens, i, op, start, chars),
            _ => return Err(Unparsable),
        }
        Ok(i + 1)
    }

    /// The parts of every substitution in one word (or here-document body).
    fn substituted(&mut self, raw: &str, quotes: bool) -> Result<Vec<usize>, Unparsable> {
        let mut ids = Vec::new();
        for inner in substitutions(raw, quotes)? {
            ids.extend(self.nested(&inner)?);
        }
        Ok(ids)
    }

    /// Reads nested shell code (a substitution, a `-c` string) one level deeper.
    fn nested(&mut self, src: &str) -> Result<Vec<usize>, Unparsable> {
        let depth = self.depth + 1;
        let ids = Scan::new(self.out, depth).run(src)?;
        self.created.extend(&ids);
        Ok(ids)
    }

    /// `for NAME in WORDS` runs nothing itself, but substitutions in its words do.
    fn loop_header(&mut self, tokens: &[Token], mut i: usize) -> Result<usize, Unparsable> {
        while let Some(Token::Word(raw, _)) = tokens.get(i) {
            self.substituted(raw, true)?;
            i += 1;
        }
        Ok(i)
    }

    /// `function NAME [()] { … }`.
    fn function_keyword(&mut self, tokens: &[Token], i: usize) -> Result<usize, Unparsable> {
        let Some(Token::Word(name, _)) = tokens.get(i) else {
            return Err(Unparsable);
        };
        self.pending_function = Some(unquote(name));
        let parens = is_operator(tokens.get(i + 1), "(") && is_operator(tokens.get(i + 2), ")");
        Ok(if parens { i + 3 } else { i + 1 })
    }

    fn open_group(&mut self) -> Result<(), Unparsable> {
        let outer = self.frames.last().expect("the top frame is never popped");
        let inherited = [outer.sources.as_slice(), outer.inherited.as_slice()].concat();
        let function = self
            .pending_function
            .take()
            .or_else(|| outer.function.clone());
        self.frames.push(Frame {
            inherited,
            function,
            ..Frame::default()
        });
        Ok(())
    }

    fn close_group(&mut self) -> Result<(), Unparsable> {
        if self.frames.len() < 2 {
            return Err(Unparsable);
        }
        let inner = self.frames.pop().expect("checked above");
        let outer = self.frame();
        outer.stage.extend(&inner.all);
        outer.pipeline.extend(&inner.all);
        outer.all.extend(&inner.all);
        Ok(())
    }

    fn end_pipeline(&mut self, background: bool) {
        let frame = self
            .frames
            .last_mut()
            .expect("the top frame is never popped");
        if background {
            for &id in &frame.pipeline {
                self.out.parts[id].background = true;
            }
        }
        frame.sources.clear();
        frame.stage.clear();
        frame.pipeline.clear();
    }

    /// Ends the pending simple command: strips wrappers, records the part and what it runs.
    fn flush(&mut self) -> Result<(), Unparsable> {
        let cmd = take(&mut self.cmd);
        let stripped = strip_wrappers(cmd.words);
        if stripped.words.is_empty() && stripped.prefix.is_empty() && cmd.redirects.is_empty() {
            return Ok(());
        }
        let id = self.add_part(stripped, cmd.redirects);
        let frame = self
            .frames
            .last_mut()
            .expect("the top frame is never popped");
        let sources = frame
            .sources
            .iter()
            .chain(&frame.inherited)
            .chain(&cmd.inflow);
        self.out.edges.extend(sources.map(|&s| (s, id)));
        self.out.edges.extend(cmd.outflow.iter().map(|&o| (id, o)));
        frame.stage.push(id);
        frame.pipeline.push(id);
        frame.all.push(id);
        self.runs_inside(id, cmd.stdin.as_deref())
    }

    fn add_part(&mut self, stripped: Stripped, redirects: Vec<Redirect>) -> usize {
        let id = self.out.parts.len();
        let in_function = self.frames.iter().rev().find_map(|f| f.function.clone());
        let core: Vec<String> = stripped
            .words
            .iter()
            .cloned()
            .chain(redirects.iter().map(Redirect::render))
            .collect();
        let chdir = stripped.chdir.as_ref().map(|dir| format!("env -C {dir}"));
        let xargs = stripped.args_from_input.then(|| "xargs".to_string());
        let text: Vec<String> = stripped
            .prefix
            .iter()
            .cloned()
            .chain(chdir)
            .chain(xargs)
            .chain(core.iter().cloned())
            .collect();
        self.out.parts.push(Part {
            id,
            text: text.join(" "),
            core: core.join(" "),
            words: stripped.words,
            assignments: stripped.assignments,
            prefix: stripped.prefix,
            args_from_input: stripped.args_from_input,
            chdir: stripped.chdir,
            redirects,
            carrier: false,
            background: false,
            in_function,
            unread: stripped.unread,
        });
        self.created.push(id);
        id
    }

    /// Parses the code part `id` runs itself: a shell's `-c` string or stdin, `eval`'s
    /// arguments, `find -exec` commands.
    fn runs_inside(&mut self, id: usize, stdin: Option<&str>) -> Result<(), Unparsable> {
        let words = self.out.parts[id].words.clone();
        if let Some(inner) = inner_script(&words, stdin) {
            if !read_alike(&words, &inner) {
                return Err(Unparsable);
            }
            self.out.parts[id].carrier = transparent(&self.out.parts[id]);
            let mut ids = self.nested(&inner)?;
            // Beside a `-c` string, the input is still there for the script to run
            // (`bash -c '. /dev/stdin' <<EOF`): judged as code too.
            if let Some(input) = stdin.filter(|text| *text != inner) {
                ids.extend(self.nested(input)?);
            }
            self.out.edges.extend(ids.into_iter().map(|x| (id, x)));
        }
        for script in git_shell_aliases(&words) {
            let ids = self.nested(&script)?;
            self.out.edges.extend(ids.into_iter().map(|x| (id, x)));
        }
        // `{}` stands for found paths: unknown ones when the search starts outside.
        let mut starts = words
            .iter()
            .skip(1)
            .take_while(|a| !a.starts_with(['-', '(', '!']));
        let found_outside =
            starts.any(|s| s.starts_with(['/', '~']) || s.contains(['$', '`']) || s.contains(".."));
        for exec in find_exec(&words).into_iter().chain(rg_programs(&words)) {
            let mut stripped = strip_wrappers(exec.into_iter().map(Word::plain).collect());
            stripped.args_from_input |= found_outside;
            if !stripped.words.is_empty() {
                let sub = self.add_part(stripped, Vec::new());
                self.runs_inside(sub, None)?;
            }
        }
        Ok(())
    }
}

fn is_operator(token: Option<&Token>, op: &str) -> bool {
    matches!(token, Some(Token::Operator(o, _)) if o == op)
}
