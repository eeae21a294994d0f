//! Behaviour of the loader on hand-built trees, one rule at a time, including bad inputs.
//! Every tree lives in a temporary folder; only files under it are looked at (the upward walk
//! could also meet a stray CLAUDE.md above the temp folder on a developer machine).

mod common;

use common::Fx;
use mneme_claudemd::{
    agents_md_hook, load, render_claude_md, render_instructions, render_lazy, render_touched, touched, AgentsMd, Context,
    LoadOptions, LoadedFile, SkipReason, Sources,
};
use mneme_core::versions::{behaviours, ClaudeVersion};
use mneme_core::Layer;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

impl Fx {
    fn write(&self, rel: &str, content: &str) -> PathBuf {
        self.write_bytes(rel, content.as_bytes())
    }

    fn symlink(&self, target: &str, link: &str) {
        let l = self.p(link);
        fs::create_dir_all(l.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(target, l).unwrap();
    }

    /// [`Fx::options_for`] as 2.1.197 loads.
    fn opts(&self, cwd: &str) -> LoadOptions {
        self.options_for(cwd, ClaudeVersion::new(2, 1, 197))
    }

    fn rel(&self, p: &Path) -> Option<String> {
        p.strip_prefix(&self.root).ok().map(|r| r.to_string_lossy().into_owned())
    }

    /// Loaded files under the fixture root, as relative paths.
    fn names(&self, files: &[LoadedFile]) -> Vec<String> {
        files.iter().filter_map(|f| self.rel(&f.path)).collect()
    }

    fn skipped(&self, ctx: &Context) -> Vec<(String, SkipReason)> {
        ctx.skipped.iter().filter_map(|s| Some((self.rel(&s.path)?, s.reason.clone()))).collect()
    }
}

use mneme_testsupport::git;

#[test]
fn layers_load_in_claude_code_order() {
    let fx = Fx::new();
    fx.write("managed/CLAUDE.md", "MANAGED\n");
    fx.write("managed/.claude/rules/m.md", "MANAGED RULE\n");
    fx.write("managed/rules/ignored.md", "not read\n");
    fx.write("home/.claude/CLAUDE.md", "USER\n");
    fx.write("home/.claude/rules/u.md", "USER RULE\n");
    fx.write("CLAUDE.md", "ABOVE\n");
    fx.write("repo/CLAUDE.md", "PROJECT\n");
    fx.write("repo/.claude/CLAUDE.md", "DOT\n");
    fx.write("repo/.claude/rules/r.md", "RULE\n");
    fx.write("repo/.claude/CLAUDE.local.md", "never read\n");
    fx.write("repo/CLAUDE.local.md", "LOCAL\n");
    fx.write("repo/sub/CLAUDE.md", "BELOW (lazy)\n");
    fx.write("mem/MEMORY.md", "- index\n");
    let mut opts = fx.opts("repo");
    opts.auto_mem_entrypoint = Some(fx.p("mem/MEMORY.md"));
    let ctx = load(&opts);
    assert_eq!(
        fx.names(&ctx.files),
        vec![
            "managed/CLAUDE.md",
            "managed/.claude/rules/m.md",
            "home/.claude/CLAUDE.md",
            "home/.claude/rules/u.md",
            "CLAUDE.md",
            "repo/CLAUDE.md",
            "repo/.claude/CLAUDE.md",
            "repo/.claude/rules/r.md",
            "repo/CLAUDE.local.md",
            "mem/MEMORY.md",
        ]
    );
    let layers: Vec<Layer> = ctx.files.iter().filter(|f| fx.rel(&f.path).is_some()).map(|f| f.layer).collect();
    use Layer::*;
    assert_eq!(layers, vec![Managed, Managed, User, User, Project, Project, Project, Project, Local, AutoMem]);
    let rendered = render_claude_md(&opts, &ctx.files);
    assert!(rendered.contains(&format!("Contents of {} (organization-managed policy instructions):\n\nMANAGED", fx.p("managed/CLAUDE.md").display())));
    // Before 2.1.136 managed files carried the user's label (row 26 of docs/claude-code-versions.md).
    let before = render_claude_md(&LoadOptions { profile: behaviours(ClaudeVersion::new(2, 1, 133)), ..opts.clone() }, &ctx.files);
    assert!(before.contains(&format!("Contents of {} (user's private global instructions for all projects):\n\nMANAGED\n", fx.p("managed/CLAUDE.md").display())));
    assert!(before.contains(&format!("Contents of {} (user's private global instructions for all projects):\n\nMANAGED RULE", fx.p("managed/.claude/rules/m.md").display())));
    assert!(!before.contains("organization-managed"));
    assert!(rendered.contains(&format!("Contents of {} (user's auto-memory, persists across conversations):\n\n- index", fx.p("mem/MEMORY.md").display())));
    // From 2.1.337 the cached server flag tengu_woolly_harp rewords MEMORY.md's label; older
    // releases never read it (docs/claude-code-versions.md, "Server flags").
    let flagged = |release| render_claude_md(&LoadOptions { profile: behaviours(release), auto_memory_label_flag: true, ..opts.clone() }, &ctx.files);
    let reworded = format!("Contents of {}{}:\n\n{}\n\n> - index", fx.p("mem/MEMORY.md").display(), Layer::AUTO_MEM_FLAGGED_DESCRIPTION, mneme_claudemd::QUOTED_INDEX_PREAMBLE);
    assert!(flagged(ClaudeVersion::new(2, 1, 337)).contains(&reworded));
    assert!(!rendered.contains(&reworded), "the flag is off in this session");
    assert_eq!(flagged(ClaudeVersion::new(2, 1, 332)), render_claude_md(&LoadOptions { profile: behaviours(ClaudeVersion::new(2, 1, 332)), ..opts.clone() }, &ctx.files));
    assert!(ctx.files.iter().find(|f| f.path.ends_with("r.md")).unwrap().is_rule);
    assert_eq!(fx.names(&ctx.nested_candidates.iter().map(|p| file(p)).collect::<Vec<_>>()), vec!["repo/sub/CLAUDE.md"]);
}

fn file(p: &Path) -> LoadedFile {
    LoadedFile {
        path: p.to_path_buf(),
        layer: Layer::Project,
        content: String::new(),
        parent: None,
        globs: None,
        is_rule: false,
        raw_bytes: 0,
        chars: 0,
        tokens: 0,
        content_differs_from_disk: false,
        truncated: false,
        unverified: None,
    }
}

#[test]
fn setting_sources_gate_layers() {
    let fx = Fx::new();
    fx.write("managed/CLAUDE.md", "M\n");
    fx.write("home/.claude/CLAUDE.md", "U\n");
    fx.write("repo/CLAUDE.md", "P\n");
    fx.write("repo/.claude/rules/r.md", "R\n");
    fx.write("repo/CLAUDE.local.md", "L\n");
    let cases: &[(Sources, &[&str])] = &[
        (Sources::default(), &["managed/CLAUDE.md", "home/.claude/CLAUDE.md", "repo/CLAUDE.md", "repo/.claude/rules/r.md", "repo/CLAUDE.local.md"]),
        (Sources { user: true, project: false, local: false }, &["managed/CLAUDE.md", "home/.claude/CLAUDE.md"]),
        (Sources { user: false, project: true, local: false }, &["managed/CLAUDE.md", "repo/CLAUDE.md", "repo/.claude/rules/r.md"]),
        (Sources { user: false, project: false, local: true }, &["managed/CLAUDE.md", "repo/CLAUDE.local.md"]),
        (Sources { user: false, project: false, local: false }, &["managed/CLAUDE.md"]),
    ];
    for (sources, want) in cases {
        let mut opts = fx.opts("repo");
        opts.sources = *sources;
        let ctx = load(&opts);
        assert_eq!(fx.names(&ctx.files), *want, "{sources:?}");
        let disabled: Vec<String> =
            fx.skipped(&ctx).into_iter().filter(|(_, r)| *r == SkipReason::SourceDisabled).map(|(p, _)| p).collect();
        assert_eq!(disabled.len(), 5 - want.len(), "{sources:?}: {disabled:?}");
    }
}

#[test]
fn disabled_loads_nothing() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "P\n");
    fx.write("repo/.claude/rules/c.md", "---\npaths: \"*.ts\"\n---\nC\n");
    let mut opts = fx.opts("repo");
    opts.disabled = true;
    let ctx = load(&opts);
    assert_eq!(ctx, Context::default());
    assert!(touched(&opts, &ctx, &[fx.p("repo/a.ts")]).is_empty());
    assert_eq!(
        render_instructions(&opts.profile, &render_claude_md(&opts, &ctx.files), "2026-11-29"),
        "<system-reminder>\nAs you answer the user's questions, you can use the following context:\n# currentDate\nToday's date is 2026-11-29.\n\n      IMPORTANT: this context may or may not be relevant to your tasks. You should not respond to this context unless it is highly relevant to your task.\n</system-reminder>\n\n"
    );
}

