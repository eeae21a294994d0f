//! Hostile shell commands for the memory agent's Bash policy: the read-only classifier and
//! the memory `rm` check must answer (refusing whatever they cannot analyse) for any text,
//! including 12,000-deep `$(`, quotes that never close, NUL and invalid UTF-8 turned lossy.
//! And whole runs driven by a hostile model answer: tool calls naming paths out of the memory
//! folder, through links planted in it, or no file can have; nothing outside the folder changes
//! and a call the run takes is one it can apply.

use mneme_agent::{is_memory_rm_command, is_read_only_command, run_agent, AgentError, AgentTask, Mode, Policy};
use mneme_core::versions::{self, BashReadOnlyTables};
use mneme_core::{Clock, FixedClock};
use mneme_model::{Block, Cancel, ModelError, Provider, ProviderKind, Request, Response};
use mneme_testsupport::hostile::{config, mutated_text, text};
use mneme_testsupport::scripted::Scripted;
use proptest::prelude::*;
use serde_json::{json, Value};
use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

fn commands() -> Vec<Vec<u8>> {
    [
        "ls -la /tmp && cat a.txt | head -n 5",
        "git log --oneline -5; git status",
        "rm /home/u/.claude/projects/p/memory/old.md",
        "grep -rn 'x' src/ 2>/dev/null | wc -l",
        "FOO=1 echo \"a $b\" 'c' > out.txt",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

/// The newest release's.
fn newest() -> BashReadOnlyTables {
    versions::newest().bash_read_only
}

const NESTED: &[&str] = &["$(", "`", "(", "{ ", "\"", "'", "\\", "<(", "${", "|", "&&", ";", "<<", "#"];

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn damaged_commands(cmd in mutated_text(commands())) {
        let _ = is_read_only_command(&cmd, newest());
        let _ = is_memory_rm_command(&cmd, "/home/u/.claude/projects/p/memory/", &versions::newest());
    }

    #[test]
    fn arbitrary_commands(cmd in text()) {
        let _ = is_read_only_command(&cmd, newest());
        let _ = is_memory_rm_command(&cmd, "/m/", &versions::newest());
    }

    /// Nesting the classifier refuses (substitution, subshells, groups) is never read-only.
    #[test]
    fn deep_nesting_is_not_read_only(piece in proptest::sample::select(NESTED.to_vec()), n in 1usize..12_000, tail in text()) {
        let cmd = format!("ls {}{tail}", piece.repeat(n));
        let refused = ["$(", "`", "(", "<(", "${"].contains(&piece);
        prop_assert!(!(refused && is_read_only_command(&cmd, newest())), "read-only: {:?}", cmd);
        let _ = is_memory_rm_command(&cmd, "/m/", &versions::newest());
    }
}

/// Line continuations split a redirection (`2\<newline>>x` is `2>x` to bash) so that a word the
/// classifier reads as an argument is not one, and the flags after it pair up differently:
/// each of these ran a command or deleted a tree. None is read-only.
#[test]
fn line_continuations_never_pass_as_read_only() {
    for cmd in [
        "find ~ -printf 2\\\n>/dev/null -name -delete",
        "find . -printf 2\\\n>/dev/null -name -exec sh -c 'id > /tmp/x' \\;",
        "printf 2\\\n>/dev/null -v 'BASH_CMDS[cat]' %s /bin/sh; cat -c 'id > /tmp/x'",
        "cat a \\\n b",
        "ls -la \\\n",
    ] {
        for tables in BashReadOnlyTables::all() {
            assert!(!is_read_only_command(cmd, tables), "read-only by {tables:?}: {cmd:?}");
        }
    }
    assert!(BashReadOnlyTables::all().into_iter().all(|t| is_read_only_command("cat a b", t)));
}

// ---------------------------------------------------------------------------------------------
// A hostile model answer driving the whole run: tool calls whose paths leave the memory folder
// (`..`, absolute, links planted inside the folder that point out of it, NUL, names past the
// file system's limit, under a file), against a folder holding such links.

/// A memory folder with links planted in it, a folder outside it, a working folder and
/// Mneme's data folder, all in one temporary directory.
struct Planted {
    _dir: tempfile::TempDir,
    root: PathBuf,
    mem: PathBuf,
    outside: PathBuf,
}

impl Planted {
    fn new() -> Planted {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mem = root.join("home/.claude/projects/-repo/memory");
        let outside = root.join("outside");
        for d in [&mem, &outside, &root.join("repo"), &mem.join("team"), &mem.join("sub")] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(outside.join("secret.md"), "outside the memory folder\n").unwrap();
        std::fs::write(mem.join("a.md"), "---\nname: a\n---\nAlpha fact.\n").unwrap();
        std::fs::write(mem.join("MEMORY.md"), "- [A](a.md) \u{2014} alpha\n").unwrap();
        std::fs::write(mem.join("sub/b.md"), "beta\n").unwrap();
        let link = |target: &Path, name: &str| std::os::unix::fs::symlink(target, mem.join(name)).unwrap();
        link(&outside, "out");
        link(&outside.join("secret.md"), "outfile.md");
        link(&outside.join("nothing.md"), "dangling.md");
        link(&mem.join("loop.md"), "loop.md");
        link(&mem.join("a.md"), "inlink.md");
        link(&outside, "team/out");
        Planted { _dir: dir, root, mem, outside }
    }

    fn task(&self) -> AgentTask {
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_764_422_207));
        AgentTask {
            system: "hostile".into(),
            prompt: "hostile".into(),
            policy: Policy::AutoMem { memory_dir: self.mem.clone() },
            max_turns: Some(5),
            cwd: self.root.join("repo"),
            label: "extract_memories".into(),
            work_dir: self.root.join("data/agent"),
            clock,
            release: versions::newest(),
            permission_rules: Default::default(),
        }
    }

    /// Everything but Mneme's data folder (its trash and scratch copies are Mneme's own).
    fn outside_data(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        let data = self.root.join("data");
        mneme_testsupport::tree_snapshot(&self.root).into_iter().filter(|(p, _)| !p.starts_with(&data)).collect()
    }
}

