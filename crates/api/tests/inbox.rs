//! The review inbox through the api: the project's mode, offline extraction over the project's
//! newest transcript, and keep / edit / discard / promote with their errors.

use mneme_api::{
    ContextRequest, ErrorCode, FileAction, FixedClock, InboxState, Mneme, PromoteTo, ReviewModeName, RunResult,
};
use mneme_testsupport::{write_file, TestHome};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const SESSION: &str = "0a23833b-7439-4af7-b274-46564fd6c262";

struct World {
    t: TestHome,
    repo: PathBuf,
    transcript: PathBuf,
    mem: PathBuf,
    turns: usize,
}

impl World {
    fn new() -> World {
        let t = TestHome::new();
        let repo = t.git_repo("repo");
        let transcript = t
            .config_home()
            .join("projects")
            .join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy()))
            .join(format!("{SESSION}.jsonl"));
        let mem = t.memdir_for(&repo);
        World { t, repo, transcript, mem, turns: 0 }
    }

    /// Appends a user prompt and the assistant's answer to the session transcript, as Claude
    /// Code writes them.
    fn say(&mut self, prompt: &str) {
        self.say_answered(prompt, "OK.");
    }

    /// [`World::say`] with the assistant's answer.
    fn say_answered(&mut self, prompt: &str, answer: &str) {
        let n = self.turns + 1;
        let parent = if n == 1 { Value::Null } else { json!(format!("a{}", n - 1)) };
        let common = |uuid: String, parent: Value| {
            json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": self.repo,
                "sessionId": SESSION, "timestamp": "2026-03-02T10:00:00.000Z"})
        };
        let mut u = common(format!("u{n}"), parent);
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": prompt});
        let mut a = common(format!("a{n}"), json!(format!("u{n}")));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("m{n}"), "role": "assistant", "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn"});
        fs::create_dir_all(self.transcript.parent().unwrap()).unwrap();
        let mut f = fs::OpenOptions::new().create(true).append(true).open(&self.transcript).unwrap();
        std::io::Write::write_all(&mut f, format!("{u}\n{a}\n").as_bytes()).unwrap();
        self.turns = n;
    }

    fn mneme(&self) -> Mneme {
        Mneme::new(self.t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)))
    }

    fn at(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap()
}

