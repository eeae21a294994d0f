//! Conformance: every golden captured from real Claude Code 2.1.197 is reproduced byte for
//! byte by the `mneme` binary — `mneme context` for the user-context block and
//! `mneme touched` for the files attached after a read.
//!
//! Goldens: `testdata/conformance` (shared fixtures), `testdata/realworld` (twenty public
//! repositories) and `testdata/conformance-extra` (hostile cases captured by us with the same
//! harness). Absolute paths and the memory folder names derived from them are part of the
//! goldens, captured under `/tmp/ccfix`, `/tmp/ccreal` and `/tmp/ccextra`. Each test builds its
//! fixture set under a temporary folder of its own (two test runs on one machine never share or
//! wipe each other's trees) and maps that folder back to the captured one before comparing.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use mneme_core::sanitize::sanitize_path;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// One fixture set built for this test: the folder the goldens were captured under
/// (`/tmp/ccfix`, …) and the per-run folder standing in for it.
struct Fixtures {
    _dir: tempfile::TempDir,
    root: PathBuf,
    captured: &'static str,
}

impl Fixtures {
    /// Runs `script` (a fixture builder) with `args` and then this run's root, e.g.
    /// `<tmp>/.tmpXXXX/ccfix` for the goldens' `/tmp/ccfix`.
    fn build(script: &Path, args: &[&str], captured: &'static str) -> Fixtures {
        let dir = tempfile::tempdir().expect("temporary folder");
        let name = Path::new(captured).file_name().expect("captured root has a name");
        let root = fs::canonicalize(dir.path()).expect("canonical temporary folder").join(name);
        let out = Command::new("python3").arg(script).args(args).arg(&root).output().expect("python3 runs (install python3)");
        assert!(out.status.success(), "{} failed: {}", script.display(), String::from_utf8_lossy(&out.stderr));
        Fixtures { _dir: dir, root, captured }
    }

