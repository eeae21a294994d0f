//! "Check with my Claude Code" where it must not, or cannot, run as asked: a stand-in `claude`
//! on PATH (a shell script that logs each real run) stands for the user's, so what is checked is
//! what happens before and around the run; the real releases are run in crates/cli/tests/verify.rs.

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A `claude` in `<root>/bin` that reports 2.1.332, logs each real run to `<root>/runs.log` and
/// fails it.
fn fake_claude(h: &TestHome, body: &str) -> PathBuf {
    let bin = h.root.join("bin/claude");
    std::fs::create_dir_all(bin.parent().unwrap()).unwrap();
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '2.1.332 (Claude Code)'; exit 0; fi\necho run >> '{}'\n{body}\nexit 3\n",
        h.root.join("runs.log").display()
    );
    std::fs::write(&bin, script).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

fn mneme(h: &TestHome) -> Mneme {
    let env = h.env.clone().set_var("PATH", format!("{}:/usr/bin:/bin", h.root.join("bin").display()));
    Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_590_000)))
}

fn runs(h: &TestHome) -> usize {
    std::fs::read_to_string(h.root.join("runs.log")).map(|s| s.lines().count()).unwrap_or(0)
}

fn at(cwd: &Path) -> ContextRequest {
    ContextRequest { cwd: cwd.to_path_buf(), ..Default::default() }
}

/// The managed policy's `env` block outranks the flag settings the check blanks every provider,
/// proxy and telemetry variable with: one that would send Claude Code to Bedrock is refused
/// before Claude Code starts, naming the file and the variable; values that keep it on the stub
/// (a provider switched off, telemetry disabled) are not.
#[test]
fn a_managed_policy_that_would_send_claude_code_elsewhere_is_refused_before_it_runs() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    fake_claude(&h, "");
    let policy = h.root.join("managed/managed-settings.json");
    h.write(&policy, r#"{"env": {"CLAUDE_CODE_USE_BEDROCK": "1", "AWS_REGION": "us-east-1"}}"#);
    let report = mneme(&h).verify(&at(&repo)).unwrap();
    assert_eq!(report.status, "failed");
    assert!(report.summary.contains(&policy.display().to_string()) && report.summary.contains("CLAUDE_CODE_USE_BEDROCK=\"1\""), "{}", report.summary);
    assert!(report.summary.contains("Ask whoever manages Claude Code"), "{}", report.summary);
    assert_eq!(runs(&h), 0, "Claude Code was not started");

    // A telemetry collector in a drop-in is refused the same way.
    h.write(&policy, r#"{"env": {"CLAUDE_CODE_USE_BEDROCK": "0"}}"#);
    h.write("managed/managed-settings.d/telemetry.json", r#"{"env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "1"}}"#);
    let report = mneme(&h).verify(&at(&repo)).unwrap();
    assert!(report.summary.contains("CLAUDE_CODE_ENABLE_TELEMETRY"), "{}", report.summary);
    assert_eq!(runs(&h), 0);

    h.write("managed/managed-settings.d/telemetry.json", r#"{"env": {"CLAUDE_CODE_ENABLE_TELEMETRY": "false", "DISABLE_TELEMETRY": "true"}}"#);
    let report = mneme(&h).verify(&at(&repo)).unwrap();
    assert_eq!(runs(&h), 1, "a policy that keeps Claude Code on the stub lets it run: {}", report.summary);
    assert!(report.summary.contains("without sending a request"), "{}", report.summary);
}

/// The permissions of the folder a run's `$VAR` names the parent of, as the stand-in `claude`
/// saw them while it ran (it writes them to `<root>/mode`).
fn mode_seen(h: &TestHome) -> String {
    std::fs::read_to_string(h.root.join("mode")).expect("the stand-in ran").trim().to_string()
}

/// The check's sandbox holds copies of the user's settings, global config and memory, and the
/// agent-memory probe's its run: while Claude Code runs, both are the user's alone (0700), not
/// readable by every local user as a temporary folder is by default.
#[test]
fn the_sandboxes_are_private_while_claude_code_runs() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let record = format!("stat -c %a \"$(dirname \"$CLAUDE_CONFIG_DIR\")\" > '{}'", h.root.join("mode").display());
    fake_claude(&h, &record);
    h.write(h.config_home().join("CLAUDE.md"), "Mine.\n");
    let report = mneme(&h).verify(&at(&repo)).unwrap();
    assert!(report.summary.contains("without sending a request"), "{}", report.summary);
    assert_eq!(mode_seen(&h), "700", "the check's sandbox");

    // The probe's config home is `<sandbox>/home/.claude`.
    std::fs::remove_file(h.root.join("mode")).unwrap();
    fake_claude(&h, &record.replace("dirname \"$CLAUDE_CONFIG_DIR\"", "dirname \"$HOME\""));
    h.write(repo.join(".claude/agents/helper.md"), "---\nname: helper\ndescription: Helps\nmemory: project\n---\n\nYou help.\n");
    let req = ContextRequest { agent: Some(mneme_api::AgentTarget { name: "helper".into(), scope: None }), ..at(&repo) };
    let view = mneme(&h).agent_context(&req).unwrap();
    assert!(view.unavailable.as_deref().is_some_and(|u| u.contains("Could not read the agent memory text")), "{view:?}");
    assert_eq!(mode_seen(&h), "700", "the agent-memory probe's sandbox");
}

/// An agent's MEMORY.md that is a FIFO (a planted one, in a cloned repository) is not waited on:
/// the section says the index is empty, at once.
#[test]
fn an_agent_index_that_is_a_fifo_is_not_waited_on() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    h.write(repo.join(".claude/agents/helper.md"), "---\nname: helper\ndescription: Helps\nmemory: project\n---\n\nYou help.\n");
    let dir = repo.join(".claude/agent-memory/helper");
    std::fs::create_dir_all(&dir).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(dir.join("MEMORY.md")).status().unwrap().success());
    let m = mneme(&h);
    let req = ContextRequest { agent: Some(mneme_api::AgentTarget { name: "helper".into(), scope: None }), ..at(&repo) };
    let (done, answer) = std::sync::mpsc::channel();
    std::thread::spawn(move || done.send(m.agent_context(&req).map(|v| (v.index_part, v.truncated)).map_err(|e| e.message)));
    let view = answer.recv_timeout(std::time::Duration::from_secs(10)).expect("answered without waiting on the FIFO");
    let (index_part, truncated) = view.unwrap();
    assert!(index_part.is_none() && !truncated, "{index_part:?}");
}

