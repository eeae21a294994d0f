//! Conformance: every golden captured from real Claude Code 2.1.197 is reproduced byte for
//! byte by the `mneme` binary — `mneme context` for the user-context block and
//! `mneme touched` for the files attached after a read.
//!
//! Goldens: `testdata/conformance` (shared fixtures), `testdata/realworld` (six public
//! repositories) and `testdata/conformance-extra` (hostile cases captured by us with the same
//! harness). Each fixture set is rebuilt at the absolute path it was captured under, because
//! absolute paths and the memory folder names derived from them are part of the goldens.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// Fixture builders wipe their root; one test at a time may touch /tmp/cc*.
static FIXTURES: Mutex<()> = Mutex::new(());

fn build(script: &Path, args: &[&str]) {
    let out = Command::new("python3").arg(script).args(args).output().expect("python3 runs (install python3)");
    assert!(out.status.success(), "{} failed: {}", script.display(), String::from_utf8_lossy(&out.stderr));
}

/// A case file: shell assignments `KEY='value'` (single-quoted, `'"'"'` escapes) or JSON.
fn parse_case(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let Some((k, v)) = line.split_once('=') else { continue };
        let v = if let Some(inner) = v.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
            inner.replace("'\"'\"'", "'")
        } else {
            serde_json::from_str::<String>(v).unwrap_or_else(|_| v.to_string())
        };
        out.insert(k.to_string(), v);
    }
    out
}

fn mneme(fx: &Path, case: &BTreeMap<String, String>, args: &[String]) -> String {
    let home = fx.join("home");
    let managed = match case.get("MANAGED") {
        Some(m) => fx.join(m),
        None => fx.join("no-managed-dir"),
    };
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mneme"));
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("MNEME_DATA_DIR", fx.join("mneme-data"))
        .arg("--managed-dir")
        .arg(&managed)
        .args(args)
        // The committed goldens were captured from 2.1.197; the version matrix
        // (tests/versions.rs) checks every release against its binary at test time.
        .args(["--claude-version", "2.1.197"])
        .arg("--cwd")
        .arg(fx.join(&case["CWD"]));
    if let Some(extra) = case.get("EXTRA_ENV") {
        for kv in extra.split_whitespace() {
            let (k, v) = kv.split_once('=').expect("EXTRA_ENV is K=V");
            cmd.env(k, v);
        }
    }
    if let Some(extra) = case.get("EXTRA_ARGS") {
        cmd.args(extra.split_whitespace());
    }
    let out = cmd.output().expect("mneme runs");
    assert!(out.status.success(), "mneme {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    let text = String::from_utf8(out.stdout).expect("utf-8 output");
    // The managed fixture stands in for /etc/claude-code.
    match case.get("MANAGED") {
        Some(_) => text.replace(&managed.to_string_lossy().to_string(), "/etc/claude-code"),
        None => text,
    }
}

/// The files a case's stub made the model `Read`, in the order Claude Code processed them.
fn read_targets(case_name: &str, case: &BTreeMap<String, String>) -> Vec<String> {
    let listed: Vec<String> = case
        .get("STUB_ARGS")
        .map(|s| s.split_whitespace().filter(|a| *a != "--tool-read").map(str::to_string).collect())
        .unwrap_or_default();
    if case_name == "layers__read_files" {
        // Claude Code ran these four Reads concurrently and attached nested memory in the
        // order the reads completed; in this capture that was tool.py, app.ts, notes.txt,
        // file.txt. `mneme touched` takes files in the order they were read.
        let by_suffix = |s: &str| listed.iter().find(|p| p.ends_with(s)).cloned().expect("listed read");
        return ["src/tool.py", "src/app.ts", "other/notes.txt", "pkg/deep/file.txt"].map(by_suffix).to_vec();
    }
    listed
}

/// The rule files of an expected block, per rules folder, in the order they appear.
fn rule_runs(text: &str) -> Vec<Vec<String>> {
    let mut runs: Vec<Vec<String>> = Vec::new();
    let mut last_dir: Option<String> = None;
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("Contents of ") else { continue };
        let path = rest.split(" (").next().unwrap_or(rest).trim_end_matches(':').to_string();
        let dir = path.find("/rules/").map(|i| path[..i].to_string());
        match (&dir, &last_dir) {
            (Some(d), Some(l)) if d == l => runs.last_mut().expect("run").push(path),
            (Some(_), _) => runs.push(vec![path]),
            _ => {}
        }
        last_dir = dir;
    }
    runs
}