#[test]
fn include_cycles_and_duplicates_load_each_file_once() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "root @a.md @a.md\n");
    fx.write("repo/a.md", "A -> @b.md\n");
    fx.write("repo/b.md", "B -> @a.md and @CLAUDE.md and @./b.md\n");
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.md", "repo/a.md", "repo/b.md"]);
    let parents: Vec<Option<String>> = ctx.files.iter().map(|f| f.parent.as_deref().and_then(|p| fx.rel(p))).collect();
    assert_eq!(parents, vec![None, Some("repo/CLAUDE.md".into()), Some("repo/a.md".into())]);
    let again: Vec<String> =
        fx.skipped(&ctx).into_iter().filter(|(_, r)| *r == SkipReason::AlreadyLoaded).map(|(p, _)| p).collect();
    assert_eq!(again, vec!["repo/a.md", "repo/CLAUDE.md", "repo/b.md"]);
}

#[test]
fn include_depth_stops_at_five() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "@c1.md\n");
    for i in 1..=7 {
        fx.write(&format!("repo/c{i}.md"), &format!("C{i} @c{}.md\n", i + 1));
    }
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.md", "repo/c1.md", "repo/c2.md", "repo/c3.md", "repo/c4.md"]);
    assert!(fx.skipped(&ctx).contains(&("repo/c5.md".into(), SkipReason::DepthLimit)));
}

#[test]
fn external_includes_need_approval_except_for_user_files() {
    let fx = Fx::new();
    fx.write("outside/o.md", "OUT\n");
    fx.write("outside/u.md", "USER-OUT\n");
    fx.write("repo/CLAUDE.md", &format!("@{}\n@../outside/o.md\n", fx.p("outside/o.md").display()));
    fx.write("home/.claude/CLAUDE.md", "@../../outside/u.md\n");
    let opts = fx.opts("repo");
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), vec!["home/.claude/CLAUDE.md", "outside/u.md", "repo/CLAUDE.md"]);
    assert_eq!(fx.skipped(&ctx), vec![("outside/o.md".into(), SkipReason::ExternalInclude)]);
    let mut approved = opts.clone();
    approved.include_external = true;
    assert_eq!(fx.names(&load(&approved).files), vec!["home/.claude/CLAUDE.md", "outside/u.md", "repo/CLAUDE.md", "outside/o.md"]);
    // "Outside" is judged against the original cwd, not the repository root.
    fx.write("repo/inc.md", "INC\n");
    fx.write("repo/CLAUDE.md", "@inc.md\n");
    assert_eq!(fx.names(&load(&fx.opts("repo/sub")).files), vec!["home/.claude/CLAUDE.md", "outside/u.md", "repo/CLAUDE.md"]);
}

#[test]
fn include_forms_and_refusals() {
    let fx = Fx::new();
    fx.write("home/h.md", "HOME\n");
    fx.write("repo/CLAUDE.md", "@~/h.md @img.png @missing.md @dir.md @with\\ sp\u{e4}ce\u{1F600}.md @frag.md#x\n");
    fx.write("repo/img.png", "not an image\n");
    fx.write("repo/dir.md/keep", "");
    fx.write("repo/with späce😀.md", "UNICODE\n");
    fx.write("repo/frag.md", "FRAG\n");
    let mut opts = fx.opts("repo");
    opts.include_external = true;
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.md", "home/h.md", "repo/with späce😀.md", "repo/frag.md"]);
    assert!(fx.skipped(&ctx).contains(&("repo/img.png".into(), SkipReason::NonTextExtension)));
}

#[test]
fn paths_with_spaces_unicode_and_250_characters() {
    let fx = Fx::new();
    let odd = "repo/My Dir é 😀/sub dir";
    fx.write(&format!("{odd}/CLAUDE.md"), "ODD\n");
    let long: String = (0..6).map(|i| format!("segment-{i:02}-{}", "x".repeat(30))).collect::<Vec<_>>().join("/");
    let long_dir = format!("repo/{long}");
    assert!(fx.p(&long_dir).to_string_lossy().len() > 250);
    fx.write(&format!("{long_dir}/CLAUDE.md"), "LONG\n");
    let ctx = load(&fx.opts(odd));
    assert_eq!(fx.names(&ctx.files), vec![format!("{odd}/CLAUDE.md")]);
    assert!(render_claude_md(&LoadOptions { profile: behaviours(ClaudeVersion::new(2, 1, 197)), ..fx.opts(odd) }, &ctx.files).contains(&format!("Contents of {} (project", fx.p(odd).join("CLAUDE.md").display())));
    let ctx = load(&fx.opts(&long_dir));
    assert_eq!(fx.names(&ctx.files), vec![format!("{long_dir}/CLAUDE.md")]);
}

