//! Differential check: the same scripted tool calls answered by this crate's tools and by a
//! real Claude Code (through the stub model server), Mneme's tools answering as that release's
//! do (`AgentTask::release`, from the binary's `--version`); every tool_result must match:
//! byte for byte, except where the answer is a message in words. There Claude Code uses its
//! prose and Mneme its own (`mneme_agent::messages`), so both must be the same kind of answer
//! with the same data and the same `is_error`: Claude Code's is recognised by short anchors
//! (a few words of its message and the data it carries, facts of its output), Mneme's must
//! equal its own message built from the same data.
//!
//! Needs `MNEME_CLAUDE_BIN` (see `scripts/claude-code.sh`); skipped without it unless
//! `MNEME_REQUIRE_CLAUDE=1`.

use mneme_agent::{messages, run_agent, AgentTask, Mode, Policy};
use mneme_core::versions::{self, Profile};
use mneme_core::{Clock, FixedClock};
use mneme_model::{AnthropicProvider, Cancel, ClaudeCliProvider, HeadlessTask, Provider};
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use mneme_testsupport::{claude_code, TestHome};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

fn fixture(dir: &Path) {
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(dir.join("MEMORY.md"), "- [A](a.md) \u{2014} alpha\n- [B](b.md) \u{2014} beta\n").unwrap();
    std::fs::write(dir.join("a.md"), "---\nname: a\n---\nalpha line\nsecond alpha\n").unwrap();
    std::fs::write(dir.join("b.md"), "beta\r\nwindows\r\n").unwrap();
    std::fs::write(dir.join("sub/c.md"), "gamma alpha\n").unwrap();
    std::fs::write(dir.join("empty.md"), "").unwrap();
    std::fs::write(dir.join("q.md"), "She said \u{201c}hi\u{201d} and it\u{2019}s fine\n").unwrap();
    std::fs::write(dir.join("nl.md"), "\n").unwrap();
    std::fs::write(dir.join("blank.md"), "\n\n\n").unwrap();
    // Written on a classic Mac (lone CR line ends) and with mixed ends: where Claude Code's Read
    // ends a topic file's lines, which the dream's safety net splits them by
    // (`mneme_dream::safety`).
    std::fs::write(dir.join("mac.md"), "---\rname: mac\rdescription: old Mac\r---\rfirst line\rsecond line\r").unwrap();
    std::fs::write(dir.join("mixed.md"), "one\rtwo\r\nthree\nfour\r").unwrap();
    // Grep lists files newest first and Glob oldest first, by the millisecond: the two copies
    // get the same distinct mtimes (an hour before the test clock, so no staleness notes) and
    // their order does not depend on when each was written.
    for (i, f) in ["MEMORY.md", "a.md", "b.md", "sub/c.md", "empty.md", "q.md", "nl.md", "blank.md", "mac.md", "mixed.md"].iter().enumerate() {
        mneme_testsupport::set_mtime(&dir.join(f), 1_764_422_207 - 3_600 + 10 * i as i64);
    }
}

/// Each of the six tools' input schema in a request: its fields (type, bounds, default) and the
/// required ones; the descriptions are left out, as Mneme words its own.
fn input_schemas(body: &serde_json::Value) -> std::collections::BTreeMap<String, serde_json::Value> {
    let mut out = std::collections::BTreeMap::new();
    for tool in body["tools"].as_array().into_iter().flatten() {
        let name = tool["name"].as_str().unwrap_or_default();
        if !["Read", "Edit", "Write", "Glob", "Grep", "Bash"].contains(&name) {
            continue;
        }
        let mut schema = tool["input_schema"].clone();
        for prop in schema["properties"].as_object_mut().into_iter().flat_map(|p| p.values_mut()) {
            prop.as_object_mut().map(|p| p.remove("description"));
        }
        out.insert(name.to_string(), json!({"properties": schema["properties"], "required": schema["required"]}));
    }
    out
}

