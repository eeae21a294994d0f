//! Which GitHub repository a folder belongs to, decided exactly as Claude Code 2.1.197's
//! `getGithubRepo` does, because the answer is the key team memory is stored under on the
//! server: a different answer would read and write another team's memory.
//!
//! - The remote is `origin` only: its `pushurl`, else its `url`, read from the git directory's
//!   own `config` by Claude Code's small config reader (first matching line wins, the
//!   subsection name is case-sensitive, `[remote.origin]` is not recognised). A worktree whose
//!   own config has neither falls back to the common directory's config (`commondir`).
//! - `parseGitRemote` accepts `git@host:owner/name(.git)` and `scheme://[user@]host[:port]/owner/name(.git)`
//!   for `http`, `https`, `ssh` and `git`; the port is kept only for http(s). The host must
//!   contain a dot and end in an alphabetic label (so SSH aliases such as `github.com-work`
//!   fail), and owner and name must be `[A-Za-z0-9._-]+`, not starting with `-`, not `.`/`..`.
//! - The result is `owner/name` (case preserved, one `.git` stripped) only when the host is
//!   github.com: compared lowercased, trailing dots and leading `www.` removed, through the
//!   WHATWG host parser (so `GitHub.com.` and `www.github.com` count, `github.com:443` does not).
//!
//! The [`getGithubRepo` digest](../../../shared/reference/claude-code-memory.md) §8.1 describes an
//! older, stricter host check; the observed binary wins.

use mneme_core::text::js_trim;
use regex::Regex;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// A parsed git remote: the host (with the port for http(s)), owner and repository name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitRemote {
    pub host: String,
    pub owner: String,
    pub name: String,
}

impl GitRemote {
    /// `owner/name`, the repository slug the server keys team memory by.
    pub fn slug(&self) -> String {
        format!("{}/{}", self.owner, self.name)
    }
}

fn ssh_form() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    RE.get_or_init(|| Regex::new(r"^git@([^:]+):([^/]+)/([^/]+?)(?:\.git)?$").expect("valid regex"))
}

fn url_form() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // `\d` is ASCII in JavaScript; `[0-9]` keeps it so here.
    RE.get_or_init(|| {
        Regex::new(r"^(https?|ssh|git)://(?:[^@]+@)?([^/:]+(?::[0-9]+)?)/([^/]+)/([^/]+?)(?:\.git)?$").expect("valid regex")
    })
}

/// `parseGitRemote`: the host, owner and name of a remote URL, or `None` when it is not one
/// of the two accepted forms or fails the host or segment checks.
pub fn parse_git_remote(url: &str) -> Option<GitRemote> {
    let t = js_trim(url);
    if let Some(c) = ssh_form().captures(t) {
        let (host, owner, name) = (&c[1], &c[2], &c[3]);
        if !host_looks_real(host) || !valid_segment(owner) || !valid_segment(name) {
            return None;
        }
        return Some(GitRemote { host: host.into(), owner: owner.into(), name: name.into() });
    }
    let c = url_form().captures(t)?;
    let (scheme, host_port, owner, name) = (&c[1], &c[2], &c[3], &c[4]);
    let bare_host = host_port.split(':').next().unwrap_or(host_port);
    if !host_looks_real(bare_host) {
        return None;
    }
    let host = if scheme == "https" || scheme == "http" { host_port } else { bare_host };
    if !valid_segment(owner) || !valid_segment(name) {
        return None;
    }
    Some(GitRemote { host: host.into(), owner: owner.into(), name: name.into() })
}

/// The host sanity check: a dot, and a last label of ASCII letters only.
fn host_looks_real(host: &str) -> bool {
    host.contains('.') && host.rsplit('.').next().is_some_and(|l| !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphabetic()))
}

/// Owner and name segments: `[A-Za-z0-9._-]+`, not an option-like `-x`, not `.` or `..`.
fn valid_segment(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'_' || b == b'-')
        && !s.starts_with('-')
        && s != "."
        && s != ".."
}

/// Whether a remote's host is github.com as Claude Code's `isGithubHost` sees it.
pub fn is_github_host(host: &str) -> bool {
    let mut h = normalize_host(host);
    while let Some(rest) = h.strip_prefix("www.") {
        h = rest.to_string();
    }
    h == "github.com"
}