#[test]
fn crlf_files_keep_crlf_unless_a_comment_is_stripped() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "line 1\r\nline 2\r\n");
    fx.write("repo/CLAUDE.local.md", "keep\r\n<!-- note -->\r\nmore\r\n");
    let ctx = load(&fx.opts("repo"));
    let plain = &ctx.files[ctx.files.len() - 2];
    let local = ctx.files.last().unwrap();
    assert_eq!(plain.content, "line 1\r\nline 2\r\n");
    assert!(!plain.content_differs_from_disk);
    assert_eq!(local.content, "keep\nmore\n");
    assert!(local.content_differs_from_disk);
    assert_eq!(local.raw_bytes, "keep\r\n<!-- note -->\r\nmore\r\n".len());
    // Rendering trims each file, so the inner CRLF survives and the trailing one does not.
    assert!(render_claude_md(&LoadOptions { profile: behaviours(ClaudeVersion::new(2, 1, 197)), ..fx.opts("repo") }, &ctx.files).contains(&format!("line 1\r\nline 2\n\nContents of {}", local.path.display())));
}

#[test]
fn unreadable_and_odd_files() {
    let fx = Fx::new();
    // A directory named CLAUDE.md (EISDIR) and a dangling symlink are silently absent.
    fs::create_dir_all(fx.p("repo/CLAUDE.md")).unwrap();
    fx.symlink("/nonexistent/target.md", "repo/.claude/CLAUDE.md");
    // Invalid UTF-8 is decoded with replacement characters, as Node does.
    fx.write_bytes("repo/CLAUDE.local.md", b"bad \xff\xfe bytes\n");
    // A FIFO would block Claude Code forever; it is reported instead of read.
    let fifo = fx.p("home/.claude/CLAUDE.md");
    let made_fifo = Command::new("mkfifo").arg(&fifo).status().is_ok_and(|s| s.success());
    // A rules "directory" that is a file yields nothing.
    fx.write("repo/.claude/rules", "not a dir\n");
    // Whitespace-only and frontmatter-only files are empty.
    fx.write("CLAUDE.md", "---\ndescription: only frontmatter\n---\n \n");
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.local.md"]);
    assert_eq!(ctx.files.last().unwrap().content, "bad \u{FFFD}\u{FFFD} bytes\n");
    if made_fifo {
        assert!(ctx.skipped.iter().any(|s| s.path == fifo && matches!(s.reason, SkipReason::Unreadable { .. })));
    }
    assert!(fx.skipped(&ctx).contains(&("CLAUDE.md".into(), SkipReason::Empty)));
}

/// File permissions do not bind root, so this runs only where they apply: `scripts/test.sh`
/// runs every `unprivileged_` test as an unprivileged user (scripts/unprivileged-tests.sh).
#[test]
#[ignore = "needs a user file permissions apply to: scripts/unprivileged-tests.sh"]
fn unprivileged_permission_denied_is_reported() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fx::new();
    let p = fx.write("repo/CLAUDE.md", "SECRET\n");
    fs::set_permissions(&p, fs::Permissions::from_mode(0o000)).unwrap();
    assert!(fs::read(&p).is_err(), "file permissions do not apply to this user (root?); run scripts/unprivileged-tests.sh");
    let ctx = load(&fx.opts("repo"));
    assert!(fx.names(&ctx.files).is_empty());
    assert!(matches!(fx.skipped(&ctx)[0].1, SkipReason::Unreadable { .. }));
}

#[test]
fn rules_follow_readdir_order_symlinks_and_survive_loops() {
    let fx = Fx::new();
    for name in ["zeta.md", "alpha.md", "mid.md"] {
        fx.write(&format!("repo/.claude/rules/{name}"), &format!("{name}\n"));
    }
    fx.write("repo/.claude/rules/sub/deep.md", "deep\n");
    fx.write("repo/.claude/rules/notes.txt", "not md\n");
    fx.write("shared-rules/ext.md", "external rule\n");
    fx.symlink("..", "repo/.claude/rules/sub/loop");
    fx.symlink(fx.p("repo/.claude/rules").to_str().unwrap(), "repo/.claude/rules/self");
    fx.symlink(fx.p("shared-rules").to_str().unwrap(), "repo/.claude/rules/shared");
    fx.symlink("alpha.md", "repo/.claude/rules/alias.md");
    let ctx = load(&fx.opts("repo"));
    // Expected order: the live readdir order, folders recursed where they appear, symlinked
    // entries reported under their resolved path, the second of alias/target skipped.
    let mut want = Vec::new();
    for e in fs::read_dir(fx.p("repo/.claude/rules")).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        match name.as_str() {
            "sub" => want.push("repo/.claude/rules/sub/deep.md".to_string()),
            "shared" => want.push("shared-rules/ext.md".to_string()),
            // The alias is read under its target's path, wherever it comes first.
            "alias.md" | "alpha.md" => {
                let alpha = "repo/.claude/rules/alpha.md".to_string();
                if !want.contains(&alpha) {
                    want.push(alpha);
                }
            }
            "zeta.md" | "mid.md" => want.push(format!("repo/.claude/rules/{name}")),
            _ => {}
        }
    }
    assert_eq!(fx.names(&ctx.files), want);
}

#[test]
fn excludes_apply_to_user_project_and_local_only() {
    let fx = Fx::new();
    fx.write("managed/CLAUDE.md", "M\n");
    fx.write("home/.claude/CLAUDE.md", "U\n");
    fx.write("repo/CLAUDE.md", "P @inc/x.md\n");
    fx.write("repo/inc/x.md", "X\n");
    fx.write("repo/CLAUDE.local.md", "L\n");
    fx.write("repo/.claude/rules/vendor/v.md", "V\n");
    fx.write("mem/MEMORY.md", "- m\n");
    let mut opts = fx.opts("repo");
    opts.auto_mem_entrypoint = Some(fx.p("mem/MEMORY.md"));
    opts.excludes = vec![
        "**/rules/vendor/**".into(),
        fx.p("repo/inc/x.md").to_string_lossy().into_owned(),
        fx.p("home/.claude/*.md").to_string_lossy().into_owned(),
        "**/CLAUDE.local.md".into(),
        "**/managed/**".into(),
        "**/MEMORY.md".into(),
    ];
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), vec!["managed/CLAUDE.md", "repo/CLAUDE.md", "mem/MEMORY.md"]);
    let excluded: Vec<(String, String)> = fx
        .skipped(&ctx)
        .into_iter()
        .filter_map(|(p, r)| match r {
            SkipReason::Excluded { pattern } => Some((p, pattern)),
            _ => None,
        })
        .collect();
    assert_eq!(excluded.len(), 4, "{excluded:?}");
    assert!(excluded.contains(&("repo/CLAUDE.local.md".into(), "**/CLAUDE.local.md".into())));
}

