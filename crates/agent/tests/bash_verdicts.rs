//! Differential check of the read-only judgement: the same shell commands asked of a real
//! Claude Code (through the stub model server, in `dontAsk` mode with no Bash rule, so a
//! command runs only when Claude Code judges it read-only) and of `is_read_only_command`,
//! which must agree on every one.
//!
//! Needs `MNEME_CLAUDE_BIN` (see `scripts/claude-code.sh`); skipped without it unless
//! `MNEME_REQUIRE_CLAUDE=1`.

use mneme_agent::is_read_only_command;
use mneme_core::versions::{self, ClaudeVersion};
use mneme_model::{Cancel, ClaudeCliProvider, HeadlessTask, Provider};
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use mneme_testsupport::{claude_code, TestHome};
use serde_json::json;
use std::path::PathBuf;
use std::time::Duration;

/// Commands harmless to run in the scratch folder whichever way they are judged: relative
/// paths only (a path outside the working folder would be asked about whatever the command).
const COMMANDS: &[&str] = &[
    "ls",
    "ls -la sub",
    "cat a.md",
    "head -n 2 a.md",
    "tail -c 5 a.md",
    "wc -l a.md",
    "grep -rn alpha .",
    "grep -c alpha a.md b.md",
    "rg alpha",
    "rg -z alpha",
    "rg --pre cat alpha",
    "find . -name '*.md'",
    "find . -newermt 2020-01-01",
    "find . -mnewer a.md",
    "find . -files0-from list.txt",
    "find . -xattrname user.x",
    "find . -name x -rm",
    "find . -name zzz -delete",
    "find . -name zzz -exec true {} ;",
    "stat a.md",
    "file a.md",
    "file -z a.md",
    "file -m magic a.md",
    "file --uncompress a.md",
    "du -sh .",
    "df -h .",
    "sort a.md",
    "uniq a.md",
    "cut -c1-3 a.md",
    "tr a b",
    "echo hi",
    "echo $HOME",
    "echo \"$HOME\"",
    "echo ${HOME}",
    "echo $FOO",
    "echo $USER $PWD",
    "echo $?",
    "echo $(pwd)",
    "echo `pwd`",
    "cat $FOO",
    "grep alpha $FOO",
    "wc -l \"$FOO\"",
    "printf '%s' hi",
    "pwd",
    "whoami",
    "date",
    "date +%s",
    "which ls",
    "which -a ls",
    "which --skip-alias ls",
    "which --read-alias=x ls",
    "which -- -x",
    "type ls",
    "test -f a.md",
    "test -v HOME",
    "[ -f a.md ]",
    "[ -f a.md ] && cat a.md",
    "[[ -f a.md ]]",
    "[ -v HOME ]",
    "test -f a.md && echo yes",
    "getconf PAGESIZE",
    "info coreutils",
    "help -s cd",
    "help cd",
    "help /etc",
    "help ~",
    "man -l a.md",
    "ps",
    "ps e",
    "ss -r",
    "ss -tln",
    "jq . a.json",
    "jq -r .a a.json",
    "jq -f prog.jq a.json",
    "jq -L lib . a.json",
    "jq -rf prog.jq a.json",
    "jq 'include \"x\"; .' a.json",
    "jq env a.json",
    "jq '$ENV' a.json",
    "pyright --version",
    "pyright -p .",
    "git status",
    "git log --oneline -n 3",
    "git diff --stat",
    "git diff --submodule",
    "git diff --ignore-submodules",
    "git diff --submodule=short",
    "git diff --submodule=log",
    "git diff --ignore-submodules=all",
    "git diff --submodule=short --ignore-submodules=dirty",
    "git diff --ignore-submodules=dirty",
    "git rev-parse --show-toplevel",
    "git rev-parse --show-superproject-working-tree",
    "git branch",
    "git tag -l",
    "git blame a.md",
    "git stash list",
    "git show --stat",
    "git remote -v",
    "git ls-files",
    "cd sub",
    "cd sub && ls",
    "ls | head -n 1",
    "cat a.md | grep alpha",
    "echo a.md | xargs grep alpha",
    "echo a.md | xargs -I{} cat {}",
    "sed -n 1p a.md",
    "sed s/a/b/ a.md",
    "sed -i s/zzz/yyy/ a.md",
    "history",
    "arch",
    "uname -a",
    "id",
    "nproc",
    "basename sub/c.md",
    "readlink -f a.md",
    "realpath a.md",
    "diff a.md b.md",
    "cmp a.md b.md",
    "sha256sum a.md",
    "md5sum a.md",
    "tree",
    "seq 3",
    "true",
    "sleep 0",
    "node -v",
    "python3 --version",
    "touch zzz.md",
    "mkdir zzzdir",
    "cp a.md zzz2.md",
    "tee zzz3.md",
    "echo hi > zzz4.md",
];

