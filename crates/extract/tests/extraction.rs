//! Extraction end to end: transcripts in a hermetic home, the real Anthropic provider talking
//! to the stub model on 127.0.0.1 through Mneme's agent, and the memory folder, inbox and run
//! log afterwards.

use futures_util::future::BoxFuture;
use mneme_core::{Clock, FixedClock};
use mneme_extract::rules::SkipReason;
use mneme_extract::{Engine, ExtractOptions, Extractor, ItemStatus, PromoteTarget, ReviewMode, RunOutcome};
use mneme_model::{AnthropicProvider, Cancel, ModelError, Provider, ProviderKind, Request, Response};
use mneme_stub_model::{StubModel, Turn};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

const SID: &str = "0a23833b-7439-4af7-b274-46564fd6c262";

struct World {
    home: TestHome,
    project: PathBuf,
    memory: PathBuf,
    transcript: PathBuf,
    clock: Arc<dyn Clock>,
    n: AtomicU32,
}

impl World {
    fn new() -> World {
        let home = TestHome::new();
        let project = home.git_repo("repo");
        let memory = home.memdir_for(&project);
        let transcript = mneme_store::paths::transcript_dir(&home.env, &project).join(format!("{SID}.jsonl"));
        std::fs::create_dir_all(transcript.parent().unwrap()).unwrap();
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_772_445_600));
        World { home, project, memory, transcript, clock, n: AtomicU32::new(0) }
    }

    fn extractor(&self) -> Extractor {
        Extractor::new(self.home.env.clone(), self.clock.clone())
    }

    fn next_uuid(&self) -> String {
        let n = self.n.fetch_add(1, Ordering::SeqCst) + 1;
        format!("00000000-0000-4000-8000-{n:012}")
    }

    /// Appends entries in Claude Code's shape, each chained to the previous one.
    fn append(&self, entries: &[Value]) {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.transcript).unwrap();
        for e in entries {
            let mut e = e.clone();
            let parent = self.last_uuid();
            let uuid = self.next_uuid();
            let o = e.as_object_mut().unwrap();
            o.insert("uuid".into(), json!(uuid));
            o.insert("parentUuid".into(), json!(parent));
            o.insert("isSidechain".into(), json!(false));
            o.insert("sessionId".into(), json!(SID));
            o.insert("cwd".into(), json!(self.project));
            o.insert("timestamp".into(), json!("2026-03-02T10:00:00.000Z"));
            o.insert("userType".into(), json!("external"));
            o.insert("version".into(), json!("2.1.197"));
            writeln!(f, "{e}").unwrap();
        }
    }

    /// Appends entries to `path` (made if missing) that name their own `uuid` and `parentUuid`
    /// rather than chaining to the last one [`append`](Self::append) wrote: a conversation
    /// that goes back to an earlier message, or another file's. Each is this session's, in
    /// this project, as far as its `sessionId` and `cwd` say.
    fn append_linked(&self, path: &Path, entries: &[(&str, Option<&str>, Value)]) {
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
        for (uuid, parent, e) in entries {
            let mut e = e.clone();
            let o = e.as_object_mut().unwrap();
            o.insert("uuid".into(), json!(uuid));
            o.insert("parentUuid".into(), json!(parent));
            o.insert("sessionId".into(), json!(SID));
            o.insert("cwd".into(), json!(self.project));
            writeln!(f, "{e}").unwrap();
        }
    }

    fn last_uuid(&self) -> Option<String> {
        let n = self.n.load(Ordering::SeqCst);
        (n > 0).then(|| format!("00000000-0000-4000-8000-{n:012}"))
    }

    /// One complete query loop: the user's prompt, the model's text answer.
    fn turn(&self, user: &str, answer: &str) {
        self.append(&[
            json!({"type": "user", "message": {"role": "user", "content": user}}),
            json!({"type": "assistant", "message": {"id": format!("msg_{}", self.n.load(Ordering::SeqCst)), "role": "assistant",
                "model": "claude-opus-4-8", "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 100, "output_tokens": 5}}}),
        ]);
    }

    fn m(&self, rel: &str) -> String {
        self.memory.join(rel).to_string_lossy().into_owned()
    }

    fn read(&self, rel: &str) -> Option<String> {
        std::fs::read_to_string(self.memory.join(rel)).ok()
    }
}

fn provider(stub: &StubModel) -> AnthropicProvider {
    AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap()
}

const ROLE: &str = "---\nname: user-role\ndescription: Data scientist focused on observability\nmetadata:\n  type: user\n---\n\nThe user is a data scientist.\n";
const TABS: &str = "---\nname: tabs\ndescription: Tabs, not spaces\nmetadata:\n  type: feedback\n---\n\nUse tabs.\n";

/// The model's answer for a run that saves two memories and indexes them.
fn push_two_memories(stub: &StubModel, w: &World) {
    stub.push(
        Turn::tool_use("Write", json!({"file_path": w.m("user_role.md"), "content": ROLE}))
            .and_tool_use("Write", json!({"file_path": w.m("feedback_tabs.md"), "content": TABS}))
            .and_tool_use("Write", json!({"file_path": w.m("MEMORY.md"), "content": "- [User role](user_role.md) — data scientist\n- [Tabs](feedback_tabs.md) — tabs, not spaces\n"})),
    );
    stub.push(Turn::text("Saved."));
}

/// An Edit that fails (its text is not in the file) changes nothing, so the run's line names
/// only the memory really written, where Claude Code would count the failed Edit too.
#[tokio::test]
async fn a_failed_edit_is_not_counted_as_a_saved_memory() {
    let w = World::new();
    std::fs::create_dir_all(&w.memory).unwrap();
    std::fs::write(w.memory.join("feedback_tabs.md"), TABS).unwrap();
    w.turn("I'm a data scientist.", "Noted.");
    let stub = StubModel::start().await;
    stub.push(
        Turn::tool_use("Write", json!({"file_path": w.m("user_role.md"), "content": ROLE}))
            .and_tool_use("Edit", json!({"file_path": w.m("feedback_tabs.md"), "old_string": "no such text", "new_string": "x"})),
    );
    stub.push(Turn::text("Saved."));
    let p = provider(&stub);
    let recs = w.extractor().extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let r = &recs[0];
    assert_eq!(r.outcome, RunOutcome::Saved, "{r:?}");
    assert_eq!(r.message.as_deref(), Some("● Saved 1 memory\nuser_role.md"));
    assert_eq!(r.memory_paths, vec![PathBuf::from(w.m("user_role.md"))]);
    assert_eq!(w.read("feedback_tabs.md").as_deref(), Some(TABS));
}

#[tokio::test]
async fn a_model_run_writes_two_memories_and_the_index_and_says_so_as_claude_code_does() {
    let w = World::new();
    w.turn("I'm a data scientist. Remember that I prefer tabs.", "Noted.");
    let stub = StubModel::start().await;
    push_two_memories(&stub, &w);
    let p = provider(&stub);
    let recs = w.extractor().extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();

    assert_eq!(recs.len(), 1);
    let r = &recs[0];
    assert_eq!(r.outcome, RunOutcome::Saved, "{r:?}");
    assert_eq!(r.message.as_deref(), Some("● Saved 2 memories\nuser_role.md\nfeedback_tabs.md"));
    assert_eq!(r.memory_paths, vec![PathBuf::from(w.m("user_role.md")), PathBuf::from(w.m("feedback_tabs.md"))]);
    assert_eq!(r.written_paths.len(), 3);
    assert_eq!((r.about.engine.as_str(), r.about.model.as_deref(), r.about.new_message_count), ("anthropic", Some("claude-test-model"), 2));
    assert_eq!(w.read("user_role.md").as_deref(), Some(ROLE));
    assert_eq!(w.read("feedback_tabs.md").as_deref(), Some(TABS));
    assert!(w.read("MEMORY.md").unwrap().contains("- [Tabs](feedback_tabs.md)"));

    // What the model was given: the memory policy and the extraction prompt.
    let req = &stub.model_requests()[0];
    let system = req.body["system"].as_array().map_or_else(|| req.body["system"].to_string(), |b| b[0]["text"].as_str().unwrap().to_string());
    assert!(system.starts_with(&format!("# Memory\n\nYour memory folder is `{}/`.", w.memory.display())), "{system}");
    let prompt = req.body["messages"][0]["content"].to_string();
    assert!(prompt.contains("User: I'm a data scientist. Remember that I prefer tabs."));
    assert!(prompt.contains("Read the latest ~2 messages above"));
    assert!(!prompt.contains("## Existing memory files"), "the folder was empty");

    // The run is in the log; the cursor moved, so the same turn is not extracted again.
    let runs = w.extractor().recent_runs(&w.memory, 10).unwrap();
    assert_eq!(runs.len(), 1);
    let again = w.extractor().extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert_eq!(again[0].outcome, RunOutcome::Skipped { reason: SkipReason::NoProse });
    assert_eq!(stub.model_requests().len(), 2, "no further model call");

    // The next run lists what exists.
    w.turn("From now on, never use semicolons in JavaScript.", "OK.");
    stub.push(Turn::text("Nothing to save."));
    w.extractor().extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let prompt = stub.model_requests()[2].body["messages"][0]["content"].to_string();
    assert!(prompt.contains("## Existing memory files\\n\\n- [feedback] feedback_tabs.md ("), "{prompt}");
    assert!(prompt.contains("~2 messages"));
}

#[tokio::test]
async fn a_write_outside_the_memory_folder_is_refused_and_recorded() {
    let w = World::new();
    w.turn("Remember that deploys happen on Fridays.", "Noted.");
    let stub = StubModel::start().await;
    let outside = w.project.join("notes.md");
    stub.push(Turn::tool_use("Write", json!({"file_path": outside, "content": "deploys on Fridays\n"})));
    stub.push(Turn::text("Could not save."));
    let p = provider(&stub);
    let recs = w.extractor().extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let r = &recs[0];
    assert_eq!(r.outcome, RunOutcome::NothingToSave);
    assert_eq!(r.denials.len(), 1);
    assert_eq!(r.denials[0].tool, "Write");
    assert_eq!(
        r.denials[0].message,
        format!("only Read, Grep, Glob, read-only Bash, and Edit/Write within {}/ are allowed", w.memory.display())
    );
    assert!(!outside.exists());
    // The model got the refusal as its tool result.
    let second = &stub.model_requests()[1];
    assert!(second.body["messages"].to_string().contains("are allowed"));
}

/// The model's read-only shell runs where the session ran only when Claude Code ran there: a
/// transcript from elsewhere names any folder it likes, and `git status` in a repository
/// someone else prepared runs that repository's `core.fsmonitor`.
#[tokio::test]
async fn a_transcript_from_elsewhere_runs_the_models_shell_in_the_memory_folder() {
    /// The conversation the model saw after running `pwd`.
    async fn shell_ran_in(w: &World, transcript: &Path) -> String {
        let stub = StubModel::start().await;
        stub.push(Turn::tool_use("Bash", json!({"command": "pwd"})));
        stub.push(Turn::text("Nothing to save."));
        let p = provider(&stub);
        w.extractor().extract_transcript(transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
        // Bound before it is returned: a temporary of the tail expression would outlive `stub`.
        #[allow(clippy::let_and_return)]
        let second = stub.model_requests()[1].body["messages"].to_string();
        second
    }
    let w = World::new();
    w.turn("Remember that deploys happen on Fridays.", "Noted.");
    let seen = shell_ran_in(&w, &w.transcript).await;
    assert!(seen.contains(&format!("{}\\n", w.project.display())) || seen.contains(&format!("\"{}\"", w.project.display())), "{seen}");

    let w = World::new();
    w.turn("Remember that deploys happen on Fridays.", "Noted.");
    let elsewhere = w.home.root.join("Downloads/session.jsonl");
    std::fs::create_dir_all(elsewhere.parent().unwrap()).unwrap();
    std::fs::copy(&w.transcript, &elsewhere).unwrap();
    let seen = shell_ran_in(&w, &elsewhere).await;
    assert!(seen.contains(&w.memory.display().to_string()) && !seen.contains(&format!("\"{}\"", w.project.display())), "{seen}");
}

#[tokio::test]
async fn review_mode_writes_nothing_until_keep_and_keep_lands_with_the_index_line() {
    let w = World::new();
    let x = w.extractor();
    x.set_mode(&w.memory, ReviewMode::Review).unwrap();
    w.turn("I'm a data scientist. Remember that I prefer tabs.", "Noted.");
    let stub = StubModel::start().await;
    push_two_memories(&stub, &w);
    let p = provider(&stub);
    let recs = x.extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let RunOutcome::Staged { inbox_id } = &recs[0].outcome else { panic!("{:?}", recs[0].outcome) };
    assert!(!w.memory.join("user_role.md").exists() && !w.memory.join("MEMORY.md").exists(), "nothing written");

    let inbox = x.inbox();
    let items = inbox.list(Some(&w.memory), false).unwrap();
    assert_eq!(items.len(), 1);
    let item = &items[0];
    assert_eq!(&item.id, inbox_id);
    assert_eq!((item.session_id.as_deref(), item.transcript.as_deref()), (Some(SID), Some(w.transcript.as_path())));
    let names: Vec<(&str, Option<&str>)> = item.proposals.iter().map(|p| (p.rel_path.as_str(), p.name.as_deref())).collect();
    assert_eq!(names, [("user_role.md", Some("user-role")), ("feedback_tabs.md", Some("tabs"))]);

    let kept = inbox.keep(inbox_id).unwrap();
    assert!(matches!(kept.status, ItemStatus::Kept { .. }));
    assert_eq!(w.read("user_role.md").as_deref(), Some(ROLE));
    assert!(w.read("MEMORY.md").unwrap().contains("- [User role](user_role.md)"));
    assert!(inbox.list(Some(&w.memory), false).unwrap().is_empty());
    assert_eq!(inbox.list(Some(&w.memory), true).unwrap().len(), 1, "kept items stay in the history");
    assert_eq!(inbox.keep(inbox_id).unwrap_err().code(), "not-pending");
}

/// One user line and one answer in Claude Code's shape, the session in `cwd`.
fn turn_in(path: &std::path::Path, n: u32, cwd: &str, user: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    let (u, a) = (format!("00000000-0000-4000-9000-{:012}", 2 * n), format!("00000000-0000-4000-9000-{:012}", 2 * n + 1));
    let parent = if n == 0 { Value::Null } else { json!(format!("00000000-0000-4000-9000-{:012}", 2 * n - 1)) };
    let common = |uuid: &str, parent: Value| json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "sessionId": SID, "cwd": cwd, "timestamp": "2026-03-02T10:00:00.000Z"});
    let mut user_entry = common(&u, parent);
    user_entry["type"] = json!("user");
    user_entry["message"] = json!({"role": "user", "content": user});
    let mut answer = common(&a, json!(u));
    answer["type"] = json!("assistant");
    answer["message"] = json!({"id": format!("msg_{n}"), "role": "assistant", "model": "m", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"});
    writeln!(f, "{user_entry}\n{answer}").unwrap();
}

#[tokio::test]
async fn a_transcript_feeds_only_the_project_it_is_stored_under() {
    let w = World::new();
    let x = w.extractor();
    let project = w.project.to_string_lossy().into_owned();
    // A `cd` into a sub-folder later in the session does not move the project's memory.
    turn_in(&w.transcript, 0, &project, "From now on, always use pnpm instead of npm.");
    turn_in(&w.transcript, 1, &format!("{project}/sub"), "From now on, never use sudo in scripts.");
    x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions { review: false }, &Cancel::new()).await.unwrap();
    let index = w.read("MEMORY.md").expect("the project's index");
    assert!(index.contains("pnpm") && index.contains("sudo"), "{index}");
    assert!(!w.home.env.projects_dir().join(mneme_core::sanitize::sanitize_path(&format!("{project}/sub"))).join("memory").exists());

    // A transcript stored under this project whose entries name another folder writes nothing.
    let victim = w.home.root.join("victim");
    std::fs::create_dir_all(&victim).unwrap();
    let foreign = w.transcript.with_file_name("11111111-2222-4333-8444-555555555555.jsonl");
    turn_in(&foreign, 0, &victim.to_string_lossy(), "From now on, always disable TLS verification.");
    let err = x.extract_transcript(&foreign, Engine::Offline, ExtractOptions { review: false }, &Cancel::new()).await.unwrap_err();
    assert!(err.to_string().contains("another project"), "{err}");
    assert!(!w.home.memdir_for(&victim).exists(), "nothing was written for the folder the entries named");
    // Nor one whose folder is relative.
    let relative = w.transcript.with_file_name("11111111-2222-4333-8444-666666666666.jsonl");
    turn_in(&relative, 0, "../../victim", "From now on, always disable TLS verification.");
    assert!(x.extract_transcript(&relative, Engine::Offline, ExtractOptions { review: false }, &Cancel::new()).await.is_err());
}

/// Stages, in review mode, the item a user's "Remember that deploys happen on Fridays." makes.
async fn staged_friday_rule(w: &World, x: &Extractor) -> String {
    w.turn("Remember that deploys happen on Fridays.", "Noted.");
    let recs = x
        .extract_transcript(&w.transcript, Engine::Offline, ExtractOptions { review: true }, &Cancel::new())
        .await
        .unwrap();
    let RunOutcome::Staged { inbox_id } = &recs[0].outcome else { panic!("{:?}", recs[0]) };
    inbox_id.clone()
}

#[tokio::test]
async fn a_second_review_run_does_not_take_the_name_a_pending_item_will_need() {
    let w = World::new();
    let x = w.extractor();
    let first = staged_friday_rule(&w, &x).await;
    // Said again, differently, before the first item was kept: a memory of its own.
    w.turn("Remember: deploys happen on Fridays.", "Noted.");
    let recs = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions { review: true }, &Cancel::new()).await.unwrap();
    let RunOutcome::Staged { inbox_id: second } = &recs[0].outcome else { panic!("{:?}", recs[0]) };
    let inbox = x.inbox();
    let paths = |id: &str| inbox.get(id).unwrap().proposals.into_iter().map(|p| p.rel_path).collect::<Vec<_>>();
    assert_ne!(paths(&first), paths(second));
    inbox.keep(&first).unwrap();
    inbox.keep(second).unwrap();
    let index = w.read("MEMORY.md").unwrap();
    assert_eq!(index.lines().count(), 2, "{index}");
}

#[tokio::test]
async fn keep_redoes_its_index_lines_on_an_index_claude_code_changed_meanwhile() {
    let w = World::new();
    std::fs::create_dir_all(&w.memory).unwrap();
    std::fs::write(w.memory.join("MEMORY.md"), "- [Old](old.md) — old\n").unwrap();
    std::fs::write(w.memory.join("old.md"), "old\n").unwrap();
    let x = w.extractor();
    let inbox_id = &staged_friday_rule(&w, &x).await;
    // Claude Code adds a line to the index after staging, as it does whenever it saves one.
    std::fs::write(w.memory.join("MEMORY.md"), "- [Old](old.md) — old\n- [New](new.md) — by Claude Code\n").unwrap();
    let kept = x.inbox().keep(inbox_id).unwrap();
    assert!(matches!(kept.status, ItemStatus::Kept { .. }));
    let index = w.read("MEMORY.md").unwrap();
    let lines: Vec<&str> = index.lines().collect();
    assert_eq!(lines.len(), 3, "{index}");
    assert_eq!(&lines[..2], ["- [Old](old.md) — old", "- [New](new.md) — by Claude Code"], "Claude Code's line stays");
    assert!(lines[2].contains("(project_deploys_happen_on_fridays.md)"), "{index}");
    assert!(w.memory.join("project_deploys_happen_on_fridays.md").is_file());
}

#[tokio::test]
async fn keep_refuses_a_memory_file_claude_code_wrote_meanwhile_until_the_user_says_what_it_holds() {
    let w = World::new();
    std::fs::create_dir_all(&w.memory).unwrap();
    std::fs::write(w.memory.join("MEMORY.md"), "- [Old](old.md) — old\n").unwrap();
    let x = w.extractor();
    let inbox_id = &staged_friday_rule(&w, &x).await;
    let topic = w.memory.join("project_deploys_happen_on_fridays.md");
    let theirs = "---\nname: deploys\ndescription: by Claude Code\ntype: project\n---\n\nTheirs.\n";
    std::fs::write(&topic, theirs).unwrap();
    let err = x.inbox().keep(inbox_id).unwrap_err();
    assert_eq!(err.code(), "changed-on-disk");
    assert!(err.to_string().contains("changed since this item was staged") && err.to_string().contains("inbox edit"), "{err}");
    assert_eq!(std::fs::read_to_string(&topic).unwrap(), theirs, "their file was not overwritten");
    assert_eq!(w.read("MEMORY.md").unwrap(), "- [Old](old.md) — old\n", "nothing of the item was written");
    // Told what the file should hold, keeping writes it in place of theirs.
    let mine = "---\nname: deploys\ndescription: deploys happen on Fridays\ntype: project\n---\n\nFridays.\n";
    let kept = x.inbox().edit_and_keep(inbox_id, "project_deploys_happen_on_fridays.md", mine.into()).unwrap();
    assert!(matches!(kept.status, ItemStatus::Kept { .. }));
    assert_eq!(std::fs::read_to_string(&topic).unwrap(), mine);
    // Discarding a kept item is refused; the history keeps it.
    assert_eq!(x.inbox().discard(inbox_id).unwrap_err().code(), "not-pending");
    assert_eq!(x.inbox().list(None, true).unwrap().len(), 1);
}

#[tokio::test]
async fn edit_promote_to_claude_md_and_team_with_the_secret_check() {
    let w = World::new();
    let x = w.extractor();
    x.set_mode(&w.memory, ReviewMode::Review).unwrap();
    w.turn("Remember that deploys happen on Fridays.", "Noted.");
    let rec = &x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()[0];
    let RunOutcome::Staged { inbox_id } = &rec.outcome else { panic!("{rec:?}") };
    let inbox = x.inbox();

    // Edit: the description change follows into the proposed index line.
    let edited = "---\nname: deploy-day\ndescription: Production deploys go out on Fridays\nmetadata:\n  type: project\n---\n\nProduction deploys go out on Fridays.\n";
    let item = inbox.edit(inbox_id, "project_deploys_happen_on_fridays.md", edited.into()).unwrap();
    let index = item.changeset.changes.iter().find(|c| c.path.ends_with("MEMORY.md")).unwrap();
    assert_eq!(
        index.after.as_deref(),
        Some("- [Deploys happen on Fridays](project_deploys_happen_on_fridays.md) — Production deploys go out on Fridays\n")
    );
    assert_eq!(inbox.edit(inbox_id, "nope.md", String::new()).unwrap_err().code(), "invalid-input");

    // Promote to CLAUDE.md: appended as a bullet, nothing in the memory folder. Here CLAUDE.md
    // is a link to AGENTS.md, written with CRLF: the link stays, and so do the line ends.
    std::fs::write(w.project.join("AGENTS.md"), "# Project\r\n\r\n- Run tests before pushing.\r\n").unwrap();
    std::os::unix::fs::symlink("AGENTS.md", w.project.join("CLAUDE.md")).unwrap();
    let promoted = inbox.promote(inbox_id, PromoteTarget::ClaudeMd).unwrap();
    assert!(matches!(&promoted.status, ItemStatus::Promoted { to: PromoteTarget::ClaudeMd, .. }));
    assert!(std::fs::symlink_metadata(w.project.join("CLAUDE.md")).unwrap().file_type().is_symlink());
    assert_eq!(
        std::fs::read_to_string(w.project.join("AGENTS.md")).unwrap(),
        "# Project\r\n\r\n- Run tests before pushing.\r\n\r\n- Production deploys go out on Fridays.\r\n"
    );
    assert!(!w.memory.exists() || std::fs::read_dir(&w.memory).unwrap().next().is_none());

    // Promote to team: refused (as Claude Code refuses it) when it holds a secret.
    w.turn("Remember that the staging token is ghp_R4nd0mT0k3nXyZ8q2LmNpQ7sVwK1aB3cD5eF for the deploy bot.", "Noted.");
    let rec = &x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()[0];
    let RunOutcome::Staged { inbox_id } = &rec.outcome else { panic!("{rec:?}") };
    let err = inbox.promote(inbox_id, PromoteTarget::Team).unwrap_err();
    assert_eq!(err.code(), "secrets-in-team-memory");
    assert_eq!(
        err.to_string(),
        "Not written to team memory: the content appears to contain secrets (GitHub PAT), and everyone working on the repository can read team memory. Remove the secret and try again."
    );
    assert!(!w.memory.join("team").exists());
    // CLAUDE.md is checked in for everyone too: refused; CLAUDE.local.md stays on this machine
    // once git ignores it.
    let claude_md = std::fs::read_to_string(w.project.join("CLAUDE.md")).unwrap();
    let err = inbox.promote(inbox_id, PromoteTarget::ClaudeMd).unwrap_err();
    assert_eq!(err.code(), "secrets-in-claude-md");
    assert!(err.to_string().contains("GitHub PAT") && err.to_string().contains("CLAUDE.local.md"), "{err}");
    assert_eq!(std::fs::read_to_string(w.project.join("CLAUDE.md")).unwrap(), claude_md, "nothing written");
    // A link that leads out of the project (a cloned repository's) is not written through.
    let outside = w.project.parent().unwrap().join("bashrc");
    std::fs::write(&outside, "export PATH\n").unwrap();
    std::os::unix::fs::symlink(&outside, w.project.join("CLAUDE.local.md")).unwrap();
    let err = inbox.promote(inbox_id, PromoteTarget::ClaudeLocal).unwrap_err();
    assert_eq!(err.code(), "outside-project", "{err}");
    assert!(err.to_string().contains("outside the project"), "{err}");
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "export PATH\n");
    std::fs::remove_file(w.project.join("CLAUDE.local.md")).unwrap();
    // Not ignored, it could be committed: refused.
    std::fs::write(w.project.join(".gitignore"), "!CLAUDE.local.md\n").unwrap();
    let err = inbox.promote(inbox_id, PromoteTarget::ClaudeLocal).unwrap_err();
    assert_eq!(err.code(), "secrets-in-claude-md", "{err}");
    assert!(err.to_string().contains(".gitignore"), "{err}");
    assert!(!w.project.join("CLAUDE.local.md").exists());
    std::fs::write(w.project.join(".gitignore"), "CLAUDE.local.md\n").unwrap();
    inbox.promote(inbox_id, PromoteTarget::ClaudeLocal).unwrap();
    assert!(std::fs::read_to_string(w.project.join("CLAUDE.local.md")).unwrap().contains("staging token"));

    // A clean one lands in team/ with its team index line.
    w.turn("Remember that the release calendar lives in the Eng wiki under Releases.", "Noted.");
    let rec = &x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()[0];
    let RunOutcome::Staged { inbox_id } = &rec.outcome else { panic!("{rec:?}") };
    let item = inbox.promote(inbox_id, PromoteTarget::Team).unwrap();
    let ItemStatus::Promoted { paths, .. } = &item.status else { panic!() };
    let file = paths[0].file_name().unwrap().to_string_lossy().into_owned();
    assert!(file.starts_with("reference_"), "{file}");
    assert!(w.memory.join("team").join(&file).exists());
    let team_index = w.read("team/MEMORY.md").unwrap();
    assert!(team_index.starts_with(&format!("- [The release calendar lives in the Eng wiki under Releases]({file}) — ")), "{team_index}");
    assert!(!w.memory.join("MEMORY.md").exists(), "nothing in the private folder");
}