#[test]
fn nested_worktree_skips_the_main_checkouts_project_files() {
    let fx = Fx::new();
    let repo = fx.p("repo");
    fx.write("repo/CLAUDE.md", "MAIN\n");
    fx.write("repo/.gitignore", "CLAUDE.local.md\n.claude/worktrees/\n");
    git(&repo, &["init", "-q"]);
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "x"]);
    git(&repo, &["worktree", "add", "-q", "-b", "n", repo.join(".claude/worktrees/n").to_str().unwrap()]);
    git(&repo, &["worktree", "add", "-q", "-b", "s", fx.p("sibling").to_str().unwrap()]);
    fx.write("repo/CLAUDE.local.md", "MAIN LOCAL\n");
    fx.write("repo/.claude/rules/r.md", "MAIN RULE\n");
    fx.write("repo/.claude/worktrees/n/CLAUDE.md", "NESTED\n");
    let ctx = load(&fx.opts("repo/.claude/worktrees/n"));
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.local.md", "repo/.claude/worktrees/n/CLAUDE.md"]);
    let nested: Vec<String> =
        fx.skipped(&ctx).into_iter().filter(|(_, r)| *r == SkipReason::NestedWorktree).map(|(p, _)| p).collect();
    assert_eq!(nested, vec!["repo/CLAUDE.md", "repo/.claude/rules"]);
    // A sibling worktree is not inside the main checkout: nothing is skipped.
    let ctx = load(&fx.opts("sibling"));
    assert_eq!(fx.names(&ctx.files), vec!["sibling/CLAUDE.md"]);
    // The main checkout itself loads everything.
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.md", "repo/.claude/rules/r.md", "repo/CLAUDE.local.md"]);
}

#[test]
fn conditional_rules_wait_for_matching_reads() {
    let fx = Fx::new();
    fx.write("home/.claude/rules/py.md", "---\npaths: \"**/*.py\"\n---\nPY\n");
    fx.write("managed/.claude/rules/docs.md", "---\npaths: docs/**\n---\nDOCS\n");
    fx.write("repo/.claude/rules/ts.md", "---\npaths:\n  - \"src/**/*.{ts,tsx}\"\n---\nTS @helper.md\n");
    fx.write("repo/.claude/rules/helper.md", "HELPER (no paths: loads eagerly even though its includer is conditional)\n");
    fx.write("repo/.claude/rules/all.md", "---\npaths: \"**\"\n---\nALL\n");
    fx.write("repo/pkg/.claude/rules/pkgonly.md", "---\npaths: lib/*.rs\n---\nPKG LIB\n");
    let opts = fx.opts("repo");
    let ctx = load(&opts);
    let eager = fx.names(&ctx.files);
    assert!(eager.contains(&"repo/.claude/rules/all.md".to_string()));
    assert!(eager.contains(&"repo/.claude/rules/helper.md".to_string()));
    assert!(!eager.iter().any(|p| p.ends_with("ts.md") || p.ends_with("py.md") || p.ends_with("docs.md")));
    let mut cond: Vec<(String, Vec<String>, String)> = ctx
        .conditional
        .iter()
        .map(|c| (fx.rel(&c.path).unwrap(), c.globs.clone(), fx.rel(&c.base_dir).unwrap()))
        .collect();
    cond.sort();
    assert_eq!(
        cond,
        vec![
            ("home/.claude/rules/py.md".into(), vec!["**/*.py".into()], "repo".into()),
            ("managed/.claude/rules/docs.md".into(), vec!["docs".into()], "repo".into()),
            ("repo/.claude/rules/ts.md".into(), vec!["src/**/*.ts".into(), "src/**/*.tsx".into()], "repo".into()),
        ]
    );
    let cases: &[(&str, &[&str])] = &[
        ("repo/src/a/b.ts", &["repo/.claude/rules/ts.md"]),
        ("repo/src/c.tsx", &["repo/.claude/rules/ts.md"]),
        ("repo/lib/x.ts", &[]),
        ("repo/tool.py", &["home/.claude/rules/py.md"]),
        ("repo/docs/guide/x.md", &["managed/.claude/rules/docs.md"]),
        // Project rules match relative to the folder holding `.claude`.
        ("repo/pkg/lib/m.rs", &["repo/pkg/.claude/rules/pkgonly.md"]),
        ("repo/lib/m.rs", &[]),
        // Outside the cwd: not an allowed working path, nothing attaches.
        ("elsewhere/x.py", &[]),
    ];
    for (target, want) in cases {
        let got = touched(&opts, &ctx, &[fx.p(target)]);
        let got: Vec<String> = fx.names(&got).into_iter().filter(|p| p.contains("/rules/")).collect();
        assert_eq!(got, *want, "{target}");
    }
}

