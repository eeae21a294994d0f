//! The agent loop end to end: the real Anthropic provider talking to the stub model server on
//! 127.0.0.1, scripted tool calls, and what the model gets back for each.

use futures_util::future::BoxFuture;
use mneme_agent::messages;
use mneme_agent::{
    apply_changeset, auto_mem_denial, auto_mem_prefix, bash_denial, run_agent, session_memory_denial, AgentError,
    AgentTask, ApplyError, Mode, Policy, Stop,
};
use mneme_core::{Clock, FixedClock};
use mneme_model::{AnthropicProvider, Cancel, ModelError, Provider, ProviderKind, Request, Response};
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

/// 2025-11-29T13:16:47Z.
const NOW_SECS: u64 = 1_764_422_207;
const STATE_IS_CURRENT: &str = " (file state is current in your context \u{2014} no need to Read it back)";

struct Fixture {
    _dir: tempfile::TempDir,
    root: PathBuf,
    mem: PathBuf,
    cwd: PathBuf,
}

impl Fixture {
    fn new() -> Fixture {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mem = root.join("home/.claude/projects/-repo/memory");
        let cwd = root.join("repo");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::create_dir_all(&cwd).unwrap();
        Fixture { _dir: dir, root, mem, cwd }
    }

    fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.mem.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    fn m(&self, rel: &str) -> String {
        self.mem.join(rel).to_string_lossy().into_owned()
    }