/// Commands Mneme refuses whatever the release says, on purpose: Claude Code reads them with a
/// shell grammar of its own that knows test brackets and (from some release after 2.1.160) a
/// list of variables safe to expand, and may run them; Mneme's reader is stricter and refuses
/// what it does not parse, which keeps the agent on the safe side.
const REFUSED_BY_MNEME_ONLY: &[&str] =
    &["echo $HOME", "echo \"$HOME\"", "[ -f a.md ]", "[ -f a.md ] && cat a.md", "[[ -f a.md ]]", "[ -v HOME ]"];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_verdicts_match_claude_code() {
    let bins = claude_code::all();
    if bins.is_empty() {
        claude_code::skip("MNEME_CLAUDE_BIN(S) name no Claude Code; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\"");
        return;
    }
    // Two releases at a time: each is a Claude Code process answering one command per turn.
    let mut failures = Vec::new();
    let mut running = tokio::task::JoinSet::new();
    for (v, binary) in bins {
        if running.len() == 2 {
            failures.extend(running.join_next().await.unwrap().unwrap());
        }
        running.spawn(check(v, binary));
    }
    while let Some(done) = running.join_next().await {
        failures.extend(done.unwrap());
    }
    failures.sort();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Asks release `v` every command; answers the verdicts that differ from Mneme's for it.
async fn check(v: ClaudeVersion, binary: PathBuf) -> Vec<String> {
    let tables = versions::behaviours(v).bash_read_only;
    let home = TestHome::new();
    let dir = home.root.join("work");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("a.md"), "alpha\nbeta\n").unwrap();
    std::fs::write(dir.join("b.md"), "beta\n").unwrap();
    std::fs::write(dir.join("sub/c.md"), "gamma\n").unwrap();
    std::fs::write(dir.join("a.json"), "{\"a\": 1}\n").unwrap();

    let stub = StubModel::start().await;
    let main = |r: &RecordedRequest| r.has_tool("Bash");
    for c in COMMANDS {
        stub.push_when(main, Turn::tool_use("Bash", json!({"command": c, "description": "probe"})));
    }
    stub.push_when(main, Turn::text("done"));
    let env = stub.claude_code_vars().into_iter().fold(home.env.clone(), |env, (k, v)| env.set_var(k, v));
    let cli = ClaudeCliProvider::new(binary.clone(), &env).with_timeout(Duration::from_secs(300));
    let task = HeadlessTask {
        prompt: "go".into(),
        system: None,
        cwd: dir.clone(),
        allowed_tools: vec![],
        disallowed_tools: vec!["TodoWrite".into(), "TaskCreate".into(), "TaskUpdate".into()],
        max_turns: Some(COMMANDS.len() as u32 + 5),
    };
    cli.headless().unwrap().run(&task, &Cancel::new()).await.unwrap();
    // The whole conversation of the longest request: a release may add a message of its own
    // after a result, so the latest message alone may not hold it.
    let last = stub.model_requests().into_iter().filter(|r| main(r)).max_by_key(|r| r.body["messages"].as_array().map_or(0, Vec::len));
    let answers = last.map(|r| r.tool_results()).unwrap_or_default();
    assert_eq!(answers.len(), COMMANDS.len(), "{v}: one answer per command");
    let mut differ = Vec::new();
    for (c, (text, _)) in COMMANDS.iter().zip(&answers) {
        let ran = !text.contains("haven't granted it yet") && !text.contains("Permission to use Bash");
        let ours = is_read_only_command(c, tables);
        let differs = if REFUSED_BY_MNEME_ONLY.contains(c) { ours } else { ran != ours };
        if differs {
            let said: String = text.chars().take(160).collect();
            differ.push(format!("{v} {c:?}: Claude Code {} it, Mneme {}: {said:?}", if ran { "ran" } else { "refused" }, if ran { "refuses" } else { "runs" }));
        }
    }
    differ
}
