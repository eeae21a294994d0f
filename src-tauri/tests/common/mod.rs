//! WebDriver helpers shared by the real-window tests (`window.rs`, `perf.rs`): tauri-driver
//! in its own process group, and a W3C session with the few commands the tests use.
#![allow(dead_code)]

use mneme_testsupport::wait;
use serde_json::{json, Value};
use std::net::TcpListener;
use std::path::PathBuf;
use std::collections::BTreeMap;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Two distinct free ports (both held while choosing, so they differ). They are released
/// before tauri-driver binds them, so another process may take one meanwhile: [`start_driver`]
/// checks that the listeners are its own and starts again on fresh ports when not.
pub fn free_ports() -> (u16, u16) {
    let a = TcpListener::bind("127.0.0.1:0").unwrap();
    let b = TcpListener::bind("127.0.0.1:0").unwrap();
    (a.local_addr().unwrap().port(), b.local_addr().unwrap().port())
}

/// The inode of the socket listening on 127.0.0.1:`port`, from /proc/net/tcp.
fn listener_inode(port: u16) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let local = format!("0100007F:{port:04X}");
    table.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        // Fields: sl, local address, remote address, state (0A = listening), …, inode (10th).
        (f.len() > 9 && f[1] == local && f[3] == "0A").then(|| f[9].to_string())
    })
}

/// Whether a process of the process group `group` holds the socket with `inode`.
fn group_holds(group: u32, inode: &str) -> bool {
    let want = format!("socket:[{inode}]");
    let Ok(procs) = std::fs::read_dir("/proc") else { return false };
    procs.flatten().filter(|p| p.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))).any(|p| {
        // The process group is the 5th field of stat, after the parenthesised command name.
        let in_group = std::fs::read_to_string(p.path().join("stat"))
            .ok()
            .and_then(|s| s.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(2).map(str::to_string)))
            .is_some_and(|g| g == group.to_string());
        in_group
            && std::fs::read_dir(p.path().join("fd"))
                .map(|fds| fds.flatten().any(|fd| std::fs::read_link(fd.path()).is_ok_and(|l| l.as_os_str() == want.as_str())))
                .unwrap_or(false)
    })
}

pub fn on_path(program: &str) -> Option<PathBuf> {
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path).map(|d| d.join(program)).find(|p| p.is_file())
}

/// Stops tauri-driver however the test ends. It runs in its own process group, and the whole
/// group gets SIGTERM: a SIGKILLed tauri-driver would leave WebKitWebDriver running.
pub struct Driver(pub Child);