/// A provider that, on its first call, makes the session go on: another complete turn lands in
/// the transcript while the extraction runs.
struct SessionGoesOn<'a> {
    inner: AnthropicProvider,
    world: &'a World,
    calls: AtomicU32,
}

impl Provider for SessionGoesOn<'_> {
    fn kind(&self) -> ProviderKind {
        self.inner.kind()
    }
    fn model(&self) -> &str {
        self.inner.model()
    }
    fn complete<'a>(&'a self, request: &'a Request, cancel: &'a Cancel) -> BoxFuture<'a, Result<Response, ModelError>> {
        if self.calls.fetch_add(1, Ordering::SeqCst) == 0 {
            self.world.turn("Also remember that the deploy day is Friday.", "Noted.");
            self.world.turn("And from now on, never use semicolons.", "OK.");
        }
        self.inner.complete(request, cancel)
    }
}

#[tokio::test]
async fn turns_that_end_during_a_run_get_one_trailing_run_with_the_newest_context() {
    let w = World::new();
    let x = w.extractor();
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let stub = StubModel::start().await;
    stub.push(Turn::text("Nothing to save."));
    stub.push(Turn::text("Nothing to save."));
    let p = SessionGoesOn { inner: provider(&stub), world: &w, calls: AtomicU32::new(0) };
    let mut session = x.open_session(&w.transcript).unwrap();
    let messages = session.poll().unwrap().expect("a turn end");
    let recs = x.on_turn_end(&mut session, messages, Engine::Model(&p), &Cancel::new()).await.unwrap();
    let triggers: Vec<_> = recs.iter().map(|r| (r.about.trigger, r.about.new_message_count)).collect();
    use mneme_extract::record::Trigger::*;
    assert_eq!(triggers, [(TurnEnd, 2), (Trailing, 4)], "one trailing run over both later turns");
    assert_eq!(stub.model_requests().len(), 2);
    assert!(stub.model_requests()[1].body["messages"][0]["content"].to_string().contains("never use semicolons"));
    assert_eq!(session.cursor(), Some(w.last_uuid().unwrap().as_str()));
    // Nothing new: no further turn end.
    assert!(session.poll().unwrap().is_none());
}