    fn task(&self, prompt: &str, max_turns: Option<u32>) -> AgentTask {
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(NOW_SECS));
        AgentTask {
            system: "You are now acting as the memory extraction subagent.".into(),
            prompt: prompt.into(),
            policy: Policy::AutoMem { memory_dir: self.mem.clone() },
            max_turns,
            cwd: self.cwd.clone(),
            label: "extract_memories".into(),
            work_dir: self.root.join("data/agent"),
            clock,
            release: mneme_core::versions::newest(),
            permission_rules: Default::default(),
        }
    }

    fn trash(&self) -> PathBuf {
        self.root.join("data/trash")
    }

    /// Every file under the memory folder with its bytes.
    fn snapshot(&self) -> BTreeMap<PathBuf, Vec<u8>> {
        fn walk(dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else {
                    out.insert(p.clone(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = BTreeMap::new();
        walk(&self.mem, &mut out);
        out
    }
}

fn provider(stub: &StubModel) -> AnthropicProvider {
    AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap()
}

/// The `tool_result` blocks of a request's last message: (content, is_error).
fn tool_results(r: &RecordedRequest) -> Vec<(String, bool)> {
    let last = r.body["messages"].as_array().unwrap().last().unwrap();
    last["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|b| b["type"] == "tool_result")
        .map(|b| {
            let content = match &b["content"] {
                Value::String(s) => s.clone(),
                other => other.as_array().unwrap().iter().map(|t| t["text"].as_str().unwrap()).collect(),
            };
            (content, b["is_error"].as_bool().unwrap_or(false))
        })
        .collect()
}

#[tokio::test]
async fn a_run_that_writes_two_memories_is_applied_atomically_with_the_index() {
    let f = Fixture::new();
    f.write("MEMORY.md", "- [Existing](existing.md) \u{2014} an older memory\n");
    f.write("existing.md", "---\nname: existing\n---\nOld.\n");
    let stub = StubModel::start().await;
    let role = f.m("user_role.md");
    let tabs = f.m("feedback_tabs.md");
    let index = f.m("MEMORY.md");
    stub.push(Turn::tool_use("Read", json!({"file_path": index})));
    stub.push(
        Turn::tool_use("Write", json!({"file_path": role, "content": "---\nname: user-role\ndescription: The user's role\nmetadata:\n  type: user\n---\n\nData scientist.\n"}))
            .and_tool_use("Write", json!({"file_path": tabs, "content": "---\nname: tabs\ndescription: Tabs not spaces\nmetadata:\n  type: feedback\n---\n\nUse tabs.\n"}))
            .and_tool_use(
                "Edit",
                json!({"file_path": index,
                       "old_string": "- [Existing](existing.md) \u{2014} an older memory\n",
                       "new_string": "- [Existing](existing.md) \u{2014} an older memory\n- [User role](user_role.md) \u{2014} data scientist\n- [Tabs](feedback_tabs.md) \u{2014} tabs not spaces\n"}),
            ),
    );
    stub.push(Turn::text("Saved 2 memories."));

    let task = f.task("Extract memories from the last messages.", Some(5));
    let out = run_agent(&provider(&stub), &task, Mode::Apply { trash_dir: f.trash() }, &Cancel::new()).await.unwrap();

    assert_eq!(out.stop, Stop::Completed);
    assert_eq!(out.turns, 3);
    assert_eq!(out.final_text, "Saved 2 memories.");
    assert!(out.denials.is_empty(), "{:?}", out.denials);
    assert_eq!(out.written_paths, vec![PathBuf::from(&role), PathBuf::from(&tabs), PathBuf::from(&index)]);

    // What the model was told for each call, exactly as Claude Code words it.
    let requests = stub.model_requests();
    assert_eq!(requests.len(), 3);
    assert_eq!(
        tool_results(&requests[1]),
        vec![("1\t- [Existing](existing.md) \u{2014} an older memory\n2\t".to_string(), false)]
    );
    assert_eq!(
        tool_results(&requests[2]),
        vec![
            (format!("File created successfully at: {role}{STATE_IS_CURRENT}"), false),
            (format!("File created successfully at: {tabs}{STATE_IS_CURRENT}"), false),
            (format!("The file {index} has been updated successfully.{STATE_IS_CURRENT}"), false),
        ]
    );
    let tools: Vec<&str> = requests[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(tools, ["Bash", "Glob", "Grep", "Read", "Edit", "Write"]);
    assert_eq!(requests[0].body["system"][0]["text"], "You are now acting as the memory extraction subagent.");

    // The changeset, and the disk after applying it.
    let changes: Vec<(&Path, Option<&str>)> =
        out.changeset.changes.iter().map(|c| (c.path.as_path(), c.before.as_deref())).collect();
    assert_eq!(
        changes,
        vec![
            (f.mem.join("MEMORY.md").as_path(), Some("- [Existing](existing.md) \u{2014} an older memory\n")),
            (f.mem.join("user_role.md").as_path(), None),
            (f.mem.join("feedback_tabs.md").as_path(), None),
        ]
    );
    assert_eq!(out.changeset.changes[1].reason, "extract_memories: Write");
    let applied = out.applied.expect("Mode::Apply applies");
    assert_eq!(applied.written.len(), 3);
    assert_eq!(
        std::fs::read_to_string(&index).unwrap(),
        "- [Existing](existing.md) \u{2014} an older memory\n- [User role](user_role.md) \u{2014} data scientist\n- [Tabs](feedback_tabs.md) \u{2014} tabs not spaces\n"
    );
    assert!(std::fs::read_to_string(&role).unwrap().ends_with("Data scientist.\n"));
    let names: Vec<String> =
        std::fs::read_dir(&f.mem).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    assert!(names.iter().all(|n| !n.ends_with(".tmp")), "no temporary files left: {names:?}");
}

#[tokio::test]
async fn refusals_carry_claude_codes_exact_messages_and_the_turn_budget_stops_the_run() {
    let f = Fixture::new();
    f.write("MEMORY.md", "- [A](a.md) \u{2014} a\n");
    let before = f.snapshot();
    let stub = StubModel::start().await;
    let outside = f.cwd.join("notes.md");
    let prefix = auto_mem_prefix(&f.mem);
    stub.push(Turn::tool_use("Write", json!({"file_path": outside, "content": "not here"})));
    stub.push(Turn::tool_use("Bash", json!({"command": format!("touch {}", f.m("x.md"))})));
    stub.push(Turn::tool_use("Bash", json!({"command": format!("echo hi > {}", f.m("y.md"))})));
    stub.push(Turn::tool_use("WebFetch", json!({"url": "https://example.com"})));
    stub.push(Turn::tool_use("Bash", json!({"command": format!("rm -rf {}", f.mem.display())})));
    stub.push(Turn::text("never requested"));

    let task = f.task("Extract memories.", Some(5));
    let out = run_agent(&provider(&stub), &task, Mode::Apply { trash_dir: f.trash() }, &Cancel::new()).await.unwrap();

    assert_eq!(out.stop, Stop::MaxTurns { max_turns: 5 });
    assert_eq!(out.final_text, "Reached maximum number of turns (5)");
    assert_eq!(out.turns, 5);
    let requests = stub.model_requests();
    assert_eq!(requests.len(), 5, "no model call after the budget ran out");
    assert_eq!(stub.pending(), 1);

    let memory_denial = auto_mem_denial(&prefix);
    let shell_denial = bash_denial(&prefix);
    assert_eq!(
        memory_denial,
        format!("only Read, Grep, Glob, read-only Bash, and Edit/Write within {}/ are allowed", f.mem.display())
    );
    assert_eq!(
        shell_denial,
        messages::shell_refused(&format!("{}/", f.mem.display()))
    );
    // What the stub received back for turns 1-4 (turn 5's result is never sent: the run stopped).
    assert_eq!(tool_results(&requests[1]), vec![(memory_denial.clone(), true)]);
    assert_eq!(tool_results(&requests[2]), vec![(shell_denial.clone(), true)]);
    assert_eq!(tool_results(&requests[3]), vec![(shell_denial.clone(), true)]);
    assert_eq!(
        tool_results(&requests[4]),
        vec![("<tool_use_error>Error: No such tool available: WebFetch</tool_use_error>".to_string(), true)]
    );
    let denied: Vec<(&str, &str)> = out.denials.iter().map(|d| (d.tool.as_str(), d.message.as_str())).collect();
    assert_eq!(
        denied,
        vec![
            ("Write", memory_denial.as_str()),
            ("Bash", shell_denial.as_str()),
            ("Bash", shell_denial.as_str()),
            ("Bash", shell_denial.as_str()),
        ]
    );
    assert!(out.changeset.is_empty());
    assert!(!outside.exists());
    assert_eq!(f.snapshot(), before, "nothing changed in the memory folder");
}

#[tokio::test]
async fn stage_mode_leaves_the_folder_byte_identical_and_later_reads_see_the_run() {
    let f = Fixture::new();
    f.write("MEMORY.md", "- [Old](old.md) \u{2014} stale\n");
    f.write("old.md", "---\nname: old\n---\nWrong.\n");
    let before = f.snapshot();
    let stub = StubModel::start().await;
    let new = f.m("new.md");
    stub.push(
        Turn::tool_use("Write", json!({"file_path": new, "content": "---\nname: new\n---\nRight.\n"}))
            .and_tool_use("Bash", json!({"command": format!("rm {}", f.m("old.md"))})),
    );
    stub.push(
        Turn::tool_use("Bash", json!({"command": format!("ls {}", f.mem.display())}))
            .and_tool_use("Bash", json!({"command": format!("cat {}", new)}))
            .and_tool_use("Grep", json!({"pattern": "Right", "path": f.mem}))
            .and_tool_use("Glob", json!({"pattern": "*.md", "path": f.mem}))
            .and_tool_use("Read", json!({"file_path": f.m("old.md")})),
    );
    stub.push(Turn::text("Consolidated."));

    let mut task = f.task("Dream.", None);
    task.label = "auto_dream".into();
    // macOS keeps Mneme's data under "Application Support": the view of the run's changes that
    // Bash sees must not depend on a work folder whose path needs quoting.
    task.work_dir = f.root.join("data/Application Support/agent");
    let out = run_agent(&provider(&stub), &task, Mode::Stage, &Cancel::new()).await.unwrap();

    assert_eq!(f.snapshot(), before, "Stage mode touches nothing in the memory folder");
    assert!(out.applied.is_none());
    let requests = stub.model_requests();
    assert_eq!(tool_results(&requests[1]), vec![
        (format!("File created successfully at: {new}{STATE_IS_CURRENT}"), false),
        ("(Bash completed with no output)".to_string(), false),
    ]);
    let seen = tool_results(&requests[2]);
    assert_eq!(seen[0], ("MEMORY.md\nnew.md".to_string(), false), "ls sees the run's files, not old.md");
    assert_eq!(seen[1], ("---\nname: new\n---\nRight.".to_string(), false));
    assert_eq!(seen[2], (format!("Found 1 file\n{new}"), false));
    assert_eq!(seen[3], (format!("{}\n{new}", f.m("MEMORY.md")), false));
    assert!(seen[4].1 && seen[4].0.starts_with("There is no file at this path"), "{:?}", seen[4]);

    let changes: Vec<(PathBuf, Option<String>, Option<String>)> =
        out.changeset.changes.iter().map(|c| (c.path.clone(), c.before.clone(), c.after.clone())).collect();
    assert_eq!(changes, vec![
        (f.mem.join("new.md"), None, Some("---\nname: new\n---\nRight.\n".into())),
        (f.mem.join("old.md"), Some("---\nname: old\n---\nWrong.\n".into()), None),
    ]);
    assert_eq!(out.changeset.changes[1].reason, "auto_dream: Bash");

    // Applying the staged changeset later: the file and its index line go to the trash.
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(NOW_SECS));
    let applied = apply_changeset(&out.changeset, &f.trash(), clock, &mneme_core::versions::newest()).unwrap();
    assert_eq!(applied.trashed.len(), 1);
    assert!(!f.mem.join("old.md").exists());
    assert_eq!(std::fs::read_to_string(f.mem.join("MEMORY.md")).unwrap(), "");
    assert!(f.mem.join("new.md").exists());
}

/// The Anthropic provider, with Claude Code writing a memory file just before the `n`-th call.
struct ConcurrentWriter {
    inner: AnthropicProvider,
    calls: AtomicU32,
    at: u32,
    path: PathBuf,
}

impl Provider for ConcurrentWriter {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) + 1 == self.at {
            std::fs::write(&self.path, "- [Claude's](claudes.md) \u{2014} written meanwhile\n").unwrap();
        }
        self.inner.complete(request, cancel)
    }
}

#[tokio::test]
async fn apply_refuses_the_whole_changeset_when_claude_code_changed_a_file_meanwhile() {
    let f = Fixture::new();
    let index = f.write("MEMORY.md", "- [A](a.md) \u{2014} a\n");
    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Read", json!({"file_path": index})));
    stub.push(
        Turn::tool_use("Write", json!({"file_path": f.m("b.md"), "content": "b"}))
            .and_tool_use("Edit", json!({"file_path": index, "old_string": "a\n", "new_string": "a\n- [B](b.md) \u{2014} b\n"})),
    );
    stub.push(Turn::text("done"));
    let p = ConcurrentWriter { inner: provider(&stub), calls: AtomicU32::new(0), at: 3, path: index.clone() };

    let err = run_agent(&p, &f.task("Extract.", Some(5)), Mode::Apply { trash_dir: f.trash() }, &Cancel::new())
        .await
        .unwrap_err();
    let AgentError::NotApplied { outcome, source } = err else { panic!("expected NotApplied, got {err}") };
    assert!(matches!(&source, ApplyError::Changed { path } if path == &index), "{source}");
    assert_eq!(outcome.changeset.changes.len(), 2, "the outcome keeps the changeset for review");
    assert!(!f.mem.join("b.md").exists(), "nothing half-written");
    assert_eq!(std::fs::read_to_string(&index).unwrap(), "- [Claude's](claudes.md) \u{2014} written meanwhile\n");
}

#[tokio::test]
async fn edit_and_write_refuse_where_claude_code_does() {
    let f = Fixture::new();
    let index = f.write("MEMORY.md", "- [A](a.md) \u{2014} same\n- [B](b.md) \u{2014} same\n");
    let stub = StubModel::start().await;
    let secret = format!("token ghp_{}", "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6q7R8");
    stub.push(
        Turn::tool_use("Edit", json!({"file_path": index, "old_string": "same", "new_string": "x"}))
            .and_tool_use("Write", json!({"file_path": index, "content": "overwrite"}))
            .and_tool_use("Read", json!({"file_path": index}))
            .and_tool_use("Edit", json!({"file_path": index, "old_string": "same", "new_string": "x"}))
            .and_tool_use("Edit", json!({"file_path": index, "old_string": "absent", "new_string": "x"}))
            .and_tool_use("Edit", json!({"file_path": index, "old_string": "same", "new_string": "same"}))
            .and_tool_use("Edit", json!({"file_path": f.m("missing.md"), "old_string": "a", "new_string": "b"}))
            .and_tool_use("Write", json!({"file_path": f.m("team/ci.md"), "content": secret}))
            .and_tool_use("Read", json!({"path": index}))
            .and_tool_use("Edit", json!({"file_path": index, "old_string": "same", "new_string": "one", "replace_all": true})),
    );
    stub.push(Turn::text("done"));
    let out = run_agent(&provider(&stub), &f.task("Extract.", Some(5)), Mode::Stage, &Cancel::new()).await.unwrap();

    let results = tool_results(&stub.model_requests()[1]);
    let not_read = format!("<tool_use_error>{}</tool_use_error>", messages::NOT_READ);
    assert_eq!(results[0], (not_read.to_string(), true));
    assert_eq!(results[1], (not_read.to_string(), true));
    assert!(!results[2].1);
    let tool_use_error = |m: &str| (format!("<tool_use_error>{m}</tool_use_error>"), true);
    assert_eq!(results[3], tool_use_error(&messages::several_matches(2, "same")));
    assert!(results[3].0.contains("occurs 2 times") && results[3].0.ends_with("\nold_string: same</tool_use_error>"));
    assert_eq!(results[4], tool_use_error(&messages::not_found("absent")));
    assert_eq!(results[5], tool_use_error(messages::NO_CHANGE));
    assert_eq!(results[6], tool_use_error(&messages::no_such_file(&f.cwd.to_string_lossy(), None)));
    assert_eq!(results[7], tool_use_error("Not written to team memory: the content appears to contain secrets (GitHub PAT), and everyone working on the repository can read team memory. Remove the secret and try again."));
    let problems = [messages::missing_param("file_path"), messages::unknown_param("path")];
    assert_eq!(results[8], tool_use_error(&format!("InputValidationError: {}", messages::bad_input("Read", &problems))));
    assert_eq!(results[9], (format!("The file {index} has been updated. All occurrences were successfully replaced.{STATE_IS_CURRENT}", index = index.display()), false));
    assert!(out.denials.is_empty());
    assert_eq!(out.changeset.changes.len(), 1);
    assert_eq!(out.changeset.changes[0].after.as_deref(), Some("- [A](a.md) \u{2014} one\n- [B](b.md) \u{2014} one\n"));
}

/// Claude Code checks what an Edit adds; joining two halves that pass alone makes a token that
/// only the file as written shows. The team file is checked again before it is applied.
#[tokio::test]
async fn a_secret_joined_by_an_edit_never_reaches_team_memory() {
    let f = Fixture::new();
    let team = std::path::PathBuf::from(f.m("team/ci.md"));
    let stub = StubModel::start().await;
    stub.push(
        Turn::tool_use("Write", json!({"file_path": team, "content": "CI uses ghp_nUwYcfi1NQBYsmPBK6K7 rrTYmlfxd6KQzYRd\n"}))
            .and_tool_use("Edit", json!({"file_path": team, "old_string": "K7 rr", "new_string": "K7rr"}))
            .and_tool_use("Write", json!({"file_path": f.m("notes.md"), "content": "kept\n"}))
            .and_tool_use("Write", json!({"file_path": f.m("team/keys.md"), "content": "- **API key**: Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0\n"})),
    );
    stub.push(Turn::text("done"));
    let out = run_agent(&provider(&stub), &f.task("Extract.", Some(5)), Mode::Apply { trash_dir: f.trash() }, &Cancel::new()).await.unwrap();
    assert!(!team.exists(), "the joined token was not written");
    assert_eq!(std::fs::read_to_string(f.m("notes.md")).unwrap(), "kept\n", "the rest of the run is applied");
    assert_eq!(out.denials.len(), 1, "{:?}", out.denials);
    assert!(out.denials[0].message.contains("GitHub PAT") && !out.denials[0].message.contains("rrTYml"), "{}", out.denials[0].message);
    assert!(!out.written_paths.contains(&team));
    // A key written in Markdown is refused at the Write, with the team guard's own message.
    assert!(!std::path::Path::new(&f.m("team/keys.md")).exists());
    let results = tool_results(&stub.model_requests()[1]);
    assert!(results[3].1 && results[3].0.contains("Not written to team memory"), "{:?}", results[3]);
}

#[tokio::test]
async fn a_run_cannot_grow_a_file_without_bound_or_name_one_it_could_not_apply() {
    let f = Fixture::new();
    f.write("notes/log.txt", &"a match on a line of its own\n".repeat(5_000));
    let stub = StubModel::start().await;
    let x = f.m("x.md");
    let four_mib = 4 << 20;
    stub.push(
        Turn::tool_use("Write", json!({"file_path": x, "content": "a".repeat(2000)}))
            .and_tool_use("Edit", json!({"file_path": x, "old_string": "a", "new_string": "b".repeat(2000), "replace_all": true}))
            .and_tool_use("Edit", json!({"file_path": x, "old_string": "a", "new_string": "b".repeat(600), "replace_all": true}))
            .and_tool_use("Write", json!({"file_path": f.m("big.md"), "content": "c".repeat(four_mib + 1)}))
            .and_tool_use("Write", json!({"file_path": f.m("back\\slash.md"), "content": "x"}))
            .and_tool_use("Write", json!({"file_path": f.m("tab\tname.md"), "content": "x"}))
            .and_tool_use("Write", json!({"file_path": f.m("ok.md"), "content": "fine"}))
            .and_tool_use("Grep", json!({"pattern": "match", "path": f.mem, "output_mode": "content", "head_limit": 0})),
    );
    stub.push(Turn::text("done"));
    let out = run_agent(&provider(&stub), &f.task("Extract.", Some(5)), Mode::Apply { trash_dir: f.trash() }, &Cancel::new()).await.unwrap();

    let results = tool_results(&stub.model_requests()[1]);
    assert!(!results[0].1);
    // 2,000 × 2,000 characters (4 MB × up to 3 bytes for kept quotes) is refused before it is built…
    assert!(results[1].1 && results[1].0.contains("more than the 4MB a file written here may hold"), "{:?}", results[1]);
    // …and a smaller growth is not.
    assert!(!results[2].1, "{:?}", results[2]);
    assert!(results[3].1 && results[3].0.contains("more than the 4MB"), "{:?}", &results[3].0[..200.min(results[3].0.len())]);
    assert!(results[4].1 && results[4].0.contains("give a path relative to the folder, separated with '/'"), "{:?}", results[4]);
    assert!(results[5].1 && results[5].0.contains("control character"), "{:?}", results[5]);
    assert!(!results[6].1);
    // A Grep with no head_limit over 5,000 matching lines is cut, and says how to narrow it.
    let grep = &results[7].0;
    assert!(grep.chars().count() < 100_200 && grep.contains("more characters cut. Narrow the search"), "{}", &grep[grep.len() - 200..]);
    // The refused calls cost nothing else: the run's good writes land.
    assert!(out.applied.is_some(), "{:?}", out.applied);
    assert_eq!(std::fs::read_to_string(f.mem.join("x.md")).unwrap().len(), 1_200_000);
    assert_eq!(std::fs::read_to_string(f.mem.join("ok.md")).unwrap(), "fine");
    assert!(!f.mem.join("big.md").exists());
}

#[tokio::test]
async fn session_memory_allows_only_edit_of_its_file() {
    let f = Fixture::new();
    let summary = f.root.join("home/.claude/projects/-repo/4f1c0e1e-1d4b-4b8e-9a57-7b1d1b6a0c11/session-memory/summary.md");
    std::fs::create_dir_all(summary.parent().unwrap()).unwrap();
    std::fs::write(&summary, "# Session Title\n_A short title_\n\n# Current State\n_What is happening_\n").unwrap();
    let stub = StubModel::start().await;
    stub.push(
        Turn::tool_use("Read", json!({"file_path": summary}))
            .and_tool_use("Write", json!({"file_path": summary, "content": "x"}))
            .and_tool_use("Edit", json!({"file_path": f.m("a.md"), "old_string": "a", "new_string": "b"}))
            .and_tool_use(
                "Edit",
                json!({"file_path": summary, "old_string": "_What is happening_\n", "new_string": "_What is happening_\nFixing the parser.\n"}),
            ),
    );
    stub.push(Turn::text("updated"));
    let mut task = f.task("Update the notes.", None);
    task.policy = Policy::SessionMemory { path: summary.clone() };
    task.label = "session_memory".into();
    let out = run_agent(&provider(&stub), &task, Mode::Apply { trash_dir: f.trash() }, &Cancel::new()).await.unwrap();

    let denial = session_memory_denial(&summary);
    assert_eq!(denial, format!("only Edit on {} is allowed", summary.display()));
    let results = tool_results(&stub.model_requests()[1]);
    assert_eq!(results[0], (denial.clone(), true));
    assert_eq!(results[1], (denial.clone(), true));
    // Input validation runs before the permission check, as in Claude Code.
    assert_eq!(
        results[2],
        (format!("<tool_use_error>{}</tool_use_error>", messages::no_such_file(&f.cwd.to_string_lossy(), None)), true)
    );
    assert_eq!(results[3], (format!("The file {} has been updated successfully.{STATE_IS_CURRENT}", summary.display()), false));
    assert_eq!(out.denials.len(), 2);
    assert_eq!(out.written_paths, vec![summary.clone()]);
    assert_eq!(
        std::fs::read_to_string(&summary).unwrap(),
        "# Session Title\n_A short title_\n\n# Current State\n_What is happening_\nFixing the parser.\n"
    );
}

#[tokio::test]
async fn cancelling_stops_before_the_next_turn_and_applies_nothing() {
    let f = Fixture::new();
    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Write", json!({"file_path": f.m("a.md"), "content": "a"})));
    stub.push(Turn::text("never"));
    let cancel = Cancel::new();
    struct CancelAfterFirst<'c> {
        inner: AnthropicProvider,
        cancel: &'c Cancel,
    }
    impl Provider for CancelAfterFirst<'_> {
        fn kind(&self) -> ProviderKind {
            self.inner.kind()
        }
        fn model(&self) -> &str {
            self.inner.model()
        }
        fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
            Box::pin(async move {
                let r = self.inner.complete(request, cancel).await;
                self.cancel.cancel();
                r
            })
        }
    }
    let p = CancelAfterFirst { inner: provider(&stub), cancel: &cancel };
    let out = run_agent(&p, &f.task("x", None), Mode::Apply { trash_dir: f.trash() }, &cancel).await.unwrap();
    assert_eq!(out.stop, Stop::Cancelled);
    assert_eq!(stub.model_requests().len(), 1);
    assert!(out.changeset.is_empty(), "no tool runs once the run is cancelled");
    assert!(out.applied.is_none());
    assert!(!f.mem.join("a.md").exists(), "a cancelled run is never applied");
}

