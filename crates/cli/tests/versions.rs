//! The version matrix: for every Claude Code release in `crates/core/data/claude-code-versions.txt`,
//! the real binary of that release is run over every fixture (the shared conformance trees, the
//! hostile extras, the real-world corpus, the version-difference families and a seeded random
//! sweep) and `mneme context --claude-version V` / `mneme touched --claude-version V` must print
//! exactly what it sent.
//!
//! The expected output is generated here, at test time, by `testdata/matrix/capture_matrix.py`
//! (cached per release and fixture content under `~/.cache/mneme/matrix-captures`, since a
//! capture costs seconds; the cache starts from the captures committed in
//! `testdata/matrix/captures.tar.xz`, so a fresh machine starts Claude Code only for cases that
//! changed. `MNEME_MATRIX_SAVE_ARCHIVE=1` rewrites that archive from the run's captures, and
//! `MNEME_MATRIX_NO_ARCHIVE=1` leaves it out). Binaries come from `MNEME_CLAUDE_BINS` (`V=PATH,V=PATH`), which
//! `scripts/claude-code.sh --matrix` prints; `npm test` requires them (`MNEME_REQUIRE_CLAUDE=1`).
//! One run at a time per machine holds `<tmp>/mneme-matrix.lock`: the fixtures are rebuilt at a
//! fixed path so the cache stays valid, and a second run waits instead of clobbering them.
//!
//! The same test is the differential run against releases outside the matrix
//! (`scripts/differential.sh`): `MNEME_MATRIX_VERSIONS` (`V,V`) replaces the matrix's releases,
//! `MNEME_MATRIX_SEED` and `MNEME_MATRIX_RANDOM` choose another random sweep. And the sweep of
//! real repositories outside the corpus (`scripts/sweep-real.sh`): `MNEME_MATRIX_REAL_CORPUS`
//! names their folder, `MNEME_MATRIX_SETS` the fixture sets to run.

use mneme_core::versions::ClaudeVersion;
use mneme_testsupport::claude_code;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repo root")
}

/// The releases to check: `MNEME_MATRIX_VERSIONS` when set, else the matrix's.
fn releases() -> Vec<ClaudeVersion> {
    match std::env::var("MNEME_MATRIX_VERSIONS") {
        Ok(list) => list
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| v.parse().unwrap_or_else(|_| panic!("MNEME_MATRIX_VERSIONS: {v:?} is not a release like 2.1.197")))
            .collect(),
        Err(_) => mneme_core::versions::matrix(),
    }
}

#[derive(serde::Deserialize)]
struct Case {
    fixture: PathBuf,
    cwd: PathBuf,
    env: BTreeMap<String, String>,
    args: Vec<String>,
    managed: Option<PathBuf>,
    reads: Vec<String>,
}

fn mneme(case: &Case, version: &str, command: &[String]) -> anyhow::Result<String> {
    let home = case.fixture.join("home");
    let managed = case.managed.clone().unwrap_or_else(|| case.fixture.join("no-managed-dir"));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_mneme"));
    cmd.env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("MNEME_DATA_DIR", case.fixture.join("mneme-data"))
        .envs(&case.env)
        .arg("--managed-dir")
        .arg(&managed)
        .args(command)
        .args(["--claude-version", version, "--cwd"])
        .arg(&case.cwd)
        .args(&case.args);
    let out = cmd.output().map_err(|e| anyhow::anyhow!("mneme did not run: {e}"))?;
    if !out.status.success() {
        anyhow::bail!("mneme {command:?} failed: {}", String::from_utf8_lossy(&out.stderr));
    }
    let text = String::from_utf8(out.stdout).map_err(|_| anyhow::anyhow!("mneme printed invalid UTF-8"))?;
    Ok(match &case.managed {
        Some(m) => text.replace(&m.to_string_lossy().to_string(), "/etc/claude-code"),
        None => text,
    })
}

/// Every order of `items` (Claude Code attaches concurrent reads in completion order).
fn permutations(items: &[String]) -> Vec<Vec<String>> {
    if items.len() <= 1 {
        return vec![items.to_vec()];
    }
    let mut out = Vec::new();
    for i in 0..items.len() {
        let mut rest = items.to_vec();
        let first = rest.remove(i);
        for mut p in permutations(&rest) {
            p.insert(0, first.clone());
            out.push(p);
        }
    }
    out
}

