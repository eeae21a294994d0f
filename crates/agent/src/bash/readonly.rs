//! A port of Claude Code's read-only command check (`BashTool.isReadOnly`, built on
//! `readOnlyValidation`): every simple command of a list or pipeline must be read-only, with
//! only harmless redirections (`< file`, `> /dev/null`, `2>&1`), only allowlisted
//! environment assignments, and either a READONLY_COMMANDS name, an entry of the flag-checked
//! command table with nothing but its safe flags, or a match of the fixed regex list.

use super::parse::{argv_of, parse, SimpleCommand};
use super::tables::{tables, CommandConfig, FlagArg, Tables};
use mneme_core::versions::BashReadOnlyTables;
use regex::Regex;
use std::sync::OnceLock;

/// Environment assignments that may prefix a read-only command (Claude Code's list).
const SAFE_ENV: &[&str] = &[
    "GOEXPERIMENT", "GOOS", "GOARCH", "CGO_ENABLED", "GO111MODULE", "RUST_BACKTRACE", "RUST_LOG", "NODE_ENV",
    "PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE", "PYTEST_DISABLE_PLUGIN_AUTOLOAD", "PYTEST_DEBUG",
    "ANTHROPIC_API_KEY", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE", "LC_TIME", "CHARSET", "TERM", "COLORTERM",
    "NO_COLOR", "FORCE_COLOR", "TZ", "LS_COLORS", "LSCOLORS", "GREP_COLOR", "GREP_COLORS", "GCC_COLORS",
    "TIME_STYLE", "BLOCK_SIZE", "BLOCKSIZE", "COLUMNS", "LINES", "CLICOLOR", "CLICOLOR_FORCE", "CI",
    "DEBIAN_FRONTEND", "GIT_TERMINAL_PROMPT",
];

fn re(cell: &'static OnceLock<Regex>, src: &str) -> &'static Regex {
    cell.get_or_init(|| Regex::new(src).expect("static regex"))
}

macro_rules! static_re {
    ($name:ident, $src:expr) => {
        fn $name() -> &'static Regex {
            static CELL: OnceLock<Regex> = OnceLock::new();
            re(&CELL, $src)
        }
    };
}

static_re!(flag_like, r"^-[a-zA-Z0-9_-]");
static_re!(digits, r"^\d+$");
static_re!(newer_pair, r"^-newer[aBcm][aBcmt]$");
static_re!(printf_numeric, r"^[-+]?(0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z]+|[0-9]*\.?[0-9]+([eE][-+]?[0-9]+)?)$");
static_re!(printf_escape, r"%[^%a-zA-Z]*(?:hh|ll|[lLhqjzZt])?\\[0-7xX]");
static_re!(printf_unicode, r"\\[uU]");
static_re!(printf_numeric_conv, r"%[-+ 0#']*[0-9.*]*(?:hh|ll|[lLhqjzZt])?[diouxXeEfFgGaAn]");
static_re!(printf_star, r"%[^%a-zA-Z]*\*");
static_re!(find_action, r"-delete\b|-exec\b|-execdir\b|-ok\b|-okdir\b|-fprint0?\b|-fls\b|-fprintf\b|-files0-from\b");
static_re!(git_dash_c, r"\s-c[\s=]");
static_re!(git_exec_path, r"\s--exec-path[\s=]");
static_re!(git_config_env, r"\s--config-env[\s=]");
static_re!(git_signature_format, r"%[-+ ]?G|%\(\*?signature");
static_re!(short_numeric, r"^-\d+$");

/// Whether Claude Code's `BashTool.isReadOnly` accepts `command`, by the read-only tables of
/// the release it stands in for (`Profile::bash_read_only`).
pub fn is_read_only_command(command: &str, which: BashReadOnlyTables) -> bool {
    let t = tables(which);
    let Ok(commands) = parse(command) else { return false };
    if commands.is_empty() {
        return false;
    }
    // "Compound commands with cd and git require permission checks."
    let git = commands.iter().any(|c| unwrap_argv(&c.argv).first().is_some_and(|a| a == "git"));
    let cd = commands.iter().any(|c| {
        unwrap_argv(&c.argv).first().is_some_and(|a| matches!(a.as_str(), "cd" | "pushd" | "popd" | "chdir"))
    });
    if git && cd {
        return false;
    }
    commands.iter().all(|c| simple_is_read_only(c, t))
}

