//! A small, deliberately strict reader of shell commands, enough to classify them.
//!
//! Claude Code parses commands with tree-sitter-bash and calls anything it cannot analyse
//! statically "too complex" (not read-only). This reader does the same for the subset it
//! understands — words, single and double quotes, backslash escapes, `;` `&&` `||` `|`
//! newlines, comments, simple redirections, leading `NAME=value` assignments — and refuses
//! everything else: parameter expansion, command substitution, backticks, subshells, groups,
//! brace expansion, here-documents, here-strings, process substitution and background `&`.
//! Refusing is always the safe answer: the command is then simply not read-only.

/// One word after quote removal, with what the classifier needs to know about its source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Word {
    /// The value the shell would pass (quotes and escapes removed).
    pub value: String,
    /// The source text.
    pub raw: String,
    /// An unquoted `*`, `?` or `[...]`: the shell would glob-expand it.
    pub glob: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Redirect {
    /// `>`, `>>`, `<`, `>&`, `<&`, `&>`, `&>>`, `>|` (any fd number dropped).
    pub op: String,
    pub target: String,
}

/// One simple command of a list or pipeline.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct SimpleCommand {
    /// Leading `NAME=value` assignments.
    pub env: Vec<(String, String)>,
    pub argv: Vec<String>,
    pub redirects: Vec<Redirect>,
    /// The command's source text without its redirections (tree-sitter's `command` node),
    /// words separated by single spaces.
    pub text: String,
    /// Some word would be glob-expanded.
    pub glob: bool,
}

/// Why a command was not analysed.
pub(crate) type TooComplex = &'static str;

/// Splits `src` into simple commands, or says why it cannot be analysed.
pub(crate) fn parse(src: &str) -> Result<Vec<SimpleCommand>, TooComplex> {
    // Bash joins a line ending in `\` to the next before it reads anything else, so
    // `2\<newline>>x` is the redirection `2>x`, and operators and words can be split across
    // lines the same way. Modelling that everywhere is fragile (a word read as an argument
    // that bash reads as part of a redirection shifts how every flag after it pairs up); a
    // read-only command never needs it.
    if src.contains("\\\n") {
        return Err("a line continuation (a backslash before a line break)");
    }
    let mut p = Parser { chars: src.chars().collect(), pos: 0, brace: None };
    let mut commands = Vec::new();
    let mut current: Vec<Item> = Vec::new();
    loop {
        p.skip_blanks();
        let Some(c) = p.peek() else { break };
        match c {
            '#' => p.skip_comment(),
            '\n' | ';' => {
                p.pos += 1;
                flush(&mut current, &mut commands)?;
            }
            '|' => {
                p.pos += 1;
                if matches!(p.peek(), Some('|' | '&')) {
                    p.pos += 1;
                }
                flush_required(&mut current, &mut commands)?;
            }
            '&' => {
                if p.peek_at(1) == Some('&') {
                    p.pos += 2;
                    flush_required(&mut current, &mut commands)?;
                } else if p.peek_at(1) == Some('>') {
                    current.push(Item::Redirect(p.redirect()?));
                } else {
                    return Err("`&` runs a command in the background");
                }
            }
            '(' | ')' => return Err("subshells cannot be analysed"),
            '<' | '>' => current.push(Item::Redirect(p.redirect()?)),
            c if c.is_ascii_digit() && p.is_fd_redirect() => current.push(Item::Redirect(p.redirect()?)),
            _ => current.push(Item::Word(p.word()?)),
        }
    }
    flush(&mut current, &mut commands)?;
    Ok(commands)
}

enum Item {
    Word(Word),
    Redirect(Redirect),
}

fn flush_required(items: &mut Vec<Item>, out: &mut Vec<SimpleCommand>) -> Result<(), TooComplex> {
    if items.is_empty() {
        return Err("an operator without a command before it");
    }
    flush(items, out)
}