/// The AGENTS.md plugin's hook message, which follows the attached files, holds one piece per
/// Read in the order the hooks finish; that order is not stable even for one release (the
/// reads run in parallel), so its pieces are compared as a set. Everything before it, and
/// each piece, must still match byte for byte.
fn hook_pieces_in_any_order(text: &str) -> (String, Vec<String>) {
    const HOOK: &str = "tool.call hook additional context: ";
    match text.find(HOOK) {
        None => (text.to_string(), Vec::new()),
        Some(at) => {
            let mut pieces: Vec<String> = text[at + HOOK.len()..].split(&format!("\n\n{HOOK}")).map(str::to_string).collect();
            pieces.sort();
            (text[..at].to_string(), pieces)
        }
    }
}

fn first_difference(label: &str, actual: &str, expected: &str) -> String {
    let at = actual.bytes().zip(expected.bytes()).position(|(a, b)| a != b).unwrap_or(actual.len().min(expected.len()));
    let around = |s: &str| {
        let mut from = at.saturating_sub(160).min(s.len());
        while !s.is_char_boundary(from) {
            from -= 1;
        }
        let mut to = (at + 160).min(s.len());
        while !s.is_char_boundary(to) {
            to += 1;
        }
        s[from..to].to_string()
    };
    format!("{label}: differs at byte {at}\n--- Claude Code sent ---\n{}\n--- mneme printed ---\n{}\n", around(expected), around(actual))
}

