//! `mneme verify` against the real Claude Code binaries of the version matrix, on a real-world
//! fixture with user-level instructions and the project's auto memory: it must report a match
//! (exit 0), catch a deliberately wrong profile (exit 1, the difference shown), leave every file
//! under the temporary HOME (`~/.claude`, `~/.claude.json`) and the project exactly as they
//! were, and say what to do when there is no Claude Code (exit 2).
//!
//! Binaries come from `MNEME_CLAUDE_BINS` (`V=PATH,V=PATH`, `scripts/claude-code.sh --matrix`);
//! without it the real-binary tests are skipped unless `MNEME_REQUIRE_CLAUDE=1` (npm test).

use mneme_core::versions::ClaudeVersion;
use mneme_testsupport::claude_code;
use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// A real-world fixture (vidarc__recommendarr: CLAUDE.md, rules, auto memory) in a temporary
/// root, plus user-level instructions and a global config, so every layer crosses the sandbox.
struct Fixture {
    _tmp: tempfile::TempDir,
    home: PathBuf,
    repo: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("real");
    let status = Command::new("python3")
        .arg(repo_root().join("testdata/realworld/build_fixtures.py"))
        .args(["--root"])
        .arg(&root)
        .arg("vidarc__recommendarr")
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs");
    assert!(status.success(), "build_fixtures.py failed");
    let base = root.join("vidarc__recommendarr");
    let home = base.join("home");
    let config = home.join(".claude");
    fs::write(config.join("CLAUDE.md"), "# Mine\nAlways answer in English.\n").unwrap();
    fs::create_dir_all(config.join("rules")).unwrap();
    fs::write(config.join("rules/style.md"), "Prefer small functions.\n").unwrap();
    fs::write(config.join("settings.json"), "{\"autoMemoryEnabled\": true}\n").unwrap();
    fs::write(home.join(".claude.json"), "{\"numStartups\": 7, \"mcpServers\": {\"never\": {\"command\": \"/bin/false\"}}}\n").unwrap();
    assert!(fs::read_dir(config.join("projects")).unwrap().count() == 1, "the fixture has one project's memory");
    Fixture { home, repo: base.join("repo"), _tmp: tmp }
}

fn mneme(fx: &Fixture, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mneme"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &fx.home)
        .env("MNEME_DATA_DIR", fx.home.join(".local/share/mneme"))
        .envs(extra_env.iter().copied())
        .arg("verify")
        .arg("--cwd")
        .arg(&fx.repo)
        .args(args)
        .output()
        .expect("mneme runs")
}

/// Every entry under `dir`: its kind, permissions, modification time and bytes (or link target).
fn snapshot(dir: &Path, out: &mut BTreeMap<PathBuf, String>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let p = e.path();
        let m = fs::symlink_metadata(&p).unwrap();
        let what = if m.file_type().is_symlink() {
            format!("link {:?}", fs::read_link(&p).unwrap())
        } else if m.is_dir() {
            snapshot(&p, out);
            format!("dir {:o} {}", m.mode(), m.mtime_nsec() + m.mtime() * 1_000_000_000)
        } else {
            format!("file {:o} {} {:?}", m.mode(), m.mtime_nsec() + m.mtime() * 1_000_000_000, fs::read(&p).unwrap())
        };
        out.insert(p, what);
    }
}

fn state(fx: &Fixture) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    snapshot(&fx.home, &mut out);
    snapshot(&fx.repo, &mut out);
    out
}

fn text(o: &Output) -> String {
    format!("exit {:?}\nstdout:\n{}\nstderr:\n{}", o.status.code(), String::from_utf8_lossy(&o.stdout), String::from_utf8_lossy(&o.stderr))
}

/// Two releases at least (the matrix), or `None` after saying why not.
fn two_releases() -> Option<BTreeMap<ClaudeVersion, PathBuf>> {
    let bins = claude_code::listed();
    if bins.len() >= 2 {
        return Some(bins);
    }
    let n = bins.len();
    claude_code::skip(&format!(
        "MNEME_CLAUDE_BINS names {n} Claude Code binaries, not two or more; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\""
    ));
    None
}