/// Starts tauri-driver with exactly `vars` as its environment (so the app it launches sees a
/// fixture HOME) on free ports, and waits until it answers; returns it, an HTTP client with
/// `timeout`, and the WebDriver base URL.
pub async fn start_driver(
    driver: &Path,
    vars: &BTreeMap<String, String>,
    timeout: Duration,
) -> (Driver, reqwest::Client, String) {
    let http = reqwest::Client::builder().timeout(timeout).build().expect("http client");
    let started = Instant::now();
    // Each start gets fresh ports; one is started again when a port it was given turns out to
    // be someone else's (another test run's driver, say), so the test never drives theirs.
    for attempt in 1.. {
        assert!(started.elapsed() < Duration::from_secs(60), "tauri-driver did not start on free ports within 60 s ({attempt} tries)");
        let (port, native_port) = free_ports();
        let child = Command::new(driver)
            .args(["--port", &port.to_string(), "--native-port", &native_port.to_string()])
            .env_clear()
            .envs(vars)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("tauri-driver starts");
        let mut driver_proc = Driver(child);
        let group = driver_proc.0.id();
        let base = format!("http://127.0.0.1:{port}");
        let try_started = Instant::now();
        // Not a `wait`: running out of time here is no failure but a reason to try other ports.
        let ours = loop {
            if matches!(driver_proc.0.try_wait(), Ok(Some(_))) {
                break false; // it could not bind a port
            }
            let held = |p| listener_inode(p).map(|i| group_holds(group, &i));
            match (held(port), held(native_port)) {
                (Some(true), Some(true)) => break true,
                (Some(false), _) | (_, Some(false)) => break false,
                _ => {}
            }
            if try_started.elapsed() > Duration::from_secs(20) {
                break false; // alive but listening on neither: try again on other ports
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if !ours {
            drop(driver_proc);
            continue;
        }
        // A failure shows how the last look at its status went.
        wait::result_async_within(Duration::from_secs(20), &format!("tauri-driver answering on {base}"), || async {
            match http.get(format!("{base}/status")).send().await {
                Ok(r) if r.status().is_success() => Ok(()),
                Ok(r) => Err(format!("status {}", r.status())),
                Err(e) => Err(e.to_string()),
            }
        })
        .await;
        return (driver_proc, http, base);
    }
    unreachable!("the loop returns or fails")
}

impl Drop for Driver {
    fn drop(&mut self) {
        let group = format!("-{}", self.0.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        // A grace period, not a `wait`: a driver still there after it is killed, no failure.
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline && matches!(self.0.try_wait(), Ok(None)) {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.0.wait();
    }
}

pub struct Session {
    pub http: reqwest::Client,
    pub base: String,
}

/// The W3C key under which WebDriver passes element references.
pub const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long the page gets to show something after an action.
pub const PATIENCE: Duration = Duration::from_secs(15);

impl Session {
    /// One WebDriver request; `Err(value)` when the driver answers with an error.
    pub async fn try_send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Result<Value, Value> {
        let mut req = self.http.request(method.clone(), format!("{}{path}", self.base));
        if let Some(b) = body {
            req = req.json(&b);
        }
        let res = req.send().await.unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        let status = res.status();
        let v: Value = res.json().await.unwrap();
        if status.is_success() {
            Ok(v["value"].clone())
        } else {
            Err(v["value"].clone())
        }
    }

    pub async fn send(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> Value {
        match self.try_send(method.clone(), path, body).await {
            Ok(v) => v,
            Err(e) => panic!("WebDriver {method} {path} failed: {e}"),
        }
    }

    /// Runs `script` in the page; it gets `args` and must call `done(result)`.
    pub async fn run_async(&self, script: &str, args: Value) -> Value {
        let script = format!("const done = arguments[arguments.length - 1];\n{script}");
        self.send(reqwest::Method::POST, "/execute/async", Some(json!({ "script": script, "args": args }))).await
    }

    /// Calls a Tauri command through the page's IPC; `Ok(answer)` or `Err({code, message})`.
    pub async fn invoke(&self, command: &str, args: Value) -> Result<Value, Value> {
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

    pub async fn script(&self, script: &str) -> Value {
        self.script_with(script, json!([])).await
    }

    pub async fn script_with(&self, script: &str, args: Value) -> Value {
        self.send(reqwest::Method::POST, "/execute/sync", Some(json!({ "script": script, "args": args }))).await
    }

    /// Runs `script` (with `args`) until it returns something other than null, false or "".
    pub async fn wait_for(&self, what: &str, script: &str, args: Value) -> Value {
        self.wait_for_within(what, script, args, PATIENCE).await
    }

    /// [`Session::wait_for`] with its own patience.
    pub async fn wait_for_within(&self, what: &str, script: &str, args: Value, patience: Duration) -> Value {
        wait::value_async_within(patience, &format!("the window to show {what}"), || {
            let args = args.clone();
            async move {
                let v = self.script_with(script, args).await;
                (!(v.is_null() || v == json!(false) || v == json!(""))).then_some(v)
            }
        })
        .await
    }

    /// The element matching `css`, once it is there.
    pub async fn element(&self, css: &str) -> String {
        // A failure shows the driver's last answer (no such element, or something else).
        let v = wait::result_async_within(PATIENCE, &format!("an element matching {css}"), || {
            self.try_send(reqwest::Method::POST, "/element", Some(json!({ "using": "css selector", "value": css })))
        })
        .await;
        v[ELEMENT].as_str().unwrap_or_else(|| panic!("not an element: {v}")).to_string()
    }

    pub async fn click(&self, css: &str) {
        let el = self.element(css).await;
        self.send(reqwest::Method::POST, &format!("/element/{el}/click"), Some(json!({}))).await;
    }

    /// Replaces an input's text by typing, as a person would.
    pub async fn type_into(&self, css: &str, text: &str) {
        let el = self.element(css).await;
        self.send(reqwest::Method::POST, &format!("/element/{el}/clear"), Some(json!({}))).await;
        self.send(reqwest::Method::POST, &format!("/element/{el}/value"), Some(json!({ "text": text }))).await;
    }

    /// The text the element shows (WebDriver's rendered text).
    pub async fn text(&self, css: &str) -> String {
        let el = self.element(css).await;
        self.send(reqwest::Method::GET, &format!("/element/{el}/text"), None).await.as_str().unwrap().to_string()
    }

    pub async fn selected(&self, css: &str) -> bool {
        let el = self.element(css).await;
        self.send(reqwest::Method::GET, &format!("/element/{el}/selected"), None).await.as_bool().unwrap()
    }

    /// A PNG of the window's page.
    pub async fn screenshot(&self) -> Result<Vec<u8>, Value> {
        let v = self.try_send(reqwest::Method::GET, "/screenshot", None).await?;
        Ok(decode_base64(v.as_str().unwrap_or("")))
    }
}

pub fn decode_base64(s: &str) -> Vec<u8> {
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
