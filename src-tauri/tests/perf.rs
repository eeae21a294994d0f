//! Desktop-app figures, measured through the real window over WebDriver (like `window.rs`) and
//! printed, never asserted: how long the app takes from launch to its first paint, and how much
//! memory it holds with the 10,000-topic-file project open (`benches/make_bench_fixtures.py`,
//! built at /tmp/mneme-bench when missing).
//!
//! It needs what `window.rs` needs (a display, tauri-driver, WebKitWebDriver, the built UI), so it
//! is ignored by default. `MNEME_APP_BIN` picks the app binary (relative to the repository root;
//! default: the `mneme-app` this test was built with, target/debug/mneme-app). The figures in
//! docs/benchmarks.md come from the release app and three runs:
//!
//! ```sh
//! cargo build --release -p mneme-app --features tauri/custom-protocol
//! for i in 1 2 3; do
//!   MNEME_APP_BIN=target/release/mneme-app xvfb-run -a \
//!     cargo test -p mneme-app --features tauri/custom-protocol --test perf -- --ignored --nocapture
//! done
//! ```
//!
//! At each point it also prints every process's PSS by kind of mapping (`pss_by_mapping`), and
//! WebKit's, Mesa's, GTK's and malloc's own environment variables (`WEBKIT_*`, `GDK_*`, …) are
//! passed through to the app, so a setting can be measured before it is built in.
//!
//! Each run starts on a fresh WebKit data and cache folder (`XDG_*_HOME` in a temporary folder),
//! so no run profits from the previous one's caches; the memory folder is only read.

mod common;

use common::{on_path, start_driver, Session};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

const BENCH_ROOT: &str = "/tmp/mneme-bench";
const MEMORIES: usize = 10_000;
/// Generous: a debug app lists 10,000 files far more slowly than a release one.
const PATIENCE: Duration = Duration::from_secs(120);

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

fn app_bin() -> PathBuf {
    match std::env::var_os("MNEME_APP_BIN") {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.is_absolute() { p } else { repo_root().join(p) }
        }
        None => PathBuf::from(env!("CARGO_BIN_EXE_mneme-app")),
    }
}

fn epoch_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs_f64() * 1000.0
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// Polls `script` every 10 ms until it returns something other than null or false. Not
/// `mneme_testsupport::wait`, whose 20 ms between looks would be the resolution of the times
/// this test measures with it.
async fn poll(s: &Session, what: &str, script: &str, patience: Duration) -> Value {
    let started = Instant::now();
    loop {
        let v = s.script(script).await;
        if !(v.is_null() || v == json!(false)) {
            return v;
        }
        assert!(started.elapsed() < patience, "the window never showed {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

// --- /proc ---------------------------------------------------------------------------------

/// `(pid, ppid, comm)` of every process.
fn processes() -> Vec<(u32, u32, String)> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else { continue };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else { continue };
        // pid (comm) state ppid ...; comm may hold spaces and parentheses.
        let (Some(open), Some(close)) = (stat.find('('), stat.rfind(')')) else { continue };
        let comm = stat[open + 1..close].to_string();
        let ppid = stat[close + 1..].split_whitespace().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
        out.push((pid, ppid, comm));
    }
    out
}

fn descendants(root: u32, all: &[(u32, u32, String)]) -> Vec<(u32, String)> {
    let mut found = Vec::new();
    let mut frontier = vec![root];
    while let Some(p) = frontier.pop() {
        for (pid, ppid, comm) in all {
            if *ppid == p {
                found.push((*pid, comm.clone()));
                frontier.push(*pid);
            }
        }
    }
    found
}

/// The app process started under tauri-driver (whose pid is `driver`).
fn app_pid(driver: u32, app: &Path) -> u32 {
    let app = app.canonicalize().unwrap();
    let all = processes();
    descendants(driver, &all)
        .into_iter()
        .find(|(pid, _)| std::fs::read_link(format!("/proc/{pid}/exe")).is_ok_and(|exe| exe == app))
        .unwrap_or_else(|| panic!("no {} process under tauri-driver ({driver})", app.display()))
        .0
}

/// A `kB` field of /proc/PID/status or smaps_rollup, in KiB.
fn kib(pid: u32, file: &str, key: &str) -> u64 {
    let text = std::fs::read_to_string(format!("/proc/{pid}/{file}")).unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix(key).and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok()))
        .unwrap_or(0)
}