/// How a hostile path starts: `{mem}` and `{out}` are filled in with the folders.
const PATH_STARTS: &[&str] = &[
    "{mem}/", "{mem}/", "{mem}/", "{mem}/out/", "{mem}/team/out/", "{mem}/outfile.md/", "{mem}/dangling.md/", "{mem}/../",
    "{mem}/team/", "{mem}/sub/", "{mem}/a/../../", "{mem}//", "{mem}/./", "{out}/", "", "./", "../", "/", "{mem}/a.md/",
    "{mem}/new.md/", "//server/share/",
];
const PATH_SEGMENTS: &[&str] = &["x", "..", ".", "out", "team", ".git", "MEMORY.md", "a.md", "new.md", "sub", "Out", "CON", "a\\b", "n\u{202e}", "\0"];
const PATH_NAMES: &[&str] = &[
    "new.md", "a.md", "MEMORY.md", "outfile.md", "dangling.md", "loop.md", "secret.md", "x.txt", "", ".md", "CON.md", "A.md", "\0.md",
    "tab\t.md", "new.md/", "b.md", "inlink.md",
];

fn hostile_path() -> impl Strategy<Value = (usize, Vec<usize>, usize, Option<usize>)> {
    (
        0..PATH_STARTS.len(),
        proptest::collection::vec(0..PATH_SEGMENTS.len(), 0..3),
        0..PATH_NAMES.len(),
        // Now and then a name past the file system's 255-byte limit, or a path past 4,096 bytes.
        prop_oneof![6 => Just(None), 1 => (250usize..300).prop_map(Some), 1 => Just(Some(5_000))],
    )
}