/// Lowercase, tabs and line breaks removed, trailing dots removed, and — when it is a plain
/// host — the WHATWG parser's view of it (IDNA mapping, percent-decoding).
fn normalize_host(host: &str) -> String {
    let stripped: String = host.chars().filter(|c| !matches!(c, '\t' | '\n' | '\r')).collect();
    let t = trim_trailing_dots(&stripped.to_lowercase()).to_string();
    if t.is_empty() || t.chars().any(|c| matches!(c, ':' | '/' | '\\' | '?' | '#' | '@') || mneme_core::text::is_js_whitespace(c)) {
        return t;
    }
    match url::Url::parse(&format!("https://{t}")) {
        Ok(u) if u.username().is_empty()
            && u.password().is_none()
            && u.port().is_none()
            && u.path() == "/"
            && u.query().is_none()
            && u.fragment().is_none() =>
        {
            trim_trailing_dots(u.host_str().unwrap_or(&t)).to_string()
        }
        _ => t,
    }
}

fn trim_trailing_dots(s: &str) -> &str {
    s.trim_end_matches('.')
}

/// `owner/name` for a remote URL when it points at github.com.
pub fn github_slug(url: &str) -> Option<String> {
    parse_git_remote(url).filter(|r| is_github_host(&r.host)).map(|r| r.slug())
}

/// The git directory of the repository holding `cwd` (`resolveGitDir`): `<root>/.git`, or
/// where a `.git` file's `gitdir:` line points (worktrees, submodules).
pub fn git_dir(cwd: &Path) -> Option<PathBuf> {
    let root = mneme_store::git::find_git_root(cwd)?;
    let dot_git = root.join(".git");
    let meta = fs::metadata(&dot_git).ok()?;
    if meta.is_file() {
        let text = mneme_store::open::read_plain_to_string(&dot_git).ok()?;
        let text = js_trim(&text);
        if let Some(rest) = text.strip_prefix("gitdir:") {
            return Some(mneme_store::git::normalize(&root.join(js_trim(rest))));
        }
    }
    Some(dot_git)
}

/// `origin`'s push URL, else its URL, from a git directory's `config`.
fn origin_url_in(git_dir: &Path) -> Option<String> {
    let read = |key: &str| config_value_in(git_dir, "remote", Some("origin"), key).filter(|v| !v.is_empty());
    read("pushurl").or_else(|| read("url"))
}

fn config_value_in(git_dir: &Path, section: &str, subsection: Option<&str>, key: &str) -> Option<String> {
    let (bytes, _) = mneme_store::open::read_plain(&git_dir.join("config")).ok()?;
    config_value(&String::from_utf8_lossy(&bytes), section, subsection, key)
}

/// The remote URL Claude Code would use from `cwd`: the repository's own config, then the
/// common directory's (a linked worktree keeps `origin` in the main repository's config).
pub fn remote_url(cwd: &Path) -> Option<String> {
    let dir = git_dir(cwd)?;
    if let Some(url) = origin_url_in(&dir) {
        return Some(url);
    }
    let common = mneme_store::open::read_plain_to_string(&dir.join("commondir")).ok()?;
    let common = mneme_store::git::normalize(&dir.join(js_trim(&common)));
    if common != dir {
        origin_url_in(&common)
    } else {
        None
    }
}

/// `getGithubRepo`: `owner/name` of the github.com repository holding `cwd`, if it is one.
pub fn github_repo(cwd: &Path) -> Option<String> {
    github_slug(&remote_url(cwd)?)
}

/// Claude Code's git config reader: the first `key` (case-insensitive) under `[section]` or
/// `[section "subsection"]` (section case-insensitive, subsection exact). Comments, quoting
/// and escapes as git writes them; a bare key without `=` is skipped.
pub fn config_value(text: &str, section: &str, subsection: Option<&str>, key: &str) -> Option<String> {
    let section = section.to_lowercase();
    let key = key.to_lowercase();
    let mut inside = false;
    for line in text.split('\n') {
        let line = js_trim(line);
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if line.starts_with('[') {
            inside = header_matches(line, &section, subsection);
            continue;
        }
        if !inside {
            continue;
        }
        if let Some((k, v)) = key_value(line) {
            if k.to_lowercase() == key {
                return Some(v);
            }
        }
    }
    None
}

fn header_matches(line: &str, section: &str, subsection: Option<&str>) -> bool {
    let c: Vec<char> = line.chars().collect();
    let mut r = 1;
    while r < c.len() && !matches!(c[r], ']' | ' ' | '\t' | '"') {
        r += 1;
    }
    if c[1..r].iter().collect::<String>().to_lowercase() != section {
        return false;
    }
    let Some(sub) = subsection else {
        return r < c.len() && c[r] == ']';
    };
    while r < c.len() && matches!(c[r], ' ' | '\t') {
        r += 1;
    }
    if r >= c.len() || c[r] != '"' {
        return false;
    }
    r += 1;
    let mut name = String::new();
    while r < c.len() && c[r] != '"' {
        if c[r] == '\\' && r + 1 < c.len() {
            name.push(c[r + 1]);
            r += 2;
            continue;
        }
        name.push(c[r]);
        r += 1;
    }
    if r >= c.len() || c[r] != '"' {
        return false;
    }
    r += 1;
    if r >= c.len() || c[r] != ']' {
        return false;
    }
    name == sub
}