/// The calls, in one turn each so their order is fixed.
fn calls(dir: &Path) -> Vec<Turn> {
    let p = |r: &str| dir.join(r).to_string_lossy().into_owned();
    let d = dir.to_string_lossy().into_owned();
    vec![
        Turn::tool_use("Read", json!({"file_path": p("MEMORY.md")})),
        Turn::tool_use("Read", json!({"file_path": p("a.md"), "offset": 2, "limit": 2})),
        Turn::tool_use("Read", json!({"file_path": p("b.md")})),
        Turn::tool_use("Read", json!({"file_path": p("empty.md")})),
        Turn::tool_use("Read", json!({"file_path": p("a.md"), "offset": 50})),
        Turn::tool_use("Read", json!({"file_path": p("nope.md")})),
        Turn::tool_use("Read", json!({"file_path": p("a")})),
        Turn::tool_use("Grep", json!({"pattern": "alpha", "path": d})),
        Turn::tool_use("Grep", json!({"pattern": "alpha", "path": d, "output_mode": "content"})),
        Turn::tool_use("Grep", json!({"pattern": "alpha", "path": p("a.md"), "output_mode": "content", "-C": 1})),
        Turn::tool_use("Grep", json!({"pattern": "alpha", "path": d, "output_mode": "count"})),
        Turn::tool_use("Grep", json!({"pattern": "zzz", "path": d, "output_mode": "content"})),
        Turn::tool_use("Grep", json!({"pattern": "ALPHA", "path": d, "-i": true, "glob": "*.md", "output_mode": "content"})),
        Turn::tool_use("Glob", json!({"pattern": "**/*.md", "path": d})),
        Turn::tool_use("Glob", json!({"pattern": "*.txt", "path": d})),
        Turn::tool_use("Bash", json!({"command": format!("ls {d}")})),
        Turn::tool_use("Bash", json!({"command": format!("wc -l {}", p("a.md"))})),
        Turn::tool_use("Bash", json!({"command": format!("cat {}", p("missing.md"))})),
        Turn::tool_use("Bash", json!({"command": format!("grep -c zzz {}", p("a.md"))})),
        Turn::tool_use("Edit", json!({"file_path": p("a.md"), "old_string": "alpha", "new_string": "x"})),
        Turn::tool_use("Edit", json!({"file_path": p("MEMORY.md"), "old_string": "\u{2014} alpha", "new_string": "\u{2014} ALPHA"})),
        Turn::tool_use("Edit", json!({"file_path": p("b.md"), "old_string": "beta\nwindows", "new_string": "beta\nlinux"})),
        Turn::tool_use("Read", json!({"file_path": p("b.md")})),
        Turn::tool_use("Write", json!({"file_path": p("new.md"), "content": "fresh\n"})),
        Turn::tool_use("Write", json!({"file_path": p("a.md"), "content": "over"})),
        Turn::tool_use("Read", json!({"file_path": p("a.md")})),
        Turn::tool_use("Write", json!({"file_path": p("a.md"), "content": "over"})),
        Turn::tool_use("Read", json!({"path": p("a.md")})),
        Turn::tool_use("Grep", json!({"pattern": "al.ha", "path": d, "output_mode": "content", "-o": true})),
        Turn::tool_use("Grep", json!({"pattern": "a", "path": d, "head_limit": 1})),
        Turn::tool_use("Grep", json!({"pattern": "fresh\\n", "path": p("new.md"), "multiline": true, "output_mode": "content"})),
        Turn::tool_use("Glob", json!({"pattern": format!("{d}/sub/*.md")})),
        Turn::tool_use("Read", json!({"file_path": p("q.md")})),
        Turn::tool_use("Edit", json!({"file_path": p("q.md"), "old_string": "said \"hi\" and it's", "new_string": "said \"bye\" and it's"})),
        Turn::tool_use("Read", json!({"file_path": p("q.md")})),
        Turn::tool_use("Edit", json!({"file_path": p("MEMORY.md"), "old_string": ".md)", "new_string": ".md )", "replace_all": true})),
        Turn::tool_use("Bash", json!({"command": format!("ls {d}/sub")})),
        Turn::tool_use("Grep", json!({"pattern": "(unclosed", "path": d})),
        Turn::tool_use("Read", json!({"file_path": p("empty.md"), "offset": 3})),
        Turn::tool_use("Read", json!({"file_path": p("nl.md")})),
        Turn::tool_use("Grep", json!({"pattern": "a", "path": d, "glob": "{unclosed"})),
        Turn::tool_use("Grep", json!({"pattern": "a", "path": d, "type": "nosuchtype"})),
        Turn::tool_use("Grep", json!({"pattern": "(unclosed", "path": d, "output_mode": "content"})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "offset": 2, "limit": 1})),
        Turn::tool_use("Glob", json!({"pattern": "{unclosed", "path": d})),
        Turn::tool_use("Glob", json!({"pattern": "a[", "path": d})),
        Turn::tool_use("Grep", json!({"pattern": "a", "path": p("nope")})),
        Turn::tool_use("Glob", json!({"pattern": "*.md", "path": p("nope")})),
        Turn::tool_use("Read", json!({"file_path": p("sub")})),
        Turn::tool_use("Read", json!({"file_path": p("q.md"), "limit": 0})),
        Turn::tool_use("Edit", json!({"file_path": p("q.md"), "old_string": "fine", "new_string": "fine"})),
        Turn::tool_use("Edit", json!({"file_path": p("ghost.md"), "old_string": "a", "new_string": "b"})),
        Turn::tool_use("Write", json!({"file_path": p("deep/er/new.md"), "content": "x\n"})),
        Turn::tool_use("Grep", json!({"pattern": "alpha", "path": d, "type": "md", "output_mode": "count"})),
        Turn::tool_use("Grep", json!({"pattern": "gamma", "path": d, "output_mode": "content", "-B": 1, "-A": 1, "-n": false})),
        Turn::tool_use("Bash", json!({"command": format!("ls {d}/nope")})),
        Turn::tool_use("Edit", json!({"file_path": p("q.md"), "old_string": "", "new_string": "x"})),
        Turn::tool_use("Read", json!({"file_path": p("sub/c.md")})),
        Turn::tool_use("Read", json!({"file_path": p("sub/c.md")})),
        Turn::tool_use("Read", json!({"file_path": p("sub/c.md"), "offset": 1, "limit": 0})),
        Turn::tool_use("Read", json!({"file_path": p("mac.md")})),
        Turn::tool_use("Read", json!({"file_path": p("mixed.md")})),
        Turn::tool_use("Read", json!({"file_path": p("mixed.md"), "offset": 2, "limit": 2})),
        // Fields every release's schema has that a memory agent cannot use as a session does
        // (PDF pages, a background shell, the sandbox switch), and Read's integer bounds.
        Turn::tool_use("Read", json!({"file_path": p("MEMORY.md"), "pages": "1-2"})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "offset": 1.5})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "limit": 2.5})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "offset": -1})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "offset": "3", "limit": "1"})),
        Turn::tool_use("Bash", json!({"command": format!("ls {d}/sub"), "run_in_background": false})),
        Turn::tool_use("Bash", json!({"command": format!("wc -l {}", p("nl.md")), "dangerouslyDisableSandbox": true})),
        Turn::tool_use("Read", json!({"file_path": p("a.md"), "allow_large": true})),
        Turn::tool_use("Read", json!({"file_path": p("blank.md"), "offset": 0})),
        // Over 256 KiB (the size limit) and, read whole, some 72,000 tokens: under the room
        // Claude Code's `allow_large` finds in an empty context and Mneme's own cap for it.
        Turn::tool_use("Write", json!({"file_path": p("huge.md"), "content": "0123456789abcdef\n".repeat(17_000)})),
        Turn::tool_use("Read", json!({"file_path": p("huge.md")})),
        Turn::tool_use("Read", json!({"file_path": p("huge.md"), "offset": 2, "limit": 7_000})),
        Turn::tool_use("Read", json!({"file_path": p("huge.md"), "offset": 3, "limit": 7_000, "allow_large": true})),
        Turn::tool_use("Read", json!({"file_path": p("huge.md"), "allow_large": true})),
        // A whole file over 25,000 tokens and under 256 KiB: its first page, and where the note
        // on the cut goes (row 98).
        Turn::tool_use("Write", json!({"file_path": p("long.md"), "content": "0123456789abcdef\n".repeat(7_000)})),
        Turn::tool_use("Read", json!({"file_path": p("long.md")})),
        // Last, so no later result can carry the notice of its end that Claude Code adds.
        Turn::tool_use("Bash", json!({"command": format!("cat {}", p("nl.md")), "run_in_background": true})),
        Turn::text("done"),
    ]
}