fn render_path(f: &Planted, (start, segs, name, long): &(usize, Vec<usize>, usize, Option<usize>)) -> String {
    let mut p = PATH_STARTS[*start].replace("{mem}", &f.mem.to_string_lossy()).replace("{out}", &f.outside.to_string_lossy());
    for s in segs {
        p.push_str(PATH_SEGMENTS[*s]);
        p.push('/');
    }
    match long {
        Some(5_000) => p.push_str(&"d/".repeat(2_500)),
        Some(n) => {
            p.push_str(&"y".repeat(*n));
            p.push('/');
        }
        None => {}
    }
    p.push_str(PATH_NAMES[*name]);
    p
}

/// One tool call: which tool, its path, and which text it writes or replaces.
type Call = (u8, (usize, Vec<usize>, usize, Option<usize>), u8);

fn render_call(f: &Planted, (tool, path, text): &Call) -> (String, Value) {
    let p = render_path(f, path);
    let texts = ["Alpha fact.", "", "beta", "new text\n", "token ghp_", "x"];
    let t = texts[usize::from(*text) % texts.len()];
    match tool % 8 {
        0 | 1 => ("Write".into(), json!({"file_path": p, "content": format!("{t} written\n")})),
        2 => ("Edit".into(), json!({"file_path": p, "old_string": t, "new_string": "edited"})),
        3 => ("Edit".into(), json!({"file_path": p, "old_string": "", "new_string": format!("{t} created\n")})),
        4 => ("Read".into(), json!({"file_path": p})),
        5 => ("Bash".into(), json!({"command": format!("rm {}", if text % 2 == 0 { p } else { format!("-f '{p}'") })})),
        6 => ("Glob".into(), json!({"pattern": "**/*.md", "path": p})),
        _ => ("Grep".into(), json!({"pattern": "fact", "path": p})),
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// Whatever paths a model's tool calls name, nothing outside the memory folder changes,
    /// and a call the run accepts is one its changeset can apply: a run ends applied, with
    /// every file it wrote inside the folder, never refused at the end for a path it took.
    #[test]
    fn tool_calls_never_leave_the_memory_folder(turns in proptest::collection::vec(proptest::collection::vec((any::<u8>(), hostile_path(), any::<u8>()), 1..8), 1..4)) {
        let f = Planted::new();
        let outside_before: BTreeMap<PathBuf, Vec<u8>> = f.outside_data().into_iter().filter(|(p, _)| !p.starts_with(&f.mem)).collect();
        let mut id = 0;
        let script: VecDeque<Vec<Block>> = turns
            .iter()
            .map(|calls| {
                calls
                    .iter()
                    .map(|c| {
                        id += 1;
                        let (name, input) = render_call(&f, c);
                        Block::ToolUse { id: format!("t{id}"), name, input }
                    })
                    .collect()
            })
            .collect();
        let shown: Vec<String> = script.iter().flatten().map(|b| format!("{b:?}")).collect();
        let provider = Scripted::new(script);
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let result = runtime.block_on(run_agent(&provider, &f.task(), Mode::Apply { trash_dir: f.root.join("data/trash") }, &Cancel::new()));
        let outside_after: BTreeMap<PathBuf, Vec<u8>> = f.outside_data().into_iter().filter(|(p, _)| !p.starts_with(&f.mem)).collect();
        prop_assert_eq!(&outside_after, &outside_before, "something outside the memory folder changed: {:#?}", shown);
        match result {
            Ok(outcome) => {
                let real_mem = std::fs::canonicalize(&f.mem).unwrap();
                for p in outcome.applied.iter().flat_map(|a| &a.written) {
                    let real = std::fs::canonicalize(p).unwrap();
                    prop_assert!(real.starts_with(&real_mem), "{} was written at {}", p.display(), real.display());
                }
            }
            Err(AgentError::NotApplied { source, .. }) => {
                prop_assert!(false, "the run took a call its changeset could not apply: {source}\n{:#?}", shown);
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

/// Paths the run used to take and its changeset could not apply, so one of them lost every
/// other change of the run at the end ("Nothing was applied"): a Write through a link out of
/// the folder, to a dangling link, to a link inside it, under a file the run wrote, over a
/// folder of files it wrote, a name past 255 bytes, an `rm` of a link out of the folder or of
/// a file under one. Each is now refused when asked for, and the run's good write lands.
#[test]
fn calls_the_changeset_could_not_apply_are_refused_when_asked() {
    let f = Planted::new();
    let m = |rel: &str| format!("{}/{rel}", f.mem.display());
    let write = |p: String| json!({"file_path": p, "content": "x\n"});
    let calls = [
        ("Write", write(m("out/new.md")), "leads outside the memory folder"),
        ("Write", write(m("dangling.md")), "symbolic link to something that does not exist"),
        ("Write", write(m("inlink.md")), "is not a regular file"),
        ("Write", write(m("made.md")), ""),
        ("Write", write(m("made.md/under.md")), "cannot also be a folder"),
        ("Write", write(m("dir.md/inner.md")), ""),
        ("Write", write(m("dir.md")), "cannot also be a file"),
        ("Write", write(m(&format!("{}.md", "y".repeat(260)))), "file systems allow 255"),
        ("Write", write(m(&format!("{}/new.md", "y".repeat(260)))), "file systems allow 255"),
        ("Bash", json!({"command": format!("rm {}", m("outfile.md"))}), "leads outside the memory folder"),
        ("Bash", json!({"command": format!("rm {}", m("out/secret.md"))}), "leads outside the memory folder"),
        ("Write", write(m("good.md")), ""),
    ];
    let turn = calls.iter().enumerate().map(|(i, (name, input, _))| Block::ToolUse { id: format!("t{i}"), name: name.to_string(), input: input.clone() }).collect();
    let provider = Scripted::new([turn]);
    let outside = mneme_testsupport::tree_snapshot(&f.outside);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let outcome = runtime
        .block_on(run_agent(&provider, &f.task(), Mode::Apply { trash_dir: f.root.join("data/trash") }, &Cancel::new()))
        .expect("the run applies");
    let results = provider.tool_results(1);
    for ((_, input, refusal), (content, is_error)) in calls.iter().zip(&results) {
        if refusal.is_empty() {
            assert!(!is_error, "{input}: {content}");
        } else {
            assert!(*is_error && content.contains(refusal), "{input}: {content}");
        }
    }
    let applied = outcome.applied.expect("applied");
    assert_eq!(applied.written, [f.mem.join("made.md"), f.mem.join("dir.md/inner.md"), f.mem.join("good.md")]);
    assert_eq!(std::fs::read_to_string(f.mem.join("good.md")).unwrap(), "x\n");
    assert_eq!(mneme_testsupport::tree_snapshot(&f.outside), outside);
    assert!(std::fs::symlink_metadata(f.mem.join("outfile.md")).unwrap().file_type().is_symlink());
}

/// A Write of 2,000 characters and one replace_all Edit make a 1.2 MB file, within the 4 MiB a
/// file may hold; forty such files were 48 MB held by the run (and more than once), so a
/// model steered through a dream's 100 turns could stage gigabytes. What one run holds written
/// is capped at 32 MiB over all its files: past it each call is refused, saying why, and the
/// run's writes before it land.
#[test]
fn what_a_run_holds_written_is_bounded() {
    let f = Planted::new();
    let mut turn = Vec::new();
    for i in 0..40 {
        let p = format!("{}/grown_{i}.md", f.mem.display());
        turn.push(Block::ToolUse { id: format!("w{i}"), name: "Write".into(), input: json!({"file_path": p, "content": "a".repeat(2000)}) });
        turn.push(Block::ToolUse {
            id: format!("e{i}"),
            name: "Edit".into(),
            input: json!({"file_path": p, "old_string": "a", "new_string": "b".repeat(600), "replace_all": true}),
        });
    }
    let provider = Scripted::new([turn]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let outcome = runtime
        .block_on(run_agent(&provider, &f.task(), Mode::Apply { trash_dir: f.root.join("data/trash") }, &Cancel::new()))
        .expect("the run applies");
    let results = provider.tool_results(1);
    let refused = results.iter().filter(|(c, e)| *e && c.contains("one run may write")).count();
    assert!(refused > 0 && results.iter().all(|(c, e)| !e || c.contains("one run may write")), "{results:?}");
    let held: usize = outcome.changeset.changes.iter().filter_map(|c| c.after.as_ref()).map(String::len).sum();
    assert!(held > 16 << 20 && held <= 32 << 20, "{held}");
    assert_eq!(outcome.applied.expect("applied").written.len(), outcome.changeset.changes.len());
}

/// A response of thousands of tool calls (no provider that keeps to the output cap sends
/// one): only the first 500 run, and a turn stops running calls once their results pass a
/// model's whole context, so a hostile endpoint cannot hold the run for hours or gigabytes.
/// Every call still gets its answer, saying why it was not run.
#[test]
fn a_turn_of_thousands_of_calls_is_bounded() {
    let f = Planted::new();
    std::fs::write(f.mem.join("big.md"), "a line of text to read again and again\n".repeat(20_000)).unwrap();
    let globs: Vec<Block> = (0..2_000)
        .map(|i| Block::ToolUse { id: format!("g{i}"), name: "Glob".into(), input: json!({"pattern": "*.md", "path": f.mem}) })
        .collect();
    let reads: Vec<Block> = (0..40)
        .map(|i| Block::ToolUse { id: format!("r{i}"), name: "Read".into(), input: json!({"file_path": f.mem.join("big.md"), "offset": 1 + i, "limit": 2_500}) })
        .collect();
    let provider = Scripted::new([globs, reads]);
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    runtime.block_on(run_agent(&provider, &f.task(), Mode::Stage, &Cancel::new())).expect("the run ends");
    let not_run = |results: &[(String, bool)]| results.iter().filter(|(c, e)| *e && c.starts_with("Not run:")).count();
    let globs = provider.tool_results(1);
    assert_eq!((globs.len(), not_run(&globs)), (2_000, 1_500));
    assert!(globs[..500].iter().all(|(c, e)| !e && c.contains("a.md")), "{:?}", &globs[0]);
    let reads = provider.tool_results(2);
    let ran: usize = reads.iter().filter(|(_, e)| !e).map(|(c, _)| c.len()).sum();
    assert_eq!(reads.len(), 40);
    assert!(not_run(&reads) > 0 && ran <= 1_000_000 + 120_000, "{ran}");
}

// ---------------------------------------------------------------------------------------------
// Claude Code (the headless provider) edits a scratch copy of the folder, which is then compared
// with the real folder: a model a transcript steers decides which names the copy holds.

/// Claude Code's headless agent as a test stands it in: it changes the scratch copy it was
/// given (found from its Write rule) as the CLI's own tools would, then ends.
struct Writes(Box<dyn Fn(&Path) + Send + Sync>);

impl mneme_model::HeadlessAgent for Writes {
    fn run<'a>(&'a self, task: &'a mneme_model::HeadlessTask, _: &'a Cancel) -> Pin<Box<dyn Future<Output = Result<mneme_model::HeadlessOutcome, ModelError>> + Send + 'a>> {
        let scratch = task.allowed_tools.iter().find_map(|r| r.strip_prefix("Write(/")?.strip_suffix("/**)")).map(PathBuf::from).unwrap();
        (self.0)(&scratch);
        Box::pin(async { Ok(mneme_model::HeadlessOutcome { result: "done".into(), written_paths: Vec::new(), turns: 1 }) })
    }
}

/// A provider that hands the whole task to [`Writes`], as the Claude Code CLI provider does.
struct Cli(Writes);

impl Provider for Cli {
    fn kind(&self) -> ProviderKind {
        ProviderKind::Anthropic
    }
    fn model(&self) -> &str {
        "headless"
    }
    fn complete<'a>(&'a self, _: &'a Request, _: &'a Cancel) -> Pin<Box<dyn Future<Output = Result<Response, ModelError>> + Send + 'a>> {
        Box::pin(async { Err(ModelError::Cancelled) })
    }
    fn headless(&self) -> Option<&dyn mneme_model::HeadlessAgent> {
        Some(&self.0)
    }
}

/// Writes each `(rel, text)` into the scratch copy, creating folders.
fn writing(files: &[(&str, &str)]) -> Writes {
    let files: Vec<(String, String)> = files.iter().map(|(r, t)| (r.to_string(), t.to_string())).collect();
    Writes(Box::new(move |scratch| {
        for (rel, text) in &files {
            std::fs::create_dir_all(scratch.join(rel).parent().unwrap()).unwrap();
            std::fs::write(scratch.join(rel), text).unwrap();
        }
    }))
}

/// Applies a headless run over `f`'s folder. It runs on a thread of its own, and the test fails
/// if it has not ended within 60 s: a read of a FIFO or of `/dev/zero` blocks (or fills memory
/// on) the thread itself, where no async timeout can reach it.
fn headless_run(f: &Planted, agent: Writes) -> Result<mneme_agent::AgentOutcome, AgentError> {
    let (task, trash_dir) = (f.task(), f.root.join("data/trash"));
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _ = tx.send(runtime.block_on(run_agent(&Cli(agent), &task, Mode::Apply { trash_dir }, &Cancel::new())));
    });
    rx.recv_timeout(std::time::Duration::from_secs(60)).expect("the headless run ends (it does not read a FIFO or /dev/zero)")
}