#[test]
fn review_mode_stages_and_keep_writes_every_memory_with_its_index_line() {
    let mut w = World::new();
    let m = w.mneme();
    let v = m.inbox(&w.at()).unwrap();
    assert_eq!(v.mode, ReviewModeName::Automatic);
    assert_eq!(v.memory_dir, w.mem);
    assert!(v.pending.is_empty() && v.runs.is_empty() && v.newest_transcript.is_none());
    let e = m.run_extraction(&w.at(), None).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
    assert!(e.message.contains("no Claude Code session transcript"), "{}", e.message);

    w.say("Remember that I review code in the morning. Don't push to main without a review.");
    assert_eq!(m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap().mode, ReviewModeName::Review);
    let report = m.run_extraction(&w.at(), None).unwrap();
    assert_eq!(report.transcript, w.transcript);
    let run = &report.runs[0];
    assert_eq!((run.result, run.engine.as_str(), run.trigger.as_str()), (RunResult::Staged, "offline", "requested"));
    assert_eq!(run.summary, "2 memories waiting for review in the inbox");
    assert!(!w.mem.exists(), "review mode wrote to the memory folder");

    let v = m.inbox(&w.at()).unwrap();
    assert_eq!(v.newest_transcript.as_ref().unwrap().path, w.transcript);
    assert_eq!(v.runs[0].inbox_id, run.inbox_id);
    let item = &v.pending[0];
    assert_eq!(Some(&item.id), run.inbox_id.as_ref());
    assert_eq!(item.state, InboxState::Pending);
    let files: Vec<(&str, FileAction, bool)> = item.files.iter().map(|f| (f.rel_path.as_str(), f.action, f.is_index)).collect();
    assert_eq!(files.len(), 3);
    assert_eq!(files[2], ("MEMORY.md", FileAction::New, true), "the index comes last");
    assert!(files[..2].iter().all(|(_, a, index)| *a == FileAction::New && !index));
    let memory = &item.files[0];
    assert!(memory.before.is_none() && memory.after.as_deref().unwrap().starts_with("---\nname: "));
    assert!(memory.description.is_some() && memory.memory_type.is_some());

    let kept = m.inbox_keep(&item.id).unwrap();
    assert_eq!(kept.state, InboxState::Kept);
    let index = read(&w.mem.join("MEMORY.md"));
    assert_eq!(index, item.files[2].after.clone().unwrap());
    for f in &item.files[..2] {
        assert_eq!(read(&f.path), f.after.clone().unwrap());
        assert!(index.contains(&format!("]({})", f.rel_path)), "{} has no index line", f.rel_path);
    }
    let v = m.inbox(&w.at()).unwrap();
    assert!(v.pending.is_empty());
    assert_eq!(v.decided[0].state, InboxState::Kept);
    let e = m.inbox_keep(&item.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert!(e.message.contains("already kept"), "{}", e.message);
}

#[test]
fn discard_writes_nothing_and_edit_moves_the_index_line_with_the_description() {
    let mut w = World::new();
    let m = w.mneme();
    m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
    w.say("Remember that the design review happens every Tuesday.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let d = m.inbox_discard(&id).unwrap();
    assert_eq!(d.state, InboxState::Discarded);
    assert!(!w.mem.exists());

    w.say("Remember that the staging cluster is called blue-harbor.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let item = m.inbox(&w.at()).unwrap().pending.into_iter().find(|i| i.id == id).unwrap();
    let file = item.files[0].rel_path.clone();
    let edited = "---\nname: staging-cluster\ndescription: Staging runs on the blue-harbor cluster\nmetadata:\n  type: project\n---\n\nStaging runs on the blue-harbor cluster.\n";
    let still = m.inbox_edit(&id, &file, edited, false).unwrap();
    assert_eq!(still.state, InboxState::Pending);
    assert!(still.files.last().unwrap().after.as_deref().unwrap().contains("— Staging runs on the blue-harbor cluster"));
    assert!(!w.mem.exists(), "an edit without keep wrote");
    let kept = m.inbox_edit(&id, &file, edited, true).unwrap();
    assert_eq!(kept.state, InboxState::Kept);
    assert_eq!(read(&w.mem.join(&file)), edited);
    assert!(read(&w.mem.join("MEMORY.md")).contains("— Staging runs on the blue-harbor cluster"));

    let e = m.inbox_edit(&id, "nope.md", "x", false).unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict, "{e:?}");
    let e = m.inbox_discard("no-such-item").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

#[test]
fn keep_is_refused_when_claude_code_wrote_the_file_meanwhile() {
    let mut w = World::new();
    let m = w.mneme();
    m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
    w.say("Remember that the on-call rotation changes every Monday.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let item = m.inbox(&w.at()).unwrap().pending.remove(0);
    let theirs = "---\nname: on-call\ndescription: written by Claude Code\n---\n\nTheirs.\n";
    write_file(&item.files[0].path, theirs);
    let e = m.inbox_keep(&id).unwrap_err();
    assert_eq!(e.code, ErrorCode::Conflict);
    assert!(e.message.contains("changed since this item was staged"), "{}", e.message);
    assert_eq!(read(&item.files[0].path), theirs, "their file was overwritten");
    assert!(!w.mem.join("MEMORY.md").exists(), "half the item was written");
    assert_eq!(m.inbox(&w.at()).unwrap().pending.len(), 1, "the item is still pending");
}

#[test]
fn promote_to_claude_md_and_to_team_with_the_secret_check() {
    let mut w = World::new();
    let m = w.mneme();
    m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
    w.say("From now on, always write commit messages in English.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let p = m.inbox_promote(&id, PromoteTo::ClaudeLocal).unwrap();
    assert_eq!((p.state, p.promoted_to), (InboxState::Promoted, Some(PromoteTo::ClaudeLocal)));
    assert_eq!(p.promoted_paths, [w.repo.join("CLAUDE.local.md")]);
    assert!(read(&w.repo.join("CLAUDE.local.md")).contains("English"));
    assert!(!w.mem.join("MEMORY.md").exists());

    w.say("Remember that the deploy bot posts to the releases channel.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let item = m.inbox(&w.at()).unwrap().pending.remove(0);
    let with_secret = format!(
        "---\nname: deploy-bot\ndescription: The deploy bot's token\nmetadata:\n  type: reference\n---\n\nToken: {}\n",
        "ghp_R4nd0mT0k3nXyZ8q2LmNpQ7sVwK1aB3cD5eF"
    );
    m.inbox_edit(&id, &item.files[0].rel_path, &with_secret, false).unwrap();
    let e = m.inbox_promote(&id, PromoteTo::Team).unwrap_err();
    assert_eq!(e.code, ErrorCode::SecretsRefused);
    // gitleaks' generic API-key rule flags the same token as well.
    assert!(e.message.starts_with("Not written to team memory: the content appears to contain secrets (GitHub PAT"), "{}", e.message);
    assert!(e.message.contains("Remove the secret and try again."), "{}", e.message);
    assert!(!w.mem.join("team").exists());
    let clean = with_secret.replace("Token: ghp_R4nd0mT0k3nXyZ8q2LmNpQ7sVwK1aB3cD5eF", "It posts to #releases.");
    m.inbox_edit(&id, &item.files[0].rel_path, &clean, false).unwrap();
    let p = m.inbox_promote(&id, PromoteTo::Team).unwrap();
    assert_eq!(p.promoted_to, Some(PromoteTo::Team));
    let base = Path::new(&item.files[0].rel_path).file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(read(&w.mem.join("team").join(&base)), clean);
    // The team index lives in team/ and points relative to it.
    assert!(read(&w.mem.join("team/MEMORY.md")).contains(&format!("]({base}) — The deploy bot's token")), "{}", read(&w.mem.join("team/MEMORY.md")));
}

#[test]
fn automatic_mode_saves_at_once_and_off_runs_nothing() {
    let mut w = World::new();
    let m = w.mneme();
    w.say("Remember that I review code in the morning.");
    let run = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!(run.result, RunResult::Saved);
    assert_eq!(run.summary, "Saved 1 memory");
    let message = run.message.clone().unwrap();
    assert!(message.starts_with("● Saved 1 memory\n"), "{message}");
    assert_eq!(run.memory_files.len(), 1);
    assert!(w.mem.join(&run.memory_files[0]).is_file());

    let again = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!(again.result, RunResult::Skipped);
    assert_eq!(again.summary, "Skipped: no new message from the user since the last extraction");

    m.set_review_mode(&w.at(), ReviewModeName::Off).unwrap();
    w.say("Remember that the design review happens every Tuesday.");
    let off = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!(off.result, RunResult::Disabled);
    assert_eq!(off.summary, "Not run: extraction is off for this project (its review mode is Off; Automatic or Review turns it on)", "the Inbox shows it: no command");

    let runs = m.inbox(&w.at()).unwrap().runs;
    let results: Vec<RunResult> = runs.iter().map(|r| r.result).collect();
    assert_eq!(results, [RunResult::Disabled, RunResult::Skipped, RunResult::Saved], "newest first");
    assert_eq!(ReviewModeName::parse("sometimes").unwrap_err().code, ErrorCode::InvalidInput);
}

/// A conversation longer than a run holds (over 32 MiB of messages since the last extraction):
/// the run reads the newest part, and the run the screen shows, then and in the list of past
/// runs, says how many earlier messages were not read and why.
#[test]
fn a_run_over_a_conversation_longer_than_it_holds_says_what_it_did_not_read() {
    let mut w = World::new();
    let m = w.mneme();
    w.say("From now on, always sign commits with gpg.");
    let answer = "The long answer goes on. ".repeat(40_000); // about 1 MiB
    for i in 0..36 {
        w.say_answered(&format!("Go on with part {i}."), &answer);
    }
    w.say("Remember that I review code in the morning.");
    assert!(fs::metadata(&w.transcript).unwrap().len() > 34 << 20);

    let run = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!(run.result, RunResult::Saved, "{}", run.summary);
    let left_out = run.left_out.clone().expect("messages left out");
    assert!(left_out.messages >= 2, "the first turn at least: {left_out:?}");
    assert_eq!(left_out.limit_bytes, 32 << 20);
    assert_eq!(
        left_out.text,
        format!("{} older messages were not read: a run holds only the newest 32 MiB of a transcript's entries, and this session has more than that after where extraction last stopped (or since it began)", left_out.messages)
    );
    let saved = fs::read_dir(&w.mem).unwrap().map(|e| read(&e.unwrap().path())).collect::<Vec<_>>().join("\n");
    assert!(saved.contains("morning") && !saved.contains("gpg"), "only what was read is saved:\n{saved}");
    assert_eq!(m.inbox(&w.at()).unwrap().runs[0].left_out, Some(left_out), "the list of runs says so too");

    // The next run starts from the newest message: nothing is left out.
    w.say("Remember that the design review happens every Tuesday.");
    let next = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!((next.result, next.left_out), (RunResult::Saved, None));
}

#[test]
fn a_run_that_only_forgets_says_what_it_removed() {
    let mut w = World::new();
    let m = w.mneme();
    w.say("Remember that integration tests must hit a real database, not mocks.");
    assert_eq!(m.run_extraction(&w.at(), None).unwrap().runs.remove(0).result, RunResult::Saved);
    // One shared word is not a memory named: nothing is removed.
    w.say("Forget the tests.");
    let run = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_ne!(run.result, RunResult::Saved, "{}", run.summary);
    w.say("Forget that integration tests must hit a real database.");
    let run = m.run_extraction(&w.at(), None).unwrap().runs.remove(0);
    assert_eq!(run.result, RunResult::Saved);
    assert_eq!(run.summary, "Removed 1 memory", "{:?}", run.message);
    assert!(run.message.as_deref().unwrap().contains("\nremoved "), "{:?}", run.message);
}

#[test]
fn a_damaged_item_is_listed_as_damaged_and_named_when_kept() {
    let mut w = World::new();
    let m = w.mneme();
    m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
    w.say("Remember that I review code in the morning.");
    let id = m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().unwrap();
    let file = w.t.env.data_dir().join("extract/inbox").join(format!("{id}.json"));
    let bytes = fs::read(&file).unwrap();
    fs::write(&file, &bytes[..bytes.len() / 2]).unwrap();
    let v = m.inbox(&w.at()).unwrap();
    assert!(v.pending.is_empty());
    assert_eq!(v.damaged.len(), 1);
    assert!(v.damaged[0].contains("is damaged") && v.damaged[0].contains(&file.display().to_string()), "{:?}", v.damaged);
    let err = m.inbox_keep(&id).unwrap_err();
    assert_eq!(err.code, ErrorCode::Malformed);
    assert!(err.message.contains("Delete it") && !err.message.contains("writable"), "{}", err.message);
}

#[test]
fn a_model_provider_that_is_not_set_up_is_refused_before_anything_runs() {
    let mut w = World::new();
    let m = Mneme::new(w.t.env.clone().set_var("MNEME_KEYRING_SERVICE", format!("mneme-api-test-{}", std::process::id())), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    w.say("Remember that I review code in the morning.");
    let e = m.run_extraction(&w.at(), Some(mneme_api::ProviderChoice::Openai)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("no model chosen"), "{}", e.message);
    assert!(m.inbox(&w.at()).unwrap().runs.is_empty());
}

/// A damaged review-modes file is named, with fix-or-delete, not blamed on the data folder's
/// permissions.
#[test]
fn a_damaged_modes_file_is_named_not_blamed_on_permissions() {
    let w = World::new();
    let modes = w.t.env.data_dir().join("extract").join("modes.json");
    fs::create_dir_all(modes.parent().unwrap()).unwrap();
    fs::write(&modes, "{ not json").unwrap();
    let e = w.mneme().inbox(&w.at()).unwrap_err();
    assert!(e.message.contains(&modes.display().to_string()) && !e.message.contains("readable and writable"), "{}", e.message);
}

/// A project's review mode a newer Mneme wrote (a mode this build lacks): the screen's error
/// says what mends it (the Inbox keeps its mode chooser for it), not the command line's `mneme
/// inbox mode`, and does not blame the data folder's permissions. The command line keeps its
/// command. Choosing the mode on the screen replaces that entry, keeps the other projects'
/// (a newer Mneme's among them), and the Inbox opens.
#[test]
fn an_unreadable_review_mode_on_a_screen_names_no_command() {
    let w = World::new();
    let modes = w.t.env.data_dir().join("extract").join("modes.json");
    fs::create_dir_all(modes.parent().unwrap()).unwrap();
    let key = w.mem.to_string_lossy().into_owned();
    fs::write(&modes, json!({key.clone(): "held", "/other/memory": "off", "/newer/memory": "batch"}).to_string()).unwrap();
    let e = w.mneme().inbox(&w.at()).unwrap_err();
    assert_eq!(e.code, ErrorCode::Malformed);
    let start = format!("The review mode of {} in {} cannot be read: ", w.mem.display(), modes.display());
    assert!(e.message.starts_with(&start) && e.message.contains("update Mneme to read it. Or choose the mode again on this screen: that replaces this project's entry."), "{}", e.message);
    assert_eq!(e.message.to_lowercase().matches("update mneme").count(), 1, "{}", e.message);
    assert!(!e.message.contains("`mneme") && !e.message.contains("readable and writable") && e.command.is_none(), "{}", e.message);
    let cli = w.mneme().review_mode_at(&w.mem).unwrap_err();
    assert!(cli.message.contains("`mneme inbox mode automatic|review|off`"), "{}", cli.message);

    let v = w.mneme().set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
    assert_eq!(v.mode, ReviewModeName::Review);
    let kept: Value = serde_json::from_slice(&fs::read(&modes).unwrap()).unwrap();
    assert_eq!(kept, json!({key.clone(): "review", "/other/memory": "off", "/newer/memory": "batch"}));
    assert_eq!(w.mneme().inbox(&w.at()).unwrap().mode, ReviewModeName::Review);

    // A malformed entry (not a newer Mneme's) is not blamed on an old Mneme.
    fs::write(&modes, json!({key.clone(): 3}).to_string()).unwrap();
    let e = w.mneme().inbox(&w.at()).unwrap_err();
    assert_eq!(e.code, ErrorCode::Malformed);
    assert!(e.message.contains(": invalid type: integer `3`") && e.message.contains(". Choose the mode again on this screen: that replaces this project's entry."), "{}", e.message);
    assert!(!e.message.to_lowercase().contains("update mneme"), "{}", e.message);
    w.mneme().set_review_mode(&w.at(), ReviewModeName::Off).unwrap();
    assert_eq!(serde_json::from_slice::<Value>(&fs::read(&modes).unwrap()).unwrap(), json!({key: "off"}));
}