/// A run asked for by hand while a scheduler follows the session saves its cursor; the
/// scheduler's next turn end starts from that cursor instead of extracting the same messages
/// again from the one it loaded earlier.
#[tokio::test]
async fn a_follower_starts_from_the_cursor_a_manual_run_saved_meanwhile() {
    let w = World::new();
    let x = w.extractor();
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let mut followed = x.open_session(&w.transcript).unwrap();
    x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let stub = StubModel::start().await;
    stub.push(Turn::text("Nothing to save."));
    let p = provider(&stub);
    let messages = followed.poll().unwrap().expect("a turn end");
    x.on_turn_end(&mut followed, messages, Engine::Model(&p), &Cancel::new()).await.unwrap();
    assert!(stub.model_requests().is_empty(), "the turn the manual run extracted is not extracted again");
    assert_eq!(followed.cursor(), Some(w.last_uuid().unwrap().as_str()));
}

#[tokio::test]
async fn direct_writes_skip_and_every_n_throttles_without_calling_the_model() {
    let w = World::new();
    let stub = StubModel::start().await;
    let p = provider(&stub);
    // The main agent saved memory itself this turn.
    w.append(&[
        json!({"type": "user", "message": {"role": "user", "content": "Please remember that deploys are on Fridays."}}),
        json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Write",
            "input": {"file_path": w.m("project_deploys.md"), "content": "x"}}], "stop_reason": "tool_use"}}),
        json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}),
        json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "Saved."}], "stop_reason": "end_turn"}}),
    ]);
    let x = w.extractor().with_every_n_turns(2);
    let mut s = x.open_session(&w.transcript).unwrap();
    let m = s.poll().unwrap().unwrap();
    let r = x.on_turn_end(&mut s, m, Engine::Model(&p), &Cancel::new()).await.unwrap();
    assert_eq!(r[0].outcome, RunOutcome::Skipped { reason: SkipReason::DirectWrite });
    assert_eq!(s.cursor(), Some(w.last_uuid().unwrap().as_str()));

    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let m = s.poll().unwrap().unwrap();
    let r = x.on_turn_end(&mut s, m, Engine::Model(&p), &Cancel::new()).await.unwrap();
    assert_eq!(r[0].outcome, RunOutcome::Skipped { reason: SkipReason::Throttled });
    assert!(stub.model_requests().is_empty());

    w.turn("Also remember that I review code in the morning.", "Noted.");
    stub.push(Turn::text("Nothing to save."));
    let m = s.poll().unwrap().unwrap();
    let r = x.on_turn_end(&mut s, m, Engine::Model(&p), &Cancel::new()).await.unwrap();
    assert_eq!((r[0].outcome.clone(), r[0].about.new_message_count), (RunOutcome::NothingToSave, 4));
    assert_eq!(stub.model_requests().len(), 1);

    // The state survives a restart of Mneme.
    let s2 = x.open_session(&w.transcript).unwrap();
    assert_eq!(s2.cursor(), s.cursor());
}