/// One run of the agent under the user settings' `permissions`, whose model calls `calls` in
/// one turn and then stops: the stub (for the requests it saw) and the outcome.
async fn run_under_rules(f: &Fixture, release: &str, permissions: &Value, calls: &[(&str, Value)]) -> (StubModel, mneme_agent::AgentOutcome) {
    use mneme_agent::PermissionRules;
    use mneme_store::settings::{SettingSource, Settings, SettingsFile};
    let home = f.root.join("home");
    let settings = Settings::from_files(vec![SettingsFile::from_value(
        SettingSource::User,
        home.join(".claude/settings.json"),
        json!({ "permissions": permissions }),
    )]);
    let stub = StubModel::start().await;
    let mut turn = Turn::tool_use(calls[0].0, calls[0].1.clone());
    for (name, input) in &calls[1..] {
        turn = turn.and_tool_use(*name, input.clone());
    }
    stub.push(turn);
    stub.push(Turn::text("done"));
    let task = AgentTask {
        release: mneme_core::versions::behaviours(release.parse().unwrap()),
        permission_rules: PermissionRules::from_settings(&settings, &home, &home.join(".claude"), &f.cwd),
        ..f.task("go", None)
    };
    let outcome = run_agent(&provider(&stub), &task, Mode::Stage, &Cancel::new()).await.unwrap();
    (stub, outcome)
}