/// The AGENTS.md plugin's Read hook (2.1.281+): which sub-folder files it adds, in which
/// order, and the message it becomes (expected values from 2.1.332, docs/claude-code-versions.md).
#[test]
fn agents_md_hook_adds_sub_folder_agents_files_after_reads() {
    let fx = Fx::new();
    fx.write("repo/AGENTS.md", "ROOT SAME\n");
    fx.write("repo/a/AGENTS.md", "---\ndescription: x\n---\nA <!-- c --> @./inc.md\n<!-- gone -->\nend\n");
    fx.write("repo/a/inc.md", "A INC");
    fx.write("repo/a/.claude/AGENTS.md", "A DOT\n");
    fx.write("repo/a/b/AGENTS.md", "B\n");
    fx.write("repo/a/b/f.txt", "f\n");
    fx.write("repo/dup/AGENTS.md", "  ROOT SAME \n\n"); // same trimmed text as one in the context
    fx.write("repo/empty/AGENTS.md", "");
    fx.write("repo/claude/CLAUDE.md", "C\n"); // a folder with its own CLAUDE.md keeps only that
    fx.write("repo/claude/AGENTS.md", "C AGENTS\n");
    fx.write("repo/self/AGENTS.md", "SELF\n");
    let mut opts = fx.opts("repo");
    opts.profile = behaviours(ClaudeVersion::new(2, 1, 332));
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), vec!["repo/AGENTS.md"]);
    let reads = |targets: &[&str]| -> Vec<PathBuf> { targets.iter().map(|t| fx.p(t)).collect() };
    let hooks = agents_md_hook(&opts, &ctx, &reads(&["repo/a/b/f.txt", "repo/a/g.txt", "repo/dup/x", "repo/empty/x", "repo/claude/x"]));
    // The second read in a/ adds nothing: the first already added its files.
    assert_eq!(hooks.len(), 1);
    assert_eq!(fx.names(&hooks[0].files), vec!["repo/a/AGENTS.md", "repo/a/inc.md", "repo/a/.claude/AGENTS.md", "repo/a/b/AGENTS.md"]);
    let text = render_touched(&opts.profile, &[], &hooks);
    let a = fx.p("repo/a").display().to_string();
    assert_eq!(
        text,
        format!(
            "tool.call hook additional context: Contents of {a}/AGENTS.md:\n\nA <!-- c --> @./inc.md\nend\n\nContents of {a}/inc.md:\n\nA INC\nContents of {a}/.claude/AGENTS.md:\n\nA DOT\n\nContents of {a}/b/AGENTS.md:\n\nB\n"
        )
    );
    // Reading an AGENTS.md itself does not add it, and counts as having added it.
    assert!(agents_md_hook(&opts, &ctx, &reads(&["repo/self/AGENTS.md", "repo/self/y.txt"])).is_empty());
    // Two reads give two pieces; with nested files they follow the reminder blocks.
    let two = agents_md_hook(&opts, &ctx, &reads(&["repo/a/b/f.txt", "repo/self/y.txt"]));
    let lazy = touched(&opts, &ctx, &reads(&["repo/claude/x"]));
    let all = render_touched(&opts.profile, &lazy, &two);
    assert!(all.starts_with(&format!("<system-reminder>\nContents of {}:\n\nC\n\n</system-reminder>\ntool.call hook additional context: Contents of {a}/AGENTS.md", fx.p("repo/claude/CLAUDE.md").display())));
    assert!(all.ends_with(&format!("B\n\n\ntool.call hook additional context: Contents of {}:\n\nSELF\n", fx.p("repo/self/AGENTS.md").display())));
    // 2.1.281-2.1.306: the hook's system message and the attached files' one that follows it
    // reach the API as one message, the hook's pieces first (2.1.300, captured).
    let mut old = opts.clone();
    old.profile = behaviours(ClaudeVersion::new(2, 1, 299));
    let merged = render_touched(&old.profile, &lazy, &two);
    assert!(merged.starts_with(&format!("tool.call hook additional context: Contents of {a}/AGENTS.md")));
    assert!(merged.ends_with(&format!("SELF\n\n\nContents of {}:\n\nC\n", fx.p("repo/claude/CLAUDE.md").display())));
    // Only below the working folder.
    let mut sub = fx.opts("repo/a");
    sub.profile = opts.profile;
    let sub_ctx = load(&sub);
    assert_eq!(fx.names(&agents_md_hook(&sub, &sub_ctx, &reads(&["repo/a/b/f.txt"]))[0].files), vec!["repo/a/b/AGENTS.md"]);
    // Switched off: by a CLAUDE.md on the way, the plugin's setting, the release, or no project source.
    fx.write("repo/CLAUDE.local.md", "LOCAL\n");
    let ctx = load(&opts);
    assert!(agents_md_hook(&opts, &ctx, &reads(&["repo/a/b/f.txt"])).is_empty());
    let mut both = opts.clone();
    both.agents_md = AgentsMd::Always;
    assert_eq!(agents_md_hook(&both, &ctx, &reads(&["repo/claude/x"]))[0].files.len(), 1);
    for off in [
        LoadOptions { agents_md: AgentsMd::Off, ..both.clone() },
        LoadOptions { profile: behaviours(ClaudeVersion::new(2, 1, 280)), ..both.clone() },
        LoadOptions { sources: Sources { project: false, ..Sources::default() }, ..both.clone() },
        LoadOptions { disabled: true, ..both.clone() },
    ] {
        assert!(agents_md_hook(&off, &ctx, &reads(&["repo/a/b/f.txt"])).is_empty());
    }
}

#[test]
fn touched_walks_down_and_dedupes_across_targets() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "ROOT\n");
    fx.write("repo/a/CLAUDE.md", "A @a-inc.md @../../outside.md\n");
    fx.write("repo/a/a-inc.md", "A INC\n");
    fx.write("outside.md", "OUTSIDE\n");
    fx.write("repo/a/.claude/CLAUDE.md", "A DOT\n");
    fx.write("repo/a/CLAUDE.local.md", "A LOCAL\n");
    fx.write("repo/a/.claude/rules/u.md", "A RULE\n");
    fx.write("repo/a/b/CLAUDE.md", "B\n");
    fx.write("repo/c/CLAUDE.md", "C\n");
    let mut opts = fx.opts("repo");
    opts.include_external = true; // ignored for nested files: their includes never go outside
    let ctx = load(&opts);
    let targets = [fx.p("repo/a/b/f.txt"), fx.p("repo/a/g.txt"), fx.p("repo/c/CLAUDE.md"), fx.p("repo/x.txt")];
    let got = touched(&opts, &ctx, &targets);
    assert_eq!(
        fx.names(&got),
        vec!["repo/a/CLAUDE.md", "repo/a/a-inc.md", "repo/a/.claude/CLAUDE.md", "repo/a/CLAUDE.local.md", "repo/a/.claude/rules/u.md", "repo/a/b/CLAUDE.md"]
    );
    // repo/c/CLAUDE.md was itself read, so it is already in the read-file state.
    let lazy = render_lazy(&opts.profile, &got);
    assert!(lazy.starts_with(&format!("Contents of {}:\n\nA @a-inc.md", fx.p("repo/a/CLAUDE.md").display())));
    assert!(lazy.contains(":\n\nA INC\n\n\nContents of "));
    assert_eq!(render_lazy(&opts.profile, &[]), "");
    // Newer releases send one reminder per file, and no instructions block when none loads.
    let newer = behaviours(ClaudeVersion::new(2, 1, 332));
    let blocks = render_lazy(&newer, &got);
    assert!(blocks.starts_with(&format!("<system-reminder>\nContents of {}:\n\nA @a-inc.md", fx.p("repo/a/CLAUDE.md").display())));
    assert_eq!(blocks.matches("<system-reminder>\n").count(), got.len());
    assert_eq!(blocks.matches("\n</system-reminder>\n").count(), got.len());
    assert_eq!(render_lazy(&newer, &[]), "");
    assert_eq!(render_instructions(&newer, "", "2026-11-29"), "");
    // Releases before 2.1.154 append them to the Read's result: a reminder per file, the
    // reminders joined by a blank line (row 27 of docs/claude-code-versions.md).
    let oldest = behaviours(ClaudeVersion::new(2, 1, 153));
    let appended = render_lazy(&oldest, &got);
    assert!(appended.starts_with(&format!("<system-reminder>\nContents of {}:\n\nA @a-inc.md", fx.p("repo/a/CLAUDE.md").display())));
    assert!(appended.contains(":\n\nA INC\n\n</system-reminder>\n\n<system-reminder>\nContents of "));
    assert!(appended.ends_with(":\n\nB\n\n</system-reminder>"));
    assert_eq!(appended.matches("<system-reminder>\n").count(), got.len());
    assert_eq!(render_lazy(&oldest, &[]), "");
    // Respects the sources: without project, only Local and rules attach.
    let mut local_only = opts.clone();
    local_only.sources = Sources { user: true, project: false, local: true };
    assert_eq!(
        fx.names(&touched(&local_only, &load(&local_only), &[fx.p("repo/a/g.txt")])),
        vec!["repo/a/CLAUDE.local.md", "repo/a/.claude/rules/u.md"]
    );
    // From 2.1.211 the project's rules need the project source too (row 23 of
    // docs/claude-code-versions.md); 2.1.210 is the last release that attaches them.
    for (release, want) in [(210, vec!["repo/a/CLAUDE.local.md", "repo/a/.claude/rules/u.md"]), (211, vec!["repo/a/CLAUDE.local.md"])] {
        local_only.profile = behaviours(ClaudeVersion::new(2, 1, release));
        assert_eq!(fx.names(&touched(&local_only, &load(&local_only), &[fx.p("repo/a/g.txt")])), want, "2.1.{release}");
    }
}

