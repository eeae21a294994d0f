//! The real window, driven over W3C WebDriver: tauri-driver starts WebKitWebDriver, which
//! starts the built `mneme-app` on a throwaway HOME. The test checks that the window shows the
//! built UI under its CSP, that a command called through the page's Tauri IPC answers the same
//! context block as the engine (what `mneme context` prints), that a settings toggle writes
//! `settings.json` keeping its other keys, and that a change on disk reaches the page as a
//! `files-changed` event.
//!
//! It needs a display and two programs, so it is ignored by default. Run it with:
//!
//! ```sh
//! apt-get install -y xvfb xauth webkit2gtk-driver      # WebKitWebDriver
//! cargo install tauri-driver --version '^2' --locked
//! npm run build:ui                                     # ui/dist, embedded by custom-protocol
//! xvfb-run -a cargo test -p mneme-app --features tauri/custom-protocol --test window -- --ignored
//! ```
//!
//! `MNEME_WINDOW_SHOT=/path/shot.png` saves a WebDriver screenshot of the window.

use futures_util::FutureExt;
use mneme_api::{ContextRequest, Environment, Mneme, SystemClock};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DATE: &str = "2025-11-29";

/// Two distinct free ports (both held while choosing, so they differ).
fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Stops tauri-driver however the test ends. It runs in its own process group, and the whole
/// group gets SIGTERM: a SIGKILLed tauri-driver would leave WebKitWebDriver running.
struct Driver(Child);

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

struct Session {
    http: reqwest::Client,
    base: String,
}

impl Session {
    async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        assert!(status.is_success(), "WebDriver {method} {path} answered {status}: {v}");
        v["value"].clone()
    }

    /// Runs `script` in the page; it gets `args` and must call `done(result)`.
    async fn run_async(&self, script: &str, args: Value) -> Value {
        let script = format!("const done = arguments[arguments.length - 1];\n{script}");
        self.send(reqwest::Method::POST, "/execute/async", Some(json!({ "script": script, "args": args }))).await
    }

    /// Calls a Tauri command through the page's IPC; `Ok(answer)` or `Err({code, message})`.
    async fn invoke(&self, command: &str, args: Value) -> Result<Value, Value> {
        let v = self
            .run_async(
                "window.__TAURI_INTERNALS__.invoke(arguments[0], arguments[1])\
                   .then(ok => done({ ok }), err => done({ err }));",
                json!([command, args]),
            )
            .await;
        match v.get("err") {
            Some(e) => Err(e.clone()),
            None => Ok(v["ok"].clone()),
        }
    }

    async fn script(&self, script: &str) -> Value {
        self.send(reqwest::Method::POST, "/execute/sync", Some(json!({ "script": script, "args": [] }))).await
    }
}

/// The environment the app gets: nothing from this process except what the window needs.
fn app_vars(home: &TestHome) -> BTreeMap<String, String> {
    let mut vars: BTreeMap<String, String> = home.env.vars.clone();
    vars.insert("HOME".into(), home.home().to_string_lossy().into_owned());
    for key in ["PATH", "DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "LANG"] {
        if let Ok(v) = std::env::var(key) {
            vars.insert(key.into(), v);
        }
    }
    vars
}