fn simple_is_read_only(cmd: &SimpleCommand, t: &Tables) -> bool {
    for r in &cmd.redirects {
        let input = matches!(r.op.as_str(), "<" | "<&");
        let dup_fd = r.op == ">&" && digits().is_match(&r.target);
        if !input && r.target != "/dev/null" && !dup_fd {
            return false;
        }
        if r.target.starts_with("/dev/tcp/") || r.target.starts_with("/dev/udp/") {
            return false;
        }
    }
    if cmd.env.iter().any(|(name, _)| !SAFE_ENV.contains(&name.as_str())) {
        return false;
    }
    let argv = unwrap_argv(&cmd.argv);
    if cmd.glob {
        return argv.first().is_some_and(|a| t.glob_safe.contains(a));
    }
    if let Some(verdict) = by_argv(&argv, t) {
        return verdict;
    }
    by_text(strip_wrapper_text(&cmd.text), t)
}

/// `command [-p] [--] X`, `builtin [--] X`, `noglob X` run X.
fn unwrap_argv(argv: &[String]) -> Vec<String> {
    let mut t = argv.to_vec();
    loop {
        match t.first().map(String::as_str) {
            Some("command") => {
                let mut n = 1;
                while t.get(n).is_some_and(|a| !a.is_empty() && a.starts_with('-') && a[1..].chars().all(|c| c == 'p')) {
                    n += 1;
                }
                if t.get(n).is_some_and(|a| a == "--") {
                    n += 1;
                }
                if n >= t.len() || t[n].starts_with('-') {
                    return t;
                }
                t.drain(..n);
            }
            Some("builtin") => {
                let n = if t.get(1).is_some_and(|a| a == "--") { 2 } else { 1 };
                if n >= t.len() {
                    return t;
                }
                t.drain(..n);
            }
            Some("noglob") => {
                if t.len() <= 1 {
                    return t;
                }
                t.remove(0);
            }
            _ => return t,
        }
    }
}

fn strip_wrapper_text(text: &str) -> &str {
    static CELL: OnceLock<Regex> = OnceLock::new();
    let wrapper = re(&CELL, r"^(?:(?:command(?:[ \t]+-p+)*|builtin)(?:[ \t]+--)?|noglob)[ \t]+");
    let mut t = text;
    while let Some(m) = wrapper.find(t) {
        // `(?!-)`: a wrapper followed by a flag is not unwrapped.
        if t[m.end()..].starts_with('-') {
            break;
        }
        t = &t[m.end()..];
    }
    t
}

/// Claude Code's argv-level rules; `None` when they have no opinion.
fn by_argv(e: &[String], t: &Tables) -> Option<bool> {
    let first = e.first()?.as_str();
    if let Some(guard) = t.jq_guard.as_ref().filter(|_| first == "jq") {
        if e.iter().any(|a| guard.is_match(a).unwrap_or(true)) {
            return Some(false);
        }
    }
    if t.exact_commands.contains(first) {
        return Some(e.len() == 1);
    }
    if t.exact_argv.iter().any(|x| x.as_slice() == e) {
        return Some(true);
    }
    if t.readonly.contains(first) {
        return Some(true);
    }
    for words in &t.readonly_multi {
        if e.len() >= words.len() && words.iter().zip(e).all(|(w, a)| w == a) {
            if words[0] == "docker" && docker_is_dangerous(&e[words.len()..]) {
                return Some(false);
            }
            return Some(true);
        }
    }
    let arg = |i: usize| e.get(i).map(String::as_str);
    match first {
        "echo" | "ls" => Some(true),
        "printf" => Some(printf_is_safe(e)),
        "cd" => Some(e.len() <= 2),
        "find" => {
            let mut r = 1;
            while r < e.len() {
                let o = e[r].as_str();
                if t.find_dangerous.contains(o) {
                    return Some(false);
                }
                if t.find_with_arg.contains(o) || newer_pair().is_match(o) {
                    r += 1;
                }
                r += 1;
            }
            Some(true)
        }
        "history" => Some(e.len() == 1 || (e.len() == 2 && digits().is_match(&e[1]))),
        "arch" => Some(e.len() == 1 || (e.len() == 2 && matches!(arg(1), Some("-h" | "--help")))),
        "ifconfig" => Some(e.len() == 1 || (e.len() == 2 && e[1].starts_with(|c: char| c.is_ascii_alphabetic()))),
        _ => None,
    }
}