#[derive(Debug, Default)]
struct Memory {
    /// `(pid, comm, VmRSS KiB)` of the app and each WebKit child.
    parts: Vec<(u32, String, u64)>,
    rss: u64,
    pss: u64,
    hwm: u64,
}

impl Memory {
    fn of(app: u32) -> Memory {
        let all = processes();
        let comm = all.iter().find(|p| p.0 == app).map(|p| p.2.clone()).unwrap_or_default();
        let mut procs = vec![(app, comm)];
        procs.extend(descendants(app, &all).into_iter().filter(|(_, c)| c.starts_with("WebKit")));
        let mut m = Memory::default();
        for (pid, comm) in procs {
            let rss = kib(pid, "status", "VmRSS:");
            m.rss += rss;
            m.hwm += kib(pid, "status", "VmHWM:");
            m.pss += kib(pid, "smaps_rollup", "Pss:");
            m.parts.push((pid, comm, rss));
        }
        m
    }

    fn line(&self) -> String {
        let parts: Vec<String> = self.parts.iter().map(|(pid, c, r)| format!("{c}[{pid}] {:.1}", *r as f64 / 1024.0)).collect();
        format!(
            "VmRSS sum {:.1} MiB (PSS {:.1} MiB, VmHWM sum {:.1} MiB) = {}",
            self.rss as f64 / 1024.0,
            self.pss as f64 / 1024.0,
            self.hwm as f64 / 1024.0,
            parts.join(" + ")
        )
    }
}

/// Where one process's PSS goes, from /proc/PID/smaps: summed per kind of mapping, so a figure
/// says whether memory is the program's own heap, a shared library's pages or rendering buffers.
/// Kinds: `heap` (brk heap and anonymous mappings, which is where malloc arenas and the
/// JavaScript heap live), `stack`, `shm` (memfd, /dev/shm, DRM and SysV shared memory: pixel
/// buffers), the process's own executable, and every other file by name (libraries, fonts,
/// caches).
fn pss_by_mapping(pid: u32) -> Vec<(String, u64)> {
    let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
    let text = std::fs::read_to_string(format!("/proc/{pid}/smaps")).unwrap_or_default();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    let mut kind = String::new();
    for line in text.lines() {
        let mut fields = line.split_whitespace();
        let Some(first) = fields.next() else { continue };
        if !first.ends_with(':') {
            // A mapping's header (every other line is `Field: value`): address perms offset dev
            // inode [path], the path possibly holding spaces.
            let path = line.splitn(6, char::is_whitespace).nth(5).unwrap_or("").trim();
            kind = match path {
                "" | "[heap]" | "[anon]" => "heap".into(),
                p if p.starts_with("[anon:") => "heap".into(),
                p if p.starts_with("[stack") => "stack".into(),
                p if p.starts_with("/memfd:") || p.starts_with("/dev/shm") || p.starts_with("/dev/dri") || p.starts_with("/SYSV") => {
                    "shm".into()
                }
                p if Path::new(p) == exe => "executable".into(),
                p => Path::new(p.trim_end_matches(" (deleted)")).file_name().map_or(p.into(), |n| n.to_string_lossy().into_owned()),
            };
        } else if first == "Pss:" {
            *kinds.entry(kind.clone()).or_default() += fields.next().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
        }
    }
    let mut out: Vec<(String, u64)> = kinds.into_iter().collect();
    out.sort_by_key(|k| std::cmp::Reverse(k.1));
    out
}

