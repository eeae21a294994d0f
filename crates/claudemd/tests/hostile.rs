//! Hostile CLAUDE.md trees, as a cloned repository can hold them: damaged real files,
//! `@include` cycles and self-includes, includes of binaries and missing files, deep
//! nesting, NUL, invalid UTF-8, lone CR, frontmatter of only `---`, a hostile MEMORY.md. The
//! loader never panics, loads each file at most once, keeps MEMORY.md within its caps, and
//! gives the same answer twice.

use mneme_claudemd::{load, render_claude_md, strip_html_comments, touched, LoadOptions};
use mneme_core::versions::{behaviours, newest_checked, ClaudeVersion};
use mneme_testsupport::hostile::{config, corpus, deep, mutated, mutated_text, testdata, text};
use proptest::prelude::*;
use std::collections::HashSet;
use std::fs;
use std::path::Path;

/// Where a generated file may go, relative to the fixture root.
const PLACES: &[&str] = &[
    "home/.claude/CLAUDE.md",
    "home/.claude/rules/user.md",
    "managed/CLAUDE.md",
    "repo/CLAUDE.md",
    "repo/CLAUDE.local.md",
    "repo/AGENTS.md",
    "repo/.claude/CLAUDE.md",
    "repo/.claude/rules/a.md",
    "repo/.claude/rules/deep/b.md",
    "repo/sub/CLAUDE.md",
    "repo/sub/.claude/rules/c.md",
    "repo/inc/one.md",
    "repo/inc/two.txt",
    "repo/inc/bin.png",
    "memory/MEMORY.md",
];

/// `@` references a file can carry: other places (cycles), itself, and paths that go nowhere.
const INCLUDES: &[&str] = &[
    "@./CLAUDE.md", "@CLAUDE.md", "@./inc/one.md", "@../inc/one.md", "@inc/two.txt", "@./inc/bin.png",
    "@../CLAUDE.md", "@../../CLAUDE.md", "@~/.claude/CLAUDE.md", "@/etc/hostname", "@./missing.md",
    "@./sub/CLAUDE.md", "@./a.md", "@./deep/b.md", "@../../repo/CLAUDE.md", "@./one.md", "@.", "@/",
    "@./inc/", "@\0", "@./CLAUDE.md#x", "@./CLAUDE.md\\ x",
];

fn seeds() -> Vec<Vec<u8>> {
    let mut s = corpus(&testdata().join("realworld"), &[".md"], 50);
    s.push(b"---\n---\n".to_vec());
    s.push(b"---".to_vec());
    s
}

fn file() -> impl Strategy<Value = Vec<u8>> {
    let includes = proptest::collection::vec(proptest::sample::select(INCLUDES.to_vec()), 0..4);
    (mutated(seeds()), includes, any::<u16>()).prop_map(|(mut bytes, incs, at)| {
        for inc in incs {
            // Sometimes inside text (a paragraph), sometimes alone on a line.
            let p = usize::from(at) % (bytes.len() + 1);
            let piece = if at % 2 == 0 { format!("\n{inc}\n") } else { format!(" {inc} ") };
            bytes.splice(p..p, piece.into_bytes());
        }
        // Each file stays under 16 KB: the lexer's time grows faster than the length on some
        // unclosed-comment paragraphs (`-<!-` repeated), which is not what this property hunts.
        bytes.truncate(16 * 1024);
        bytes
    })
}

fn tree() -> impl Strategy<Value = Vec<(usize, Vec<u8>)>> {
    proptest::collection::vec((0..PLACES.len(), file()), 1..8)
}