/// Runs `check` on every item, on a few threads that each keep a fixture of their own (made by
/// `setup`): each check starts a real Claude Code, which is most of this file's time (over 200
/// runs), and one start keeps only about two thirds of a core busy, so one after another left
/// most of a two-core machine idle. Items are taken longest first (`cost`), so the slow
/// release (2.1.100 runs under Node) does not end up alone at the end. A failed check panics
/// its thread, which stops that thread; the scope then fails the test with that panic shown.
fn on_workers<T: Sync, F>(items: Vec<T>, cost: impl Fn(&T) -> u32, setup: impl Fn() -> F + Sync, check: impl Fn(&F, &T) + Sync) {
    let mut items = items;
    items.sort_by_key(|t| std::cmp::Reverse(cost(t)));
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).saturating_add(1).min(items.len()).max(1);
    let next = std::sync::atomic::AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                let fx = setup();
                while let Some(item) = items.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                    check(&fx, item);
                }
            });
        }
    });
}

/// How long a release takes to start, relatively: those before 2.1.113 are JavaScript run by
/// Node (several times slower than the single-file binaries after them).
fn start_cost(version: &ClaudeVersion) -> u32 {
    if *version < ClaudeVersion::new(2, 1, 113) {
        4
    } else {
        1
    }
}

#[test]
fn verify_matches_each_real_claude_code_and_changes_nothing() {
    let Some(bins) = two_releases() else { return };
    // Each worker checks its own fixture, so what one run changed is pinned on that run.
    on_workers(bins.into_iter().collect(), |(v, _)| start_cost(v), fixture, |fx, (version, bin)| {
        let before = state(fx);
        let out = mneme(fx, &["--claude-bin", bin.to_str().unwrap(), "--json"], &[]);
        let after = state(fx);
        assert_eq!(out.status.code(), Some(0), "{version}: {}", text(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["status"], "match", "{version}: {report:#}");
        assert_eq!(report["claudeVersion"], version.to_string());
        // It compared something real: the user's file, the project's and its memory, real paths.
        let block = report["claudeBlock"].as_str().unwrap();
        let config = fx.home.join(".claude");
        for needle in [config.join("CLAUDE.md"), config.join("rules/style.md"), fx.repo.join("CLAUDE.md")] {
            assert!(block.contains(&format!("Contents of {} (", needle.display())), "{version}: {needle:?} not in\n{block}");
        }
        assert!(block.contains("MEMORY.md (user's auto-memory"), "{version}: no MEMORY.md in\n{block}");
        assert!(!block.contains("mneme-verify-"), "{version}: a sandbox path leaked into\n{block}");
        // Nothing under HOME (~/.claude, ~/.claude.json, caches) or in the project changed.
        let changed: Vec<_> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        assert!(changed.is_empty(), "{version}: verify changed {changed:?}");

        // The plain output says so in a sentence.
        let out = mneme(fx, &["--claude-bin", bin.to_str().unwrap()], &[]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out));
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), format!("Mneme matches your Claude Code {version}."));
    });
}