/// The run applied only `good.md`, and left `rel` out with a denial naming it and saying
/// `says`; the outside file's text appears nowhere in what the run reports.
fn assert_left_out(f: &Planted, outcome: &mneme_agent::AgentOutcome, rel: &str, says: &str) {
    assert_eq!(outcome.applied.as_ref().expect("applied").written, [f.mem.join("good.md")], "{:?}", outcome.denials);
    assert_eq!(std::fs::read_to_string(f.mem.join("good.md")).unwrap(), "good");
    let denied = outcome.denials.iter().find(|d| d.message.starts_with(&format!("{}: ", f.mem.join(rel).display())));
    assert!(denied.is_some_and(|d| d.message.contains(says) && d.message.ends_with("Left out.")), "{rel}: {:?}", outcome.denials);
    assert!(!format!("{outcome:?}").contains(PRIVATE), "the outside file's text is in the outcome: {outcome:#?}");
}

/// The text of `outside/private.md`, which nothing the run reports may hold.
const PRIVATE: &str = "PRIVATE-4711 held outside the memory folder\n";

impl Planted {
    /// `outside/private.md`, holding [`PRIVATE`], and `private.md` in the folder linked to it.
    fn with_private_link(self) -> Planted {
        std::fs::write(self.outside.join("private.md"), PRIVATE).unwrap();
        std::os::unix::fs::symlink(self.outside.join("private.md"), self.mem.join("private.md")).unwrap();
        self
    }
}