#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; see the module docs"]
async fn the_window_answers_like_the_engine() {
    let app = PathBuf::from(env!("CARGO_BIN_EXE_mneme-app"));
    let driver = std::env::var_os("TAURI_DRIVER").map(PathBuf::from).or_else(|| on_path("tauri-driver")).expect(
        "tauri-driver not found: cargo install tauri-driver --version '^2' --locked (or set TAURI_DRIVER)",
    );
    assert!(on_path("WebKitWebDriver").is_some(), "WebKitWebDriver not found: apt-get install webkit2gtk-driver");
    assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run under xvfb-run -a");

    // A repository with a CLAUDE.md, an @include and a rule; a user CLAUDE.md; auto memory.
    let home = TestHome::new();
    let repo = home.git_repo("code/app");
    home.write(repo.join("CLAUDE.md"), "# App\n\nUse tabs. See @docs/style.md\n");
    home.write(repo.join("docs/style.md"), "Style: short functions.\n");
    home.write(repo.join(".claude/rules/testing.md"), "Always run the tests.\n");
    home.write(home.config_home().join("CLAUDE.md"), "I am the user layer.\n");
    let settings = home.write(home.config_home().join("settings.json"), "{\n  \"theme\": \"dark\",\n  \"env\": { \"KEEP\": \"1\" }\n}\n");
    let memdir = home.memdir_for(&repo);
    home.write(memdir.join("testing.md"), &mneme_testsupport::topic("Testing", "how we test", "feedback", "Run it."));
    home.write(memdir.join("MEMORY.md"), "- [Testing](testing.md) — how we test\n");

    // A stand-in desktop editor (named like one, so it is waited on) that records its argument.
    let editor = home.write("bin/code", "#!/bin/sh\nprintf '%s' \"$1\" > \"$(dirname \"$0\")/opened\"\n");
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut vars = app_vars(&home);
    vars.insert("VISUAL".into(), editor.to_string_lossy().into_owned());
    let (port, native_port) = free_ports();
    let _driver = Driver(
        Command::new(&driver)
            .args(["--port", &port.to_string(), "--native-port", &native_port.to_string()])
            .env_clear()
            .envs(&vars)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("tauri-driver starts"),
    );
    let http = reqwest::Client::builder().timeout(Duration::from_secs(60)).build().unwrap();
    let base = format!("http://127.0.0.1:{port}");
    let started = Instant::now();
    while !http.get(format!("{base}/status")).send().await.is_ok_and(|r| r.status().is_success()) {
        assert!(started.elapsed() < Duration::from_secs(20), "tauri-driver did not answer on {base}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "wry", "tauri:options": {
        "application": app, "args": [repo],
    } } } });
    let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
    let id = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {res}")).to_string();
    let s = Session { http: http.clone(), base: format!("{base}/session/{id}") };

    // A failed check still closes the session (and takes the screenshot).
    let outcome = std::panic::AssertUnwindSafe(check_window(&s, &home, &repo, &memdir, &settings, &vars))
        .catch_unwind()
        .await;
    if let Some(shot) = std::env::var_os("MNEME_WINDOW_SHOT") {
        match http.get(format!("{}/screenshot", s.base)).send().await {
            Ok(res) => {
                let v: Value = res.json().await.unwrap_or_default();
                std::fs::write(&shot, decode_base64(v["value"].as_str().unwrap_or(""))).unwrap();
            }
            Err(e) => eprintln!("no screenshot: {e}"),
        }
    }
    let _ = http.delete(&s.base).send().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