#[tokio::test]
async fn a_failed_run_keeps_the_cursor_and_off_mode_or_disabled_auto_memory_do_not_run() {
    let w = World::new();
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let stub = StubModel::start().await;
    stub.push_error(400, json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad"}}));
    let p = provider(&stub);
    let x = w.extractor();
    let r = x.extract_transcript(&w.transcript, Engine::Model(&p), ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert!(matches!(r[0].outcome, RunOutcome::Failed { .. }), "{:?}", r[0]);
    assert_eq!(x.open_session(&w.transcript).unwrap().cursor(), None);

    x.set_mode(&w.memory, ReviewMode::Off).unwrap();
    let r = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert!(matches!(&r[0].outcome, RunOutcome::Disabled { why } if why.contains("extraction is off")));
    x.set_mode(&w.memory, ReviewMode::Automatic).unwrap();

    let off = Extractor::new(w.home.env.clone().set_var("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1"), w.clock.clone());
    let r = off.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert!(matches!(&r[0].outcome, RunOutcome::Disabled { why } if why.starts_with("auto memory is off")));

    let r = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert_eq!(r[0].outcome, RunOutcome::Saved);
    assert_eq!(r[0].message.as_deref(), Some("● Saved 1 memory\nfeedback_i_prefer_tabs_over_spaces.md"));
    assert!(Path::new(&w.m("feedback_i_prefer_tabs_over_spaces.md")).exists());
}

/// A damaged review-modes file is named, with what to do about it; it is not the data folder's
/// permissions that need looking at.
#[tokio::test]
async fn a_damaged_modes_file_is_named_with_fix_or_delete() {
    let w = World::new();
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let modes = w.home.env.data_dir().join("extract/modes.json");
    std::fs::create_dir_all(modes.parent().unwrap()).unwrap();
    std::fs::write(&modes, "{\"/a/memory\": \"rev").unwrap();
    let x = w.extractor();
    let e = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap_err().to_string();
    assert!(e.starts_with(&format!("{} is damaged: it is not valid JSON", modes.display())), "{e}");
    assert!(e.contains("Fix it, or delete it (every project's review mode goes back to automatic)") && !e.contains("writable"), "{e}");
    let e = x.mode(&w.memory).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{} is damaged", modes.display())), "{e}");
    // A damaged cursor file names itself too, and deleting it starts it afresh.
    std::fs::remove_file(&modes).unwrap();
    let sessions = w.home.env.data_dir().join("extract/projects").join(mneme_core::sanitize::sanitize_path(&w.memory.to_string_lossy())).join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    std::fs::write(sessions.join(format!("{SID}.json")), "{").unwrap();
    let e = x.open_session(&w.transcript).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{} is damaged", sessions.join(format!("{SID}.json")).display())) && e.ends_with("(Mneme starts it afresh)."), "{e}");
}

/// A session's saved state from an older or newer Mneme: a missing `turnsSinceLast` or
/// session-memory field stopped the session's extraction with an error, and a field this build
/// does not know was dropped at the next save.
#[tokio::test]
async fn session_state_missing_fields_or_with_newer_ones_is_read_and_kept() {
    let w = World::new();
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let sessions = w.home.env.data_dir().join("extract/projects").join(mneme_core::sanitize::sanitize_path(&w.memory.to_string_lossy())).join("sessions");
    std::fs::create_dir_all(&sessions).unwrap();
    let state = sessions.join(format!("{SID}.json"));
    std::fs::write(&state, r#"{"cursor": null, "laterField": {"x": 1}}"#).unwrap();
    std::fs::write(sessions.join(format!("{SID}.session-memory.json")), r#"{"initialized": false, "config": {"toolCallsBetweenUpdates": 7}, "laterField": 2}"#).unwrap();
    let x = w.extractor();
    let session = x.open_session(&w.transcript).unwrap();
    assert_eq!(session.session_memory().config.tool_calls_between_updates, 7);
    assert_eq!(session.session_memory().config.minimum_tokens_between_update, 5_000, "Claude Code's default");
    assert_eq!(session.session_memory().extra.get("laterField"), Some(&json!(2)));
    let runs = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert_eq!(runs[0].outcome, RunOutcome::Saved, "{runs:?}");
    let saved: Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(saved["laterField"], json!({"x": 1}), "{saved}");
    assert!(saved["cursor"].is_string(), "{saved}");
}

#[tokio::test]
async fn the_session_memory_update_may_only_edit_its_notes() {
    let w = World::new();
    w.turn("Build the parser and keep notes.", "Working on it.");
    let notes = mneme_store::paths::session_memory_path(&w.home.env, &w.project, SID).unwrap();
    let stub = StubModel::start().await;
    let notes_s = notes.to_string_lossy().into_owned();
    stub.push(
        Turn::tool_use("Edit", json!({"file_path": notes_s, "old_string": "# Current State\n_What is being worked on at this moment, what is still open, and the very next step_\n",
            "new_string": "# Current State\n_What is being worked on at this moment, what is still open, and the very next step_\nBuilding the parser.\n"}))
            .and_tool_use("Write", json!({"file_path": w.m("x.md"), "content": "x"})),
    );
    stub.push(Turn::text("Done."));
    let p = provider(&stub);
    let t = mneme_extract::transcript::Transcript::load(&w.transcript).unwrap();
    let messages: Vec<_> = t.conversation().into_iter().cloned().collect();
    let out = mneme_extract::session_memory::update(&w.home.env, w.clock.clone(), &p, &w.project, SID, &messages, &Cancel::new())
        .await
        .unwrap();
    assert!(out.changed);
    assert_eq!(out.denials.len(), 1);
    assert_eq!(out.denials[0].message, format!("only Edit on {notes_s} is allowed"));
    let text = std::fs::read_to_string(&notes).unwrap();
    assert!(text.contains("the very next step_\nBuilding the parser.\n\n# Task specification"), "{text}");
    assert!(!w.memory.join("x.md").exists());
    let prompt = stub.model_requests()[0].body["messages"][0]["content"].to_string();
    assert!(prompt.contains(&format!("You already have the notes file, {notes_s}.")));
}

#[tokio::test]
async fn session_memory_runs_only_past_its_thresholds_and_remembers_them() {
    let w = World::new();
    let x = w.extractor();
    let stub = StubModel::start().await;
    let p = provider(&stub);
    let notes = mneme_store::paths::session_memory_path(&w.home.env, &w.project, SID).unwrap();
    w.turn("Build the parser.", "Working on it.");
    let mut s = x.open_session(&w.transcript).unwrap();
    s.poll().unwrap();
    // The last response's usage says the context is 105 tokens: below 10,000.
    assert!(x.update_session_memory(&mut s, &p, &Cancel::new()).await.unwrap().is_none());
    assert!(!notes.exists() && stub.model_requests().is_empty());

    // A long message takes the context past 10,000 tokens (as the API's usage reports it).
    w.append(&[
        json!({"type": "user", "message": {"role": "user", "content": format!("Here is the grammar: {}", "rule ".repeat(8_000))}}),
        json!({"type": "assistant", "message": {"id": "msg_big", "role": "assistant", "content": [{"type": "text", "text": "Thanks."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10_100, "output_tokens": 5}}}),
    ]);
    s.poll().unwrap();
    stub.push(Turn::text("Nothing to add."));
    let u = x.update_session_memory(&mut s, &p, &Cancel::new()).await.unwrap().expect("an update");
    assert_eq!(u.path, notes);
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), mneme_extract::session_memory::DEFAULT_TEMPLATE);
    assert!(s.session_memory().initialized);

    // Reopened (Mneme restarted), the state is still there: no growth, no update.
    let mut s2 = x.open_session(&w.transcript).unwrap();
    s2.poll().unwrap();
    assert_eq!(s2.session_memory(), s.session_memory());
    assert!(x.update_session_memory(&mut s2, &p, &Cancel::new()).await.unwrap().is_none());
    assert_eq!(stub.model_requests().len(), 1);
}

/// Session notes read the whole conversation; of a conversation longer than one read holds,
/// only its newest part is read, and the update says how many older messages it did not read
/// and why (its record, its JSON and its run-log line), never as if it had read them all.
#[tokio::test]
async fn a_notes_update_of_a_conversation_longer_than_it_holds_says_what_it_left_out() {
    let w = World::new();
    let limit = 256 << 10;
    let x = w.extractor().with_held_limit(limit);
    let stub = StubModel::start().await;
    let p = provider(&stub);
    w.turn("Build the parser for the zebrafish format.", "Working on it.");
    w.append(&vec![json!({"type": "progress", "data": {"type": "hook_progress"}}); 3_000]);
    w.append(&[
        json!({"type": "user", "message": {"role": "user", "content": format!("Here is the grammar: {}", "rule ".repeat(8_000))}}),
        json!({"type": "assistant", "message": {"id": "msg_big", "role": "assistant", "content": [{"type": "text", "text": "Thanks."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10_100, "output_tokens": 5}}}),
    ]);
    let mut s = x.open_session(&w.transcript).unwrap();
    s.poll().unwrap();
    stub.push(Turn::text("Nothing to add."));
    let u = x.update_session_memory(&mut s, &p, &Cancel::new()).await.unwrap().expect("an update");
    assert_eq!(u.left_out, Some(mneme_extract::record::LeftOut { messages: 2, limit_bytes: limit as u64 }), "the first turn was let go");
    let prompt = stub.model_requests()[0].body["messages"][0]["content"].to_string();
    assert!(prompt.contains("Here is the grammar") && !prompt.contains("zebrafish"), "the prompt holds only what was read");
    assert_eq!(
        u.summary(),
        "Session notes checked: nothing to change\nLeft out: 2 older messages were not read: a notes update holds only the newest 256 KiB of a transcript's entries, and this conversation is longer than that, so the notes are written from its newer part"
    );
    assert_eq!(serde_json::to_value(&u).unwrap()["leftOut"], json!({"messages": 2, "limitBytes": limit}));

    // Within the limit, nothing is said to be left out, and the JSON reads as before.
    let whole = World::new();
    whole.turn("Build the parser for the zebrafish format.", "Working on it.");
    whole.append(&[
        json!({"type": "user", "message": {"role": "user", "content": format!("Here is the grammar: {}", "rule ".repeat(8_000))}}),
        json!({"type": "assistant", "message": {"id": "msg_big", "role": "assistant", "content": [{"type": "text", "text": "Thanks."}],
            "stop_reason": "end_turn", "usage": {"input_tokens": 10_100, "output_tokens": 5}}}),
    ]);
    let x = whole.extractor().with_held_limit(limit);
    let mut s = x.open_session(&whole.transcript).unwrap();
    s.poll().unwrap();
    stub.push(Turn::text("Nothing to add."));
    let u = x.update_session_memory(&mut s, &p, &Cancel::new()).await.unwrap().expect("an update");
    assert_eq!((u.left_out, u.summary().as_str()), (None, "Session notes checked: nothing to change"));
    assert!(serde_json::to_value(&u).unwrap().get("leftOut").is_none());
    assert!(stub.model_requests()[1].body["messages"][0]["content"].to_string().contains("zebrafish"));
}

/// A followed session holds the turns since its last run, not the whole transcript: entries
/// before the cursor are let go once it is a turn's end. When the user goes back to a message
/// before the cursor (the newest messages chain to entries let go), the transcript is read
/// again whole and the run sees the conversation as Claude Code holds it.
#[tokio::test]
async fn a_followed_session_holds_only_the_turns_since_its_last_run() {
    let w = World::new();
    let x = w.extractor();
    w.turn("We looked at the parser code today.", "Ok.");
    let mut s = x.open_session(&w.transcript).unwrap();
    let m = s.poll().unwrap().expect("a turn end");
    x.on_turn_end(&mut s, m, Engine::Offline, &Cancel::new()).await.unwrap();
    let early_answer = w.last_uuid().unwrap();
    for i in 0..40 {
        w.turn(&format!("Turn {i}: we looked at more of the code."), "Ok.");
        let m = s.poll().unwrap().expect("a turn end");
        assert_eq!(m.len(), 3, "the cursor's message and the new turn");
        assert!(s.held_entries() <= 3, "{} entries held after turn {i}", s.held_entries());
        let r = x.on_turn_end(&mut s, m, Engine::Offline, &Cancel::new()).await.unwrap();
        assert_eq!((r.len(), r[0].about.new_message_count, &r[0].outcome), (1, 2, &RunOutcome::NothingToSave), "turn {i}");
        assert_eq!(s.cursor(), Some(w.last_uuid().unwrap().as_str()));
    }

    // Back to the first answer: a new prompt chained to it, and a reply.
    w.append_linked(&w.transcript, &[
        ("00000000-0000-4000-8000-000000009001", Some(early_answer.as_str()), json!({"type": "user", "message": {"role": "user", "content": "Let us go back and try that again."}})),
        ("00000000-0000-4000-8000-000000009002", Some("00000000-0000-4000-8000-000000009001"), json!({"type": "assistant", "message": {"id": "msg_rewound", "role": "assistant",
            "content": [{"type": "text", "text": "Sure."}], "stop_reason": "end_turn"}})),
    ]);
    let m = s.poll().unwrap().expect("a turn end");
    let uuids: Vec<&str> = m.iter().map(|c| c.uuid.as_str()).collect();
    assert_eq!(uuids, ["00000000-0000-4000-8000-000000000001", early_answer.as_str(), "00000000-0000-4000-8000-000000009001", "00000000-0000-4000-8000-000000009002"]);
    let r = x.on_turn_end(&mut s, m, Engine::Offline, &Cancel::new()).await.unwrap();
    assert_eq!(r[0].about.new_message_count, 4, "the cursor is not in the rewound conversation: all of it is new");

    // Session memory reads the whole conversation: asking for every entry reads them again.
    assert!(s.held_entries() < 10);
    s.keep_all_entries().unwrap();
    assert_eq!(s.held_entries(), 2 + 40 * 2 + 2);
    assert_eq!(s.conversation().len(), 4);
}

/// A session of very many small lines holds only the newest entries within its limit, however
/// many lines; the messages after the cursor that were let go unread are said in the run's
/// record and the run log, never left out silently.
#[tokio::test]
async fn many_small_lines_are_held_within_the_limit_and_the_run_says_what_it_left_out() {
    let w = World::new();
    let limit = 256 << 10;
    let x = w.extractor().with_held_limit(limit);
    let cancel = Cancel::new();
    let run = || x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &cancel);
    w.turn("We looked at the parser code today.", "Ok.");
    let first = run().await.unwrap();
    assert_eq!(first[0].outcome, RunOutcome::NothingToSave);
    assert_eq!(first[0].left_out, None);
    assert!(serde_json::to_value(&first[0]).unwrap().get("leftOut").is_none(), "a record with nothing left out reads as before");

    w.turn("From now on, always sign commits with gpg.", "Noted.");
    w.append(&vec![json!({"type": "progress", "data": {"type": "hook_progress"}}); 3_000]);
    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let s = x.open_session(&w.transcript).unwrap();
    assert!(s.held_bytes() <= limit, "{} bytes held", s.held_bytes());
    assert!(s.held_entries() < 1_000, "{} entries held", s.held_entries());
    assert_eq!(s.left_out_messages(), 2, "the gpg turn, after the cursor, was let go");

    let recs = run().await.unwrap();
    let r = &recs[0];
    assert_eq!(r.outcome, RunOutcome::Saved, "{r:?}");
    assert_eq!(r.left_out, Some(mneme_extract::record::LeftOut { messages: 2, limit_bytes: limit as u64 }));
    assert_eq!(
        r.left_out.unwrap().to_string(),
        "2 older messages were not read: a run holds only the newest 256 KiB of a transcript's entries, and this session has more than that after where extraction last stopped (or since it began)"
    );
    assert_eq!(r.memory_paths.len(), 1, "{:?}", r.memory_paths);
    assert!(std::fs::read_to_string(&r.memory_paths[0]).unwrap().contains("tabs"));
    let logged = x.recent_runs(&w.memory, 1).unwrap();
    assert_eq!(logged[0].left_out, r.left_out, "the run log says so too");

    // The cursor is now the newest message: a further turn leaves nothing out.
    w.turn("Remember that the staging server is called nimbus.", "Noted.");
    let recs = run().await.unwrap();
    assert_eq!((recs[0].about.new_message_count, recs[0].left_out), (2, None), "{:?}", recs[0]);
}

/// Lines that are no conversation after the last message, more than a run holds: the run says
/// its messages were left out, not that the file holds none.
#[tokio::test]
async fn a_conversation_pushed_out_by_other_lines_is_said_to_be_left_out() {
    let w = World::new();
    w.turn("We looked at the parser code today.", "Ok.");
    std::fs::OpenOptions::new().append(true).open(&w.transcript).unwrap().write_all("{}\n".repeat(20_000).as_bytes()).unwrap();
    let x = w.extractor().with_held_limit(256 << 10);
    let err = x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap_err();
    assert!(matches!(err, mneme_extract::ExtractError::NoConversation { left_out: 2, .. }), "{err}");
    assert!(err.to_string().contains("its 2 older ones were left out") && err.to_string().contains("newest 256 KiB"), "{err}");
}

/// A transcript whose entries name another session's id (forged, or copied) is its own
/// session, the one its file is named after: it never moves that session's saved cursor.
#[tokio::test]
async fn a_forged_session_id_does_not_reach_another_sessions_state() {
    let w = World::new();
    let x = w.extractor();
    w.turn("We looked at the parser code today.", "Ok.");
    x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    let cursor = x.open_session(&w.transcript).unwrap().cursor().map(str::to_string);
    assert_eq!(cursor, w.last_uuid());

    let forged = w.transcript.with_file_name("9cecd26a-042b-4c49-82a7-83e39a310d80.jsonl");
    w.append_linked(&forged, &[
        ("f0000000-0000-4000-8000-000000000001", None, json!({"type": "user", "message": {"role": "user", "content": "Some other words from somewhere else."}})),
        ("f0000000-0000-4000-8000-000000000002", Some("f0000000-0000-4000-8000-000000000001"), json!({"type": "assistant", "message": {"id": "m", "content": [{"type": "text", "text": "Ok."}], "stop_reason": "end_turn"}})),
    ]);
    let recs = x.extract_transcript(&forged, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap();
    assert_eq!(recs[0].about.session_id.as_deref(), Some("9cecd26a-042b-4c49-82a7-83e39a310d80"));
    assert_eq!(x.open_session(&w.transcript).unwrap().cursor().map(str::to_string), cursor, "the real session's cursor is its own");
    assert_eq!(x.open_session(&forged).unwrap().cursor(), Some("f0000000-0000-4000-8000-000000000002"));
}

/// `env` with a `claude` on its PATH that says it is `version` (the release extraction follows).
fn with_claude(w: &World, version: &str) -> mneme_store::Environment {
    use std::os::unix::fs::PermissionsExt;
    let bin = w.home.root.join(format!("bin-{version}"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("claude"), format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    w.home.env.clone().set_var("PATH", bin.to_string_lossy().to_string())
}

/// From 2.1.337 Claude Code saves no memory in a session that read a claude.ai chat's text it
/// had saved (`tool-results/artifact-chat.*` under the config home's `projects`; seen with the
/// real binaries: after such a Read, 2.1.337 refuses the session's own Write to the memory
/// folder, which 2.1.332 makes, and its extraction returns before anything at each turn end).
/// Mneme's extraction of such a session stops with it, and stays stopped for the session;
/// 2.1.332 goes on saving, and a Read that was refused reads nothing.
#[tokio::test]
async fn a_session_that_read_a_saved_claude_ai_chat_saves_no_memory_from_2_1_337() {
    let chat = |w: &World, is_error: bool| {
        let path = w.home.env.projects_dir().join("-elsewhere").join(SID).join("tool-results/artifact-chat.4f2a.txt");
        w.append(&[
            json!({"type": "user", "message": {"role": "user", "content": "Remember that I prefer tabs over spaces."}}),
            json!({"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
                "input": {"file_path": path}}], "stop_reason": "tool_use"}}),
            json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\tchat text", "is_error": is_error}]}}),
            json!({"type": "assistant", "message": {"id": "m2", "content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn"}}),
        ]);
        path
    };
    async fn run(x: Extractor, w: &World) -> Vec<mneme_extract::RunRecord> {
        x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()
    }

    let w = World::new();
    let path = chat(&w, false);
    let x = Extractor::new(with_claude(&w, "2.1.337"), w.clock.clone());
    let r = run(x.clone(), &w).await;
    let RunOutcome::Disabled { why } = &r[0].outcome else { panic!("{r:?}") };
    assert!(why.contains("read a claude.ai chat's saved text") && why.contains(&*path.to_string_lossy()) && why.contains("/clear"), "{why}");
    assert!(!Path::new(&w.m("feedback_i_prefer_tabs_over_spaces.md")).exists());
    // The session stays so, though later turns no longer show the read to a run that starts
    // from the cursor.
    w.turn("Also remember that I review code in the morning.", "Noted.");
    let r = run(x, &w).await;
    assert!(matches!(&r[0].outcome, RunOutcome::Disabled { why } if why.contains("claude.ai chat")), "{r:?}");
    assert_eq!(std::fs::read_dir(&w.memory).map(|d| d.count()).unwrap_or(0), 0);

    // 2.1.332 saves from the same session.
    let w = World::new();
    chat(&w, false);
    let r = run(Extractor::new(with_claude(&w, "2.1.332"), w.clock.clone()), &w).await;
    assert_eq!(r[0].outcome, RunOutcome::Saved, "{r:?}");

    // A Read that was refused read nothing: 2.1.337 saves too.
    let w = World::new();
    chat(&w, true);
    let r = run(Extractor::new(with_claude(&w, "2.1.337"), w.clock.clone()), &w).await;
    assert_eq!(r[0].outcome, RunOutcome::Saved, "{r:?}");
}

/// 2.1.337 keeps the mark of a saved chat's read for the whole process, so a Read by one of the
/// session's sub-agents (in its own transcript, `<session>/subagents/agent-*.jsonl`, which the
/// session's never shows) stops the session saving too (read in the 2.1.337 bundle: the Read
/// tool marks the process whichever agent called it). Mneme reads the sub-agents' transcripts
/// for it; 2.1.332 saves, and a refused Read by a sub-agent read nothing.
#[tokio::test]
async fn a_saved_chat_read_by_a_sub_agent_stops_the_session_saving_from_2_1_337() {
    let sub_agent_read = |w: &World, is_error: bool| {
        w.turn("Remember that I prefer tabs over spaces.", "Noted.");
        let path = w.home.env.projects_dir().join("-elsewhere").join(SID).join("tool-results/artifact-chat.4f2a.txt");
        let file = w.transcript.with_extension("").join("subagents/agent-a1b2.jsonl");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        let entry = |uuid: &str, parent: Option<&str>, e: Value| {
            let mut e = e;
            let o = e.as_object_mut().unwrap();
            for (k, v) in [("uuid", json!(uuid)), ("parentUuid", json!(parent)), ("isSidechain", json!(true)), ("agentId", json!("a1b2")), ("sessionId", json!(SID))] {
                o.insert(k.into(), v);
            }
            e.to_string()
        };
        let lines = [
            entry("s1", None, json!({"type": "user", "message": {"role": "user", "content": "Find what the chat said."}})),
            entry("s2", Some("s1"), json!({"type": "assistant", "message": {"id": "sm1", "content": [{"type": "tool_use", "id": "st1", "name": "Read",
                "input": {"file_path": path}}], "stop_reason": "tool_use"}})),
            entry("s3", Some("s2"), json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "st1", "content": "1\tchat text", "is_error": is_error}]}})),
        ];
        std::fs::write(&file, lines.join("\n") + "\n").unwrap();
        path
    };
    async fn run(w: &World, version: &str) -> Vec<mneme_extract::RunRecord> {
        let x = Extractor::new(with_claude(w, version), w.clock.clone());
        x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()
    }

    let w = World::new();
    let path = sub_agent_read(&w, false);
    let r = run(&w, "2.1.337").await;
    let RunOutcome::Disabled { why } = &r[0].outcome else { panic!("{r:?}") };
    assert!(why.starts_with("a sub-agent of this session read") && why.contains(&*path.to_string_lossy()), "{why}");
    assert!(!Path::new(&w.m("feedback_i_prefer_tabs_over_spaces.md")).exists());

    let w = World::new();
    sub_agent_read(&w, false);
    assert_eq!(run(&w, "2.1.332").await[0].outcome, RunOutcome::Saved);

    let w = World::new();
    sub_agent_read(&w, true);
    assert_eq!(run(&w, "2.1.337").await[0].outcome, RunOutcome::Saved, "a refused Read read nothing");
}