/// Claude Code (the headless provider) writes into a scratch copy of the folder, which holds
/// no links; a plain file it writes where the real folder has a link out of it (or under one)
/// made a changeset that could not apply, and so lost the run's other changes. Such a file is
/// left out, saying why.
#[test]
fn a_headless_run_leaves_out_what_it_wrote_over_planted_links() {
    let f = Planted::new();
    let outside = mneme_testsupport::tree_snapshot(&f.outside);
    let agent = writing(&[("outfile.md", "over a link out"), ("out/secret.md", "under a link out"), ("inlink.md", "over a link in"), ("good.md", "good")]);
    let outcome = headless_run(&f, agent).expect("the run applies");
    assert_eq!(outcome.applied.expect("applied").written, [f.mem.join("good.md")]);
    for rel in ["outfile.md", "out/secret.md", "inlink.md"] {
        assert!(outcome.denials.iter().any(|d| d.message.starts_with(&format!("{}: ", f.mem.join(rel).display())) && d.message.ends_with("Left out.")), "{rel}: {:?}", outcome.denials);
    }
    assert_eq!(mneme_testsupport::tree_snapshot(&f.outside), outside);
    assert_eq!(std::fs::read_to_string(f.mem.join("a.md")).unwrap(), "---\nname: a\n---\nAlpha fact.\n");
}