fn key_value(line: &str) -> Option<(String, String)> {
    let c: Vec<char> = line.chars().collect();
    let mut t = 0;
    while t < c.len() && (c[t].is_ascii_alphanumeric() || c[t] == '-') {
        t += 1;
    }
    if t == 0 {
        return None;
    }
    let key: String = c[..t].iter().collect();
    while t < c.len() && matches!(c[t], ' ' | '\t') {
        t += 1;
    }
    if t >= c.len() || c[t] != '=' {
        return None;
    }
    t += 1;
    while t < c.len() && matches!(c[t], ' ' | '\t') {
        t += 1;
    }
    Some((key, config_text(&c, t)))
}

fn config_text(c: &[char], start: usize) -> String {
    let mut out = String::new();
    let mut quoted = false;
    let mut o = start;
    while o < c.len() {
        let ch = c[o];
        if !quoted && (ch == '#' || ch == ';') {
            break;
        }
        if ch == '"' {
            quoted = !quoted;
            o += 1;
            continue;
        }
        if ch == '\\' && o + 1 < c.len() {
            let next = c[o + 1];
            if quoted {
                out.push(match next {
                    'n' => '\n',
                    't' => '\t',
                    'b' => '\u{8}',
                    other => other,
                });
                o += 2;
                continue;
            }
            if next == '\\' {
                out.push('\\');
                o += 2;
                continue;
            }
        }
        out.push(ch);
        o += 1;
    }
    if !quoted {
        out.truncate(out.trim_end_matches([' ', '\t']).len());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (remote URL, expected `owner/name` for github.com or None).
    const SLUGS: &[(&str, Option<&str>)] = &[
        ("git@github.com:anthropics/claude-code.git", Some("anthropics/claude-code")),
        ("git@github.com:Owner/Repo", Some("Owner/Repo")),
        ("  git@github.com:o/r.git\n", Some("o/r")),
        ("https://github.com/o/r.git", Some("o/r")),
        ("https://github.com/o/r", Some("o/r")),
        ("http://github.com/o/r.git", Some("o/r")),
        ("ssh://git@github.com/o/r.git", Some("o/r")),
        ("git://github.com/o/r.git", Some("o/r")),
        ("ssh://git@github.com:22/o/r.git", Some("o/r")),
        ("https://user:token@github.com/o/r.git", Some("o/r")),
        ("https://GitHub.COM/o/r", Some("o/r")),
        ("https://www.github.com/o/r", Some("o/r")),
        ("https://www.www.github.com/o/r", Some("o/r")),
        ("git@github.com.:o/r", None), // the last label is empty: not a real host
        ("https://github.com:443/o/r", None), // the port is kept for https, and github.com:443 is not github.com
        ("https://gitlab.com/o/r", None),
        ("git@gitlab.com:o/r.git", None),
        ("git@github.com-work:o/r.git", None), // an SSH alias
        ("github:o/r", None),
        ("git@github:o/r", None),
        ("https://github.com/o/r/extra", None), // three segments
        ("https://github.com/o", None),
        ("https://github.com/o/r.git.git", Some("o/r.git")),
        ("https://github.com/o/.git", Some("o/.git")), // the lazy name takes `.git` whole rather than be empty
        ("https://github.com/o/.", None),
        ("https://github.com/-o/r", None), // looks like an option
        ("https://github.com/o/..", None),
        ("https://github.com/o/r%20x", None),
        ("https://github.com/o/r?x=1", None),
        ("https://github.com/ö/r", None),
        ("ftp://github.com/o/r", None),
        ("file:///home/u/repo", None),
        ("/home/u/repo.git", None),
        ("", None),
        ("https://evil.com/x@github.com/o/r", Some("o/r")), // userinfo may hold '/': Claude Code's regex takes it
        ("https://github.com@evil.com/o/r", None),
        ("git@evil.com:github.com/o", None),
        ("https://github.com.evil.com/o/r", None),
        ("https://git%68ub.com/o/r", Some("o/r")), // the WHATWG host parser percent-decodes
        ("https://github%2ecom/o/r", None), // but the dot check runs on the raw host
        ("https://ｇithub.com/o/r", Some("o/r")), // and maps full-width letters (IDNA)
        ("https://xn--github-.com/o/r", None),
        ("git@github.com:o/r\nx", None),
        ("git@127.0.0.1:o/r", None), // the last label is digits
    ];

    #[test]
    fn slugs_match_claude_code() {
        for (url, want) in SLUGS {
            assert_eq!(github_slug(url).as_deref(), *want, "{url:?}");
        }
    }

    #[test]
    fn parse_keeps_ports_only_for_http() {
        let p = |u: &str| parse_git_remote(u).map(|r| (r.host, r.owner, r.name));
        assert_eq!(p("https://ghe.corp.com:8443/o/r.git"), Some(("ghe.corp.com:8443".into(), "o".into(), "r".into())));
        assert_eq!(p("ssh://git@ghe.corp.com:2222/o/r.git"), Some(("ghe.corp.com".into(), "o".into(), "r".into())));
        assert_eq!(p("git@ghe.corp.com:o/r"), Some(("ghe.corp.com".into(), "o".into(), "r".into())));
        assert_eq!(p("git@host.local1:o/r"), None);
    }

    #[test]
    fn config_reader_follows_claude_code() {
        let cfg = "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = git@github.com:up/r.git\n\
                   [Remote \"origin\"]\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n\
                   \tURL = \"git@github.com:o/r.git\" # comment\n\turl = git@github.com:second/r.git\n";
        assert_eq!(config_value(cfg, "remote", Some("origin"), "url").as_deref(), Some("git@github.com:o/r.git"));
        assert_eq!(config_value(cfg, "remote", Some("Origin"), "url"), None, "subsections are case-sensitive");
        assert_eq!(config_value(cfg, "core", None, "bare").as_deref(), Some("false"));
        assert_eq!(config_value("[remote.origin]\nurl = x\n", "remote", Some("origin"), "url"), None);
        assert_eq!(config_value("[remote \"o\\\"x\"]\nurl = y\n", "remote", Some("o\"x"), "url").as_deref(), Some("y"));
        assert_eq!(config_value("[r \"o\"]\nurl = a\\\\b\\c ; note\n", "r", Some("o"), "url").as_deref(), Some("a\\b\\c"));
        assert_eq!(config_value("[r \"o\"]\nurl = \"a\\tb \" \n", "r", Some("o"), "url").as_deref(), Some("a\tb")); // the quoted space goes too: trailing blanks are trimmed after unquoting
        assert_eq!(config_value("[r \"o\"]\nurl\nurl=\n", "r", Some("o"), "url").as_deref(), Some(""));
        assert_eq!(config_value("[r \"o\"]\r\nurl = v\r\n", "r", Some("o"), "url").as_deref(), Some("v"));
    }

    fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn pushurl_wins_and_worktrees_fall_back_to_the_common_config() {
        let t = tempfile::tempdir().unwrap();
        let main = t.path().join("main");
        write(
            &main.join(".git/config"),
            "[remote \"origin\"]\n\turl = https://github.com/fetch/r.git\n\tpushurl = git@github.com:push/r.git\n",
        );
        fs::create_dir_all(main.join("src/deep")).unwrap();
        assert_eq!(github_repo(&main.join("src/deep")).as_deref(), Some("push/r"));

        // A linked worktree: its git dir has no origin, the common dir does.
        let wt = t.path().join("wt");
        let wt_git = main.join(".git/worktrees/wt");
        write(&wt.join(".git"), &format!("gitdir: {}\n", wt_git.display()));
        write(&wt_git.join("commondir"), "../..\n");
        write(&wt_git.join("config"), "[core]\n\tx = 1\n");
        assert_eq!(remote_url(&wt).as_deref(), Some("git@github.com:push/r.git"));
        // Its own origin wins when it has one.
        write(&wt_git.join("config"), "[remote \"origin\"]\n\turl = git@github.com:own/r.git\n");
        assert_eq!(github_repo(&wt).as_deref(), Some("own/r"));

        // Only origin counts; no git repository at all gives nothing.
        write(&main.join(".git/config"), "[remote \"upstream\"]\n\turl = git@github.com:u/r.git\n");
        assert_eq!(github_repo(&main), None);
        let lone = t.path().join("lone");
        fs::create_dir_all(&lone).unwrap();
        if mneme_store::git::find_git_root(&lone).is_none() {
            assert_eq!(github_repo(&lone), None);
        }
    }

    #[test]
    fn real_git_agrees_on_what_origin_is() {
        let t = tempfile::tempdir().unwrap();
        let run = |args: &[&str]| std::process::Command::new("git").args(args).current_dir(t.path()).output();
        let Ok(out) = run(&["init", "-q"]) else { return };
        assert!(out.status.success());
        run(&["remote", "add", "origin", "git@github.com:Some-Org/Some.Repo.git"]).unwrap();
        assert_eq!(github_repo(t.path()).as_deref(), Some("Some-Org/Some.Repo"));
        run(&["remote", "set-url", "--push", "origin", "https://github.com/pushed/elsewhere"]).unwrap();
        assert_eq!(github_repo(t.path()).as_deref(), Some("pushed/elsewhere"));
    }
}