/// The UI asks for every agent's section at once, and again on every change on disk: the
/// release's text is probed once however many ask together, and a probe that failed is not
/// rerun for each later call (it is remembered for a while, and said so).
#[test]
fn the_agent_memory_probe_runs_once_for_many_callers_and_a_failure_is_remembered() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    fake_claude(&h, "sleep 1");
    for name in ["one", "two", "three", "four"] {
        h.write(repo.join(format!(".claude/agents/{name}.md")), &format!("---\nname: {name}\ndescription: Helps\nmemory: project\n---\n\nYou help.\n"));
    }
    let m = mneme(&h);
    let ask = |name: &str| {
        let req = ContextRequest { agent: Some(mneme_api::AgentTarget { name: name.into(), scope: None }), ..at(&repo) };
        m.agent_context(&req).unwrap().unavailable.unwrap_or_default()
    };
    let answers: Vec<String> =
        std::thread::scope(|s| ["one", "two", "three", "four"].map(|n| s.spawn(move || ask(n))).into_iter().map(|t| t.join().unwrap()).collect());
    assert_eq!(runs(&h), 1, "{answers:#?}");
    assert!(answers.iter().all(|a| a.contains("Could not read the agent memory text from Claude Code 2.1.332")), "{answers:#?}");
    let again = ask("one");
    assert!(again.contains("Mneme asks Claude Code again 10 minutes after that attempt"), "{again}");
    assert_eq!(runs(&h), 1);
}