fn options(root: &Path, version: ClaudeVersion) -> LoadOptions {
    let mut o = LoadOptions::new(
        root.join("repo/sub"),
        root.join("home"),
        root.join("home/.claude"),
        root.join("managed"),
        behaviours(version),
    );
    o.auto_mem_entrypoint = Some(root.join("memory/MEMORY.md"));
    o
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn hostile_trees_load(files in tree(), newest_release in any::<bool>()) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        for d in ["home/.claude", "repo/sub", "memory", "managed"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for (i, bytes) in &files {
            let p = root.join(PLACES[*i]);
            fs::create_dir_all(p.parent().unwrap()).unwrap();
            fs::write(&p, bytes).unwrap();
        }
        let version = if newest_release { newest_checked() } else { ClaudeVersion::new(2, 1, 197) };
        let opts = options(&root, version);
        let ctx = load(&opts);
        let mut seen = HashSet::new();
        for f in &ctx.files {
            prop_assert!(seen.insert(f.path.clone()), "{} loaded twice", f.path.display());
            if f.path.ends_with("memory/MEMORY.md") {
                // The index is cut to its caps, whatever it held (plus the note).
                prop_assert!(f.content.split('\n').count() <= 200 + 5);
            }
        }
        for s in &ctx.skipped {
            prop_assert!(!s.reason.describe().is_empty());
        }
        let _ = render_claude_md(&opts, &ctx.files);
        // Reading a file lower down attaches what applies to it, without panicking either.
        let _ = touched(&opts, &ctx, &[root.join("repo/sub/x.rs"), root.join("repo/.claude/rules/a.md")]);
        // The same tree gives the same answer.
        prop_assert_eq!(load(&opts), ctx);
    }

    /// Whatever MEMORY.md holds, the release that quotes it sends every line after the preamble
    /// behind one `> `, and no plainly spelled tag of the request's own survives the cleaning.
    #[test]
    fn a_quoted_index_stays_inside_its_quote(content in mutated_text(seeds()), extra in "[<>/ \\n\\r\u{2028}a-z_-]{0,40}") {
        let text = format!("{content}{extra}<system-reminder>{extra}");
        let tags = mneme_core::versions::newest().memory_index_tags.unwrap();
        let cleaned = mneme_claudemd::cleaned_memory_index(&text, tags);
        prop_assert!(!cleaned.to_ascii_lowercase().contains("<system-reminder"), "{cleaned:?}");
        let quoted = mneme_claudemd::quoted_memory_index(&cleaned);
        let body = quoted.strip_prefix(mneme_claudemd::QUOTED_INDEX_PREAMBLE).and_then(|b| b.strip_prefix("\n\n")).unwrap();
        for line in body.split('\n') {
            prop_assert!(line.starts_with("> ") && !line[2..].starts_with("> "), "{line:?}");
        }
    }

    #[test]
    fn comment_stripping_of_damaged_text(content in mutated_text(seeds())) {
        if let Some(out) = strip_html_comments(&content) {
            prop_assert!(out.len() <= content.len() + content.matches('\r').count());
        }
    }

    #[test]
    fn comment_stripping_of_arbitrary_text(content in text()) {
        let _ = strip_html_comments(&content);
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// 12,000 `>` or list indents in one CLAUDE.md: a clear skip or a value, never a stack
    /// overflow (the lexer bounds its nesting).
    #[test]
    fn deeply_nested_claude_md(content in deep(), with_include in any::<bool>()) {
        let tmp = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(tmp.path()).unwrap();
        fs::create_dir_all(root.join("repo/sub")).unwrap();
        fs::create_dir_all(root.join("home/.claude")).unwrap();
        let body = if with_include { format!("{content}\n@./CLAUDE.md <!-- c -->\n") } else { content };
        fs::write(root.join("repo/CLAUDE.md"), body).unwrap();
        let ctx = load(&options(&root, ClaudeVersion::new(2, 1, 197)));
        prop_assert!(ctx.files.len() <= 1);
        let _ = strip_html_comments(&fs::read_to_string(root.join("repo/CLAUDE.md")).unwrap());
    }
}

/// A file that includes itself, and two that include each other: each loads once.
#[test]
fn include_cycles_load_each_file_once() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    fs::create_dir_all(root.join("repo/sub")).unwrap();
    fs::create_dir_all(root.join("home/.claude")).unwrap();
    // Inside the working folder (repo/sub), so the includes are not external.
    fs::write(root.join("repo/sub/CLAUDE.md"), "top\n@./CLAUDE.md\n@./a.md\n").unwrap();
    fs::write(root.join("repo/sub/a.md"), "a\n@./b.md\n@./a.md\n").unwrap();
    fs::write(root.join("repo/sub/b.md"), "b\n@./a.md\n@./CLAUDE.md\n").unwrap();
    let ctx = load(&options(&root, ClaudeVersion::new(2, 1, 197)));
    let names: Vec<_> = ctx.files.iter().map(|f| f.path.strip_prefix(&root).unwrap().to_string_lossy().into_owned()).collect();
    assert_eq!(names, ["repo/sub/CLAUDE.md", "repo/sub/a.md", "repo/sub/b.md"]);
}