fn printf_is_safe(e: &[String]) -> bool {
    if e.get(1).is_some_and(|a| a.starts_with('-') && a != "--") {
        return false;
    }
    let r = if e.get(1).is_some_and(|a| a == "--") { 2 } else { 1 };
    let format = e.get(r).map(String::as_str).unwrap_or("");
    if format.contains('$') {
        return false;
    }
    let s = format.replace("%%", "");
    if printf_escape().is_match(&s) || printf_unicode().is_match(&s) {
        return false;
    }
    if printf_numeric_conv().is_match(&s) || printf_star().is_match(&s) {
        for a in &e[(r + 1).min(e.len())..] {
            if a.contains('[') || a.contains('`') || a.contains("$(") || !printf_numeric().is_match(a) {
                return false;
            }
        }
    }
    true
}

/// Claude Code's text-level rules: the flag-checked command table, then the regex list.
fn by_text(text: &str, tables: &Tables) -> bool {
    let mut t = text.trim();
    if let Some(rest) = t.strip_suffix(" 2>&1") {
        t = rest.trim();
    }
    if command_table_allows(t, tables) {
        return true;
    }
    for re in &tables.regexes {
        if re.is_match(t).unwrap_or(false) {
            if t.starts_with("find") && find_action().is_match(&t.replace(['\'', '"', '\\'], "")) {
                return false;
            }
            if t.contains("git")
                && (git_dash_c().is_match(t) || git_exec_path().is_match(t) || git_config_env().is_match(t))
            {
                return false;
            }
            return true;
        }
    }
    false
}

fn command_table_allows(text: &str, tables: &Tables) -> bool {
    let Some(argv) = argv_of(text) else { return false };
    if argv.is_empty() {
        return false;
    }
    let Some((words, cfg, regex)) = tables
        .commands
        .iter()
        .find(|(words, _, _)| argv.len() >= words.len() && words.iter().zip(&argv).all(|(w, a)| w == a))
    else {
        return false;
    };
    let r = words.len();
    if argv[0] == "git" && argv.get(1).is_some_and(|a| a == "ls-remote") {
        if argv.iter().any(|a| a == "-o" || a == "--server-option" || a.starts_with("--server-option=")) {
            return false;
        }
        let mut after_dashes = false;
        for a in &argv[2..] {
            if !after_dashes && a == "--" {
                after_dashes = true;
                continue;
            }
            if after_dashes || a == "-" || !a.starts_with('-') {
                return false;
            }
        }
    }
    if argv[r..].iter().any(|a| a.contains('$') || (a.contains('{') && (a.contains(',') || a.contains("..")))) {
        return false;
    }
    let name = words.join(" ");
    if !flags_are_safe(&argv, r, cfg, &argv[0], tables) {
        return false;
    }
    match regex {
        Some(re) if !re.is_match(text).unwrap_or(false) => return false,
        None if text.contains('`') => return false,
        None if matches!(argv[0].as_str(), "rg" | "grep" | "egrep" | "fgrep") && text.contains(['\n', '\r']) => {
            return false
        }
        _ => {}
    }
    !(cfg.has_callback && callback_says_dangerous(&name, text, &argv[r..]))
}