fn flush(items: &mut Vec<Item>, out: &mut Vec<SimpleCommand>) -> Result<(), TooComplex> {
    if items.is_empty() {
        return Ok(());
    }
    let mut cmd = SimpleCommand::default();
    let mut raw_words = Vec::new();
    for item in items.drain(..) {
        match item {
            Item::Redirect(r) => cmd.redirects.push(r),
            Item::Word(w) => {
                raw_words.push(w.raw.clone());
                cmd.glob |= w.glob;
                let assignment = cmd.argv.is_empty() && is_assignment(&w.raw);
                if assignment {
                    let (name, value) = w.value.split_once('=').unwrap_or((&w.value, ""));
                    cmd.env.push((name.to_string(), value.to_string()));
                } else {
                    if w.raw.starts_with('{') || w.raw.starts_with('}') || is_keyword(&w.raw, cmd.argv.is_empty()) {
                        return Err("shell keywords and groups cannot be analysed");
                    }
                    cmd.argv.push(w.value);
                }
            }
        }
    }
    cmd.text = raw_words.join(" ");
    out.push(cmd);
    Ok(())
}

/// `NAME=...` with a plain identifier before the `=`.
fn is_assignment(raw: &str) -> bool {
    let Some((name, _)) = raw.split_once('=') else { return false };
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Compound-command keywords in command position.
fn is_keyword(raw: &str, first: bool) -> bool {
    first
        && matches!(
            raw,
            "if" | "then" | "else" | "elif" | "fi" | "for" | "while" | "until" | "do" | "done" | "case" | "esac"
                | "select" | "function" | "[[" | "]]" | "!" | "coproc" | "time"
        )
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    /// What the last look for a brace group found; see [`Parser::brace_group`].
    brace: Option<BraceScan>,
}

/// From a `{` to the first `}` or whitespace after it.
#[derive(Clone, Copy)]
struct BraceScan {
    /// Where the look stopped: the `}`, the whitespace, or the end of the text.
    end: usize,
    /// It stopped at a `}`.
    closed: bool,
    /// The last `,` before `end`, and the first `.` of the last `..`.
    last_comma: Option<usize>,
    last_dots: Option<usize>,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, n: usize) -> Option<char> {
        self.chars.get(self.pos + n).copied()
    }

    fn skip_blanks(&mut self) {
        while let Some(c) = self.peek() {
            if c == ' ' || c == '\t' {
                self.pos += 1;
            } else if c == '\\' && self.peek_at(1) == Some('\n') {
                self.pos += 2;
            } else {
                break;
            }
        }
    }

    fn skip_comment(&mut self) {
        while let Some(c) = self.peek() {
            if c == '\n' {
                break;
            }
            self.pos += 1;
        }
    }

    /// Digits immediately followed by `<` or `>` (`2>`, `2>&1`).
    fn is_fd_redirect(&self) -> bool {
        let mut i = self.pos;
        while self.chars.get(i).is_some_and(char::is_ascii_digit) {
            i += 1;
        }
        matches!(self.chars.get(i), Some('<' | '>'))
    }

    fn redirect(&mut self) -> Result<Redirect, TooComplex> {
        let digits_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.pos += 1;
        }
        // bash reads a leading number as a file descriptor only when it fits a C int; a longer
        // one (`4294967297>x`) is an ordinary word, an argument of the command.
        let fd: String = self.chars[digits_start..self.pos].iter().collect();
        if !fd.is_empty() && fd.parse::<i32>().is_err() {
            return Err("a file descriptor number too large for bash");
        }
        let mut op = String::new();
        while let Some(c) = self.peek() {
            if matches!(c, '<' | '>' | '&' | '|') && op.len() < 3 {
                // `|` only directly after `>` (`>|`); otherwise it ends the redirection.
                if c == '|' && op != ">" {
                    break;
                }
                op.push(c);
                self.pos += 1;
            } else {
                break;
            }
        }
        match op.as_str() {
            ">" | ">>" | "<" | ">&" | "<&" | "&>" | "&>>" | ">|" => {}
            "<<" | "<<-" => return Err("here-documents cannot be analysed"),
            "<<<" => return Err("here-strings cannot be analysed"),
            _ => return Err("an unusual redirection"),
        }
        self.skip_blanks();
        if matches!(self.peek(), None | Some('\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')')) {
            return Err("a redirection without a target");
        }
        if self.peek() == Some('(') {
            return Err("process substitution cannot be analysed");
        }
        let target = self.word()?;
        Ok(Redirect { op, target: target.value })
    }

    /// Whether the `{` at `pos` opens a brace expansion: the text up to the first `}` of its
    /// word holds a `,` or a `..`. Every `{` before that `}` shares the look (one scan per
    /// stretch, not one per `{`): a word of 100,000 `{` took minutes when each rescanned the
    /// rest of the word.
    fn brace_group(&mut self) -> bool {
        let pos = self.pos;
        if self.brace.is_none_or(|b| b.end <= pos) {
            let mut scan = BraceScan { end: self.chars.len(), closed: false, last_comma: None, last_dots: None };
            for i in pos + 1..self.chars.len() {
                match self.chars[i] {
                    '}' => {
                        scan.end = i;
                        scan.closed = true;
                        break;
                    }
                    c if c.is_whitespace() => {
                        scan.end = i;
                        break;
                    }
                    ',' => scan.last_comma = Some(i),
                    '.' if i > pos + 1 && self.chars[i - 1] == '.' => scan.last_dots = Some(i - 1),
                    _ => {}
                }
            }
            self.brace = Some(scan);
        }
        let b = self.brace.expect("just scanned");
        // Only what lies after this `{` is inside its group.
        b.closed && (b.last_comma.is_some_and(|i| i > pos) || b.last_dots.is_some_and(|i| i > pos))
    }

    fn word(&mut self) -> Result<Word, TooComplex> {
        let start = self.pos;
        let mut value = String::new();
        let mut glob = false;
        let mut open_bracket = false;
        while let Some(c) = self.peek() {
            match c {
                ' ' | '\t' | '\n' | ';' | '|' | '&' | '<' | '>' | '(' | ')' => break,
                '\'' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err("an unterminated quote"),
                            Some('\'') => {
                                self.pos += 1;
                                break;
                            }
                            Some(ch) => {
                                value.push(ch);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '"' => {
                    self.pos += 1;
                    loop {
                        match self.peek() {
                            None => return Err("an unterminated quote"),
                            Some('"') => {
                                self.pos += 1;
                                break;
                            }
                            Some('$' | '`') => return Err("expansions inside double quotes cannot be analysed"),
                            Some('\\') => {
                                match self.peek_at(1) {
                                    Some('\n') => {}
                                    Some(n @ ('"' | '\\' | '$' | '`')) => value.push(n),
                                    Some(n) => {
                                        value.push('\\');
                                        value.push(n);
                                    }
                                    None => return Err("an unterminated quote"),
                                }
                                self.pos += 2;
                            }
                            Some(ch) => {
                                value.push(ch);
                                self.pos += 1;
                            }
                        }
                    }
                }
                '\\' => {
                    match self.peek_at(1) {
                        Some('\n') => {}
                        Some(n) => value.push(n),
                        None => {
                            // A backslash ending the command is a literal backslash (bash
                            // keeps it); there is no second character to step over.
                            value.push('\\');
                            self.pos += 1;
                            continue;
                        }
                    }
                    self.pos += 2;
                }
                '$' => {
                    // A lone `$` at the end of a word is literal; anything after it expands.
                    if matches!(self.peek_at(1), None | Some(' ' | '\t' | '\n' | ';' | '|' | '&')) {
                        value.push('$');
                        self.pos += 1;
                    } else {
                        return Err("parameter expansion and command substitution cannot be analysed");
                    }
                }
                '`' => return Err("command substitution cannot be analysed"),
                '*' | '?' => {
                    glob = true;
                    value.push(c);
                    self.pos += 1;
                }
                '[' => {
                    open_bracket = true;
                    value.push(c);
                    self.pos += 1;
                }
                ']' => {
                    glob |= open_bracket;
                    value.push(c);
                    self.pos += 1;
                }
                '{' => {
                    // Brace expansion (`{a,b}`, `{1..3}`) rewrites words before any check sees them.
                    if self.brace_group() {
                        return Err("brace expansion cannot be analysed");
                    }
                    value.push(c);
                    self.pos += 1;
                }
                '~' if self.pos == start => {
                    // `~`, `~/x`: the home folder; `~user`, `~+`, `~-` are refused.
                    if !matches!(self.peek_at(1), None | Some('/' | ' ' | '\t' | '\n' | ';' | '|' | '&')) {
                        return Err("tilde forms other than ~ and ~/ cannot be analysed");
                    }
                    value.push(c);
                    self.pos += 1;
                }
                _ => {
                    value.push(c);
                    self.pos += 1;
                }
            }
        }
        let raw: String = self.chars[start..self.pos].iter().collect();
        Ok(Word { value, raw, glob })
    }
}

