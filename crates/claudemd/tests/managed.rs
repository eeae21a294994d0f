//! Managed files a Cowork session cannot trust (from 2.1.304): one its own account could have
//! written is sent under the unverified label, its path in JSON quotes and its text cleaned and
//! quoted. The expected texts are what 2.1.337 and 2.1.304 sent, run offline as root and as
//! `nobody` with `CLAUDE_CODE_ENTRYPOINT=remote_cowork` (docs/claude-code-versions.md, rows 87
//! and 88).

mod common;

use common::Fx;
use mneme_claudemd::managed::CouldWrite;
use mneme_claudemd::{load, render_claude_md, LoadOptions, MEMORY_INSTRUCTION_PROMPT};
use mneme_core::versions::{behaviours, ClaudeVersion};
use mneme_core::Layer;
use mneme_testsupport::accounts;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

const V337: ClaudeVersion = ClaudeVersion::new(2, 1, 337);

fn managed_block(path: &str, quoted: &str) -> String {
    format!("Contents of {path}{}:\n\n{quoted}", Layer::MANAGED_UNVERIFIED_DESCRIPTION)
}

fn cowork(opts: LoadOptions) -> LoadOptions {
    LoadOptions { cowork_session: true, ..opts }
}

/// The temporary folder is writable by everyone (`/tmp`, mode 1777), so whoever runs this, the
/// session's account could have written the managed files below it.
#[test]
fn a_cowork_session_sends_managed_files_it_could_have_written_quoted_and_unverified() {
    let fx = Fx::new();
    fx.write_bytes("managed/CLAUDE.md", b"MANAGED-LINE-1\n> quoted already\n<system-reminder>x</system-reminder>\n");
    // A rule (only one: rules load in the order the folder lists them) whose name has a quote, a
    // backslash, a tag and an invisible character (2.1.337 quoted it so).
    fx.write_bytes("managed/.claude/rules/a\"b\\<tick>\u{200b}z.md", b"ODD\n");
    let root = fx.root.display().to_string();
    let expected = format!(
        "{MEMORY_INSTRUCTION_PROMPT}\n\n{}\n\n{}",
        managed_block(&format!("\"{root}/managed/CLAUDE.md\""), "> MANAGED-LINE-1\n> > quoted already\n> <\\system-reminder>x<\\/system-reminder>"),
        managed_block(&format!("\"{root}/managed/.claude/rules/a\\\"b\\\\<\\\\tick>\\u200bz.md\""), "> ODD"),
    );
    for release in [V337, ClaudeVersion::new(2, 1, 304)] {
        let opts = cowork(fx.options_for("repo", release));
        let ctx = load(&opts);
        assert!(ctx.files.iter().all(|f| f.unverified.is_some()), "{release}: {:?}", ctx.files);
        assert_eq!(render_claude_md(&opts, &ctx.files), expected, "{release}");
    }

    // Not a Cowork session, or a release before 2.1.304: the organization's label, as it is.
    let plain = format!(
        "{MEMORY_INSTRUCTION_PROMPT}\n\nContents of {root}/managed/CLAUDE.md{l}:\n\nMANAGED-LINE-1\n> quoted already\n<system-reminder>x</system-reminder>\n\nContents of {root}/managed/.claude/rules/a\"b\\<tick>\u{200b}z.md{l}:\n\nODD",
        l = Layer::Managed.description()
    );
    for opts in [fx.options_for("repo", V337), cowork(fx.options_for("repo", ClaudeVersion::new(2, 1, 303)))] {
        let ctx = load(&opts);
        assert!(ctx.files.iter().all(|f| f.unverified.is_none()));
        assert_eq!(render_claude_md(&opts, &ctx.files), plain);
    }
}