/// The user's permission rules meet the agent's calls where Claude Code's meet its memory
/// agents' (the same cases `scripts/memory-agent-rules.sh` runs on real releases): a whole-tool
/// deny takes the tool away and path deny rules refuse in the tools' input checks in every
/// release (Read rules over writes from 2.1.228); from 2.1.292 ask rules, Bash rules and a shell
/// command's file under a Read rule refuse the call too. Kinds: `ok`, `input` (a
/// `<tool_use_error>`), `refused` (the permission check's error).
#[tokio::test]
async fn the_users_permission_rules_meet_the_calls_as_in_each_release() {
    async fn kinds(f: &Fixture, release: &str, permissions: Value, calls: &[(&str, Value)]) -> Vec<&'static str> {
        let (stub, outcome) = run_under_rules(f, release, &permissions, calls).await;
        // A tool a deny rule takes away is not offered.
        let offered: Vec<String> = stub.model_requests()[0].body["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap().to_string()).collect();
        for (name, _) in calls {
            let removed = permissions["deny"].as_array().is_some_and(|d| d.iter().any(|r| r == *name));
            assert_eq!(offered.contains(&name.to_string()), !removed, "{release} {name} offered: {offered:?}");
        }
        let results = tool_results(&stub.model_requests()[1]);
        assert_eq!(results.len(), calls.len());
        let denied: Vec<&str> = outcome.denials.iter().map(|d| d.message.as_str()).collect();
        results
            .iter()
            .map(|(text, is_error)| match (is_error, text.starts_with("<tool_use_error>")) {
                (false, _) => "ok",
                (true, true) => "input",
                (true, false) => {
                    assert!(denied.contains(&text.as_str()), "{release}: a refusal is a denial: {text}");
                    "refused"
                }
            })
            .collect()
    }

    let f = Fixture::new();
    let secret = f.root.join("home/secret/key.txt");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "top secret\n").unwrap();
    let secret = secret.to_string_lossy().into_owned();
    let home = f.root.join("home").to_string_lossy().into_owned();
    let tabs = || ("Write", json!({"file_path": f.m("feedback_tabs.md"), "content": "---\nname: tabs\ndescription: prefers tabs\ntype: feedback\n---\nTabs.\n"}));
    let private = || ("Write", json!({"file_path": f.m("private.md"), "content": "x\n"}));
    let cat = || ("Bash", json!({"command": format!("cat {secret}")}));

    for release in ["2.1.197", "2.1.227", "2.1.228", "2.1.291", "2.1.292", "2.1.337"] {
        let v = |r: &str| mneme_core::versions::behaviours(r.parse().unwrap());
        let rules = v(release).memory_agents_obey_permission_rules;
        let read_rules_over_writes = v(release).writes_refuse_read_denied;
        let when = |on: bool, yes: &'static str, no: &'static str| if on { yes } else { no };
        let cases: Vec<(Value, Vec<(&str, Value)>, Vec<&str>)> = vec![
            (json!({"deny": [format!("Read(/{secret})")]}), vec![("Read", json!({"file_path": secret})), cat(), tabs()], vec!["input", when(rules, "refused", "ok"), "ok"]),
            (json!({"deny": ["Read"]}), vec![("Read", json!({"file_path": f.m("x.md")})), tabs()], vec!["input", when(read_rules_over_writes, "input", "ok")]),
            (json!({"deny": [format!("Read(/{})", f.m("private.md"))]}), vec![private(), tabs()], vec![when(read_rules_over_writes, "input", "ok"), "ok"]),
            (json!({"deny": [format!("Edit(/{})", f.m("private.md"))]}), vec![private(), tabs()], vec!["input", "ok"]),
            (json!({"ask": [format!("Edit(/{})", f.m("private.md"))]}), vec![private(), tabs()], vec![when(rules, "refused", "ok"), "ok"]),
            (
                json!({"deny": ["Bash(cat:*)"], "ask": ["Bash(ls:*)"]}),
                vec![cat(), ("Bash", json!({"command": format!("ls {home}")})), ("Bash", json!({"command": format!("wc -l {secret}")}))],
                vec![when(rules, "refused", "ok"), when(rules, "refused", "ok"), "ok"],
            ),
        ];
        for (permissions, calls, expected) in cases {
            assert_eq!(kinds(&f, release, permissions.clone(), &calls).await, expected, "{release} {permissions}");
        }
    }
}

