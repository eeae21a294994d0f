//! Files from other systems in the places Claude Code reads instructions from: names spelled in
//! decomposed Unicode (a folder synced from macOS) and names that are not UTF-8 at all (Linux
//! allows any bytes). What each release does was captured from the real binaries
//! (docs/claude-code-versions.md, row 29; testdata/conformance-versions `foreign`).

mod common;

use common::Fx;
use mneme_claudemd::{load, SkipReason};
use mneme_core::versions::ClaudeVersion;
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

impl Fx {
    /// Writes `content` at `rel` (bytes, so a name may be anything Linux allows).
    fn write(&self, rel: &[u8], content: &str) {
        self.write_bytes(OsStr::from_bytes(rel), content.as_bytes());
    }

    /// The rules each release loads at start from repository `repo`, as paths under it.
    fn rules(&self, repo: &str, release: ClaudeVersion) -> Vec<String> {
        let cwd = self.p(repo);
        let ctx = load(&self.options_for(repo, release));
        let mut out: Vec<String> = ctx
            .files
            .iter()
            .filter(|f| f.is_rule)
            .filter_map(|f| f.path.strip_prefix(&cwd).ok().map(|p| p.to_string_lossy().into_owned()))
            .collect();
        out.sort();
        out
    }
}

fn nfd(s: &str) -> Vec<u8> {
    use unicode_normalization::UnicodeNormalization;
    s.nfd().collect::<String>().into_bytes()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

/// Before 2.1.160 a rules folder holding a name in decomposed form with no composed twin
/// loads nothing (neither that entry nor its neighbours, nor its sub-folders); a sub-folder
/// holding one loses only itself; with a composed twin the composed file loads once. From
/// 2.1.160 every entry loads as spelled. (Captured from 2.1.122, 2.1.159 and 2.1.160.)
#[test]
fn rules_named_in_decomposed_form_by_release() {
    let fx = Fx::new();
    let (old, new) = (ClaudeVersion::new(2, 1, 159), ClaudeVersion::new(2, 1, 160));
    fx.write(b"top/.claude/rules/ok.md", "OK\n");
    fx.write(b"top/.claude/rules/zz.md", "ZZ\n");
    fx.write(&cat(&[b"top/.claude/rules/", &nfd("caf\u{e9}.md")]), "NFD\n");
    assert_eq!(fx.rules("top", old), Vec::<String>::new());
    assert_eq!(fx.rules("top", new), [".claude/rules/caf\u{65}\u{301}.md", ".claude/rules/ok.md", ".claude/rules/zz.md"]);

    fx.write(b"sub/.claude/rules/ok.md", "OK\n");
    fx.write(b"sub/.claude/rules/sub/ok2.md", "OK2\n");
    fx.write(&cat(&[b"sub/.claude/rules/sub/", &nfd("d\u{e9}j\u{e0}"), b"/x.md"]), "X\n");
    assert_eq!(fx.rules("sub", old), [".claude/rules/ok.md"]);
    assert_eq!(fx.rules("sub", new).len(), 3);

    fx.write(b"twin/.claude/rules/caf\xc3\xa9.md", "NFC\n");
    fx.write(&cat(&[b"twin/.claude/rules/", &nfd("caf\u{e9}.md")]), "NFD\n");
    assert_eq!(fx.rules("twin", old), [".claude/rules/caf\u{e9}.md"]);
    assert_eq!(fx.rules("twin", new).len(), 2);
}

/// A rule whose name is not UTF-8 (read as U+FFFD, a name no file has) is left out in every
/// release; the rest of its folder loads and the listing does not fail.
#[test]
fn a_rule_named_in_bytes_that_are_not_utf8_is_left_out_and_the_rest_loads() {
    let fx = Fx::new();
    fx.write(b"repo/.claude/rules/ok.md", "OK\n");
    fx.write(b"repo/.claude/rules/bad\xffname.md", "BAD\n");
    fx.write(b"repo/.claude/rules/caf\xe9-latin1.md", "LATIN1\n");
    fx.write(b"repo/.claude/rules/sub\xfe/inner.md", "INNER\n");
    for release in [ClaudeVersion::new(2, 1, 122), ClaudeVersion::new(2, 1, 197), ClaudeVersion::new(2, 1, 332)] {
        assert_eq!(fx.rules("repo", release), [".claude/rules/ok.md"], "{release}");
    }
    // The view names each, its bytes escaped (a path any front end can show), and says why.
    let cwd = fx.p("repo");
    let ctx = load(&fx.options_for("repo", ClaudeVersion::new(2, 1, 332)));
    let mut skipped: Vec<String> = ctx
        .skipped
        .iter()
        .filter(|s| matches!(&s.reason, SkipReason::Unreadable { message } if message.contains("not UTF-8")))
        .map(|s| s.path.strip_prefix(&cwd).unwrap().to_str().expect("a UTF-8 path").to_string())
        .collect();
    skipped.sort();
    assert_eq!(skipped, [".claude/rules/bad\\xFFname.md", ".claude/rules/caf\\xE9-latin1.md", ".claude/rules/sub\\xFE"]);
}

/// A memory index given as text (`CLAUDE_COWORK_MEMORY_INDEX_CONTENT`) with a lone CR: from
/// 2.1.284 it is sent as LF after the 200-line cut, where it did not count as a line; 2.1.283
/// sends it as it is (captured with the index in the user's settings `env`).
#[test]
fn a_lone_cr_in_a_given_memory_index_by_release() {
    let fx = Fx::new();
    fx.write(b"repo/CLAUDE.md", "ROOT\n");
    let index = format!("- a\r- b\r\n- c\n{}", (0..205).map(|i| format!("- l{i}\n")).collect::<String>());
    let sent = |release: ClaudeVersion| {
        let mut opts = fx.options_for("repo", release);
        opts.auto_mem_entrypoint = Some(fx.p("home/.claude/projects/x/memory/MEMORY.md"));
        opts.auto_mem_content = Some(index.clone());
        let ctx = load(&opts);
        ctx.files.iter().find(|f| f.layer == mneme_core::Layer::AutoMem).expect("the index loads").content.clone()
    };
    let (old, new) = (sent(ClaudeVersion::new(2, 1, 283)), sent(ClaudeVersion::new(2, 1, 284)));
    assert!(old.starts_with("- a\r- b\r\n- c\n- l0\n"), "{old:?}");
    assert!(new.starts_with("- a\n- b\n- c\n- l0\n"), "{new:?}");
    assert!(new.contains("- l197\n\n> WARNING: MEMORY.md is 207 lines (limit: 200)") && !new.contains("- l198\n"), "{new:?}");
}