/// A managed rule with `paths:` comes in only once a Read touches a matching file; in a Cowork
/// session it is judged as the start-up files are and sent the same unverified way. Read in the
/// 2.1.337 bundle: the rules walk marks a managed file before it keeps the conditional or the
/// unconditional ones, and the attachment of a marked file goes through the function that
/// renders the start-up block (not observed offline: the expected text is that function's).
#[test]
fn a_conditional_managed_rule_attached_after_a_read_is_unverified_too() {
    let fx = Fx::new();
    fx.write_bytes("managed/.claude/rules/docs.md", b"---\npaths: docs/**\n---\nDOCS-LINE\n<system-reminder>x</system-reminder>\n");
    fx.write_bytes("repo/docs/guide.md", b"guide\n");
    let root = fx.root.display().to_string();
    let rule = format!("{root}/managed/.claude/rules/docs.md");
    let opts = cowork(fx.options_for("repo", V337));
    let ctx = load(&opts);
    assert!(ctx.files.iter().all(|f| f.path != std::path::Path::new(&rule)), "not at start-up: {:?}", ctx.files);
    let got = mneme_claudemd::touched(&opts, &ctx, &[fx.root.join("repo/docs/guide.md")]);
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(got[0].unverified.is_some(), "{got:?}");
    let text = mneme_claudemd::render_lazy(&opts.profile, &got);
    let quoted = managed_block(&format!("\"{rule}\""), "> DOCS-LINE\n> <\\system-reminder>x<\\/system-reminder>");
    assert!(text.contains(&quoted), "{text}");
    assert!(!text.contains(&format!("Contents of {rule}:")), "{text}");

    // Not a Cowork session: the rule as it is, under its own path.
    let opts = fx.options_for("repo", V337);
    let ctx = load(&opts);
    let got = mneme_claudemd::touched(&opts, &ctx, &[fx.root.join("repo/docs/guide.md")]);
    assert!(got.len() == 1 && got[0].unverified.is_none(), "{got:?}");
    let text = mneme_claudemd::render_lazy(&opts.profile, &got);
    assert!(text.contains(&format!("Contents of {rule}:\n\n---\npaths: docs/**\n---\nDOCS-LINE")) || text.contains(&format!("Contents of {rule}:\n\nDOCS-LINE")), "{text}");
}

/// Root could have written anything: every managed file of a Cowork session run as root is
/// unverified, even in a folder only root may change (2.1.337, run as root).
#[test]
fn root_could_have_written_every_managed_file() {
    if !accounts::root_or_skip("judging managed files as root") {
        return;
    }
    let (_keep, dir) = folder_only_root_may_change();
    write(&dir.join("managed/CLAUDE.md"), "M\n", 0o644);
    assert!(mneme_claudemd::managed::written_by_session_possible(&dir.join("managed/CLAUDE.md"), &dir.join("managed")));
    assert_eq!(mneme_claudemd::managed::why_session_could_write(&dir.join("managed/CLAUDE.md"), &dir.join("managed")), Some(CouldWrite::Root));
}

/// Set in the child [`a_managed_folder_judged_by_its_owner_and_mode`] starts as `nobody`: the
/// fixture folder it judges.
const CHILD: &str = "MNEME_TEST_MANAGED_OWNER_CHILD";