/// The Read of a whole file over the token cap (its first page).
const FIRST_PAGE: usize = 78;

/// What rg says of the refused pattern, glob and file type of calls 37, 40, 41, 42 and 44.
const REFUSED_PATTERN: &str = "rg: regex parse error:\n    (?:(unclosed)\n    ^\nerror: unclosed group";
const REFUSED_GLOB: &str = "rg: error parsing glob '{unclosed': unclosed alternate group; missing '}' (maybe escape '{' with '[{]'?)";
const REFUSED_TYPE: &str = "rg: unrecognized file type: nosuchtype";

/// The calls (by index in [`calls`]) answered with a message in words: the anchors Claude
/// Code's answer must contain, and Mneme's exact answer (paths as `<DIR>`).
fn in_words(release: &Profile) -> Vec<(usize, Vec<&'static str>, String)> {
    let tool_use_error = |m: String| format!("<tool_use_error>{m}</tool_use_error>");
    let mut out = vec![
        // The empty file has one (empty) line: from 2.1.208 a Read that reaches it is told the
        // file is empty; before, that the file is shorter than offset 1.
        if release.read_empty_file_warns {
            (3, vec!["the file exists but the contents are empty"], messages::EMPTY_FILE.to_string())
        } else {
            (3, vec!["shorter than the provided offset", "(1)", "has 1 lines"], messages::past_end(1, 1))
        },
        (38, vec!["shorter than the provided offset", "(3)", "has 1 lines"], messages::past_end(3, 1)),
        // A blank line of a longer file: numbered from 2.1.208 (compared exactly), "shorter"
        // before.
        (4, vec!["shorter than the provided offset", "(50)", "has 6 lines"], messages::past_end(50, 6)),
        (5, vec!["File does not exist.", "working directory is <DIR>."], messages::no_such_file("<DIR>", None)),
        (6, vec!["File does not exist.", "working directory is <DIR>.", "Did you mean a.md?"], messages::no_such_file("<DIR>", Some("a.md"))),
        (
            19,
            vec!["<tool_use_error>Found 2 matches of the string to replace", "\nString: alpha</tool_use_error>"],
            tool_use_error(messages::several_matches(2, "alpha")),
        ),
        (
            27,
            // 2.1.260 to 2.1.270 at least word the missing `file_path` as one of type `unknown`.
            vec!["<tool_use_error>InputValidationError: Read failed", "\nAn unexpected parameter `path` was provided", "`file_path`"],
            tool_use_error(format!(
                "InputValidationError: {}",
                messages::bad_input("Read", &[messages::missing_param("file_path"), messages::unknown_param("path")])
            )),
        ),
    ];
    if !release.read_empty_file_warns {
        out.push((43, vec!["shorter than the provided offset", "(2)", "has 4 lines"], messages::past_end(2, 4)));
    }
    out.push((50, vec!["<tool_use_error>No changes to make", "old_string and new_string are exactly the same"], tool_use_error(messages::NO_CHANGE.to_string())));
    out.push((51, vec!["<tool_use_error>File does not exist.", "working directory is <DIR>."], tool_use_error(messages::no_such_file("<DIR>", None))));
    out.push((56, vec!["<tool_use_error>Cannot create new file", "file already exists"], tool_use_error(messages::ALREADY_EXISTS.to_string())));
    // A Read repeating an earlier one of an unchanged file (with `limit: 0`, which is no
    // limit): a short note up to 2.1.316, the text again from 2.1.317.
    // Up to 2.1.179 the schema refuses `limit: 0` (calls 49 and 59).
    let limit_zero = tool_use_error(format!("InputValidationError: {}", messages::bad_input("Read", &[messages::not_positive("limit", "0")])));
    if !release.read_limit_zero_is_none {
        for i in [49, 59] {
            out.push((i, vec!["<tool_use_error>InputValidationError", "\"limit\"", "too_small"], limit_zero.clone()));
        }
    }
    if release.read_dedups_unchanged {
        for i in [49, 58, 59].into_iter().filter(|i| *i == 58 || release.read_limit_zero_is_none) {
            // Worded anew in 2.1.128; these words are in both.
            out.push((i, vec!["unchanged since", "earlier", "tool_result"], messages::UNCHANGED.to_string()));
        }
    }
    // Grep's `-o` is refused by the schema up to 2.1.140.
    if !release.grep_only_matching {
        out.push((
            28,
            vec!["<tool_use_error>InputValidationError: Grep failed", "An unexpected parameter `-o` was provided"],
            tool_use_error(format!("InputValidationError: {}", messages::bad_input("Grep", &[messages::unknown_param("-o")]))),
        ));
    }
    // A search path that does not exist: refused as input up to 2.1.259, a failed call after.
    let path_answer = |m: String| if release.search_path_checked_when_run { m } else { tool_use_error(m) };
    out.push((46, vec!["Path does not exist: <DIR>/nope.", "current working directory is <DIR>."], path_answer(messages::no_such_path("<DIR>/nope", "<DIR>"))));
    out.push((47, vec!["Directory does not exist: <DIR>/nope.", "current working directory is <DIR>."], path_answer(messages::no_such_folder("<DIR>/nope", "<DIR>"))));
    // From 2.1.208 a search rg refuses fails with what rg said; before, it found nothing (the
    // exact answers compared as they are).
    if release.searches_report_refused_input {
        for (i, detail) in [
            (37, REFUSED_PATTERN),
            (40, REFUSED_GLOB),
            (41, REFUSED_TYPE),
            (42, REFUSED_PATTERN),
            (44, REFUSED_GLOB),
            (45, "rg: error parsing glob 'a[': unclosed character class; missing ']'"),
        ] {
            out.push((i, vec![detail], messages::search_refused(detail)));
        }
    }
    // Up to 2.1.179 an offset below 0 is refused by the schema; from 2.1.181 it is the first line.
    if !release.read_limit_zero_is_none {
        out.push((
            66,
            vec!["<tool_use_error>InputValidationError", "\"offset\"", "too_small"],
            tool_use_error(format!("InputValidationError: {}", messages::bad_input("Read", &[messages::negative("offset", "-1")]))),
        ));
    }
    // A blank line reached by offset 3 (given as strings): "shorter" up to 2.1.207, as call 43.
    if !release.read_empty_file_warns {
        out.push((67, vec!["shorter than the provided offset", "(3)", "has 4 lines"], messages::past_end(3, 4)));
    }
    // Read's `offset` and `limit` are integers in every release: a fraction is refused as input.
    for (i, name) in [(64, "offset"), (65, "limit")] {
        out.push((
            i,
            vec!["<tool_use_error>InputValidationError: Read failed", "`int`"],
            tool_use_error(format!("InputValidationError: {}", messages::bad_input("Read", &[messages::wrong_type(name, "integer", "number")]))),
        ));
    }
    // Above the size limit (a whole-file Read) and the token limit (a range): from 2.1.296 the
    // refusal names `allow_large`. Claude Code counts the range's tokens with the API (the stub
    // counts the JSON request), Mneme estimates them, so only the limit is compared.
    let hint = if release.read_allow_large { messages::ALLOW_LARGE_HINT } else { "" };
    let mut size_anchors = vec!["exceeds maximum allowed size", "(282.2KB)", "(256KB)"];
    let mut token_anchors = vec!["exceeds maximum allowed tokens", "(25000)"];
    if release.read_allow_large {
        size_anchors.push("allow_large: true");
        token_anchors.push("allow_large: true");
    }
    out.push((73, size_anchors, messages::too_many_bytes("282.2KB", "256KB") + hint));
    out.push((74, token_anchors.clone(), messages::too_many_tokens(29_750, 25_000) + hint));
    // Before 2.1.145 a whole file over the token cap is refused as a range is (row 98).
    if !release.read_first_page {
        out.push((FIRST_PAGE, token_anchors, messages::too_many_tokens(29_750, 25_000) + hint));
    }
    // Before 2.1.296 Read's schema has no `allow_large`.
    if !release.read_allow_large {
        for i in [70, 75, 76] {
            out.push((
                i,
                vec!["<tool_use_error>InputValidationError: Read failed", "An unexpected parameter `allow_large` was provided"],
                tool_use_error(format!("InputValidationError: {}", messages::bad_input("Read", &[messages::unknown_param("allow_large")]))),
            ));
        }
    }
    out
}