#[test]
fn every_release_in_the_matrix_matches_its_binary() {
    let Some(bins) = claude_code::or_skip(claude_code::for_releases(&releases())) else { return };
    let tmp = std::env::temp_dir();
    let lock = fs::File::create(tmp.join("mneme-matrix.lock")).expect("lock file");
    rustix::fs::flock(&lock, rustix::fs::FlockOperation::LockExclusive).expect("lock the matrix folder");
    let root = tmp.join("mneme-matrix");
    let out = tmp.join("mneme-matrix-out");
    let _ = fs::remove_dir_all(&out);
    // 200 random trees per release: with seven releases a cold run (nothing cached) captures
    // about 3,200 cases, each a Claude Code start; 500 made the versions test alone 50 minutes
    // on two cores. Differential runs (scripts/differential.sh) sweep more.
    let random = std::env::var("MNEME_MATRIX_RANDOM").unwrap_or_else(|_| "200".into());
    let seed = std::env::var("MNEME_MATRIX_SEED").unwrap_or_else(|_| "20261201".into());
    let mut capture = Command::new("python3");
    capture
        .arg(repo_root().join("testdata/matrix/capture_matrix.py"))
        .arg("--root")
        .arg(&root)
        .arg("--out")
        .arg(&out)
        .args(["--random", &random, "--seed", &seed, "--jobs", "3"]);
    // A differential run over other releases reports, instead of failing on, a case a release
    // answers itself without sending anything (2.1.300 refuses a 4 MiB CLAUDE.md as too long);
    // the matrix's own releases must send every case.
    if std::env::var("MNEME_MATRIX_VERSIONS").is_ok() {
        capture.arg("--allow-refusals");
    }
    // scripts/sweep-real.sh: repositories outside the corpus, and only the sets asked for.
    if let Ok(corpus) = std::env::var("MNEME_MATRIX_REAL_CORPUS") {
        capture.arg("--real-corpus").arg(corpus);
    }
    if let Ok(sets) = std::env::var("MNEME_MATRIX_SETS") {
        capture.arg("--only").arg(sets);
    }
    if std::env::var_os("MNEME_MATRIX_SAVE_ARCHIVE").is_some() {
        // The archive holds the matrix as `npm test` runs it; another run's captures would replace it.
        let changed: Vec<&str> = ["MNEME_MATRIX_VERSIONS", "MNEME_MATRIX_SEED", "MNEME_MATRIX_RANDOM", "MNEME_MATRIX_REAL_CORPUS", "MNEME_MATRIX_SETS"]
            .into_iter()
            .filter(|v| std::env::var_os(v).is_some())
            .collect();
        assert!(changed.is_empty(), "MNEME_MATRIX_SAVE_ARCHIVE writes the default matrix's captures: unset {}", changed.join(", "));
        capture.arg("--save-archive");
    }
    if std::env::var_os("MNEME_MATRIX_NO_ARCHIVE").is_some() {
        capture.arg("--no-archive");
    }
    for v in releases() {
        capture.arg("--bin").arg(format!("{v}={}", bins[&v].display()));
    }
    let status = capture.status().expect("python3 runs (install python3)");
    assert!(status.success(), "capturing the real binaries failed (see above)");

    // Every capture, then each checked on a few threads: a check is one to thirty `mneme` starts
    // (a debug build, mostly busy on its own), over 3,000 of them in a row were most of this
    // test's time, and they share nothing but the fixtures they read.
    let mut cases_to_check: Vec<(String, PathBuf)> = Vec::new();
    for version in releases().iter().map(ToString::to_string) {
        let mut labels: Vec<PathBuf> = fs::read_dir(out.join(&version)).expect("captures").flatten().map(|e| e.path()).collect();
        labels.sort();
        cases_to_check.extend(labels.into_iter().map(|dir| (version.clone(), dir)));
    }
    let checked = cases_to_check.len();
    let checked_labels: Vec<String> = cases_to_check.iter().map(|(v, dir)| format!("{v} {}", dir.file_name().unwrap().to_string_lossy())).collect();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let found = std::sync::Mutex::new(Vec::new());
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).saturating_add(1).min(8);
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                loop {
                    let at = next.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let Some((version, dir)) = cases_to_check.get(at) else { break };
                    let differences = check_case(version, dir, &checked_labels[at]);
                    found.lock().unwrap().push((at, differences));
                }
            });
        }
    });
    // In the order of the cases, as when they were checked one after another.
    let mut found = found.into_inner().unwrap();
    assert_eq!(found.len(), checked, "every case was checked");
    found.sort_by_key(|(at, _)| *at);
    let failures: Vec<String> = found.into_iter().flat_map(|(_, f)| f).collect();
    // Differences found and not yet reproduced are listed, each with what is known, in
    // testdata/matrix/known-differences.txt; a difference not listed fails, and so does a
    // listed one that no longer differs (the list must shrink as Mneme catches up).
    let known = known_differences();
    let (listed, new): (Vec<&String>, Vec<&String>) =
        failures.iter().partition(|f| known.iter().any(|k| f.starts_with(&format!("{k}:"))));
    // Only a listed case that was run can be gone: a sweep or a differential run covers a part.
    let fixed: Vec<&String> = known
        .iter()
        .filter(|k| checked_labels.iter().any(|l| k.starts_with(&format!("{l} "))))
        .filter(|k| !failures.iter().any(|f| f.starts_with(&format!("{k}:"))))
        .collect();
    eprintln!("version matrix: {checked} cases checked, {} differ ({} known and listed)", failures.len(), listed.len());
    for f in &listed {
        eprintln!("known difference: {}", f.lines().next().unwrap_or(""));
    }
    assert!(new.is_empty(), "{} of {checked} cases differ from the real binary:\n{}", new.len(), new.iter().map(|s| s.as_str()).collect::<Vec<_>>().join("\n"));
    assert!(fixed.is_empty(), "these listed differences are gone; remove them from testdata/matrix/known-differences.txt: {fixed:?}");
}