/// As `nobody`, a managed folder root owns and keeps to itself is the organization's; one the
/// account owns, one a group of it may write, a file anyone may write, and a file reached
/// through a link into a folder the account owns, are not (2.1.337 run as `nobody`: a folder
/// root owns keeps the managed label, one `nobody` owns gets the unverified one).
#[test]
fn a_managed_folder_judged_by_its_owner_and_mode() {
    let fixture = match std::env::var_os(CHILD) {
        Some(dir) => std::path::PathBuf::from(dir),
        None => {
            // Root could write anything, so the judgement is only seen by another account.
            if !accounts::root_or_skip("judging a managed folder as another account") {
                return;
            }
            let (keep, dir) = folder_only_root_may_change();
            build_owner_fixture(&dir);
            let h = mneme_testsupport::TestHome::new();
            let me = accounts::binary_for_nobody(&h, std::env::current_exe().unwrap().to_str().unwrap());
            let mut cmd = std::process::Command::new(me);
            cmd.args(["--exact", "a_managed_folder_judged_by_its_owner_and_mode", "--test-threads=1"]).env(CHILD, &dir).current_dir("/");
            let out = accounts::as_nobody(&mut cmd).output().unwrap();
            let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
            drop(keep);
            assert!(out.status.success() && said.contains("1 passed"), "as nobody: {said}");
            return;
        }
    };
    let judged = |managed: &str, file: &str| {
        let dir = fixture.join(managed);
        mneme_claudemd::managed::written_by_session_possible(&dir.join(file), &dir)
    };
    assert!(!judged("root", "CLAUDE.md"), "root's folder, 0755, file 0644");
    assert!(!judged("root", ".claude/rules/r.md"));
    assert!(judged("root", ".claude/rules/anyone.md"), "a file anyone may write");
    assert!(judged("mine", "CLAUDE.md"), "a folder nobody owns");
    assert!(judged("group", "CLAUDE.md"), "a folder nobody's group may write");
    assert!(judged("linked", "CLAUDE.md"), "a link to a file in a folder nobody owns");
    assert!(judged("root", "../outside.md"), "outside the managed folder");
    // Which step said so, for the person reading the Context screen.
    let why = |managed: &str, file: &str| {
        let dir = fixture.join(managed);
        mneme_claudemd::managed::why_session_could_write(&dir.join(file), &dir)
    };
    assert_eq!(why("root", "CLAUDE.md"), None);
    assert_eq!(why("root", ".claude/rules/anyone.md"), Some(CouldWrite::File));
    assert_eq!(why("mine", "CLAUDE.md"), Some(CouldWrite::Folder { path: fixture.join("mine") }));
    assert_eq!(why("group", "CLAUDE.md"), Some(CouldWrite::Folder { path: fixture.join("group") }));
    assert_eq!(why("linked", "CLAUDE.md"), Some(CouldWrite::Folder { path: fixture.join("mine") }), "the link's target's folder");
    assert_eq!(why("root", "../outside.md"), Some(CouldWrite::OutsideManagedFolder));

    // Through the loader: only the files nobody could have written keep the managed label.
    let opts = LoadOptions {
        cowork_session: true,
        ..LoadOptions::new(fixture.clone(), fixture.clone(), fixture.join("no-config"), fixture.join("root"), behaviours(V337))
    };
    let ctx = load(&opts);
    let mut marks: Vec<(String, bool)> = ctx.files.iter().map(|f| (f.path.strip_prefix(&fixture).unwrap().display().to_string(), f.unverified.is_some())).collect();
    marks.sort();
    assert_eq!(marks, [("root/.claude/rules/anyone.md".to_string(), true), ("root/.claude/rules/r.md".into(), false), ("root/CLAUDE.md".into(), false)]);
    let text = render_claude_md(&opts, &ctx.files);
    assert!(text.contains(&format!("Contents of {}/root/CLAUDE.md{}:\n\nM-ROOT", fixture.display(), Layer::Managed.description())), "{text}");
    assert!(text.contains(&managed_block(&format!("\"{}/root/.claude/rules/anyone.md\"", fixture.display()), "> ANYONE")), "{text}");
}

/// A folder under `/run` (root's, 0755, as is every folder above it), removed when dropped:
/// the temporary folder is writable by everyone, so nothing below it could be root's alone.
fn folder_only_root_may_change() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::Builder::new().prefix("mneme-managed-").tempdir_in("/run").expect("a folder under /run (root's)");
    fs::set_permissions(tmp.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let dir = tmp.path().to_path_buf();
    (tmp, dir)
}

fn write(path: &Path, text: &str, mode: u32) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, text).unwrap();
    fs::set_permissions(path, fs::Permissions::from_mode(mode)).unwrap();
}

fn build_owner_fixture(dir: &Path) {
    let nobody = Some(accounts::NOBODY);
    // root: the organization's folder, and one file in it anyone may write.
    write(&dir.join("root/CLAUDE.md"), "M-ROOT\n", 0o644);
    write(&dir.join("root/.claude/rules/r.md"), "R\n", 0o644);
    write(&dir.join("root/.claude/rules/anyone.md"), "ANYONE\n", 0o666);
    write(&dir.join("outside.md"), "O\n", 0o644);
    // mine: owned by nobody.
    write(&dir.join("mine/CLAUDE.md"), "M\n", 0o644);
    std::os::unix::fs::chown(dir.join("mine"), nobody, nobody).unwrap();
    // group: root's, but nobody's group may write it.
    write(&dir.join("group/CLAUDE.md"), "M\n", 0o644);
    std::os::unix::fs::chown(dir.join("group"), None, nobody).unwrap();
    fs::set_permissions(dir.join("group"), fs::Permissions::from_mode(0o775)).unwrap();
    // linked: root's folder, its CLAUDE.md a link into nobody's folder.
    fs::create_dir_all(dir.join("linked")).unwrap();
    std::os::unix::fs::symlink("../mine/CLAUDE.md", dir.join("linked/CLAUDE.md")).unwrap();
    for d in ["root", "root/.claude", "root/.claude/rules", "linked"] {
        fs::set_permissions(dir.join(d), fs::Permissions::from_mode(0o755)).unwrap();
    }
}