#[test]
fn verify_catches_a_wrong_profile() {
    let Some(bins) = two_releases() else { return };
    let fx = fixture();
    let versions: Vec<String> = bins.keys().map(ToString::to_string).collect();
    let bin = |v: &str| bins[&v.parse::<ClaudeVersion>().unwrap()].to_str().unwrap();
    // Each release compared against another release's behaviours must be caught.
    for (run, wrong) in [(&versions[0], &versions[versions.len() - 1]), (&versions[versions.len() - 1], &versions[0])] {
        let out = mneme(&fx, &["--claude-bin", bin(run), "--json"], &[("MNEME_VERIFY_PROFILE", wrong)]);
        assert_eq!(out.status.code(), Some(1), "{run} as {wrong}: {}", text(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["status"], "differ");
        assert_eq!(report["comparedAs"], wrong.as_str());
        let kinds: Vec<&str> = report["differences"].as_array().unwrap().iter().map(|d| d["kind"].as_str().unwrap()).collect();
        assert!(kinds.contains(&"wrapper"), "{run} as {wrong}: {report:#}");
        let out = mneme(&fx, &["--claude-bin", bin(run)], &[("MNEME_VERIFY_PROFILE", wrong)]);
        let shown = String::from_utf8_lossy(&out.stdout);
        assert!(shown.contains(&format!("Mneme differs from your Claude Code {run}")), "{shown}");
        assert!(shown.contains("Claude Code") && shown.contains("| Mneme"), "side by side: {shown}");
    }
}

/// A settings file that breaks a release's schema anywhere (a number out of bounds, a value of
/// the wrong type in a key Mneme never reads) is ignored whole by that release, so its
/// `"autoMemoryEnabled": false` leaves auto memory on; the same file with valid values turns it
/// off. Each real release must agree with Mneme on both.
#[test]
fn a_settings_file_the_release_ignores_is_ignored_by_mneme_too() {
    let Some(bins) = two_releases() else { return };
    let cases = [
        (r#"{"autoMemoryEnabled": false, "cleanupPeriodDays": 0}"#, true),
        (r#"{"autoMemoryEnabled": false, "cleanupPeriodDays": 7, "model": 5}"#, true),
        (r#"{"autoMemoryEnabled": false, "permissions": "ask"}"#, true),
        (r#"{"autoMemoryEnabled": false, "env": ["A=1"]}"#, true),
        (r#"{"autoMemoryEnabled": false, "enabledPlugins": []}"#, true),
        (r#"{"autoMemoryEnabled": false, "cleanupPeriodDays": 7, "model": "sonnet"}"#, false),
        // Inside hooks and permissions: a hook in the old one-level format, a command hook
        // without its command, a timeout that is not a number, an unknown hook type, a
        // permission list written as one string.
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"matcher": "Bash", "command": "x"}]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PermissionRequest": [{"hooks": [{"type": "command"}]}]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"hooks": [{"type": "cmd", "command": "x"}]}]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "permissions": {"allow": "Bash"}}"#, true),
        (r#"{"autoMemoryEnabled": false, "permissions": {"additionalDirectories": [1]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "permissions": {"allow": null}}"#, true),
        (r#"{"autoMemoryEnabled": false, "statusLine": {"type": "command"}}"#, true),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"matcher": null, "hooks": [{"type": "command", "command": "x"}]}]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}}"#, true),
        // Inside other objects, records and lists: a switch written as a word, a null, a
        // required field left out, a value outside a record's choices, an item of the wrong kind.
        (r#"{"autoMemoryEnabled": false, "sandbox": {"enabled": "yes"}}"#, true),
        (r#"{"autoMemoryEnabled": false, "voice": {"mode": null}}"#, true),
        (r#"{"autoMemoryEnabled": false, "spinnerVerbs": {"mode": "append"}}"#, true),
        (r#"{"autoMemoryEnabled": false, "worktree": {"symlinkDirectories": ["node_modules", 5]}}"#, true),
        (r#"{"autoMemoryEnabled": false, "sshConfigs": [{"id": "a", "name": "b", "sshHost": "h", "sshPort": "22"}]}"#, true),
        (r#"{"autoMemoryEnabled": false, "fileSuggestion": {"command": "x"}}"#, true),
        (r#"{"autoMemoryEnabled": false, "permissions": {"defaultMode": 5}}"#, true),
        // What releases mend or pass: an unknown event, extra fields, entries that are not
        // strings in a permission list, an empty command, environment values that are not
        // strings (turned into strings), fields an object does not declare.
        (r#"{"autoMemoryEnabled": false, "env": {"A": 5, "B": null}, "sandbox": {"enabled": true, "notAField": 5}}"#, false),
        (r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"hooks": [{"type": "command", "command": "", "x": 1}], "y": 2}]}}"#, false),
        (r#"{"autoMemoryEnabled": false, "permissions": {"allow": [1], "deny": ["Bash("]}}"#, false),
    ];
    // Under an event whose hooks guard nothing, from 2.1.257 a broken entry no longer costs the
    // file; an event that is not a list costs it before 2.1.122 and again from 2.1.257.
    let unguarded = r#"{"autoMemoryEnabled": false, "hooks": {"Stop": [{"matcher": "x", "command": "x"}]}}"#;
    let not_a_list = r#"{"autoMemoryEnabled": false, "hooks": {"PreToolUse": "x"}}"#;
    // Settings 2.1.337 adds, not true or false: the releases before do not know them and use the
    // file whatever they hold.
    let new_in_2_1_337 = [
        r#"{"autoMemoryEnabled": false, "disableLocalMcpServers": "yes"}"#,
        r#"{"autoMemoryEnabled": false, "sandbox": {"allowManagedExcludedCommandsOnly": "yes"}}"#,
    ];
    // Every case against every release: each pair is one start of that release.
    let mut runs = Vec::new();
    for (version, bin) in &bins {
        let strict_everywhere = *version < ClaudeVersion::new(2, 1, 257);
        let lists_mended = ClaudeVersion::new(2, 1, 122) <= *version && *version < ClaudeVersion::new(2, 1, 257);
        let knows_2_1_337 = *version >= ClaudeVersion::new(2, 1, 337);
        let added = new_in_2_1_337.map(|json| (json, knows_2_1_337));
        for (json, memory_on) in cases.into_iter().chain([(unguarded, strict_everywhere), (not_a_list, !lists_mended)]).chain(added) {
            runs.push((version, bin, json, memory_on));
        }
    }
    assert_eq!(runs.len(), bins.len() * (cases.len() + 2 + new_in_2_1_337.len()));
    on_workers(runs, |(v, ..)| start_cost(v), fixture, |fx, &(version, bin, json, memory_on)| {
        fs::write(fx.home.join(".claude/settings.json"), json).unwrap();
        let out = mneme(fx, &["--claude-bin", bin.to_str().unwrap(), "--json"], &[]);
        assert_eq!(out.status.code(), Some(0), "{version} with {json}: {}", text(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["status"], "match", "{version} with {json}: {report:#}");
        let block = report["claudeBlock"].as_str().unwrap_or_default();
        assert_eq!(block.contains("MEMORY.md (user's auto-memory"), memory_on, "{version} with {json}: {block}");
    });
}

#[test]
fn verify_without_claude_code_says_how_to_install_it() {
    let tmp = tempfile::tempdir().unwrap();
    let home = tmp.path().join("home");
    let project = tmp.path().join("project");
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&project).unwrap();
    let run = |args: &[&str], path: &str| {
        Command::new(env!("CARGO_BIN_EXE_mneme"))
            .env_clear()
            .env("PATH", path)
            .env("HOME", &home)
            .arg("verify")
            .arg("--cwd")
            .arg(&project)
            .args(args)
            .output()
            .unwrap()
    };
    let out = run(&["--claude-bin", "/nonexistent/claude"], "/usr/bin:/bin");
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("There is no Claude Code at /nonexistent/claude"), "{}", text(&out));
    // With nothing on PATH and nothing in the installers' places, the answer says how to get it
    // (only where this machine has no system-wide install to find).
    let system_wide = ["/usr/local/bin/claude", "/usr/bin/claude"].iter().any(|p| Path::new(p).exists());
    if !system_wide {
        let out = run(&["--json"], tmp.path().join("empty").to_str().unwrap());
        assert_eq!(out.status.code(), Some(2), "{}", text(&out));
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(report["status"], "failed");
        assert!(report["summary"].as_str().unwrap().contains("npm install -g @anthropic-ai/claude-code"), "{report:#}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mneme")).env("HOME", &home).args(["verify", "--cwd", "/nonexistent/folder"]).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a folder"), "{}", text(&out));
}

/// A stand-in `claude` (a shell or Python script) that answers `--version` with `version` and
/// otherwise runs `body`.
fn fake_claude(dir: &Path, version: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let bin = dir.join(format!("claude-{version}"));
    fs::write(&bin, format!("#!/usr/bin/env python3\nimport json, os, sys, urllib.request\nif sys.argv[1:] == ['--version']:\n    print('{version} (Claude Code)')\n    sys.exit(0)\n{body}\n")).unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn verify_says_why_a_run_failed_and_flags_a_release_older_than_any_checked() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = Fixture { home: tmp.path().join("home"), repo: tmp.path().join("repo"), _tmp: tempfile::tempdir().unwrap() };
    fs::create_dir_all(fx.home.join(".claude")).unwrap();
    fs::create_dir_all(&fx.repo).unwrap();
    fs::write(fx.repo.join("CLAUDE.md"), "Project rules.\n").unwrap();

    // Exits without asking anything: exit 2, with the end of its stderr.
    let quits = fake_claude(tmp.path(), "2.1.300", "sys.stderr.write('boom: cannot start\\n')\nsys.exit(3)");
    let out = mneme(&fx, &["--claude-bin", quits.to_str().unwrap()], &[]);
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("exited") && err.contains("without sending a request") && err.contains("boom: cannot start"), "{err}");

    // Hangs: stopped at the deadline, exit 2.
    let hangs = fake_claude(tmp.path(), "2.1.301", "import time\ntime.sleep(120)");
    let started = std::time::Instant::now();
    let out = mneme(&fx, &["--claude-bin", hangs.to_str().unwrap(), "--timeout", "2"], &[]);
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(2), "{}", text(&out));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sent no request within 2 s"), "{}", text(&out));

    // Older than every checked release, and sends no instructions: still compared, flagged
    // unverified, and the file Mneme shows is named as missing on Claude Code's side.
    let old = fake_claude(
        tmp.path(),
        "2.0.1",
        "body = json.dumps({'model': 'm', 'stream': False, 'messages': [{'role': 'user', 'content': [{'type': 'text', 'text': 'hi'}]}]}).encode()\n\
         urllib.request.urlopen(urllib.request.Request(os.environ['ANTHROPIC_BASE_URL'] + '/v1/messages', data=body, headers={'content-type': 'application/json', 'x-api-key': os.environ['ANTHROPIC_API_KEY']})).read()",
    );
    let out = mneme(&fx, &["--claude-bin", old.to_str().unwrap(), "--json"], &[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(report["unverified"].as_str().unwrap().contains("older than the oldest release Mneme checks"), "{report:#}");
    let only: Vec<&serde_json::Value> = report["differences"].as_array().unwrap().iter().filter(|d| d["kind"] == "onlyInMneme").collect();
    assert_eq!(only.len(), 1, "{report:#}");
    assert_eq!(only[0]["file"], fx.repo.join("CLAUDE.md").to_str().unwrap());
}

/// A listener on 127.0.0.1 that records every connection: where a settings file's `env` block
/// would send Claude Code instead of the check's stub.
struct Trap {
    port: u16,
    hits: std::sync::Arc<(std::sync::Mutex<Vec<String>>, std::sync::Condvar)>,
}

/// What the test itself sends the trap to learn that every connection before it was seen.
const SENTINEL: &str = "mneme-test-sentinel";

fn trap() -> Trap {
    use std::io::Read;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = std::sync::Arc::new((std::sync::Mutex::new(Vec::new()), std::sync::Condvar::new()));
    let log = hits.clone();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            let _ = conn.set_read_timeout(Some(std::time::Duration::from_millis(500)));
            let mut head = [0u8; 300];
            let n = conn.read(&mut head).unwrap_or(0);
            log.0.lock().unwrap().push(String::from_utf8_lossy(&head[..n]).into_owned());
            log.1.notify_all();
        }
    });
    Trap { port, hits }
}

impl Trap {
    /// Every connection made before this call. Connections are accepted one at a time in the
    /// order they were made, so once the test's own connection (sent now) has been seen, so has
    /// every earlier one: no fixed wait that a slow machine could outlast.
    fn seen(&self) -> Vec<String> {
        use std::io::Write;
        let mut probe = std::net::TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        probe.write_all(SENTINEL.as_bytes()).unwrap();
        let (hits, seen) = &*self.hits;
        // Bounded only so that a broken trap fails instead of hanging the run.
        let (mut hits, waited) = seen.wait_timeout_while(hits.lock().unwrap(), std::time::Duration::from_secs(60), |h| !h.iter().any(|x| x == SENTINEL)).unwrap();
        assert!(!waited.timed_out(), "the trap never saw the test's own connection");
        hits.retain(|x| x != SENTINEL);
        hits.clone()
    }
}

/// Settings files' `env` blocks that would send the check's request to Amazon Bedrock (at an
/// address of the test's own), through a proxy, or report telemetry: the flag settings blank
/// every such variable, so each release still sends its one request to the stub, and nothing
/// reaches anywhere else. The user's `apiKeyHelper` command is not run either.
#[test]
fn verify_stays_on_the_stub_whatever_the_settings_env_blocks_say() {
    let Some(bins) = two_releases() else { return };
    // Each worker has a fixture and a trap of its own, so a connection is pinned on the run
    // that made it.
    let setup = || {
        let fx = fixture();
        let trap = trap();
        let url = format!("http://127.0.0.1:{}", trap.port);
        let helper_ran = fx.home.join("helper-ran");
        let helper = format!("touch '{}'; echo sk-ant-from-the-helper", helper_ran.display());
        let user = serde_json::json!({"autoMemoryEnabled": true, "apiKeyHelper": helper, "env": {
            "CLAUDE_CODE_USE_BEDROCK": "1", "ANTHROPIC_BEDROCK_BASE_URL": url, "CLAUDE_CODE_SKIP_BEDROCK_AUTH": "1", "AWS_REGION": "us-east-1",
        }});
        fs::write(fx.home.join(".claude/settings.json"), user.to_string()).unwrap();
        let global = serde_json::json!({"numStartups": 7, "env": {
            "CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json", "OTEL_EXPORTER_OTLP_ENDPOINT": url, "OTEL_METRIC_EXPORT_INTERVAL": "100",
        }});
        fs::write(fx.home.join(".claude.json"), global.to_string()).unwrap();
        let project = fx.repo.join(".claude/settings.local.json");
        fs::create_dir_all(project.parent().unwrap()).unwrap();
        fs::write(&project, serde_json::json!({"env": {"HTTPS_PROXY": url, "HTTP_PROXY": url, "NO_PROXY": ""}}).to_string()).unwrap();
        (fx, trap, helper_ran)
    };
    on_workers(bins.into_iter().collect(), |(v, _)| start_cost(v), setup, |(fx, trap, helper_ran), (version, bin)| {
        let out = mneme(fx, &["--claude-bin", bin.to_str().unwrap(), "--json", "--timeout", "30"], &[]);
        let report: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
        assert_eq!(report["status"], "match", "{version}: {}", text(&out));
        assert!(report["claudeBlock"].as_str().unwrap().contains("MEMORY.md (user's auto-memory"), "{version}: {report:#}");
        // `mneme verify` returns once Claude Code's whole process group is gone, so whatever it
        // reached has connected by now.
        let hits = trap.seen();
        assert!(hits.is_empty(), "{version}: Claude Code reached past the stub: {hits:?}");
        assert!(!helper_ran.exists(), "{version}: the user's apiKeyHelper ran");
    });
}