#[test]
fn additional_directories_load_only_when_enabled() {
    let fx = Fx::new();
    fx.write("extra/CLAUDE.md", "EXTRA\n");
    fx.write("extra/.claude/rules/e.md", "EXTRA RULE\n");
    fx.write("extra/CLAUDE.local.md", "EXTRA LOCAL\n");
    let mut opts = fx.opts("repo");
    opts.additional_dirs = vec![fx.p("extra")];
    assert!(fx.names(&load(&opts).files).is_empty());
    opts.additional_dirs_claude_md = true;
    assert_eq!(fx.names(&load(&opts).files), vec!["extra/CLAUDE.md", "extra/.claude/rules/e.md", "extra/CLAUDE.local.md"]);
    // The project source gate does not apply to --add-dir.
    opts.sources = Sources { user: true, project: false, local: false };
    assert_eq!(fx.names(&load(&opts).files), vec!["extra/CLAUDE.md", "extra/.claude/rules/e.md"]);
}

#[test]
fn memory_indexes() {
    let fx = Fx::new();
    fx.write("mem/MEMORY.md", "---\nname: x\n---\n- a @not-included.md\n<!-- c -->\n");
    fx.write("mem/not-included.md", "NOPE\n");
    fx.write("team/MEMORY.md", "- team\n");
    fx.write("empty/MEMORY.md", " \n\n");
    let mut opts = fx.opts("repo");
    opts.auto_mem_entrypoint = Some(fx.p("mem/MEMORY.md"));
    opts.team_mem_entrypoint = Some(fx.p("team/MEMORY.md"));
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), vec!["mem/MEMORY.md", "team/MEMORY.md"]);
    assert_eq!(ctx.files[0].content, "- a @not-included.md");
    assert!(render_claude_md(&opts, &ctx.files).ends_with(&format!(
        "Contents of {} (shared team memory, synced across the organization):\n\n<team-memory-content source=\"shared\">\n- team\n</team-memory-content>",
        fx.p("team/MEMORY.md").display()
    )));
    let lines: String = (1..=250).map(|i| format!("- {i}\n")).collect();
    fx.write("mem/MEMORY.md", &lines);
    let f = &load(&opts).files[0];
    assert!(f.truncated);
    assert!(f.content.ends_with("> WARNING: MEMORY.md is 250 lines (limit: 200). Only part of it was loaded. Keep index entries to one line under ~200 chars; move detail into topic files."));
    opts.auto_mem_entrypoint = Some(fx.p("empty/MEMORY.md"));
    opts.team_mem_entrypoint = None;
    let ctx = load(&opts);
    assert!(ctx.files.is_empty());
    assert_eq!(fx.skipped(&ctx), vec![("empty/MEMORY.md".into(), SkipReason::Empty)]);
    assert_eq!(render_claude_md(&opts, &ctx.files), "");
}

#[test]
fn html_comment_stripping_in_files() {
    let fx = Fx::new();
    fx.write(
        "repo/CLAUDE.md",
        "Keep this\n<!-- block comment -->\n\n\nInline <!-- stays --> here\n```\n<!-- in fence -->\n```\n<!--VITE START-->\n\nbody @x.md\n<!--VITE END-->\n",
    );
    fx.write("repo/x.md", "X\n");
    let ctx = load(&fx.opts("repo"));
    assert_eq!(
        ctx.files[0].content,
        "Keep this\nInline <!-- stays --> here\n```\n<!-- in fence -->\n```\nbody @x.md\n"
    );
    assert_eq!(fx.names(&ctx.files), vec!["repo/CLAUDE.md", "repo/x.md"]);
}

#[test]
fn skip_reasons_serialize_with_a_kind_tag() {
    let v = serde_json::to_value(SkipReason::Excluded { pattern: "**/x".into() }).unwrap();
    assert_eq!(v, serde_json::json!({"kind": "excluded", "pattern": "**/x"}));
    let v = serde_json::to_value(SkipReason::ExternalInclude).unwrap();
    assert_eq!(v, serde_json::json!({"kind": "externalInclude"}));
    for r in [
        SkipReason::NonTextExtension,
        SkipReason::DepthLimit,
        SkipReason::AlreadyLoaded,
        SkipReason::Empty,
        SkipReason::Unreadable { message: "x".into() },
        SkipReason::Conditional,
        SkipReason::NestedWorktree,
        SkipReason::SourceDisabled,
    ] {
        assert!(!r.describe().is_empty());
    }
}

#[test]
fn nested_candidates_are_bounded_and_skip_heavy_folders() {
    let fx = Fx::new();
    fx.write("repo/a/CLAUDE.md", "A\n");
    fx.write("repo/a/CLAUDE.local.md", "AL\n");
    fx.write("repo/a/.claude/CLAUDE.md", "AD\n");
    fx.write("repo/a/.claude/rules/r.md", "R\n");
    fx.write("repo/node_modules/p/CLAUDE.md", "NM\n");
    fx.write("repo/.git/CLAUDE.md", "G\n");
    fx.write("repo/target/CLAUDE.md", "T\n");
    let deep: String = (0..10).map(|i| format!("d{i}")).collect::<Vec<_>>().join("/");
    fx.write(&format!("repo/{deep}/CLAUDE.md"), "DEEP\n");
    fx.write("repo/d0/CLAUDE.md", "D0\n");
    fx.symlink("..", "repo/a/up");
    let ctx = load(&fx.opts("repo"));
    let mut got: Vec<String> = ctx.nested_candidates.iter().filter_map(|p| fx.rel(p)).collect();
    got.sort();
    assert_eq!(
        got,
        vec!["repo/a/.claude/CLAUDE.md", "repo/a/.claude/rules/r.md", "repo/a/CLAUDE.local.md", "repo/a/CLAUDE.md", "repo/d0/CLAUDE.md"]
    );
}

