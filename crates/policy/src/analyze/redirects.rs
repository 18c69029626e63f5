//! Redirections while reading a command line: fds (`2>`), targets, here-documents and here-strings
//! (whose text may be a shell's script), and `<(…)`/`>(…)` process substitutions.

use brush_parser::Token;

use super::{Scan, is_operator};
use crate::command::Word;
use crate::part::Redirect;
use crate::words::{Unparsable, unquote};

/// Redirection operators; the word after one is its target, not an argument.
pub(super) const REDIRECTS: &[&str] = &[
    "<", ">", ">>", ">|", "&>", "&>>", "<>", ">&", "<&", "<<", "<<-", "<<<",
];

impl Scan<'_> {
    /// Reads the redirection whose operator is token `i`; returns the index after its target.
    pub(super) fn redirect(
        &mut self,
        tokens: &[Token],
        i: usize,
        op: &str,
        start: usize,
        chars: &[char],
    ) -> Result<usize, Unparsable> {
        let fd = self.take_fd(start);
        if matches!(op, "<" | ">") && is_operator(tokens.get(i + 1), "(") {
            return self.process_substitution(tokens, i, op, chars);
        }
        if matches!(op, "<<" | "<<-") {
            return self.here_document(tokens, i, op, fd);
        }
        if let Some(Token::Operator(inner, _)) = tokens.get(i + 1)
            && matches!(inner.as_str(), "<" | ">")
            && is_operator(tokens.get(i + 2), "(")
        {
            // `2> >(tee log)`: the target is a process, judged as parts of its own.
            let next = self.process_substitution(tokens, i + 1, inner, chars)?;
            let target = self.cmd.words.pop().map(|w| w.value).unwrap_or_default();
            self.cmd.ends.pop();
            let (fd, op) = (fd, op.to_string());
            self.cmd.redirects.push(Redirect {
                fd,
                op,
                target,
                body: None,
            });
            return Ok(next);
        }
        let Some(Token::Word(raw, _)) = tokens.get(i + 1) else {
            return Err(Unparsable);
        };
        let ids = self.substituted(raw, true)?;
        self.cmd.inflow.extend(ids);
        let target = unquote(raw);
        if op == "<<<" {
            self.cmd.stdin = Some(format!("{target}\n"));
        }
        let op = op.to_string();
        self.cmd.redirects.push(Redirect {
            fd,
            op,
            target,
            body: None,
        });
        Ok(i + 2)
    }

    /// A word of digits right against the operator is the fd it redirects, not an argument.
    fn take_fd(&mut self, op_start: usize) -> String {
        let adjacent = self.cmd.ends.last() == Some(&op_start);
        match self.cmd.words.last() {
            Some(w)
                if adjacent && !w.raw.is_empty() && w.raw.chars().all(|c| c.is_ascii_digit()) =>
            {
                self.cmd.ends.pop();
                self.cmd.words.pop().map(|w| w.raw).unwrap_or_default()
            }
            _ => String::new(),
        }
    }

    /// `<(…)` feeds the command; `>(…)` reads from it. Either stands as one argument.
    fn process_substitution(
        &mut self,
        tokens: &[Token],
        i: usize,
        op: &str,
        chars: &[char],
    ) -> Result<usize, Unparsable> {
        let open = i + 1;
        let mut depth = 0usize;
        let mut close = None;
        for (j, token) in tokens.iter().enumerate().skip(open) {
            match token {
                Token::Operator(o, _) if o == "(" => depth += 1,
                Token::Operator(o, _) if o == ")" => {
                    depth -= 1;
                    if depth == 0 {
                        close = Some(j);
                        break;
                    }
                }
                _ => {}
            }
        }
        let close = close.ok_or(Unparsable)?;
        let from = tokens[open].location().end.index;
        let to = tokens[close].location().start.index;
        let inner: String = chars.get(from..to).ok_or(Unparsable)?.iter().collect();
        let ids = self.nested(&inner)?;
        if op == "<" {
            self.cmd.inflow.extend(ids);
        } else {
            self.cmd.outflow.extend(ids);
        }
        self.cmd.words.push(Word::plain(format!("{op}({inner})")));
        self.cmd.ends.push(usize::MAX);
        Ok(close + 1)
    }

    /// `<<EOF`: the tokenizer hands on the delimiter, the body and the closing delimiter.
    fn here_document(
        &mut self,
        tokens: &[Token],
        i: usize,
        op: &str,
        fd: String,
    ) -> Result<usize, Unparsable> {
        let (Some(Token::Word(delimiter, _)), Some(Token::Word(body, _))) =
            (tokens.get(i + 1), tokens.get(i + 2))
        else {
            return Err(Unparsable);
        };
        // A quoted delimiter turns expansion off in the body.
        if !delimiter.contains(['\'', '"', '\\']) {
            let ids = self.substituted(body, false)?;
            self.cmd.inflow.extend(ids);
        }
        self.cmd.stdin = Some(body.clone());
        self.cmd.redirects.push(Redirect {
            fd,
            op: op.to_string(),
            target: unquote(delimiter),
            body: Some(body.clone()),
        });
        Ok(i + 4)
    }
}