/// The two read gates in front of the memory agents' Read, Grep and Glob, as each release has
/// them (the `net_paths` and `read_block` cases `scripts/memory-agent-rules.sh` runs on real
/// releases, which answered exactly these kinds; rows 96 and 97 of
/// `docs/claude-code-versions.md`): automount paths refused from 2.1.191 (`/net/<host>`),
/// 2.1.251 (`/Network/Servers/<host>`) and 2.1.257 (`/net`); with
/// `permissions.blockReadsOutsideWorkingDirectories` on, from 2.1.257 a Read outside the
/// working folder and the memory folder is refused, and from 2.1.292 a shell command naming
/// such a file. Kinds: `ok`, `input` (a `<tool_use_error>`), `missing` (a failed call on a
/// path that does not exist), `refused` (the permission check's error).
#[tokio::test]
async fn the_read_gates_meet_the_calls_as_in_each_release() {
    async fn kinds(f: &Fixture, release: &str, permissions: Value, calls: &[(&str, Value)]) -> Vec<&'static str> {
        let (stub, outcome) = run_under_rules(f, release, &permissions, calls).await;
        let denied: Vec<&str> = outcome.denials.iter().map(|d| d.message.as_str()).collect();
        tool_results(&stub.model_requests()[1])
            .iter()
            .map(|(text, is_error)| match (is_error, text.starts_with("<tool_use_error>")) {
                (false, _) => "ok",
                (true, true) => "input",
                (true, false) if denied.contains(&text.as_str()) => "refused",
                (true, false) => {
                    let cwd = f.cwd.to_string_lossy();
                    assert_eq!(text, &mneme_agent::messages::no_such_file(&cwd, None), "{release}");
                    "missing"
                }
            })
            .collect()
    }

    let f = Fixture::new();
    let secret = f.root.join("home/secret/key.txt");
    std::fs::create_dir_all(secret.parent().unwrap()).unwrap();
    std::fs::write(&secret, "top secret\n").unwrap();
    std::fs::write(f.cwd.join("notes.md"), "notes\n").unwrap();
    let secret = secret.to_string_lossy().into_owned();
    let notes = f.cwd.join("notes.md").to_string_lossy().into_owned();
    let other = f.root.join("home/other/notes.md");
    std::fs::create_dir_all(other.parent().unwrap()).unwrap();
    std::fs::write(&other, "other\n").unwrap();
    let other = other.to_string_lossy().into_owned();
    let read = |p: &str| ("Read", json!({"file_path": p}));
    let tabs = || ("Write", json!({"file_path": f.m("feedback_tabs.md"), "content": "---\nname: tabs\ndescription: prefers tabs\ntype: feedback\n---\nTabs.\n"}));

    let releases = ["2.1.160", "2.1.190", "2.1.191", "2.1.250", "2.1.251", "2.1.252", "2.1.257", "2.1.291", "2.1.292", "2.1.337"];
    for release in releases {
        let v = mneme_core::versions::behaviours(release.parse().unwrap());
        let when = |on: bool, yes: &'static str, no: &'static str| if on { yes } else { no };
        let net_hosts = when(v.memory_agents_refuse_net_hosts, "refused", "missing");
        let net_paths = vec![
            read("/net/host/notes.md"),
            read("/net"),
            read("//server/share/notes.md"),
            read("/Network/Servers/host/notes.md"),
            read(&format!("/net/..{notes}")),
            read(&notes),
        ];
        let expected = vec![
            net_hosts,
            when(v.memory_agents_refuse_net_root, "refused", "missing"),
            "missing",
            when(v.memory_agents_refuse_network_servers, "refused", "missing"),
            "ok",
            "ok",
        ];
        assert_eq!(kinds(&f, release, json!({}), &net_paths).await, expected, "{release} net_paths");

        let block = when(v.memory_agents_obey_read_block, "refused", "ok");
        let calls = vec![
            read(&secret),
            tabs(),
            read(&f.m("feedback_tabs.md")),
            read(&notes),
            ("Bash", json!({"command": format!("cat {secret}")})),
            ("Bash", json!({"command": format!("ls {}", f.mem.display())})),
        ];
        let expected = vec![block, "ok", "ok", "ok", when(v.memory_agents_obey_permission_rules, block, "ok"), "ok"];
        let permissions = json!({"blockReadsOutsideWorkingDirectories": true});
        assert_eq!(kinds(&f, release, permissions, &calls).await, expected, "{release} read_block");

        // Row 100 (case `add_dirs_user`): the user's `additionalDirectories` widen the block,
        // for the shell too from 2.1.292.
        let shell = |before: &'static str, after: &'static str| when(v.memory_agents_obey_permission_rules, after, before);
        let calls = vec![
            read(&secret),
            read(&other),
            ("Bash", json!({"command": format!("cat {secret}")})),
            ("Bash", json!({"command": format!("cat {other}")})),
        ];
        let expected = if v.memory_agents_obey_read_block { vec!["ok", "refused", "ok", shell("ok", "refused")] } else { vec!["ok"; 4] };
        let permissions = json!({"blockReadsOutsideWorkingDirectories": true, "additionalDirectories": ["~/secret"]});
        assert_eq!(kinds(&f, release, permissions, &calls).await, expected, "{release} add_dirs_user");

        // Case `shell_hard_block`: a pipe is analysed; a substitution, `eval` or backquotes are
        // refused, by the guard and from 2.1.292 by the block first (the harness runs it from
        // 2.1.257, where the block begins).
        if v.memory_agents_obey_read_block {
            let calls: Vec<(&str, Value)> = [
                format!("cat {notes} | wc -l"),
                format!("echo $(cat {notes})"),
                format!("eval cat {notes}"),
                format!("cat {secret} | wc -l"),
                format!("echo $(cat {secret})"),
                format!("cat `echo {secret}`"),
            ]
            .into_iter()
            .map(|c| ("Bash", json!({"command": c})))
            .collect();
            let expected = vec!["ok", "refused", "refused", shell("ok", "refused"), "refused", "refused"];
            let permissions = json!({"blockReadsOutsideWorkingDirectories": true});
            assert_eq!(kinds(&f, release, permissions, &calls).await, expected, "{release} shell_hard_block");
        }
    }
}