/// A repository whose `.claude` is a link to a folder outside it: its CLAUDE.md loads in every
/// release, its rules up to 2.1.283 (the symlink check of 2.1.232-2.1.283 asked only whether the
/// rules folder or rule itself is a link) and not from 2.1.284 (bisected against the real
/// releases with the version matrix's `symlinks/dot_claude_link` case).
#[test]
fn rules_inside_a_linked_dot_claude_load_until_2_1_284() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "P\n");
    fx.write("shared/CLAUDE.md", "SHARED DOT CLAUDE\n");
    fx.write("shared/rules/r.md", "SHARED RULE\n");
    fs::create_dir_all(fx.p("repo/.git")).unwrap();
    fx.symlink(fx.p("shared").to_str().unwrap(), "repo/.claude");
    let at = |patch| {
        let mut opts = fx.opts("repo");
        opts.profile = behaviours(ClaudeVersion::new(2, 1, patch));
        fx.names(&load(&opts).files)
    };
    for patch in [197, 231, 232, 260, 283] {
        // Read under its real path, as Claude Code names it.
        assert_eq!(at(patch), ["repo/CLAUDE.md", "repo/.claude/CLAUDE.md", "shared/rules/r.md"], "2.1.{patch}");
    }
    for patch in [284, 300, 332] {
        assert_eq!(at(patch), ["repo/CLAUDE.md", "repo/.claude/CLAUDE.md"], "2.1.{patch}");
    }
}

#[test]
fn files_over_4_mib_are_left_out_from_2_1_196() {
    let fx = Fx::new();
    let over = format!("BIG\n{}", "x".repeat(4 * 1024 * 1024 - 3));
    fx.write("repo/CLAUDE.md", &over);
    fx.write("repo/.claude/rules/small.md", "SMALL\n");
    let mut opts = fx.opts("repo");
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), ["repo/.claude/rules/small.md"]);
    assert!(matches!(fx.skipped(&ctx).as_slice(), [(p, SkipReason::TooLarge { bytes })] if p == "repo/CLAUDE.md" && *bytes == 4 * 1024 * 1024 + 1));
    // 2.1.195 and older send it whole (docs/claude-code-versions.md, "Before 2.1.197").
    opts.profile = behaviours(ClaudeVersion::new(2, 1, 195));
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), ["repo/CLAUDE.md", "repo/.claude/rules/small.md"]);
    assert_eq!(ctx.files[0].content.len(), over.len());
    assert!(fx.skipped(&ctx).is_empty());
}

/// A cloned repository's chain of folder links inside the project (`rules/n -> ../../d/1`,
/// `d/1/n -> ../2`, …) nests rules folders without end: the walk stops at its depth limit and
/// says so, instead of aborting the process on an overflowed stack (4,000 links did).
#[test]
fn a_chain_of_linked_rules_folders_stops_at_the_depth_limit() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    fx.write("repo/.claude/rules/top.md", "TOP RULE\n");
    let links = 5_000;
    fx.symlink("../../d/1", "repo/.claude/rules/n");
    for k in 1..links {
        fs::create_dir_all(fx.p(format!("repo/d/{k}"))).unwrap();
        fx.symlink(&format!("../{}", k + 1), &format!("repo/d/{k}/n"));
    }
    fx.write(&format!("repo/d/{links}/deep.md"), "DEEP RULE\n");
    let ctx = std::thread::Builder::new()
        .stack_size(2 << 20) // what `mneme serve` and the app get from spawn_blocking
        .spawn(move || {
            let opts = fx.opts("repo");
            let ctx = load(&opts);
            (fx, ctx)
        })
        .unwrap()
        .join()
        .expect("the load finished without overflowing its stack");
    let (fx, ctx) = ctx;
    assert!(fx.names(&ctx.files).contains(&"repo/.claude/rules/top.md".to_string()));
    let deep: Vec<_> = fx.skipped(&ctx).into_iter().filter(|(_, r)| matches!(r, SkipReason::Unreadable { message } if message.contains("nested more than"))).collect();
    assert_eq!(deep.len(), 1, "{:?}", fx.skipped(&ctx).iter().take(3).collect::<Vec<_>>());
}

/// A file nested past the port's limit is left out with a reason that says so (and that Claude
/// Code, which nests as deep as its stack allows, may still load it); a file marked's own rules
/// refuse keeps the plain reason. The other files load.
#[test]
fn a_file_nested_past_the_limit_is_left_out_saying_why() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    // The comment sends a file through the lexer. 500 emphasis levels pass the 400-level inline
    // limit; 2,000 quote levels are well within the block limit, and Claude Code loads both.
    fx.write("repo/CLAUDE.md", &format!("<!-- c -->\n{}deep{}\n", "_a ".repeat(500), " a_".repeat(500)));
    fx.write("repo/.claude/CLAUDE.md", &format!("<!-- c -->\n{} fine @quoted.md\n", ">".repeat(2000)));
    fx.write("repo/.claude/quoted.md", "INCLUDED FROM DEEP\n");
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), ["repo/.claude/CLAUDE.md", "repo/.claude/quoted.md"]);
    let skipped = fx.skipped(&ctx);
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    let (path, reason) = &skipped[0];
    assert_eq!(path, "repo/CLAUDE.md");
    assert_eq!(*reason, SkipReason::TooDeep { limit: 400 });
    assert!(reason.describe().contains("more than 400 levels deep") && reason.describe().contains("flatten the nesting"));
}

/// A folder a tool fills (`.venv`, which sorts before `src`) is walked after the project's own
/// folders, so thousands of folders in it do not spend the walk's budget before `src` is
/// reached; and a folder the walk never enters by name (`target`, `node_modules`) is still read
/// when it is the working folder itself.
#[test]
fn a_big_virtual_environment_does_not_hide_the_projects_own_nested_files() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    fx.write("repo/src/CLAUDE.md", "SRC\n");
    fx.write("repo/.venv/CLAUDE.md", "VENV\n");
    fx.write("repo/env/pyvenv.cfg", "home = /usr/bin\n");
    for i in 0..5_001 {
        fs::create_dir_all(fx.p(format!("repo/.venv/lib/p{i}"))).unwrap();
        if i < 3 {
            fs::create_dir_all(fx.p(format!("repo/env/lib/p{i}"))).unwrap();
        }
    }
    let ctx = load(&fx.opts("repo"));
    let listed: Vec<String> = ctx.nested_candidates.iter().filter_map(|p| fx.rel(p)).collect();
    assert_eq!(listed, ["repo/src/CLAUDE.md", "repo/.venv/CLAUDE.md"]);
    assert!(mneme_claudemd::is_tool_folder(&fx.p("repo/env")) && !mneme_claudemd::is_tool_folder(&fx.p("repo/src")));

    fx.write("repo/target/CLAUDE.md", "TARGET\n");
    fx.write("repo/target/sub/CLAUDE.md", "TARGET SUB\n");
    let ctx = load(&fx.opts("repo/target"));
    assert!(fx.names(&ctx.files).contains(&"repo/target/CLAUDE.md".to_string()), "{:?}", fx.names(&ctx.files));
    let listed: Vec<String> = ctx.nested_candidates.iter().filter_map(|p| fx.rel(p)).collect();
    assert_eq!(listed, ["repo/target/sub/CLAUDE.md"]);
}