/// Bytes this thread has read through system calls so far (Linux's per-thread `rchar`): what a
/// turn end costs in reading, observed on the real files rather than through a hook in the code.
fn bytes_read_by_this_thread() -> u64 {
    let io = std::fs::read_to_string("/proc/thread-self/io").expect("Linux's per-thread I/O counters");
    io.lines().find_map(|l| l.strip_prefix("rchar: ")).expect("rchar").trim().parse().unwrap()
}

/// A sub-agent's transcript line in Claude Code's shape.
fn sub_agent_entry(agent: &str, uuid: &str, parent: Option<&str>, mut e: Value) -> String {
    let o = e.as_object_mut().unwrap();
    for (k, v) in [("uuid", json!(uuid)), ("parentUuid", json!(parent)), ("isSidechain", json!(true)), ("agentId", json!(agent)), ("sessionId", json!(SID))] {
        o.insert(k.into(), v);
    }
    e.to_string() + "\n"
}

/// `n` tool calls of a sub-agent that reads no saved chat: a `Bash` use and its 4 KiB result each.
fn sub_agent_work(agent: &str, from: usize, n: usize) -> String {
    let filler = "build output line\n".repeat(4096 / 18);
    (from..from + n)
        .map(|i| {
            let (u, r) = (format!("{agent}-u{i}"), format!("{agent}-r{i}"));
            let parent = (i > 0).then(|| format!("{agent}-r{}", i - 1));
            sub_agent_entry(agent, &u, parent.as_deref(), json!({"type": "assistant", "message": {"id": u, "content": [{"type": "tool_use", "id": format!("{agent}-t{i}"),
                "name": "Bash", "input": {"command": "cargo build"}}], "stop_reason": "tool_use"}}))
                + &sub_agent_entry(agent, &r, Some(&u), json!({"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": format!("{agent}-t{i}"), "content": filler}]}}))
        })
        .collect()
}