    /// `text` as it reads with the fixtures at the captured root: this run's root, and the
    /// memory folder names Claude Code derives from it, mapped back.
    fn as_captured(&self, text: &str) -> String {
        let here = self.root.to_string_lossy();
        text.replace(here.as_ref(), self.captured).replace(&sanitize_path(&here), &sanitize_path(self.captured))
    }
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
/// order depends on the filesystem's hash seed. When this machine reads a rules folder in a
/// different order, the golden must still match with each run of rules sorted, and Mneme's
/// output must be exactly what the real Claude Code (2.1.197, `MNEME_CLAUDE_BIN`) sends for the
/// same case on this machine (`here`, captured on demand).
fn compare(
    name: &str,
    raw: &str,
    fixtures: &Fixtures,
    expected: &str,
    here: impl FnOnce() -> Result<String, Unavailable>,
    failures: &mut Vec<String>,
) {
    let actual = &fixtures.as_captured(raw);
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
    if !(same_rules && sort_runs(actual) == sort_runs(expected)) {
        failures.push(difference(name, actual, expected));
        return;
    }
    match here() {
        Ok(claude) if claude == raw => {}
        Ok(claude) => failures.push(difference(&format!("{name} (rules in another order than Claude Code lists them here)"), raw, &claude)),
        Err(why) => failures.push(format!("{name}: this machine lists rules in another order than the golden, and {why}")),
    }
}

fn difference(name: &str, actual: &str, expected: &str) -> String {
    let at = actual.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(actual.len().min(expected.len()));
    let from = at.saturating_sub(200);
    format!(
        "{name}: differs at byte {at}\n--- expected ---\n{}\n--- actual ---\n{}\n",
        &expected[from.min(expected.len())..(at + 200).min(expected.len())],
        &actual[from.min(actual.len())..(at + 200).min(actual.len())]
    )
}

/// Why Claude Code's own output could not be had on this machine (said in the failure).
#[derive(Debug, Clone)]
struct Unavailable(String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What Claude Code 2.1.197 (`MNEME_CLAUDE_BIN`) sends for `case` of fixture `fx` on this
/// machine: its instructions block, the files it attached after the Reads, and the order of
/// those Reads (testdata/conformance/capture_here.py).
fn claude_code_here(fx: &Path, case: &str) -> Result<serde_json::Value, Unavailable> {
    let bin = std::env::var("MNEME_CLAUDE_BIN").map_err(|_| {
        Unavailable("MNEME_CLAUDE_BIN is not set to compare with Claude Code here; run: export MNEME_CLAUDE_BIN=\"$(scripts/claude-code.sh)\"".into())
    })?;
    let script = repo_root().join("testdata/conformance/capture_here.py");
    let out = Command::new("python3")
        .arg(script)
        .arg(bin)
        .arg(fx)
        .arg(case)
        .output()
        .map_err(|e| Unavailable(format!("python3 did not run: {e}")))?;
    if !out.status.success() {
        return Err(Unavailable(format!("capturing Claude Code failed: {}", String::from_utf8_lossy(&out.stderr))));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| Unavailable(format!("the capture is not JSON: {e}")))
}

/// Runs every case of `set` whose golden is in `expected_dir`.
fn check_all(set: &Fixtures, expected_dir: &Path, name_of: impl Fn(&str, &str) -> String) -> usize {
    let mut failures = Vec::new();
    let mut checked = 0;
    let mut fixtures: Vec<PathBuf> = fs::read_dir(&set.root).expect("fixtures").flatten().map(|e| e.path()).collect();
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
            // Claude Code on this machine, captured only when the rule order differs, once.
            let here_cell: std::cell::OnceCell<Result<serde_json::Value, Unavailable>> = std::cell::OnceCell::new();
            let here = |key: &str| -> Result<serde_json::Value, Unavailable> {
                let got = here_cell.get_or_init(|| claude_code_here(fx, &case_name)).clone()?;
                Ok(got[key].clone())
            };
            let text = |v: serde_json::Value| v.as_str().unwrap_or_default().to_string();
            // The goldens hold `<DATE>` where the date goes; `--date` takes only a real one.
            let actual = mneme(fx, &case, &["context".into(), "--date".into(), "1999-12-31".into()]).replace("1999-12-31", "<DATE>");
            let expected = fs::read_to_string(golden.join("user_context.txt")).expect("golden");
            compare(&label, &actual, set, &expected, || here("instructions").map(text), &mut failures);
            let lazy_expected = fs::read_to_string(golden.join("lazy_context.txt")).unwrap_or_default();
            let targets = read_targets(&label, &case);
            if !targets.is_empty() {
                let mut args = vec!["touched".to_string()];
                args.extend(targets);
                let lazy = mneme(fx, &case, &args);
                // Claude Code attaches files in the order its Reads finished on that run, so here
                // Mneme is given that order.
                let lazy_here = || {
                    let mut args = vec!["touched".to_string()];
                    let reads = here("reads")?;
                    args.extend(reads.as_array().into_iter().flatten().filter_map(|r| r.as_str().map(str::to_string)));
                    let claude = here("lazy").map(text)?;
                    Ok(if mneme(fx, &case, &args) == claude { lazy.clone() } else { claude })
                };
                compare(&format!("{label} (lazy)"), &lazy, set, &lazy_expected, lazy_here, &mut failures);
            }
            checked += 1;
        }
    }
    assert!(failures.is_empty(), "{} of {checked} cases differ:\n{}", failures.len(), failures.join("\n"));
    checked
}

#[test]
fn shared_conformance_goldens() {
    let root = repo_root().join("testdata/conformance");
    let set = Fixtures::build(&root.join("make_fixtures.py"), &[], "/tmp/ccfix");
    let n = check_all(&set, &root.join("expected"), |f, c| format!("{f}__{c}"));
    assert_eq!(n, 30, "every shared golden was checked");
}

#[test]
fn realworld_goldens() {
    let root = repo_root().join("testdata/realworld");
    let set = Fixtures::build(&root.join("build_fixtures.py"), &["--root"], "/tmp/ccreal");
    let n = check_all(&set, &root, |f, c| format!("{f}/expected/{c}"));
    assert_eq!(n, 36, "every real-world golden was checked");
}

#[test]
fn extra_goldens_captured_from_claude_code() {
    let root = repo_root().join("testdata/conformance-extra");
    let set = Fixtures::build(&root.join("make_extra.py"), &[], "/tmp/ccextra");
    let n = check_all(&set, &root.join("expected"), |f, c| format!("{f}__{c}"));
    assert_eq!(n, fs::read_dir(root.join("expected")).expect("expected").count(), "every extra golden was checked");
}