fn value_fits(value: &str, kind: FlagArg) -> bool {
    match kind {
        FlagArg::None => false,
        FlagArg::Number => digits().is_match(value),
        FlagArg::String => true,
        FlagArg::Char => value.chars().count() == 1,
        FlagArg::Braces => value == "{}",
        FlagArg::Eof => value == "EOF",
    }
}

/// Claude Code's flag walk: every flag must be in the command's safe-flag table, with an
/// argument of the right kind; combined short flags only when each takes no argument.
fn flags_are_safe(e: &[String], start: usize, cfg: &CommandConfig, command: &str, tables: &Tables) -> bool {
    let xargs_targets = (command == "xargs").then_some(&tables.xargs_targets);
    let mut o = start;
    while o < e.len() {
        let mut s = e[o].as_str();
        if s.is_empty() {
            o += 1;
            continue;
        }
        if let Some(targets) = xargs_targets {
            if !s.starts_with('-') || s == "--" {
                if s == "--" && o + 1 < e.len() {
                    o += 1;
                    s = e[o].as_str();
                }
                if !s.is_empty() && targets.iter().any(|t| t == s) {
                    break;
                }
                return false;
            }
        }
        if s == "--" {
            o += 1;
            if cfg.respects_double_dash {
                break;
            }
            continue;
        }
        if s.starts_with('-') && s.len() > 1 && flag_like().is_match(s) {
            let has_eq = s.contains('=');
            let (a, c) = s.split_once('=').unwrap_or((s, ""));
            if a.is_empty() {
                return false;
            }
            let Some(&kind) = cfg.safe_flags.get(a) else {
                if command == "git" && short_numeric().is_match(a) {
                    o += 1;
                    continue;
                }
                if matches!(command, "grep" | "egrep" | "fgrep" | "rg") && !a.starts_with("--") && a.len() > 2 {
                    let (d, p) = a.split_at(2);
                    if let Some(&f) = cfg.safe_flags.get(d) {
                        if digits().is_match(p) && matches!(f, FlagArg::Number | FlagArg::String) {
                            if value_fits(p, f) {
                                o += 1;
                                continue;
                            }
                            return false;
                        }
                    }
                }
                if !a.starts_with("--") && a.len() > 2 {
                    for ch in a[1..].chars() {
                        match cfg.safe_flags.get(&format!("-{ch}")) {
                            Some(FlagArg::None) => {}
                            _ => return false,
                        }
                    }
                    o += 1;
                    continue;
                }
                return false;
            };
            if kind == FlagArg::None {
                if has_eq {
                    return false;
                }
                o += 1;
            } else {
                let value = if has_eq {
                    o += 1;
                    c.to_string()
                } else {
                    let next = e.get(o + 1);
                    if next.is_none_or(|n| n.starts_with('-') && n.len() > 1 && flag_like().is_match(n)) {
                        return false;
                    }
                    o += 2;
                    next.cloned().unwrap_or_default()
                };
                if kind == FlagArg::String && value.starts_with('-') {
                    let git_sort_desc = a == "--sort"
                        && command == "git"
                        && value.chars().nth(1).is_some_and(|c| c.is_ascii_alphabetic());
                    if !git_sort_desc {
                        return false;
                    }
                }
                if !value_fits(&value, kind) {
                    return false;
                }
            }
        } else {
            o += 1;
        }
    }
    true
}