/// One line per process: its PSS and the kinds of mapping holding most of it.
fn print_breakdown(when: &str, m: &Memory) {
    for (pid, comm, _) in &m.parts {
        let kinds = pss_by_mapping(*pid);
        let total: u64 = kinds.iter().map(|k| k.1).sum();
        let top: Vec<String> = kinds.iter().take(8).map(|(k, v)| format!("{k} {:.1}", *v as f64 / 1024.0)).collect();
        println!("pss, {when}: {comm}[{pid}] {:.1} MiB = {} …", total as f64 / 1024.0, top.join(", "));
    }
}

// --- the test ------------------------------------------------------------------------------

/// The fixture's folders, built when missing.
fn big_fixture() -> (PathBuf, PathBuf) {
    let big = Path::new(BENCH_ROOT).join("big");
    if !big.join("repo").is_dir() {
        let status = Command::new("python3")
            .arg(repo_root().join("benches/make_bench_fixtures.py"))
            .arg(BENCH_ROOT)
            .stdout(Stdio::null())
            .status()
            .expect("python3 runs");
        assert!(status.success(), "benches/make_bench_fixtures.py failed");
    }
    (big.join("home"), big.join("repo"))
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; see the module docs"]
async fn desktop_start_and_memory() {
    let app = app_bin();
    assert!(app.is_file(), "no app binary at {} (MNEME_APP_BIN)", app.display());
    let driver = std::env::var_os("TAURI_DRIVER").map(PathBuf::from).or_else(|| on_path("tauri-driver")).expect(
        "tauri-driver not found: cargo install tauri-driver --version '^2' --locked (or set TAURI_DRIVER)",
    );
    assert!(on_path("WebKitWebDriver").is_some(), "WebKitWebDriver not found: apt-get install webkit2gtk-driver");
    assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run under xvfb-run -a");

    let (home, repo) = big_fixture();
    let xdg = tempfile::tempdir().unwrap();
    let mut vars = BTreeMap::new();
    vars.insert("HOME".to_string(), home.to_string_lossy().into_owned());
    vars.insert("CLAUDE_CONFIG_DIR".to_string(), home.join(".claude").to_string_lossy().into_owned());
    for (key, sub) in [("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "config")] {
        vars.insert(key.to_string(), xdg.path().join(sub).to_string_lossy().into_owned());
    }
    for key in ["PATH", "DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "LANG"] {
        if let Ok(v) = std::env::var(key) {
            vars.insert(key.into(), v);
        }
    }
    // No session bus: the desktop's own (XDG_RUNTIME_DIR/bus) holds the single-instance name of
    // any Mneme running there, which would take this launch for a second one and end it.
    vars.insert("DBUS_SESSION_BUS_ADDRESS".into(), format!("unix:path={}", xdg.path().join("no-bus").display()));
    // WebKit's, Mesa's, EGL's, GTK's and glibc malloc's own variables reach the app, so the
    // effect of one can be measured before it is built in.
    const PASSED: &[&str] =
        &["WEBKIT_", "JSC_", "LIBGL_", "GALLIUM_", "MESA_", "EGL_", "__EGL_", "GDK_", "GSK_", "MALLOC_", "GLIBC_TUNABLES"];
    for (key, v) in std::env::vars() {
        if PASSED.iter().any(|p| key.starts_with(p)) {
            println!("environment: {key}={v}");
            vars.insert(key, v);
        }
    }

    let (driver, http, base) = start_driver(&driver, &vars, Duration::from_secs(120)).await;

    // (1) Start to first paint. The clock starts as the session request (which launches the
    // app) goes out; no FOLDER, as from a desktop menu, so the first screen is the Projects list.
    let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "wry", "tauri:options": {
        "application": app, "args": [],
    } } } });
    let t0 = Instant::now();
    let t0_epoch = epoch_ms();
    let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
    let session_ms = ms(t0.elapsed());
    let id = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {res}")).to_string();
    let s = Session { http: http.clone(), base: format!("{base}/session/{id}") };

    // The shell (the sidebar) is the first thing the UI renders; the first screen follows once
    // the engine has answered: Projects, since no project was opened before in this home and
    // none was named (the app never opens on the folder it was merely started in).
    let nav = poll(&s, "the sidebar", "return document.querySelector('nav.sidebar') ? performance.now() : null", PATIENCE).await;
    let nav_ms = ms(t0.elapsed());
    let screen = poll(
        &s,
        "the Projects list",
        "return document.querySelector('table.projects, [data-testid=welcome]') ? performance.now() : null",
        PATIENCE,
    )
    .await;
    let screen_ms = ms(t0.elapsed());
    let page = s
        .script(
            "const n = performance.getEntriesByType('navigation')[0];\
             return { href: location.href, origin: performance.timeOrigin,\
                      paint: performance.getEntriesByType('paint').map(p => [p.name, p.startTime]),\
                      domContentLoaded: n ? n.domContentLoadedEventEnd : null, load: n ? n.loadEventEnd : null };",
        )
        .await;
    println!("app: {}", app.display());
    println!("page: {}", page["href"]);
    let origin_ms = page["origin"].as_f64().unwrap() - t0_epoch;
    println!("start: WebDriver session answered after {session_ms:.0} ms; page navigation began at {origin_ms:.0} ms");
    let fcp = page["paint"].as_array().unwrap().iter().find(|p| p[0] == "first-contentful-paint").map(|p| p[1].as_f64().unwrap());
    match fcp {
        Some(at) => println!(
            "first paint: first-contentful-paint at {:.0} ms after launch (performance.now() {at:.0} ms) [paint timing]",
            origin_ms + at
        ),
        None => println!("first paint: WebKit reports no paint entries ({}); see the sidebar below", page["paint"]),
    }
    println!(
        "first paint: sidebar rendered, seen at {nav_ms:.0} ms after launch (performance.now() {:.0} ms) [polled every 10 ms]",
        nav.as_f64().unwrap()
    );
    println!(
        "first screen: Projects rendered, seen at {screen_ms:.0} ms (performance.now() {:.0} ms); \
         DOMContentLoaded {} ms, load {} ms (performance.now())",
        screen.as_f64().unwrap(),
        page["domContentLoaded"],
        page["load"]
    );

    // (2) Memory. Open the repository as a person would, on "What Claude sees".
    let pid = app_pid(driver.0.id(), &app);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let started = Memory::of(pid);
    println!("memory, started (Projects): {}", started.line());
    print_breakdown("started", &started);
    s.type_into("#folder", &repo.to_string_lossy()).await;
    s.click("form.folder-picker button[type=submit]").await;
    let claude_md = repo.join("CLAUDE.md");
    s.wait_for_within(
        "the project's CLAUDE.md on What Claude sees",
        "return document.querySelector(`button.file-row[data-path=\"${arguments[0]}\"]`) !== null",
        json!([claude_md]),
        PATIENCE,
    )
    .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = Memory::of(pid);
    println!("memory, project open on What Claude sees: {}", before.line());
    print_breakdown("project open", &before);

    // Then Memories with Alt+3 (a click on the sidebar when the keys do not get through).
    let alt = "\u{E00A}";
    let keys = json!({ "actions": [{ "type": "key", "id": "keyboard", "actions": [
        { "type": "keyDown", "value": alt }, { "type": "keyDown", "value": "3" },
        { "type": "keyUp", "value": "3" }, { "type": "keyUp", "value": alt },
    ] }] });
    let t_list = Instant::now();
    let pressed = s.try_send(reqwest::Method::POST, "/actions", Some(keys)).await.is_ok();
    let mut how = "Alt+3";
    let on_memories = "return location.hash === '#/memories'";
    let mut switched = false;
    if pressed {
        // Not a `wait`: keys that do not get through are no failure, the click below stands in.
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if s.script(on_memories).await == json!(true) {
                switched = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    if !switched {
        how = "a click on Memories (Alt+3 did not switch)";
        s.click("nav a[href=\"#/memories\"]").await;
    }
    let count = poll(
        &s,
        "10,000 memories listed",
        "const c = document.querySelector('.count'); const m = c && c.textContent.match(/(\\d+) of (\\d+)/);\
         return m && Number(m[1]) === arguments[0] && Number(m[2]) === arguments[0] ? c.textContent.trim() : null;"
            .replace("arguments[0]", &MEMORIES.to_string())
            .as_str(),
        PATIENCE,
    )
    .await;
    let listed_ms = ms(t_list.elapsed());
    let listed = Memory::of(pid);
    println!("memories: {how}; \"{}\" after {listed_ms:.0} ms", count.as_str().unwrap());
    println!("memory, 10,000 memories listed: {}", listed.line());
    // The web process keeps growing after the count shows (layout and painting of the list):
    // sample every 500 ms until the sum has moved less than 1 MiB over 3 s (at most 60 s).
    let mut samples = vec![Memory::of(pid)];
    let settle = Instant::now();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        samples.push(Memory::of(pid));
        let last: Vec<u64> = samples.iter().rev().take(7).map(|m| m.rss).collect();
        let spread = last.iter().max().unwrap() - last.iter().min().unwrap();
        if (last.len() == 7 && spread < 1024) || settle.elapsed() > Duration::from_secs(60) {
            break;
        }
    }
    let settled = samples.pop().unwrap();
    let settled_ms = listed_ms + ms(settle.elapsed());
    let peak = samples.iter().map(|m| m.rss).max().unwrap_or(0).max(settled.rss);
    println!(
        "memory, 10,000 memories listed, settled {settled_ms:.0} ms after Alt+3 (peak sum {:.1} MiB): {}",
        peak as f64 / 1024.0,
        settled.line()
    );
    print_breakdown("listed, settled", &settled);
    let rendered = s.script("return document.querySelectorAll('[data-testid=memory-list] li').length").await;
    println!("memories: {rendered} list items in the DOM");

    println!(
        "SUMMARY first_paint_ms={} sidebar_ms={nav_ms:.0} sidebar_perf_now_ms={:.0} first_screen_ms={screen_ms:.0} \
         pss_started_mib={:.1} rss_context_mib={:.1} rss_listed_mib={:.1} rss_settled_mib={:.1} pss_context_mib={:.1} pss_settled_mib={:.1} \
         list_ms={listed_ms:.0} settled_ms={settled_ms:.0}",
        fcp.map_or("none".to_string(), |at| format!("{:.0}", origin_ms + at)),
        nav.as_f64().unwrap(),
        started.pss as f64 / 1024.0,
        before.rss as f64 / 1024.0,
        listed.rss as f64 / 1024.0,
        settled.rss as f64 / 1024.0,
        before.pss as f64 / 1024.0,
        settled.pss as f64 / 1024.0,
    );

    // (3) Optionally the Graph of the same project, where WebGL needs the GL driver the window
    // process no longer loads (src/webkit.rs): MNEME_PERF_GRAPH_SHOT=file.png waits for the
    // layout to settle, prints the memory, and saves a screenshot to check that it drew.
    if let Some(shot) = std::env::var_os("MNEME_PERF_GRAPH_SHOT").map(PathBuf::from) {
        let t_graph = Instant::now();
        s.click("nav a[href=\"#/graph\"]").await;
        s.element("[data-testid=graph-canvas] canvas").await;
        s.wait_for_within(
            "the graph layout to settle",
            "const g = window.__mnemeGraph; return !!g && g.settled() && g.positions().pts.length > 0;",
            json!([]),
            Duration::from_secs(600),
        )
        .await;
        let graph = Memory::of(pid);
        // `pts` holds x and y of each node, one after the other.
        let nodes = s.script("return window.__mnemeGraph.positions().pts.length / 2").await;
        println!("graph: {nodes} nodes laid out after {:.0} ms", ms(t_graph.elapsed()));
        println!("memory, Graph open and settled: {}", graph.line());
        print_breakdown("graph", &graph);
        let png = s.screenshot().await.expect("a screenshot of the window");
        std::fs::write(&shot, png).unwrap();
        println!("graph: screenshot saved to {}", shot.display());
    }
    let _ = http.delete(&s.base).send().await;
}
