//! `mneme memories edit` killed at random points (SIGKILL, a 200 KB body): the memory file is
//! never torn, and when the kill lands between the file's write and the index's, the next
//! `mneme memories health` names the index line that still shows the old version and `--fix`
//! brings it in line. The health run also removes the temporary files the killed writers left.
//! The store's own crash test (`crates/store/tests/crash.rs`) covers single-file writes.

use mneme_testsupport::TestHome;
use serde_json::Value;
use std::fs;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Each edit writes a 200 KB body, so the file's write spans many blocks.
const BODY: usize = 200 * 1024;
/// Runs stop once this many kills landed between the two writes (and at least `MIN_RUNS` ran).
const WANT_BETWEEN: usize = 3;
const MIN_RUNS: usize = 30;
const MAX_RUNS: usize = 400;

fn cmd(h: &TestHome, repo: &Path, args: &[&str]) -> Command {
    let mut c = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    c.current_dir(repo).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    c
}

fn ok(h: &TestHome, repo: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let out: Output = mneme_testsupport::output_with_stdin(cmd(h, repo, args), stdin);
    assert!(out.status.success(), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

fn body(v: usize) -> Vec<u8> {
    let mut b = format!("Body of version {v}.\n").into_bytes();
    b.resize(BODY, b'a' + (v % 26) as u8);
    b
}

/// What the file says: (name, description, version of the body).
fn file_state(file: &Path) -> (String, String, usize) {
    let text = fs::read_to_string(file).expect("the memory file is there and UTF-8");
    let field = |key: &str| {
        text.lines().find_map(|l| l.strip_prefix(key)).unwrap_or_else(|| panic!("no {key} in the file")).trim().to_string()
    };
    let (name, desc) = (field("name:"), field("description:"));
    let start = text.find("Body of version ").expect("a body");
    let v: usize = text[start + 16..].split('.').next().unwrap().parse().unwrap();
    let whole = String::from_utf8(body(v)).unwrap();
    assert!(text[start..] == whole || text[start..].trim_end() == whole.trim_end(), "the body of version {v} is torn ({} bytes)", text.len());
    (name, desc, v)
}

/// The index line for `a.md`: (title, hook).
fn index_state(index: &Path) -> (String, String) {
    let text = fs::read_to_string(index).unwrap();
    let lines: Vec<&str> = text.lines().filter(|l| l.contains("](a.md)")).collect();
    assert_eq!(lines.len(), 1, "one index line for a.md: {text:?}");
    let l = lines[0];
    let title = l[l.find('[').unwrap() + 1..l.find("](").unwrap()].to_string();
    let hook = l.split_once(" — ").map(|(_, h)| h.to_string()).unwrap_or_default();
    (title, hook)
}

fn leftovers(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".mneme-"))
        .collect()
}

fn jitter(seed: u64) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    (nanos ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33
}

fn edit_args(v: usize) -> Vec<String> {
    ["memories", "edit", "a.md", "--name", &format!("Alpha {v}"), "--description", &format!("version {v}"), "--body-stdin"]
        .map(String::from)
        .to_vec()
}

#[test]
fn killed_edits_leave_a_state_health_reports_and_fixes() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    ok(&h, &repo, &["memories", "new", "--name", "Alpha 0", "--description", "version 0", "--type", "user", "--file", "a.md"], Some(&body(0)));
    let (file, index) = (mem.join("a.md"), mem.join("MEMORY.md"));

    // How long one whole edit takes here: the kills are spread over that span, so some land
    // between the file's rename and the index's.
    let started = Instant::now();
    let args = edit_args(1);
    ok(&h, &repo, &args.iter().map(String::as_str).collect::<Vec<_>>(), Some(&body(1)));
    let span_us = (started.elapsed().as_micros() as u64).max(1000);
    assert_eq!(index_state(&index), ("Alpha 1".into(), "version 1".into()));

    let (mut between, mut temps_seen, mut runs) = (0, 0, 0);
    // The version the file had before each run (killed runs may write nothing).
    let mut last = 1;
    for v in 2..MAX_RUNS + 2 {
        runs += 1;
        let args = edit_args(v);
        let mut child = cmd(&h, &repo, &args.iter().map(String::as_str).collect::<Vec<_>>())
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let input = body(v);
        // The body is written from a thread: a kill may come before the child has read it all.
        let feeder = std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
        std::thread::sleep(Duration::from_micros(jitter(v as u64) % (span_us + span_us / 4)));
        let _ = child.kill();
        child.wait().unwrap();
        feeder.join().unwrap();

        // Never torn: the file is the old version or the new one, whole.
        let (name, desc, body_v) = file_state(&file);
        assert!(body_v == v || body_v == last, "run {v}: the body is of version {body_v}, neither {last} nor {v}");
        last = body_v;
        assert_eq!((name.clone(), desc.clone()), (format!("Alpha {body_v}"), format!("version {body_v}")), "run {v}: fields and body of one version");
        temps_seen += leftovers(&mem).iter().filter(|n| n.ends_with(".tmp")).count();

        // The next run: health names exactly the lines that disagree with the file.
        let (title, hook) = index_state(&index);
        let health: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"], None)).unwrap();
        let stale = health["staleIndexLines"].as_array().expect("staleIndexLines").clone();
        let disagree = title != name || hook != desc;
        if disagree {
            between += 1;
            let fields: Vec<&str> = stale.iter().map(|s| s["field"].as_str().unwrap()).collect();
            let mut want = Vec::new();
            if title != name {
                want.push("name");
            }
            if hook != desc {
                want.push("description");
            }
            assert_eq!(fields, want, "run {v}: index shows {title:?} / {hook:?}, the file {name:?} / {desc:?}; health said {stale:?}");
            assert!(stale.iter().all(|s| s["relPath"] == "a.md" && s["indexRelPath"] == "MEMORY.md"), "{stale:?}");
            assert_eq!(stale.iter().find(|s| s["field"] == "description").map_or(desc.as_str(), |s| s["fileHas"].as_str().unwrap()), desc);
        } else {
            assert!(stale.is_empty(), "run {v}: index and file agree ({title:?} / {hook:?}) but health reports {stale:?}");
        }
        assert!(leftovers(&mem).iter().all(|n| !n.ends_with(".tmp")), "run {v}: temporary files outlive the health run: {:?}", leftovers(&mem));

        // The fix brings the line in line and removes the edit's note.
        let fixed = ok(&h, &repo, &["memories", "health", "--fix"], None);
        assert_eq!(index_state(&index), (name.clone(), desc.clone()), "run {v}: after --fix ({fixed})");
        assert_eq!(leftovers(&mem), Vec::<String>::new(), "run {v}: after --fix");
        let again: Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"], None)).unwrap();
        assert_eq!(again["staleIndexLines"], serde_json::json!([]), "run {v}");

        if between >= WANT_BETWEEN && runs >= MIN_RUNS {
            break;
        }
    }
    eprintln!("{runs} killed edits, {between} between the file and the index, {temps_seen} temporary files left by kills");
    assert!(between > 0, "none of {runs} kills landed between the file's write and the index's: the test proved nothing (a whole edit took {span_us} µs)");
}