/// From 2.1.205 the note on a Read's first page follows the turn's results (Claude Code sends it
/// as a message of its own after them), so the model gets it as text after the tool_result
/// blocks; up to 2.1.204 it opens the result (row 98).
#[tokio::test]
async fn the_first_pages_note_follows_the_results_from_2_1_205() {
    let f = Fixture::new();
    let big = f.cwd.join("big.md");
    std::fs::write(&big, "0123456789abcdef\n".repeat(7_000)).unwrap();
    for (release, after) in [("2.1.204", false), ("2.1.205", true), ("2.1.337", true)] {
        let stub = StubModel::start().await;
        stub.push(Turn::tool_use("Read", json!({"file_path": big})).and_tool_use("Read", json!({"file_path": f.m("none.md")})));
        stub.push(Turn::text("done"));
        let task = AgentTask { release: mneme_core::versions::behaviours(release.parse().unwrap()), ..f.task("go", None) };
        run_agent(&provider(&stub), &task, Mode::Stage, &Cancel::new()).await.unwrap();
        let body = &stub.model_requests()[1].body;
        let last = body["messages"].as_array().unwrap().last().unwrap();
        let kinds: Vec<&str> = last["content"].as_array().unwrap().iter().map(|b| b["type"].as_str().unwrap()).collect();
        let first = results_text(&last["content"][0]);
        if after {
            assert_eq!(kinds, ["tool_result", "tool_result", "text"], "{release}");
            let note = last["content"][2]["text"].as_str().unwrap();
            assert!(note.starts_with(&format!("{}: [", big.display())), "{release}: {note}");
            assert!(first.starts_with("1\t0123456789abcdef\n"), "{release}");
        } else {
            assert_eq!(kinds, ["tool_result", "tool_result"], "{release}");
            assert!(first.starts_with("<system-reminder>["), "{release}");
        }
    }

    fn results_text(block: &Value) -> String {
        match &block["content"] {
            Value::String(s) => s.clone(),
            other => other.as_array().unwrap().iter().map(|t| t["text"].as_str().unwrap()).collect(),
        }
    }
}