/// Set in the environment of the child process [`a_headless_run_never_reads_a_planted_link_to_dev_zero`]
/// runs its case in.
#[cfg(target_os = "linux")]
const DEV_ZERO_CHILD: &str = "MNEME_TEST_DEV_ZERO_CHILD";

/// A `/proc/self/status` figure (`VmSize`, `VmHWM`) in bytes.
#[cfg(target_os = "linux")]
fn vm_bytes(key: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix(key)?.strip_prefix(':')).unwrap();
    line.trim().trim_end_matches(" kB").parse::<u64>().unwrap() * 1024
}

/// The copy holds a file where the real folder holds a link to `/dev/zero`: comparing the two
/// read the link's endless zeros until memory ran out. The path is refused before anything
/// is read, and the run's other change lands.
///
/// Such a read ends only when an allocation fails, so the case runs in a child process (this
/// test alone, in a fresh copy of the test binary) whose address space is capped at 1 GiB past
/// what it uses, rather than taking the machine's memory; its peak memory then shows whether
/// the link was read at all.
#[cfg(target_os = "linux")]
#[test]
fn a_headless_run_never_reads_a_planted_link_to_dev_zero() {
    const NAME: &str = "a_headless_run_never_reads_a_planted_link_to_dev_zero";
    if std::env::var_os(DEV_ZERO_CHILD).is_none() {
        let exe = std::env::current_exe().unwrap();
        let out = std::process::Command::new(exe).args(["--exact", NAME, "--test-threads=1"]).env(DEV_ZERO_CHILD, "1").output().unwrap();
        let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && stdout.contains("1 passed"), "the child run failed:\n{stdout}\n{stderr}");
        return;
    }
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    setrlimit(Resource::As, Rlimit { current: Some(vm_bytes("VmSize") + (1 << 30)), maximum: getrlimit(Resource::As).maximum }).unwrap();
    let f = Planted::new();
    std::os::unix::fs::symlink("/dev/zero", f.mem.join("zero.md")).unwrap();
    let peak = vm_bytes("VmHWM");
    let outcome = headless_run(&f, writing(&[("zero.md", "x"), ("good.md", "good")])).expect("the run applies");
    let grew = vm_bytes("VmHWM").saturating_sub(peak);
    assert!(grew < 128 << 20, "the run's peak memory grew by {} MiB: it read the link", grew >> 20);
    assert_left_out(&f, &outcome, "zero.md", "leads outside the memory folder");
}