/// The per-command `additionalCommandIsDangerousCallback`s.
fn callback_says_dangerous(name: &str, text: &str, t: &[String]) -> bool {
    let has = |x: &str| t.iter().any(|a| a == x);
    match name {
        "git log" | "git show" | "git shortlog" | "git rev-list" | "git for-each-ref" => git_format_is_dangerous(t),
        "git reflog" => {
            if t.first().is_some_and(|o| !o.starts_with('-') && o != "show" && o != "list") {
                return true;
            }
            t.iter().any(|a| matches!(a.as_str(), "expire" | "delete" | "exists" | "drop" | "write"))
        }
        "git ls-remote" => {
            if git_format_is_dangerous(t) {
                return true;
            }
            let mut after = false;
            let mut r = 0;
            while r < t.len() {
                let o = t[r].as_str();
                if !after && o == "--" {
                    after = true;
                } else if !after && (o.is_empty() || o.starts_with('-')) {
                    if o == "--sort" {
                        r += 1;
                    }
                } else {
                    return true;
                }
                r += 1;
            }
            false
        }
        "git remote show" => {
            let split = t.iter().position(|a| a == "--");
            let (before, after) = match split {
                Some(i) => (&t[..i], &t[i + 1..]),
                None => (t, &t[t.len()..]),
            };
            let rest: Vec<&String> = before.iter().filter(|a| *a != "-n").chain(after).collect();
            if rest.len() != 1 || !before.iter().any(|a| a == "-n") {
                return true;
            }
            static CELL: OnceLock<Regex> = OnceLock::new();
            !re(&CELL, r"^[a-zA-Z0-9_][a-zA-Z0-9_-]*$").is_match(rest[0])
        }
        "git remote" => t.iter().any(|a| a != "-v" && a != "--verbose"),
        "git tag" => git_list_is_dangerous(t, &["--contains", "--no-contains", "--merged", "--no-merged", "--points-at", "--sort", "--format", "-n"], &[]),
        "git branch" => git_list_is_dangerous(t, &["--contains", "--no-contains", "--points-at", "--sort"], &["--merged", "--no-merged"]),
        "sed" => !sed_is_safe(text),
        "man" => man_is_dangerous(t),
        "ps" => {
            static CELL: OnceLock<Regex> = OnceLock::new();
            let bsd_e = re(&CELL, r"^[a-zA-Z]*e[a-zA-Z]*$");
            t.iter().any(|a| !a.starts_with('-') && bsd_e.is_match(a))
        }
        "date" => {
            let takes = ["-d", "--date", "-r", "--reference", "--rfc-3339"];
            let mut r = 0;
            while r < t.len() {
                let o = t[r].as_str();
                if o.starts_with("--") && o.contains('=') {
                    r += 1;
                } else if o.starts_with('-') {
                    r += if takes.contains(&o) { 2 } else { 1 };
                } else if !o.starts_with('+') {
                    return true;
                } else {
                    r += 1;
                }
            }
            false
        }
        "lsof" => lsof_is_dangerous(t),
        "tput" => tput_is_dangerous(t),
        "ss" => ss_is_dangerous(t),
        "pyright" => has("--watch") || has("-w"),
        // From 2.1.213: a topic naming a path (or the home folder) is not read-only.
        "help" => t.iter().any(|a| a.contains(['~', '/', '\\'])),
        // From 2.1.319: every option before `--` a plain short or long flag.
        "which" => {
            static CELL: OnceLock<Regex> = OnceLock::new();
            let plain = re(&CELL, r"^(?:-[A-Za-z]+|--[a-z-]+)$");
            let options = t.iter().take_while(|a| *a != "--");
            options.filter(|a| a.starts_with('-')).any(|a| !plain.is_match(a))
        }
        // From 2.1.329: `--submodule` only as `=short`, `--ignore-submodules` only as `=all`
        // (or `=dirty` beside `--submodule=short`); the others run git in each submodule.
        "git diff" => {
            let options = t.iter().position(|a| a == "--").map_or(t, |i| &t[..i]);
            let short = options.iter().any(|a| a == "--submodule=short");
            t.iter().any(|a| {
                let name = a.split('=').next().unwrap_or(a);
                (name == "--submodule" && a != "--submodule=short")
                    || (name == "--ignore-submodules"
                        && a != "--ignore-submodules=all"
                        && !(a == "--ignore-submodules=dirty" && short))
            })
        }
        "docker logs" | "docker inspect" => docker_is_dangerous(t),
        "test" => {
            if t.iter().any(|a| matches!(a.as_str(), "-v" | "-R" | "-a" | "-o") || a.contains('[')) {
                return true;
            }
            static CELL: OnceLock<Regex> = OnceLock::new();
            let int = re(&CELL, r"^-?(0[xX][0-9a-fA-F]+|[0-9]+#[0-9a-zA-Z]+|[0-9]+)$");
            for n in 0..t.len() {
                if matches!(t[n].as_str(), "-eq" | "-ne" | "-lt" | "-le" | "-gt" | "-ge") {
                    let around = [n.checked_sub(1).and_then(|i| t.get(i)), t.get(n + 1)];
                    if around.into_iter().flatten().any(|x| !int.is_match(x)) {
                        return true;
                    }
                }
                if t[n] == "-t" && t.get(n + 1).is_some_and(|x| !int.is_match(x)) {
                    return true;
                }
            }
            false
        }
        // A table entry flagged with a callback this port does not know: refuse.
        _ => true,
    }
}