async fn check_window(
    s: &Session,
    home: &TestHome,
    repo: &Path,
    memdir: &Path,
    settings: &Path,
    vars: &BTreeMap<String, String>,
) {
    // The built UI, not a dev server: served by the custom protocol, styled under the CSP.
    let href = s.script("return location.href").await;
    assert!(
        href.as_str().unwrap_or("").starts_with("tauri://"),
        "the window shows {href}, not the embedded UI: build with --features tauri/custom-protocol (after npm run build:ui)"
    );
    assert_eq!(s.send(reqwest::Method::GET, "/title", None).await, "Mneme");
    let nav = s.script("return document.body.innerText").await;
    assert!(nav.as_str().unwrap().contains("What Claude sees"), "the UI did not render: {nav}");

    // `home` reports the folder the app was opened on.
    let info = s.invoke("home", json!({})).await.unwrap();
    assert_eq!(info["cwd"], json!(repo));
    assert_eq!(info["configHome"], json!(home.config_home()));

    // The context block through IPC is the engine's, byte for byte (what `mneme context`
    // prints), for the same environment the app was given.
    let view = s.invoke("context", json!({ "req": { "cwd": repo, "date": DATE } })).await.unwrap();
    let mut env = Environment::with_home(home.home());
    env.vars = vars.clone();
    let engine = Mneme::new(env, Arc::new(SystemClock));
    let expected = engine
        .context(&ContextRequest { cwd: repo.to_path_buf(), date: Some(DATE.into()), ..Default::default() })
        .unwrap();
    assert_eq!(view["block"].as_str().unwrap(), expected.block);
    assert!(expected.block.contains("Style: short functions.") && expected.block.contains("I am the user layer."));
    assert_eq!(view["files"].as_array().unwrap().len(), expected.files.len());
    // … and the CLI's, when it was built alongside.
    let cli = PathBuf::from(env!("CARGO_BIN_EXE_mneme-app")).with_file_name("mneme");
    if cli.is_file() {
        let out = Command::new(&cli)
            .args(["context", "--date", DATE])
            .current_dir(repo)
            .env_clear()
            .envs(vars)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(view["block"].as_str().unwrap(), String::from_utf8(out.stdout).unwrap());
    }

    // Errors arrive as the api's {code, message}.
    let err = s.invoke("context", json!({ "req": { "cwd": repo.join("nope") } })).await.unwrap_err();
    assert_eq!(err["code"], "not_found", "{err}");

    // Toggling auto memory writes one key of settings.json and keeps the rest.
    assert_eq!(s.invoke("machine_settings", json!({})).await.unwrap()["autoMemoryEnabled"], Value::Null);
    let written = s.invoke("set_auto_memory", json!({ "req": { "on": false } })).await.unwrap();
    assert_eq!(written, json!(settings));
    let text = std::fs::read_to_string(settings).unwrap();
    assert!(text.contains("\"env\": { \"KEEP\": \"1\" }") && text.contains("\"theme\": \"dark\"") && text.contains("\"autoMemoryEnabled\": false"), "{text}");
    assert_eq!(s.invoke("machine_settings", json!({})).await.unwrap()["autoMemoryEnabled"], false);
    let view = s.invoke("context", json!({ "req": { "cwd": repo, "date": DATE } })).await.unwrap();
    assert_eq!(view["autoMemory"]["enabled"], false);
    assert!(!view["block"].as_str().unwrap().contains("MEMORY.md"), "auto memory off: MEMORY.md is no longer loaded");

    // "Open in editor" runs $VISUAL on the file and waits for it to close.
    let claude_md = repo.join("CLAUDE.md");
    let run = s.invoke("open_in_editor", json!({ "path": claude_md })).await.unwrap();
    assert_eq!(run["from"], "VISUAL", "{run}");
    assert_eq!(run["waited"], true, "{run}");
    let opened = home.root.join("bin/opened");
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), claude_md.to_string_lossy());
    let err = s.invoke("open_in_editor", json!({ "path": "relative.md" })).await.unwrap_err();
    assert_eq!(err["code"], "invalid_input", "{err}");

    // A change on disk reaches the page as a typed `files-changed` event.
    s.invoke("watch", json!({ "req": { "cwd": repo } })).await.unwrap();
    s.run_async(
        "window.__mnemeChanges = [];\
         const handler = window.__TAURI_INTERNALS__.transformCallback(e => window.__mnemeChanges.push(e.payload));\
         window.__TAURI_INTERNALS__.invoke('plugin:event|listen', { event: 'files-changed', target: { kind: 'Any' }, handler })\
           .then(() => done(true), e => done(String(e)));",
        json!([]),
    )
    .await;
    let topic = memdir.join("new-topic.md");
    std::fs::write(&topic, mneme_testsupport::topic("New", "fresh", "project", "Hello.")).unwrap();
    let started = Instant::now();
    loop {
        let seen = s.script("return window.__mnemeChanges").await;
        let paths: Vec<String> = seen
            .as_array()
            .unwrap()
            .iter()
            .flat_map(|p| p["paths"].as_array().cloned().unwrap_or_default())
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        if paths.iter().any(|p| Path::new(p) == topic) {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(10), "no files-changed event for {topic:?}; got {seen}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn decode_base64(s: &str) -> Vec<u8> {
    let table = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|c| !c.is_ascii_whitespace() && *c != b'=').collect();
    let mut out = Vec::with_capacity(bytes.len() * 3 / 4);
    for chunk in bytes.chunks(4) {
        let v: Vec<u32> = chunk.iter().map(|&c| u32::from(table(c))).collect();
        let n = v.iter().enumerate().fold(0u32, |acc, (i, x)| acc | (x << (18 - 6 * i)));
        for i in 0..chunk.len().saturating_sub(1) {
            out.push((n >> (16 - 8 * i)) as u8);
        }
    }
    out
}