/// `CLAUDE.md` linked to a `/proc` file that says it is empty and streams without end is
/// reported as unreadable after a bounded read, not read until memory runs out.
#[test]
fn a_claude_md_linked_to_an_endless_proc_file_is_read_no_further_than_the_cap() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    fx.symlink("/proc/self/pagemap", "repo/CLAUDE.md");
    fx.write("repo/.claude/CLAUDE.md", "STILL HERE\n");
    let ctx = load(&fx.opts("repo"));
    assert_eq!(fx.names(&ctx.files), ["repo/.claude/CLAUDE.md"]);
    let skipped = fx.skipped(&ctx);
    assert!(
        skipped.iter().any(|(p, r)| p == "repo/CLAUDE.md" && matches!(r, SkipReason::TooLarge { .. } | SkipReason::Unreadable { .. })),
        "{skipped:?}"
    );
}

/// A rules folder linked to `/` in a sub-folder is not listed as nested candidates (it would
/// list the whole file system).
#[test]
fn a_nested_rules_folder_linked_out_of_the_project_is_not_listed() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    fx.write("repo/sub/.claude/CLAUDE.md", "SUB\n");
    fx.symlink("/", "repo/sub/.claude/rules");
    fx.write("repo/other/.claude/rules/r.md", "R\n");
    let ctx = load(&fx.opts("repo"));
    let listed: Vec<String> = ctx.nested_candidates.iter().filter_map(|p| fx.rel(p)).collect();
    assert_eq!(ctx.nested_candidates.len(), listed.len(), "only files under the fixture: {:?}", &ctx.nested_candidates[..ctx.nested_candidates.len().min(5)]);
    assert!(listed.contains(&"repo/other/.claude/rules/r.md".to_string()), "{listed:?}");
}

/// A release without a size cap still has Mneme's ceiling, applied before anything is
/// allocated: a sparse `CLAUDE.md` that says it holds 64 GB is skipped, not read.
#[test]
fn a_sparse_claude_md_of_64_gb_is_skipped_by_a_release_without_a_cap() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    fx.write("repo/CLAUDE.md", "");
    fs::OpenOptions::new().write(true).open(fx.p("repo/CLAUDE.md")).unwrap().set_len(64 << 30).unwrap();
    fx.write("repo/.claude/CLAUDE.md", "STILL HERE\n");
    let mut opts = fx.opts("repo");
    opts.profile = behaviours(ClaudeVersion::new(2, 1, 150));
    let ctx = load(&opts);
    assert_eq!(fx.names(&ctx.files), ["repo/.claude/CLAUDE.md"]);
    let skipped = fx.skipped(&ctx);
    assert!(skipped.iter().any(|(p, r)| p == "repo/CLAUDE.md" && r.describe().contains("64 MiB")), "{skipped:?}");
}

/// Releases before 2.1.232 follow a rules folder's link out of the project: one to a huge
/// tree (`/`) would have every `.md` file on the machine read. The walk stops after 10,000
/// folders and says so.
#[test]
fn a_rules_link_to_a_huge_tree_stops_after_ten_thousand_folders_in_old_releases() {
    let fx = Fx::new();
    git(&fx.p("repo"), &["init", "-q"]);
    for i in 0..10_050 {
        fx.write(&format!("huge/d{i:05}/r.md"), "A RULE FROM ELSEWHERE\n");
    }
    fx.write("repo/.claude/rules/own.md", "OWN RULE\n");
    fx.symlink(&fx.p("huge").to_string_lossy(), "repo/.claude/rules/r");
    let mut opts = fx.opts("repo");
    opts.profile = behaviours(ClaudeVersion::new(2, 1, 150));
    let ctx = load(&opts);
    let names = fx.names(&ctx.files);
    assert!(names.contains(&"repo/.claude/rules/own.md".to_string()));
    let elsewhere = names.iter().filter(|n| n.starts_with("huge/")).count();
    assert!((9_000..10_000).contains(&elsewhere), "{elsewhere} of the 10,050 folders' rules were read");
    let skipped = fx.skipped(&ctx);
    assert_eq!(skipped.iter().filter(|(_, r)| r.describe().contains("more than 10000 rules folders")).count(), 1, "{skipped:?}");
}

/// From 2.1.284 MEMORY.md is cleaned before it is sent (invisible characters dropped, tags that
/// could pass for the request's own escaped, an index with nothing visible left out); from
/// 2.1.337 it is also quoted behind a preamble. The version matrix checks the same on the real
/// binaries (`versions__quoting__*`); this pins each step to its release.
#[test]
fn memory_index_is_cleaned_then_quoted_by_release() {
    let fx = Fx::new();
    fx.write("repo/CLAUDE.md", "PROJECT\n");
    fx.write("mem/MEMORY.md", "- a\u{200b}b <system-reminder> x\n> > quoted\n\n</ TICK> <ticket> <channel source=\"s\">\n");
    let render = |release: ClaudeVersion, memory: &str| {
        fx.write("mem/MEMORY.md", memory);
        let opts = LoadOptions { auto_mem_entrypoint: Some(fx.p("mem/MEMORY.md")), ..fx.options_for("repo", release) };
        let ctx = load(&opts);
        let text = render_claude_md(&opts, &ctx.files);
        text.split_once("persists across conversations):\n\n").map(|(_, index)| index.to_string())
    };
    let memory = "- a\u{200b}b <system-reminder> x\n> > quoted\n\n</ TICK> <ticket> <channel source=\"s\">\n";
    assert_eq!(render(ClaudeVersion::new(2, 1, 283), memory).unwrap(), "- a\u{200b}b <system-reminder> x\n> > quoted\n\n</ TICK> <ticket> <channel source=\"s\">");
    assert_eq!(render(ClaudeVersion::new(2, 1, 284), memory).unwrap(), "- ab <\\system-reminder> x\n> > quoted\n\n<\\/ TICK> <ticket> <\\channel source=\"s\">");
    let quoted = render(ClaudeVersion::new(2, 1, 337), memory).unwrap();
    assert_eq!(quoted, format!("{}\n\n> - ab <\\system-reminder> x\n> quoted\n> \n> <\\/ TICK> <ticket> <\\channel source=\"s\">", mneme_claudemd::QUOTED_INDEX_PREAMBLE));
    // Nothing visible: left out from 2.1.284, sent (as blanks) before.
    assert_eq!(render(ClaudeVersion::new(2, 1, 284), "\u{200b}\u{feff} \n"), None);
    assert!(render(ClaudeVersion::new(2, 1, 283), "\u{200b}\u{feff} \n").is_some());
}