/// The saved-chat check (row 75) at a turn end, as the scheduler makes it (once for the dream
/// loop, then in extraction), reads each of the session's sub-agent transcripts once, and at
/// later turn ends only what they had appended since; a Read whose result comes in a later
/// look is still found, and said to be a sub-agent's.
#[tokio::test]
async fn a_turn_end_reads_sub_agent_transcripts_once_and_then_only_what_was_appended() {
    async fn turn_end(x: &Extractor, s: &mut mneme_extract::Session) -> (u64, Option<(String, &'static str)>, Vec<mneme_extract::RunRecord>) {
        let before = bytes_read_by_this_thread();
        let messages = s.poll().unwrap().expect("a turn end");
        let chat = s.saved_chat_read_in(&messages);
        let recs = x.on_turn_end(s, messages, Engine::Offline, &Cancel::new()).await.unwrap();
        (bytes_read_by_this_thread() - before, chat, recs)
    }
    let w = World::new();
    let x = Extractor::new(with_claude(&w, "2.1.337"), w.clock.clone());
    let dir = w.transcript.with_extension("").join("subagents");
    std::fs::create_dir_all(&dir).unwrap();
    let agents = ["a01", "a02", "a03", "a04"];
    for a in agents {
        std::fs::write(dir.join(format!("agent-{a}.jsonl")), sub_agent_work(a, 0, 256)).unwrap();
    }
    let total: u64 = agents.iter().map(|a| std::fs::metadata(dir.join(format!("agent-{a}.jsonl"))).unwrap().len()).sum();
    assert!(total > 4 << 20);
    let append = |a: &str, text: &str| {
        std::fs::OpenOptions::new().append(true).open(dir.join(format!("agent-{a}.jsonl"))).unwrap().write_all(text.as_bytes()).unwrap()
    };

    w.turn("Remember that I prefer tabs over spaces.", "Noted.");
    let mut session = x.open_session(&w.transcript).unwrap();
    let (read, chat, recs) = turn_end(&x, &mut session).await;
    assert_eq!(chat, None);
    assert_eq!(recs[0].outcome, RunOutcome::Saved, "{recs:?}");
    assert!(read >= total && read < total + total / 4, "{read} bytes read at a turn end over {total} bytes of sub-agent transcripts");

    // A sub-agent goes on (32 more calls, about 130 KiB): only that is read.
    append("a02", &sub_agent_work("a02", 256, 32));
    w.turn("Also remember that I review code in the morning.", "Noted.");
    let (read, chat, _) = turn_end(&x, &mut session).await;
    assert_eq!(chat, None);
    assert!(read < 512 << 10, "{read} bytes read at a turn end after 130 KiB were appended to one of {total} bytes of sub-agent transcripts");

    // A sub-agent's Read of a saved chat whose result comes only by the next turn end.
    let path = w.home.env.projects_dir().join("-elsewhere").join(SID).join("tool-results/artifact-chat.4f2a.txt");
    append("a03", &sub_agent_entry("a03", "a03-u-chat", Some("a03-r255"), json!({"type": "assistant", "message": {"id": "a03-m-chat",
        "content": [{"type": "tool_use", "id": "a03-t-chat", "name": "Read", "input": {"file_path": path}}], "stop_reason": "tool_use"}})));
    w.turn("What did the build say?", "It passed.");
    let (_, chat, _) = turn_end(&x, &mut session).await;
    assert_eq!(chat, None, "no result yet: nothing was read");
    append("a03", &sub_agent_entry("a03", "a03-r-chat", Some("a03-u-chat"), json!({"type": "user", "message": {"content": [
        {"type": "tool_result", "tool_use_id": "a03-t-chat", "content": "1\tchat text"}]}})));
    w.turn("Remember that I deploy on Fridays.", "Noted.");
    let (read, chat, recs) = turn_end(&x, &mut session).await;
    assert_eq!(chat, Some((path.to_string_lossy().into_owned(), "a sub-agent of this session")));
    let RunOutcome::Disabled { why } = &recs[0].outcome else { panic!("{recs:?}") };
    assert!(why.starts_with("a sub-agent of this session read") && why.contains(&*path.to_string_lossy()), "{why}");
    assert!(read < 512 << 10, "{read}");
    assert!(!Path::new(&w.m("user_i_deploy_on_fridays.md")).exists() && !Path::new(&w.m("project_i_deploy_on_fridays.md")).exists());
}

/// From 2.1.292 Claude Code's extraction saves nothing while one of the user's deny or ask
/// rules covers every write into the memory folder (a rule on all of Edit or Write, or an Edit
/// rule over the folder; read in the 2.1.291 and 2.1.292 binaries, `memoryWriteBlockingRule`),
/// and its cursor stays, so once the rule is gone the skipped turns are saved too. A rule over
/// some files only, or 2.1.291, lets extraction run.
#[tokio::test]
async fn a_rule_covering_every_memory_write_stops_extraction_from_2_1_292() {
    let settings = |w: &World, key: &str, rule: &str| {
        let config = w.home.env.config_home();
        std::fs::create_dir_all(&config).unwrap();
        std::fs::write(config.join("settings.json"), json!({"permissions": {key: [rule]}}).to_string()).unwrap();
    };
    let over_projects = |w: &World| format!("Edit(/{}/projects/**)", w.home.env.config_home().display());
    async fn run(w: &World, version: &str) -> Vec<mneme_extract::RunRecord> {
        let x = Extractor::new(with_claude(w, version), w.clock.clone());
        x.extract_transcript(&w.transcript, Engine::Offline, ExtractOptions::default(), &Cancel::new()).await.unwrap()
    }
    let tabs = |w: &World| Path::new(&w.m("feedback_i_prefer_tabs_over_spaces.md")).exists();

    for (key, rule) in [("deny", None), ("ask", None), ("deny", Some("Write")), ("ask", Some("Edit"))] {
        let w = World::new();
        let rule = rule.map_or_else(|| over_projects(&w), str::to_string);
        settings(&w, key, &rule);
        w.turn("Remember that I prefer tabs over spaces.", "Noted.");
        let r = run(&w, "2.1.292").await;
        let RunOutcome::Disabled { why } = &r[0].outcome else { panic!("{rule}: {r:?}") };
        assert!(why.contains(&format!("the {key} rule \"{rule}\" in the user settings")) && why.contains("2.1.292"), "{why}");
        assert!(!tabs(&w), "{rule}");
        // The rule gone, the same turn is saved: the cursor did not move past it.
        std::fs::remove_file(w.home.env.config_home().join("settings.json")).unwrap();
        assert_eq!(run(&w, "2.1.292").await[0].outcome, RunOutcome::Saved, "{rule}");
        assert!(tabs(&w), "{rule}");
    }

    // 2.1.291 extracts under an ask rule on all of Edit (and its agent's Write is made: seen),
    // and a rule over other files leaves the memory folder writable.
    for (version, key, rule) in [("2.1.291", "ask", "Edit"), ("2.1.292", "deny", "Edit(~/elsewhere/**)")] {
        let w = World::new();
        settings(&w, key, rule);
        w.turn("Remember that I prefer tabs over spaces.", "Noted.");
        assert_eq!(run(&w, version).await[0].outcome, RunOutcome::Saved, "{version} {rule}");
        assert!(tabs(&w));
    }
}