/// The copy holds a file where the real folder holds a FIFO: comparing the two opened the FIFO
/// and waited for a writer for ever, so the run never ended. It is opened without waiting,
/// refused as not a regular file, and the run's other change lands.
#[test]
fn a_headless_run_never_waits_on_a_planted_fifo() {
    let f = Planted::new();
    rustix::fs::mkfifoat(rustix::fs::CWD, f.mem.join("fifo.md"), rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    let outcome = headless_run(&f, writing(&[("fifo.md", "x"), ("good.md", "good")])).expect("the run applies");
    assert_left_out(&f, &outcome, "fifo.md", "is not a regular file");
    assert!(std::fs::symlink_metadata(f.mem.join("fifo.md")).unwrap().file_type().is_fifo());
}

/// The copy holds a file where the real folder holds a link to a file outside it (or, below,
/// under a folder link leading out): the outside file was read as the change's "before", and
/// a copy holding exactly its text passed as unchanged, without a word, so a model could test
/// guesses of what a file anywhere holds. The path is refused before anything is read.
#[test]
fn a_headless_run_never_reads_through_a_link_to_a_file_outside() {
    let f = Planted::new().with_private_link();
    let outcome = headless_run(&f, writing(&[("private.md", PRIVATE), ("good.md", "good")])).expect("the run applies");
    assert_left_out(&f, &outcome, "private.md", "leads outside the memory folder");
    assert_eq!(std::fs::read_to_string(f.outside.join("private.md")).unwrap(), PRIVATE);
}

#[test]
fn a_headless_run_never_reads_through_a_folder_link_leading_out() {
    let f = Planted::new().with_private_link();
    let outcome = headless_run(&f, writing(&[("out/private.md", PRIVATE), ("good.md", "good")])).expect("the run applies");
    assert_left_out(&f, &outcome, "out/private.md", "leads outside the memory folder");
    assert_eq!(std::fs::read_to_string(f.outside.join("private.md")).unwrap(), PRIVATE);
}

/// Claude Code's copy is read the same way: a memory it replaced with a link to a file
/// outside the folder was read through the link, and the outside file's text written into
/// the memory. The link is not followed; the memory stays as it was.
#[test]
fn a_headless_run_never_reads_through_a_link_in_claude_codes_copy() {
    let f = Planted::new().with_private_link();
    let private = f.outside.join("private.md");
    let agent = Writes(Box::new(move |scratch| {
        std::fs::remove_file(scratch.join("a.md")).unwrap();
        std::os::unix::fs::symlink(&private, scratch.join("a.md")).unwrap();
        std::fs::write(scratch.join("good.md"), "good").unwrap();
    }));
    let outcome = headless_run(&f, agent).expect("the run applies");
    assert_left_out(&f, &outcome, "a.md", "in Claude Code's copy of the folder, it is a symbolic link");
    assert_eq!(std::fs::read_to_string(f.mem.join("a.md")).unwrap(), "---\nname: a\n---\nAlpha fact.\n");
}

/// Past 64 MiB (what Mneme reads of one file) neither side is read whole: a memory that large
/// the run changed, and one that large it wrote, are left out saying so (the first used to
/// make a changeset that could not apply, losing the run's other change; the second was held
/// whole and written). One that large it left alone is no change and no denial.
#[test]
fn a_headless_run_reads_neither_side_past_the_size_cap() {
    const PAST_CAP: u64 = (64 << 20) + 1;
    let f = Planted::new();
    for name in ["big.md", "same.md"] {
        std::fs::File::create(f.mem.join(name)).unwrap().set_len(PAST_CAP).unwrap();
    }
    let agent = Writes(Box::new(|scratch| {
        std::fs::write(scratch.join("big.md"), "short").unwrap();
        std::fs::File::create(scratch.join("grown.md")).unwrap().set_len(PAST_CAP).unwrap();
        std::fs::write(scratch.join("good.md"), "good").unwrap();
    }));
    let outcome = headless_run(&f, agent).expect("the run applies");
    assert_left_out(&f, &outcome, "big.md", "larger than 64 MiB");
    assert_left_out(&f, &outcome, "grown.md", "larger than 64 MiB");
    assert!(!outcome.denials.iter().any(|d| d.message.contains("same.md")), "{:?}", outcome.denials);
    assert_eq!(std::fs::metadata(f.mem.join("big.md")).unwrap().len(), PAST_CAP);
    assert!(!f.mem.join("grown.md").exists());
}