/// `--format`/`--pretty` naming a user-defined alias, or any signature placeholder (which
/// runs gpg), makes git log and friends unsafe.
fn git_format_is_dangerous(e: &[String]) -> bool {
    let builtin = ["oneline", "short", "medium", "full", "fuller", "email", "raw"];
    let bad = |v: &str| git_signature_format().is_match(v) || v.contains("signature");
    let custom = |v: &str| {
        !v.is_empty() && !v.contains('%') && !v.starts_with("format:") && !v.starts_with("tformat:") && !builtin.contains(&v)
    };
    for (n, r) in e.iter().enumerate() {
        if git_signature_format().is_match(r) {
            return true;
        }
        for o in ["--format", "--pretty", "--sort"] {
            let value = if r == o && n + 1 < e.len() {
                Some(e[n + 1].as_str())
            } else {
                r.strip_prefix(o).and_then(|v| v.strip_prefix('='))
            };
            let Some(v) = value else { continue };
            if bad(v) || (o != "--sort" && custom(v)) {
                return true;
            }
        }
    }
    false
}

/// `git tag` / `git branch` are read-only only when listing.
fn git_list_is_dangerous(t: &[String], with_value: &[&str], positional_ok_after: &[&str]) -> bool {
    if git_format_is_dangerous(t) {
        return true;
    }
    let (mut o, mut last, mut listing, mut after) = (0, String::new(), false, false);
    while o < t.len() {
        let l = t[o].as_str();
        if l.is_empty() {
            o += 1;
            continue;
        }
        if l == "--" && !after {
            after = true;
            last.clear();
            o += 1;
            continue;
        }
        if !after && l.starts_with('-') {
            if l == "--list" || l == "-l" || (!l.starts_with("--") && l.len() > 2 && !l.contains('=') && l[1..].contains('l')) {
                listing = true;
            }
            if l.contains('=') {
                last = l.split('=').next().unwrap_or_default().to_string();
                o += 1;
            } else if with_value.contains(&l) {
                last = l.to_string();
                o += 2;
            } else {
                last = l.to_string();
                o += 1;
            }
        } else {
            if !listing && !positional_ok_after.contains(&last.as_str()) {
                return true;
            }
            o += 1;
        }
    }
    false
}

fn man_is_dangerous(t: &[String]) -> bool {
    let search = ["-k", "-f", "--apropos", "--whatis"];
    let mut searching = false;
    for a in t {
        if a == "--" {
            break;
        }
        if !a.starts_with('-') || a == "-" {
            continue;
        }
        if a.starts_with("--") {
            searching |= search.contains(&a.as_str());
        } else if a[1..].contains(['k', 'f']) {
            searching = true;
        }
    }
    let (mut named, mut positional) = (false, false);
    let mut i = 0;
    while i < t.len() {
        let l = t[i].as_str();
        if !positional && l == "--" {
            positional = true;
            i += 1;
            continue;
        }
        if !(positional || !l.starts_with('-') || l == "-") {
            if search.contains(&l) {
                named = true;
            } else if l == "-S" || l == "-s" {
                i += 1;
            }
            i += 1;
            continue;
        }
        positional = true;
        if searching && l.starts_with('-') {
            return true;
        }
        if !named && l.contains('/') {
            return true;
        }
        i += 1;
    }
    false
}