/// The calls whose answer is not reproduced: Claude Code's (recognised by its opening) and the
/// one Mneme gives instead. `run_in_background: true` starts a background shell whose output a
/// later turn reads; a memory agent's run keeps none, so Mneme refuses it as input.
fn not_reproduced() -> Vec<(usize, &'static str, String)> {
    vec![(79, "Command running in background with ID: ", format!("<tool_use_error>{}</tool_use_error>", messages::NO_BACKGROUND))]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tool_results_match_claude_code() {
    let Some(binary) = claude_code::pinned() else { return };
    check(&binary).await;
    // And the oldest and newest releases the matrix holds (`MNEME_CLAUDE_BINS`, `V=PATH,…`),
    // whose tools answer some calls otherwise (`Profile::read_empty_file_warns`,
    // `grep_only_matching`, …).
    let matrix = claude_code::listed();
    let oldest = matrix.first_key_value();
    let newest = matrix.last_key_value();
    for (_, path) in oldest.into_iter().chain(newest.filter(|n| Some(*n) != oldest)) {
        if *path != binary {
            check(path).await;
        }
    }
}

async fn check(binary: &Path) {
    let release = versions::behaviours(claude_code::version_of(binary).expect("claude --version names its release"));
    let home = TestHome::new();
    let ours_dir = home.root.join("ours/memory");
    let theirs_dir = home.root.join("theirs/memory");
    fixture(&ours_dir);
    fixture(&theirs_dir);

    // Claude Code.
    let stub = StubModel::start().await;
    let main = |r: &RecordedRequest| r.has_tool("Write");
    for t in calls(&theirs_dir) {
        stub.push_when(main, t);
    }
    let env = stub.claude_code_vars().into_iter().fold(home.env.clone(), |env, (k, v)| env.set_var(k, v));
    let cli = ClaudeCliProvider::new(binary.to_path_buf(), &env).with_timeout(Duration::from_secs(180));
    let rule = format!("/{}/**", theirs_dir.display());
    let task = HeadlessTask {
        prompt: "go".into(),
        system: None,
        cwd: theirs_dir.clone(),
        allowed_tools: vec![
            "Read".into(), "Grep".into(), "Glob".into(),
            format!("Read({rule})"), format!("Edit({rule})"), format!("Write({rule})"),
            "Bash(ls:*)".into(), "Bash(wc:*)".into(), "Bash(cat:*)".into(), "Bash(grep:*)".into(),
        ],
        // Mneme's agents keep no to-do or task list; releases before 2.1.153 remind the model
        // of theirs in some results when those tools are offered.
        disallowed_tools: vec!["TodoWrite".into(), "TaskCreate".into(), "TaskUpdate".into()],
        max_turns: Some(80),
    };
    cli.headless().unwrap().run(&task, &Cancel::new()).await.unwrap();
    let their_schemas = stub.model_requests().into_iter().find(|r| main(r)).map(|r| input_schemas(&r.body)).unwrap_or_default();
    let theirs: Vec<Vec<(String, bool)>> =
        stub.model_requests().into_iter().filter(|r| main(r)).skip(1).map(|r| r.latest_tool_results()).collect();

    // This crate.
    let stub2 = StubModel::start().await;
    for t in calls(&ours_dir) {
        stub2.push(t);
    }
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_764_422_207));
    let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub2.base_url())).unwrap();
    let agent_task = AgentTask {
        system: "s".into(),
        prompt: "go".into(),
        policy: Policy::AutoMem { memory_dir: ours_dir.clone() },
        max_turns: None,
        cwd: ours_dir.clone(),
        label: "diff".into(),
        work_dir: home.root.join("work"),
        clock,
        release,
        permission_rules: Default::default(),
    };
    run_agent(&provider as &dyn Provider, &agent_task, Mode::Stage, &Cancel::new()).await.unwrap();
    let our_schemas = stub2.model_requests().first().map(|r| input_schemas(&r.body)).unwrap_or_default();
    let ours: Vec<Vec<(String, bool)>> = stub2.model_requests().into_iter().skip(1).map(|r| r.latest_tool_results()).collect();
    // The tools take what the release's take: the same fields, types, bounds and required ones.
    assert_eq!(our_schemas, their_schemas);

    let norm = |v: Vec<Vec<(String, bool)>>, dir: &Path| -> Vec<(String, bool)> {
        v.into_iter().flatten().map(|(c, e)| (c.replace(&dir.to_string_lossy().into_owned(), "<DIR>"), e)).collect()
    };
    let ours = norm(ours, &ours_dir);
    let mut theirs = norm(theirs, &theirs_dir);
    // When the background command (the last call) ends, Claude Code sends one more request to
    // tell the model, whose latest tool result is still that call's: not a call of its own.
    while theirs.len() > ours.len() && theirs.len() >= 2 && theirs[theirs.len() - 1] == theirs[theirs.len() - 2] {
        theirs.pop();
    }
    // rg's walk is parallel (content and count modes) and mtime ties in Glob's
    // `--sort=modified` keep the walk's order, so those lines are compared as sets.
    let unordered = [8, 9, 10, 12, 13, 14, 28];
    let sorted = |(c, e): &(String, bool)| {
        let (body, tail) = c.split_once("\n\n").unwrap_or((c.as_str(), ""));
        let mut lines: Vec<&str> = body.lines().collect();
        lines.sort();
        (format!("{}\n\n{tail}", lines.join("\n")), *e)
    };
    let in_words = in_words(&release);
    let mut mismatches = Vec::new();
    for (i, (t, o)) in theirs.iter().zip(&ours).enumerate() {
        let differs = if i == FIRST_PAGE && release.read_first_page {
            // The page's length follows the token count (Claude Code asks the API, Mneme
            // estimates), so only how the result opens is compared: with the note up to 2.1.204,
            // with the numbered lines from 2.1.205.
            let (their_open, our_open) = if release.read_page_note_after_result {
                ("1\t0123456789abcdef\n2\t", "1\t0123456789abcdef\n2\t")
            } else {
                ("<system-reminder>[Truncated: PARTIAL view", "<system-reminder>[Partial view: lines 1-")
            };
            !t.0.starts_with(their_open) || !o.0.starts_with(our_open) || t.1 || o.1
        } else if let Some((_, opening, own)) = not_reproduced().into_iter().find(|(n, ..)| *n == i) {
            !t.0.starts_with(opening) || t.1 || o.0 != own || !o.1
        } else if let Some((_, anchors, own)) = in_words.iter().find(|(n, ..)| *n == i) {
            // The same words or not, a refusal of the input is wrapped as one by both.
            let wrapped = |text: &str| text.starts_with("<tool_use_error>");
            !anchors.iter().all(|a| t.0.contains(a)) || o.0 != *own || t.1 != o.1 || wrapped(&t.0) != wrapped(&o.0)
        } else if unordered.contains(&i) {
            sorted(t) != sorted(o)
        } else {
            t != o
        };
        if differs {
            mismatches.push(format!("call {i}:\n  claude: {t:?}\n  mneme:  {o:?}"));
        }
    }
    assert_eq!(theirs.len(), ours.len());
    assert!(mismatches.is_empty(), "{}", mismatches.join("\n"));
    // From 2.1.205 the first page's note follows the results: Claude Code's in a system message
    // naming the file, Mneme's as text after the tool_result blocks, naming it too.
    let long = |dir: &Path| dir.join("long.md").to_string_lossy().into_owned();
    let their_note = stub.model_requests().into_iter().filter(|r| main(r)).any(|r| {
        r.body["messages"].as_array().into_iter().flatten().any(|m| {
            m["role"] == "system" && m.to_string().contains(&format!("{}: showing lines 1-", long(&theirs_dir)))
        })
    });
    let our_note = stub2.model_requests().into_iter().any(|r| {
        r.body["messages"].as_array().into_iter().flatten().any(|m| {
            m["role"] == "user"
                && m["content"].as_array().into_iter().flatten().any(|b| {
                    b["type"] == "text" && b["text"].as_str().is_some_and(|t| t.starts_with(&format!("{}: [Partial view", long(&ours_dir))))
                })
        })
    });
    assert_eq!(their_note, release.read_page_note_after_result, "Claude Code's note after the results");
    assert_eq!(our_note, release.read_page_note_after_result, "Mneme's note after the results");
    // A topic file's lines end at LF alone in every release, CRLF folded: a file of lone CRs is
    // one numbered line with its CRs inside, and a mixed file's lone CR stays inside its line.
    // The dream's safety net splits topic files so (`mneme_dream::safety`; only MEMORY.md's
    // lone CRs end lines, from 2.1.284, row 9).
    let mac = 60; // the first Read of mac.md
    assert!(theirs[mac].0.starts_with("1\t---\rname: mac\rdescription: old Mac\r---\rfirst line\rsecond line"), "{:?}", theirs[mac]);
    assert!(!theirs[mac].0.contains("\n2\t"), "{:?}", theirs[mac]);
    assert!(theirs[mac + 1].0.starts_with("1\tone\rtwo\n2\tthree\n3\tfour"), "{:?}", theirs[mac + 1]);
}