/// What differs between Mneme and the capture in `dir` (one case of `version`), one line each.
fn check_case(version: &str, dir: &Path, label: &str) -> Vec<String> {
    let mut failures = Vec::new();
    let case: Case = serde_json::from_str(&fs::read_to_string(dir.join("case.json")).unwrap()).unwrap();
    // The release did not start in this folder (releases before 2.1.160 in a folder
    // named in decomposed form with no composed twin): Mneme must refuse it too.
    if let Ok(why) = fs::read_to_string(dir.join("not-started.txt")) {
        match mneme(&case, version, &["context".into()]) {
            Err(e) if e.to_string().contains(&format!("Claude Code {version} does not start in")) => {}
            Err(e) => failures.push(format!("{label} context: Claude Code did not start ({why}); mneme failed otherwise: {e}")),
            Ok(_) => failures.push(format!("{label} context: Claude Code did not start ({why}); mneme showed a view")),
        }
        return failures;
    }
    let expected = fs::read_to_string(dir.join("instructions.txt")).unwrap();
    // The captures hold `<DATE>` where the date goes; `--date` takes only a real one.
    match mneme(&case, version, &["context".into(), "--date".into(), "1999-12-31".into()]).map(|t| t.replace("1999-12-31", "<DATE>")) {
        Ok(actual) if actual == expected => {}
        Ok(actual) => {
            // Kept beside the capture for a whole diff (`diff instructions.txt mneme-instructions.txt`).
            let _ = fs::write(dir.join("mneme-instructions.txt"), &actual);
            failures.push(first_difference(&format!("{label} context"), &actual, &expected))
        }
        Err(e) => failures.push(format!("{label}: {e}")),
    }
    if !case.reads.is_empty() {
        let expected = fs::read_to_string(dir.join("lazy.txt")).unwrap();
        let orders = if case.reads.len() <= 4 { permutations(&case.reads) } else { vec![case.reads.clone()] };
        let mut last = Ok(String::new());
        let matched = orders.iter().any(|order| {
            let mut cmd = vec!["touched".to_string()];
            cmd.extend(order.iter().cloned());
            last = mneme(&case, version, &cmd);
            last.as_ref().is_ok_and(|got| hook_pieces_in_any_order(got) == hook_pieces_in_any_order(&expected))
        });
        if !matched {
            match last {
                Ok(actual) => {
                    let _ = fs::write(dir.join("mneme-lazy.txt"), &actual);
                    failures.push(first_difference(&format!("{label} touched"), &actual, &expected))
                }
                Err(e) => failures.push(format!("{label} touched: {e}")),
            }
        }
    }
    failures
}

/// `VERSION LABEL KIND` lines (`#` starts a comment).
fn known_differences() -> Vec<String> {
    let text = fs::read_to_string(repo_root().join("testdata/matrix/known-differences.txt")).unwrap_or_default();
    text.lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

/// `scripts/sweep-real.sh`'s parts without a Claude Code: a corpus outside `testdata/realworld`
/// is built with its own cases (`build_fixtures.py --corpus`, `cases.json`), and the capture
/// refuses a fixture set it does not have instead of capturing nothing.
#[test]
fn a_sweep_corpus_builds_with_its_own_cases_and_unknown_sets_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let corpus = tmp.path().join("corpus");
    let entry = corpus.join("someone__repo");
    fs::create_dir_all(entry.join("tree/pkg")).unwrap();
    fs::write(entry.join("tree/CLAUDE.md"), "ROOT\n").unwrap();
    fs::write(entry.join("tree/pkg/x.ts"), "x\n").unwrap();
    fs::write(entry.join("cases.json"), r#"{"read_x": ["repo", "--tool-read {repo}/pkg/x.ts"], "in_pkg": ["repo/pkg", ""]}"#).unwrap();
    let root = tmp.path().join("built");
    let status = Command::new("python3")
        .arg(repo_root().join("testdata/realworld/build_fixtures.py"))
        .arg("--corpus")
        .arg(&corpus)
        .arg("--root")
        .arg(&root)
        .stdout(std::process::Stdio::null())
        .status()
        .expect("python3 runs");
    assert!(status.success());
    let fx = root.join("someone__repo");
    assert_eq!(fs::read_to_string(fx.join("repo/CLAUDE.md")).unwrap(), "ROOT\n");
    assert!(fx.join("repo/.git").is_dir(), "the copy is a git repository");
    let mut cases: Vec<String> = fs::read_dir(fx.join("cases")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    cases.sort();
    assert_eq!(cases, ["in_pkg.env", "read_x.env", "root.env"]);
    let read = fs::read_to_string(fx.join("cases/read_x.env")).unwrap();
    assert!(read.contains(&format!("STUB_ARGS='--tool-read {}/pkg/x.ts'", fx.join("repo").display())), "{read}");
    assert_eq!(fs::read_to_string(fx.join("cases/in_pkg.env")).unwrap(), "CWD='repo/pkg'\n");

    let out = Command::new("python3")
        .arg(repo_root().join("testdata/matrix/capture_matrix.py"))
        .args(["--root"])
        .arg(tmp.path().join("m"))
        .args(["--out"])
        .arg(tmp.path().join("o"))
        .args(["--bin", "2.1.332=/nonexistent", "--only", "sweep"])
        .output()
        .expect("python3 runs");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no fixture set sweep") && err.contains("shared"), "{err}");
}