/// Shell-quote splitting of a command text into argv (Claude Code's `aA`), for the checks
/// that re-read a command's text; `None` when it cannot be analysed.
pub(crate) fn argv_of(text: &str) -> Option<Vec<String>> {
    let mut cmds = parse(text).ok()?;
    if cmds.len() != 1 {
        return None;
    }
    let cmd = cmds.pop()?;
    let mut argv: Vec<String> = cmd.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
    argv.extend(cmd.argv);
    Some(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn argvs(src: &str) -> Vec<Vec<String>> {
        parse(src).unwrap().into_iter().map(|c| c.argv).collect()
    }

    #[test]
    fn splits_lists_and_pipelines() {
        assert_eq!(argvs("ls -la /tmp && cat 'a b' | wc -l; echo \"x\\\"y\""), vec![
            vec!["ls", "-la", "/tmp"],
            vec!["cat", "a b"],
            vec!["wc", "-l"],
            vec!["echo", "x\"y"],
        ]);
        assert_eq!(argvs("ls # comment ; rm x"), vec![vec!["ls"]]);
        assert_eq!(argvs("a\\ b c"), vec![vec!["a b", "c"]]);
    }

    #[test]
    fn redirects_and_assignments() {
        let c = &parse("LANG=C grep -r x . 2>&1 >/dev/null").unwrap()[0];
        assert_eq!(c.env, vec![("LANG".into(), "C".into())]);
        assert_eq!(c.argv, vec!["grep", "-r", "x", "."]);
        assert_eq!(c.redirects, vec![
            Redirect { op: ">&".into(), target: "1".into() },
            Redirect { op: ">".into(), target: "/dev/null".into() }
        ]);
        assert_eq!(c.text, "LANG=C grep -r x .");
    }

    #[test]
    fn refuses_what_it_cannot_analyse() {
        for src in [
            "echo $HOME",
            "echo \"$(id)\"",
            "echo `id`",
            "(ls)",
            "{ ls; }",
            "ls &",
            "cat <<EOF\nx\nEOF",
            "cat <<< x",
            "echo {a,b}",
            "echo 'unterminated",
            "for f in a; do ls; done",
            "diff <(ls) <(ls)",
            "| ls",
            "git tag 2147483648>/dev/null",
            "git tag 4294967297>|/dev/null",
        ] {
            assert!(parse(src).is_err(), "{src:?} should be too complex");
        }
    }

    /// `ls \` (a backslash ending the command) stepped past the end of the text and the
    /// word slice panicked, killing the agent's permission check.
    #[test]
    fn trailing_backslash_is_a_literal_backslash() {
        assert_eq!(argvs("ls \\"), vec![vec!["ls".to_string(), "\\".to_string()]]);
        assert_eq!(argvs("cat a\\"), vec![vec!["cat".to_string(), "a\\".to_string()]]);
        assert!(parse("\\").is_ok());
    }

    /// A word of 100,000 `{` rescanned the rest of the word at each one (minutes per
    /// command); the groups are still told apart as before.
    #[test]
    fn many_braces_in_one_word() {
        let start = std::time::Instant::now();
        assert!(parse(&format!("echo x{}", "{".repeat(100_000))).is_ok());
        assert!(parse(&format!("echo x{}}}", "{".repeat(100_000))).is_ok());
        assert!(parse(&format!("echo x{}a,b}}", "{".repeat(100_000))).is_err());
        assert!(start.elapsed() < std::time::Duration::from_secs(10));
        assert!(parse("echo x{a,b}").is_err());
        assert!(parse("echo x{1..3}").is_err());
        assert!(parse("echo x{{a..b}").is_err());
        assert!(parse("echo a{b}c x{y} z{.}").is_ok());
        assert!(parse("echo x{a} ,b}").is_ok());
        assert!(parse("echo x{a.}.b}").is_ok());
    }

    #[test]
    fn globs_are_noticed_only_unquoted() {
        assert!(parse("ls *.md").unwrap()[0].glob);
        assert!(parse("ls a[0-9]").unwrap()[0].glob);
        assert!(!parse("grep '*.md' x").unwrap()[0].glob);
    }
}