fn host_part(s: &str) -> &str {
    let after = s.split_once('@').map_or("", |(_, h)| h);
    after.split(':').next().unwrap_or_default()
}

fn lsof_is_dangerous(t: &[String]) -> bool {
    static A: OnceLock<Regex> = OnceLock::new();
    static B: OnceLock<Regex> = OnceLock::new();
    let inline = re(&A, r"^-[a-zA-Z]*i\S*@");
    let bare = re(&B, r"^-[a-zA-Z]*i$");
    for (n, r) in t.iter().enumerate() {
        if r.starts_with("+m") {
            return true;
        }
        if inline.is_match(r) && host_part(r).chars().any(|c| c.is_ascii_alphabetic()) {
            return true;
        }
        if bare.is_match(r) {
            let next = t.get(n + 1).map(String::as_str).unwrap_or("");
            if next.contains('@') && host_part(next).chars().any(|c| c.is_ascii_alphabetic()) {
                return true;
            }
        }
    }
    false
}

fn tput_is_dangerous(t: &[String]) -> bool {
    let caps = [
        "init", "reset", "rs1", "rs2", "rs3", "is1", "is2", "is3", "iprog", "if", "rf", "clear", "flash", "mc0", "mc4",
        "mc5", "mc5i", "mc5p", "pfkey", "pfloc", "pfx", "pfxl", "smcup", "rmcup",
    ];
    let (mut o, mut after) = (0, false);
    while o < t.len() {
        let i = t[o].as_str();
        if i == "--" {
            after = true;
            o += 1;
        } else if !after && i.starts_with('-') {
            if i == "-S" || (!i.starts_with("--") && i.len() > 2 && i.contains('S')) {
                return true;
            }
            o += if i == "-T" { 2 } else { 1 };
        } else {
            if caps.contains(&i) {
                return true;
            }
            o += 1;
        }
    }
    false
}

fn ss_is_dangerous(t: &[String]) -> bool {
    static K: OnceLock<Regex> = OnceLock::new();
    static V: OnceLock<Regex> = OnceLock::new();
    static F: OnceLock<Regex> = OnceLock::new();
    static S: OnceLock<Regex> = OnceLock::new();
    static HEXISH: OnceLock<Regex> = OnceLock::new();
    let keyword =
        re(&K, r"^(dst|src|dport|sport|and|or|not|eq|ne|ge|le|gt|lt|autobound|state|exclude|dev|fwmark|cgroup)$");
    let with_value = re(&V, r"^(state|exclude|dport|sport|dev|fwmark|cgroup)$");
    let flag_value = re(&F, r"^(-f|--family|-A|--query|--socket)$");
    let split = re(&S, r"[\s()=!<>&|,]+");
    let letters = re(&HEXISH, r"[g-zG-Z]");
    let mut words = Vec::new();
    let mut after = false;
    let mut c = 0;
    while c < t.len() {
        let u = t[c].as_str();
        if !after && u == "--" {
            after = true;
        } else if !after && u.starts_with('-') {
            if flag_value.is_match(u) {
                c += 1;
            }
        } else {
            words.push(u);
        }
        c += 1;
    }
    let joined = words.join(" ");
    let mut skip = false;
    for w in split.split(&joined).filter(|w| !w.is_empty()) {
        if skip {
            skip = false;
            continue;
        }
        if keyword.is_match(w) {
            skip = with_value.is_match(w);
            continue;
        }
        let hexish = w.chars().any(|c| matches!(c, 'a'..='f' | 'A'..='F'));
        if letters.is_match(w) || (hexish && (w.contains('.') || !w.contains(':'))) {
            return true;
        }
    }
    false
}

