//! The headless path end to end: the real Claude Code 2.1.197 CLI, pointed at the stub model
//! server, runs the task in a scratch copy of the memory folder under the translated
//! permission rules, and the copy comes back as the same kind of changeset.
//!
//! The binary comes from `scripts/claude-code.sh` through `MNEME_CLAUDE_BIN`; without it the
//! test prints why it is skipped, unless `MNEME_REQUIRE_CLAUDE=1` makes that a failure. This
//! file holds a single run on purpose: the scratch folder's name is then known in advance
//! (`headless-<pid>-0`), so the scripted tool calls can name it.

use mneme_agent::{run_agent, AgentTask, Mode, Policy, Stop};
use mneme_core::{Clock, FixedClock};
use mneme_model::{Cancel, ClaudeCliProvider};
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use mneme_testsupport::{claude_code, TestHome};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

fn main_loop(r: &RecordedRequest) -> bool {
    r.has_tool("Write")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claude_code_runs_in_a_scratch_copy_and_its_changes_come_back_as_a_changeset() {
    let Some(binary) = claude_code::pinned() else { return };
    let stub = StubModel::start().await;
    let home = TestHome::new();
    let mem = home.root.join("home/.claude/projects/-repo/memory");
    let cwd = home.root.join("repo");
    std::fs::create_dir_all(&mem).unwrap();
    std::fs::create_dir_all(&cwd).unwrap();
    std::fs::write(mem.join("MEMORY.md"), "- [A](a.md) \u{2014} a\n").unwrap();
    let work_dir = home.root.join("data/agent");
    let scratch = work_dir.join(format!("headless-{}-0/memory", std::process::id()));

    stub.push_when(
        |r| main_loop(r) && r.tool_result_count() == 0,
        Turn::tool_use("Read", json!({"file_path": scratch.join("MEMORY.md")}))
            .and_tool_use("Write", json!({"file_path": scratch.join("user_role.md"), "content": "Data scientist.\n"}))
            .and_tool_use("Write", json!({"file_path": mem.join("evil.md"), "content": "straight into the real folder"}))
            .and_tool_use("Bash", json!({"command": format!("ls {}", scratch.display())}))
            // Claude Code's rules let it write any file in the scratch copy; Mneme's memory
            // policy takes only memory files back.
            .and_tool_use("Write", json!({"file_path": scratch.join("notes.txt"), "content": "not a memory file"})),
    );
    stub.push_when(
        |r| main_loop(r) && r.tool_result_count() == 5,
        Turn::tool_use(
            "Edit",
            json!({"file_path": scratch.join("MEMORY.md"), "old_string": "a\n", "new_string": "a\n- [Role](user_role.md) \u{2014} data scientist\n"}),
        ),
    );
    stub.push_when(main_loop, Turn::text("Saved 1 memory."));

    let env = stub.claude_code_vars().into_iter().fold(home.env.clone(), |env, (k, v)| env.set_var(k, v));
    let provider = ClaudeCliProvider::new(binary, &env).with_timeout(Duration::from_secs(180));
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_764_422_207));
    let task = AgentTask {
        system: format!("You maintain the memory folder {}/.", mem.display()),
        prompt: format!("Save what you learned into {}/.", mem.display()),
        policy: Policy::AutoMem { memory_dir: mem.clone() },
        max_turns: Some(5),
        cwd: cwd.clone(),
        label: "extract_memories".into(),
        work_dir: work_dir.clone(),
        clock,
        release: mneme_core::versions::newest(),
        permission_rules: Default::default(),
    };
    let out = run_agent(&provider, &task, Mode::Stage, &Cancel::new()).await.unwrap();

    // The real folder was never touched, and the write aimed at it was refused.
    assert!(!mem.join("evil.md").exists());
    assert!(!mem.join("user_role.md").exists());
    assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [A](a.md) \u{2014} a\n");
    assert!(!work_dir.join(format!("headless-{}-0", std::process::id())).exists(), "the scratch copy is removed");

    assert_eq!(out.stop, Stop::Completed);
    assert_eq!(out.final_text, "Saved 1 memory.");
    let changes: Vec<(PathBuf, Option<String>, Option<String>)> =
        out.changeset.changes.iter().map(|c| (c.path.clone(), c.before.clone(), c.after.clone())).collect();
    assert_eq!(changes, vec![
        (
            mem.join("MEMORY.md"),
            Some("- [A](a.md) \u{2014} a\n".into()),
            Some("- [A](a.md) \u{2014} a\n- [Role](user_role.md) \u{2014} data scientist\n".into())
        ),
        (mem.join("user_role.md"), None, Some("Data scientist.\n".into())),
    ]);
    assert_eq!(out.changeset.root, mem);
    let denied: Vec<&str> = out.denials.iter().map(|d| d.message.as_str()).collect();
    assert!(denied.len() == 1 && denied[0].contains("notes.txt") && denied[0].contains("left out"), "{denied:?}");
    assert_eq!(out.written_paths, vec![mem.join("user_role.md"), mem.join("MEMORY.md")]);

    // Claude Code saw the scratch paths, and answered the refused write and the listing.
    let main: Vec<RecordedRequest> = stub.model_requests().into_iter().filter(main_loop).collect();
    assert!(main[0].body["messages"].to_string().contains(&format!("Save what you learned into {}/.", scratch.display())));
    let results = main[1].body["messages"].to_string();
    assert!(results.contains("MEMORY.md\\nuser_role.md"), "ls ran in the scratch copy: {results}");
    assert!(results.contains("is_error"), "the write to the real folder was denied: {results}");
}