/// Claude Code lists rules in directory-read order. The goldens were captured on ext4, whose
/// order depends on the filesystem's hash seed; when this machine reads a rules folder in a
/// different order, compare with each run of rules sorted, and check separately that Mneme
/// followed this machine's order.
fn compare(name: &str, actual: &str, expected: &str, failures: &mut Vec<String>) {
    if actual == expected {
        return;
    }
    let sort_runs = |t: &str| {
        let mut entries: Vec<String> = Vec::new();
        for chunk in t.split("\n\nContents of ") {
            entries.push(chunk.to_string());
        }
        let key = |e: &String| e.find("/rules/").map(|i| e[..i].to_string());
        let mut i = 0;
        while i < entries.len() {
            let Some(k) = key(&entries[i]) else {
                i += 1;
                continue;
            };
            let mut j = i;
            while j < entries.len() && key(&entries[j]).as_ref() == Some(&k) {
                j += 1;
            }
            entries[i..j].sort();
            i = j;
        }
        entries.join("\n\nContents of ")
    };
    let same_rules = rule_runs(actual).iter().map(|r| r.len()).eq(rule_runs(expected).iter().map(|r| r.len()));
    if same_rules && sort_runs(actual) == sort_runs(expected) && live_order_matches(actual) {
        return;
    }
    let at = actual.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(actual.len().min(expected.len()));
    let from = at.saturating_sub(200);
    failures.push(format!(
        "{name}: differs at byte {at}\n--- expected ---\n{}\n--- actual ---\n{}\n",
        &expected[from.min(expected.len())..(at + 200).min(expected.len())],
        &actual[from.min(actual.len())..(at + 200).min(actual.len())]
    ));
}

/// Every run of rules in `text` appears in the order `read_dir` walks their folder here.
fn live_order_matches(text: &str) -> bool {
    rule_runs(text).iter().all(|run| {
        let Some(i) = run[0].find("/rules/") else { return true };
        let root = PathBuf::from(&run[0][..i + "/rules".len()]);
        let mut walk = Vec::new();
        walk_md(&root, &mut walk);
        let positions: Vec<usize> = run.iter().filter_map(|p| walk.iter().position(|w| w == p)).collect();
        positions.len() == run.len() && positions.windows(2).all(|w| w[0] < w[1])
    })
}

fn walk_md(dir: &Path, out: &mut Vec<String>) {
    let Ok(rd) = fs::read_dir(dir) else { return };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            walk_md(&p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            out.push(p.to_string_lossy().to_string());
        }
    }
}

/// Runs every case under `fixtures_root` whose golden is in `expected_dir`.
fn check_all(fixtures_root: &Path, expected_dir: &Path, name_of: impl Fn(&str, &str) -> String) -> usize {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut fixtures: Vec<PathBuf> = fs::read_dir(fixtures_root).expect("fixtures").flatten().map(|e| e.path()).collect();
    fixtures.sort();
    for fx in fixtures.iter().filter(|p| p.join("cases").is_dir()) {
        let fx_name = fx.file_name().expect("name").to_string_lossy().to_string();
        let mut cases: Vec<PathBuf> = fs::read_dir(fx.join("cases")).expect("cases").flatten().map(|e| e.path()).collect();
        cases.sort();
        for case_file in cases {
            let case_name = case_file.file_stem().expect("stem").to_string_lossy().to_string();
            let golden = expected_dir.join(name_of(&fx_name, &case_name));
            if !golden.is_dir() {
                continue;
            }
            let case = parse_case(&fs::read_to_string(&case_file).expect("case file"));
            let label = format!("{fx_name}__{case_name}");
            let actual = mneme(fx, &case, &["context".into(), "--date".into(), "<DATE>".into()]);
            let expected = fs::read_to_string(golden.join("user_context.txt")).expect("golden");
            compare(&label, &actual, &expected, &mut failures);
            let lazy_expected = fs::read_to_string(golden.join("lazy_context.txt")).unwrap_or_default();
            let targets = read_targets(&label, &case);
            if !targets.is_empty() {
                let mut args = vec!["touched".to_string()];
                args.extend(targets);
                let lazy = mneme(fx, &case, &args);
                compare(&format!("{label} (lazy)"), &lazy, &lazy_expected, &mut failures);
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {checked} cases differ:\n{}", failures.len(), failures.join("\n"));
    checked
}

#[test]
fn shared_conformance_goldens() {
    let _lock = FIXTURES.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root().join("testdata/conformance");
    build(&root.join("make_fixtures.py"), &["/tmp/ccfix"]);
    let n = check_all(Path::new("/tmp/ccfix"), &root.join("expected"), |f, c| format!("{f}__{c}"));
    assert_eq!(n, 26, "every shared golden was checked");
}

#[test]
fn realworld_goldens() {
    let _lock = FIXTURES.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root().join("testdata/realworld");
    build(&root.join("build_fixtures.py"), &[]);
    let n = check_all(Path::new("/tmp/ccreal"), &root, |f, c| format!("{f}/expected/{c}"));
    assert_eq!(n, 8, "every real-world golden was checked");
}

#[test]
fn extra_goldens_captured_from_claude_code() {
    let _lock = FIXTURES.lock().unwrap_or_else(|e| e.into_inner());
    let root = repo_root().join("testdata/conformance-extra");
    build(&root.join("make_extra.py"), &["/tmp/ccextra"]);
    let n = check_all(Path::new("/tmp/ccextra"), &root.join("expected"), |f, c| format!("{f}__{c}"));
    assert_eq!(n, fs::read_dir(root.join("expected")).expect("expected").count(), "every extra golden was checked");
}