/// docker flags that point it at another daemon or config.
fn docker_is_dangerous(t: &[String]) -> bool {
    let remote = ["-H", "-c", "--host", "--context", "--config", "--tlscacert", "--tlscert", "--tlskey"];
    t.iter().any(|a| {
        remote.iter().any(|r| a == r || a.starts_with(&format!("{r}=")))
            || (a.starts_with('-') && !a.starts_with("--") && a[1..].contains(['H', 'c']))
    })
}

/// `sed` is read-only only as `sed -n 'Np'` printing or a single `s/a/b/flags` to stdout.
fn sed_is_safe(text: &str) -> bool {
    let Some(argv) = argv_of(text) else { return false };
    if argv.first().is_none_or(|a| a != "sed") {
        return false;
    }
    let args = &argv[1..];
    let mut exprs = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let a = args[i].as_str();
        if (a == "-e" || a == "--expression") && i + 1 < args.len() {
            exprs.push(args[i + 1].clone());
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("--expression=").or_else(|| a.strip_prefix("-e=")) {
            exprs.push(v.to_string());
        }
        i += 1;
    }
    if exprs.is_empty() {
        if let Some(first) = args.iter().find(|a| !a.starts_with('-')) {
            exprs.push(first.clone());
        }
    }
    // With -e, any positional is a file; without, a second positional is.
    let has_files = {
        let (mut positional, mut saw_e, mut i) = (0, false, 0);
        let mut files = false;
        while i < args.len() {
            let a = args[i].as_str();
            if (a == "-e" || a == "--expression") && i + 1 < args.len() {
                saw_e = true;
                i += 2;
                continue;
            }
            if a.starts_with("--expression=") || a.starts_with("-e=") {
                saw_e = true;
            } else if !a.starts_with('-') {
                positional += 1;
                if saw_e || positional > 1 {
                    files = true;
                    break;
                }
            }
            i += 1;
        }
        files
    };
    let flags: Vec<&str> = args.iter().map(String::as_str).filter(|a| a.starts_with('-') && *a != "--").collect();
    let flags_within = |allowed: &[&str]| {
        flags.iter().all(|f| {
            if !f.starts_with("--") && f.len() > 2 {
                f[1..].chars().all(|c| allowed.contains(&format!("-{c}").as_str()))
            } else {
                allowed.contains(f)
            }
        })
    };
    static PRINT: OnceLock<Regex> = OnceLock::new();
    let print_cmd = re(&PRINT, r"^(?:\d+|\d+,\d+)?p$");
    let print_mode = flags_within(&["-n", "--quiet", "--silent", "-E", "--regexp-extended", "-r", "-z", "--zero-terminated", "--posix"])
        && flags.iter().any(|f| matches!(*f, "-n" | "--quiet" | "--silent") || (!f.starts_with("--") && f.contains('n')))
        && !exprs.is_empty()
        && exprs.iter().all(|e| e.split(';').all(|c| print_cmd.is_match(c.trim())));
    let substitute = !has_files
        && flags_within(&["-E", "--regexp-extended", "-r", "--posix"])
        && exprs.len() == 1
        && {
            let c = exprs[0].trim();
            match c.strip_prefix("s/") {
                Some(d) => {
                    let chars: Vec<char> = d.chars().collect();
                    let (mut slashes, mut last, mut m) = (0, None, 0);
                    while m < chars.len() {
                        if chars[m] == '\\' {
                            m += 2;
                            continue;
                        }
                        if chars[m] == '/' {
                            slashes += 1;
                            last = Some(m);
                        }
                        m += 1;
                    }
                    static FLAGS: OnceLock<Regex> = OnceLock::new();
                    let tail: String = last.map(|l| chars[l + 1..].iter().collect()).unwrap_or_default();
                    slashes == 2 && re(&FLAGS, r"^[gpimIM]*[1-9]?[gpimIM]*$").is_match(&tail)
                }
                None => false,
            }
        };
    if !print_mode && !substitute {
        return false;
    }
    !(substitute && exprs.iter().any(|e| e.contains(';')))
}
