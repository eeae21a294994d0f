//! The real window, driven over W3C WebDriver: tauri-driver starts WebKitWebDriver, which
//! starts the built `mneme-app` on a throwaway HOME. The test uses the UI as a person would:
//! it opens the fixture project with the folder picker, checks that "What Claude sees" lists
//! the engine's files in load order and shows its block byte for byte, opens a file in the
//! editor with the "Open in editor" button, flips the auto-memory toggle on Settings with a
//! click (settings.json gains one key, every other byte stays) and sees an edit made on disk
//! reach the page by itself (the `files-changed` event). Through the page's Tauri IPC it also
//! checks what the UI cannot show: the block equals `mneme context`'s, errors are the api's
//! `{code, message}`, and the newer commands (`watching`, `set_auto_memory_directory`,
//! `merge_memory` and its plan) answer like the engine. The background scheduler runs while the
//! window is open: a Claude Code turn ending in the project reaches the Dreams screen as the
//! typed `scheduler-activity` event. Two more tests start the app several times on one HOME: the
//! window opens where it was when the app last stopped (and centered when that place is on no
//! screen), and a second launch hands over to the running app and exits (on a private D-Bus
//! session bus; the other tests run with none, as CI does), and a second launch naming a folder
//! makes the running window offer it (open by the keyboard, or the reason it cannot be opened).
//!
//! They need a display and three programs, so they are ignored by default. Run them with:
//!
//! ```sh
//! apt-get install -y xvfb xauth webkit2gtk-driver dbus # WebKitWebDriver, dbus-daemon
//! cargo install tauri-driver --version '^2' --locked
//! npm run build:ui                                     # ui/dist, embedded by custom-protocol
//! cargo build -p mneme                                 # optional: the CLI comparison runs when it is built
//! scripts/with-xvfb.sh cargo test -p mneme-app --features tauri/custom-protocol --test window -- --ignored
//! ```
//!
//! `MNEME_WINDOW_SHOT=docs/screenshots/desktop.png` (relative to the repository root) saves a
//! screenshot of the window on "What Claude sees"; when a check fails, the window at that
//! moment goes beside it as `desktop.failure.png`. The second-launch test puts the window with
//! its "Open …?" banner beside it too, as `desktop-open-asked.png` (and `desktop-open-refused.png`).


mod common;

use common::{on_path, start_driver, Session, PATIENCE};
use futures_util::FutureExt;
use mneme_api::{ContextRequest, Environment, Mneme, SystemClock};
use mneme_app::webkit::{GL_OFF, JIT_LATER};
use mneme_testsupport::{wait, TestHome};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

const DATE: &str = "2025-11-29";
/// The address a link in the page opens (never fetched: the stand-in opener only records it).
const LINK: &str = "https://example.invalid/from-a-preview";


/// `MNEME_WINDOW_SHOT`, relative paths taken from the repository root.
fn shot_path() -> Option<PathBuf> {
    let p = PathBuf::from(std::env::var_os("MNEME_WINDOW_SHOT")?);
    Some(if p.is_absolute() { p } else { Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(p) })
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
    // No session bus, as under Xvfb in CI: the single-instance plugin finds none and the app
    // starts anyway. Never the desktop's own bus (through XDG_RUNTIME_DIR/bus), where a Mneme the
    // developer runs would take this launch for a second one.
    vars.insert("DBUS_SESSION_BUS_ADDRESS".into(), format!("unix:path={}", home.root.join("no-bus").display()));
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
    assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run under scripts/with-xvfb.sh");

    // A repository with a CLAUDE.md, an @include and a rule; a user CLAUDE.md; auto memory; an
    // orphaned project folder with one memory to merge.
    let home = TestHome::new();
    let repo = home.git_repo("home/code/app");
    home.write(repo.join("CLAUDE.md"), "# App\n\nUse tabs. See @docs/style.md\n");
    home.write(repo.join("docs/style.md"), "Style: short functions.\n");
    home.write(repo.join(".claude/rules/testing.md"), "Always run the tests.\n");
    home.write(home.config_home().join("CLAUDE.md"), "I am the user layer.\n");
    let settings = home.write(home.config_home().join("settings.json"), SETTINGS);
    let memdir = home.memdir_for(&repo);
    home.write(memdir.join("testing.md"), &mneme_testsupport::topic("Testing", "how we test", "feedback", "Run it."));
    home.write(memdir.join("MEMORY.md"), "- [Testing](testing.md) — how we test\n");
    let orphan = home.config_home().join("projects/-gone-project");
    home.write(orphan.join("memory/old-note.md"), &mneme_testsupport::topic("Old note", "from a deleted folder", "project", "Keep it."));
    home.write(orphan.join("memory/MEMORY.md"), "- [Old note](old-note.md) — from a deleted folder\n");

    // A stand-in desktop editor (named like one, so it is waited on) that records its argument,
    // and any of the variables the app sets only for GTK, WebKit and its web process
    // (src/webkit.rs), which programs it starts must not inherit.
    let launch_only = GL_OFF.iter().chain(JIT_LATER).map(|(name, _)| *name).collect::<Vec<_>>().join("|");
    let editor = home.write(
        "bin/code",
        &format!(
            "#!/bin/sh\nprintf '%s' \"$1\" > \"$(dirname \"$0\")/opened\"\n\
             env | grep -E '^({launch_only})=' > \"$(dirname \"$0\")/gl-env\"\n\
             exit 0\n"
        ),
    );
    std::fs::set_permissions(&editor, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    // A stand-in for the system's URL opener (the first program the opener plugin tries), first
    // on the app's PATH: it records the address a link in the page handed over.
    let opener = home.write("bin/xdg-open", "#!/bin/sh\nprintf '%s' \"$1\" > \"$(dirname \"$0\")/opened-url\"\n");
    std::fs::set_permissions(&opener, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let mut vars = app_vars(&home);
    vars.insert("VISUAL".into(), editor.to_string_lossy().into_owned());
    let path = format!("{}:{}", opener.parent().unwrap().display(), vars.get("PATH").map(String::as_str).unwrap_or("/usr/bin:/bin"));
    vars.insert("PATH".into(), path);
    let (driver, http, base) = start_driver(&driver, &vars, Duration::from_secs(60)).await;

    // The app opens on the home folder; the test opens the project through the UI.
    let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "wry", "tauri:options": {
        "application": app, "args": [home.home()],
    } } } });
    let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
    let id = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {res}")).to_string();
    let s = Session { http: http.clone(), base: format!("{base}/session/{id}") };

    // The web process started with JavaScriptCore's raised JIT thresholds (src/webkit.rs): the
    // app sets them only until the window is up, so this proves it was up in time.
    let web_env = web_process_environ(driver.0.id(), &app);
    for (name, value) in JIT_LATER {
        assert!(web_env.iter().any(|v| *v == format!("{name}={value}")), "the web process started without {name}={value}: {web_env:?}");
    }

    // A failed check still closes the session (and saves what the window showed).
    let fixture = Fixture { home: &home, repo: &repo, memdir: &memdir, settings: &settings, orphan: &orphan, vars: &vars };
    let outcome = std::panic::AssertUnwindSafe(check_window(&s, &fixture)).catch_unwind().await;
    if outcome.is_err() {
        if let (Some(shot), Ok(png)) = (shot_path(), s.screenshot().await) {
            let failed = shot.with_extension("failure.png");
            let _ = std::fs::write(&failed, png);
            eprintln!("the window at the failure: {}", failed.display());
        }
    }
    let _ = http.delete(&s.base).send().await;
    if let Err(panic) = outcome {
        std::panic::resume_unwind(panic);
    }
}

/// The environment the window's WebKitWebProcess started with (`/proc/PID/environ`): a
/// descendant of the app process that tauri-driver (pid `driver`) started.
fn web_process_environ(driver: u32, app: &Path) -> Vec<String> {
    let app_pid = app_pid(driver, app);
    let descends = |mut pid: u32, from: u32| loop {
        match parent_of(pid) {
            Some(p) if p == from => return true,
            Some(p) if p > 1 => pid = p,
            _ => return false,
        }
    };
    let web = *pids()
        .iter()
        .find(|&&p| {
            descends(p, app_pid) && std::fs::read_to_string(format!("/proc/{p}/comm")).is_ok_and(|c| c.trim() == "WebKitWebProces")
        })
        .expect("the app's WebKitWebProcess");
    let environ = std::fs::read(format!("/proc/{web}/environ")).unwrap();
    environ.split(|&b| b == 0).filter(|v| !v.is_empty()).map(|v| String::from_utf8_lossy(v).into_owned()).collect()
}

fn pids() -> Vec<u32> {
    std::fs::read_dir("/proc").unwrap().flatten().filter_map(|e| e.file_name().to_str()?.parse().ok()).collect()
}

fn parent_of(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid ...; comm may hold spaces and parentheses.
    stat[stat.rfind(')')? + 1..].split_whitespace().nth(1)?.parse().ok()
}

/// The `mneme-app` process that tauri-driver (pid `driver`) started, through WebKitWebDriver.
fn app_pid(driver: u32, app: &Path) -> u32 {
    let app = app.canonicalize().unwrap();
    let descends = |mut pid: u32| loop {
        match parent_of(pid) {
            Some(p) if p == driver => return true,
            Some(p) if p > 1 => pid = p,
            _ => return false,
        }
    };
    pids()
        .into_iter()
        .find(|&p| descends(p) && std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == app))
        .expect("the app process under tauri-driver")
}

const SETTINGS: &str = "{\n  \"theme\": \"dark\",\n  \"env\": { \"KEEP\": \"1\" }\n}\n";

struct Fixture<'a> {
    home: &'a TestHome,
    repo: &'a Path,
    memdir: &'a Path,
    settings: &'a Path,
    orphan: &'a Path,
    vars: &'a BTreeMap<String, String>,
}

/// `[{order, path}]` of the file rows on "What Claude sees", in load order.
const FILE_ROWS: &str = "return [...document.querySelectorAll('button.file-row')]\
    .map(b => [Number(b.querySelector('.order').textContent), b.dataset.path])\
    .sort((a, b) => a[0] - b[0]).map(r => r[1]);";
/// The exact block as the page holds it (textContent: every byte, unlike rendered text).
const BLOCK: &str = "const b = document.querySelector('[data-testid=context-block]'); return b ? b.textContent : null;";

async fn check_window(s: &Session, f: &Fixture<'_>) {
    let (home, repo) = (f.home, f.repo);
    // The built UI, not a dev server: served by the custom protocol, styled under the CSP.
    let href = s.script("return location.href").await;
    assert!(
        href.as_str().unwrap_or("").starts_with("tauri://"),
        "the window shows {href}, not the embedded UI: build with --features tauri/custom-protocol (after npm run build:ui)"
    );
    assert_eq!(s.send(reqwest::Method::GET, "/title", None).await, "Mneme");
    // Anything the CSP blocks is recorded from here on (the Graph's layout worker was one).
    s.script(
        "window.__cspViolations = []; document.addEventListener('securitypolicyviolation', \
         e => window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`)); return true;",
    )
    .await;
    let nav = s.text("nav.sidebar").await;
    assert!(nav.contains("What Claude sees") && nav.contains("Settings"), "the UI did not render: {nav}");

    // `home` reports the folder the app was opened on.
    let info = s.invoke("home", json!({ "req": {} })).await.unwrap();
    assert_eq!(info["cwd"], json!(home.home()));
    // It was named at launch (open_window passes it), so the window opens on it, without
    // remembering it as the project to open next time.
    assert_eq!(info["launchFolder"], json!(home.home()));
    assert_eq!(info["lastProject"], Value::Null, "a launch's FOLDER was remembered as the project to open next time");
    s.wait_for("the window open on the folder named at launch", "return document.querySelector('#folder').value === arguments[0]", json!([home.home()])).await;
    assert_eq!(info["configHome"], json!(home.config_home()));
    assert_eq!(info["scheduler"], true, "the background scheduler runs while the window is open");

    // Open the project as a person would: type its folder, press Open.
    s.type_into("#folder", &repo.to_string_lossy()).await;
    s.click("form.folder-picker button[type=submit]").await;
    let claude_md = repo.join("CLAUDE.md");
    s.wait_for(
        "the project's CLAUDE.md on What Claude sees",
        "return document.querySelector(`button.file-row[data-path=\"${arguments[0]}\"]`) !== null",
        json!([claude_md]),
    )
    .await;
    let lede = s.text(".screen-head .lede").await;
    assert!(lede.contains("~/code/app"), "{lede}");

    // What the screen lists and shows is the engine's answer: every file in load order and
    // the block byte for byte (for the date the page printed, today where the app runs).
    let mut env = Environment::with_home(home.home());
    env.vars = f.vars.clone();
    let engine = Mneme::new(env, Arc::new(SystemClock));
    let shown_files = s.script(FILE_ROWS).await;
    let block = s.wait_for("the exact block", BLOCK, json!([])).await.as_str().unwrap().to_string();
    // Releases before 2.1.268 put the date into the block; newer ones (the default when no
    // claude is installed, as here) send none.
    let date = block.split("Today's date is ").nth(1).and_then(|rest| rest.get(..10)).map(str::to_string);
    if let Some(date) = &date {
        let around_today: Vec<String> =
            [-86_399, 0, 86_399].iter().map(|o| engine.clone().with_utc_offset(*o).today()).collect();
        assert!(around_today.contains(date), "the page printed {date}, not today ({around_today:?})");
    } else {
        assert!(block.starts_with("<system-reminder>\nCodebase and user instructions"), "{block}");
    }
    let expected = engine.context(&ContextRequest { cwd: repo.to_path_buf(), date, ..Default::default() }).unwrap();
    let expected_files: Vec<&Path> = expected.files.iter().map(|f| f.path.as_path()).collect();
    assert_eq!(shown_files, json!(expected_files), "the file list shown is not the engine's");
    assert_eq!(expected_files.len(), 5, "user, project CLAUDE.md, its include, the rule, MEMORY.md: {expected_files:?}");
    assert_eq!(block, expected.block, "the block shown is not the engine's");
    assert!(block.contains("Style: short functions.") && block.contains("I am the user layer."));
    let status = s.text("[data-testid=automem-status]").await;
    assert!(status.contains("Auto memory is on"), "{status}");

    // The same block through IPC is what the CLI prints (scripts/test.sh builds the CLI into the
    // same target folder first; without it this check would not run, so that fails).
    let cli = PathBuf::from(env!("CARGO_BIN_EXE_mneme-app")).with_file_name("mneme");
    assert!(cli.is_file(), "no mneme CLI at {} to compare with; build it first: cargo build -p mneme", cli.display());
    {
        let view = s.invoke("context", json!({ "req": { "cwd": repo, "date": DATE } })).await.unwrap();
        let out = Command::new(&cli)
            .args(["context", "--date", DATE])
            .current_dir(repo)
            .env_clear()
            .envs(f.vars)
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(view["block"].as_str().unwrap(), String::from_utf8(out.stdout).unwrap());
    }

    // Open a file, then "Open in editor": $VISUAL runs on it and is waited on.
    s.click(&format!("button.file-row[data-path=\"{}\"]", claude_md.display())).await;
    s.wait_for(
        "the file's text in the editor",
        "const t = document.querySelector('section.editor textarea'); return t && t.value.includes('Use tabs.');",
        json!([]),
    )
    .await;
    s.click("section.editor [data-testid=open-in-editor]").await;
    let note = s.wait_for("the editor closing", "return document.querySelector('[data-testid=editor-note]')?.textContent", json!([])).await;
    assert!(note.as_str().unwrap().starts_with("Closed "), "{note}");
    let opened = home.root.join("bin/opened");
    assert_eq!(std::fs::read_to_string(&opened).unwrap(), claude_md.to_string_lossy());
    let gl_env = std::fs::read_to_string(home.root.join("bin/gl-env")).unwrap();
    assert_eq!(gl_env, "", "the editor inherited the app's GTK/WebKit variables");
    if let Some(shot) = shot_path() {
        let png = s.screenshot().await.expect("a screenshot of the window");
        std::fs::write(&shot, png).unwrap();
        eprintln!("saved {}", shot.display());
    }
    let err = s.invoke("open_in_editor", json!({ "path": "relative.md" })).await.unwrap_err();
    assert_eq!(err["code"], "invalid_input", "{err}");

    // A link in a preview (or the team sign-in link) opens in the person's browser: the page
    // may hand the system opener a web address, and nothing else.
    s.script_with(
        "const a = document.createElement('a'); a.href = arguments[0]; a.target = '_blank'; a.rel = 'noreferrer'; \
         a.textContent = 'link'; document.body.appendChild(a); a.click(); a.remove(); return true;",
        json!([LINK]),
    )
    .await;
    let url_file = home.root.join("bin/opened-url");
    wait::until_async_within(Duration::from_secs(15), "the link with target=_blank to reach the system opener", || async { url_file.exists() }).await;
    assert_eq!(std::fs::read_to_string(&url_file).ok().as_deref(), Some(LINK), "a link with target=_blank did not reach the system opener");
    std::fs::remove_file(&url_file).unwrap();
    let refused = s.invoke("plugin:opener|open_url", json!({ "url": "file:///etc/passwd" })).await;
    assert!(refused.is_err(), "the page may open only web addresses: {refused:?}");
    let refused = s.invoke("plugin:opener|open_url", json!({ "url": "mailto:a@b.example?attach=/etc/passwd" })).await;
    assert!(refused.is_err(), "a mailto: address may ask the mail client to attach a local file: {refused:?}");
    let refused = s.invoke("plugin:opener|open_url", json!({ "url": LINK, "with": "sh" })).await;
    assert!(refused.is_err(), "the page may not name the program that opens an address: {refused:?}");
    for (command, args) in [
        ("plugin:opener|open_path", json!({ "path": "/etc/passwd" })),
        ("plugin:opener|reveal_item_in_dir", json!({ "paths": ["/etc/passwd"] })),
        ("plugin:shell|open", json!({ "path": LINK })),
    ] {
        let refused = s.invoke(command, args).await;
        assert!(refused.is_err(), "the page may not call {command}: {refused:?}");
    }
    assert!(!url_file.exists(), "a refused call reached the system opener: {:?}", std::fs::read_to_string(&url_file));

    // Something in the page that navigates the window itself (an image map's <area>, a
    // script) cannot replace the app with another page: the navigation is cancelled and a web
    // address goes to the browser instead.
    s.script_with(
        "const m = document.createElement('map'); m.name = 'm'; const a = document.createElement('area'); \
         a.shape = 'default'; a.href = arguments[0]; m.appendChild(a); document.body.appendChild(m); a.click(); return true;",
        json!([LINK]),
    )
    .await;
    wait::until_async_within(Duration::from_secs(15), "the window's own navigation to go to the browser", || async { url_file.exists() }).await;
    assert_eq!(std::fs::read_to_string(&url_file).ok().as_deref(), Some(LINK), "the window's own navigation did not go to the browser");
    let still = s.script("return location.href").await;
    assert!(still.as_str().unwrap_or("").starts_with("tauri://"), "the window left the app for {still}");

    // Reveal shows the folder holding a file; it is never handed the file itself.
    std::fs::remove_file(&url_file).unwrap();
    s.invoke("reveal", json!({ "path": claude_md })).await.unwrap();
    assert_eq!(std::fs::read_to_string(&url_file).unwrap(), std::fs::canonicalize(repo).unwrap().to_string_lossy());

    // Errors arrive as the api's {code, message}, and the page shows the message.
    let err = s.invoke("open_project", json!({ "req": { "cwd": repo.join("nope") } })).await.unwrap_err();
    assert_eq!(err["code"], "not_found", "{err}");
    s.type_into("#folder", &repo.join("nope").to_string_lossy()).await;
    s.click("form.folder-picker button[type=submit]").await;
    let shown = s.wait_for("the folder error", "return document.querySelector('.folder-error .msg')?.textContent", json!([])).await;
    assert_eq!(shown, err["message"], "the page does not show the engine's message");

    // Settings: flip auto memory with a click; settings.json gets one key, the rest stays.
    s.click("nav a[href=\"#/settings\"]").await;
    let toggle = "[data-testid=toggle-auto-memory]";
    s.element(toggle).await;
    assert!(s.selected(toggle).await, "auto memory is on by default");
    s.click(toggle).await;
    let text = wait::value_async_within(PATIENCE, &format!("the toggle's click written to {}", f.settings.display()), || async {
        let text = std::fs::read_to_string(f.settings).unwrap();
        text.contains("autoMemoryEnabled").then_some(text)
    })
    .await;
    assert!(text.starts_with(SETTINGS.trim_end().trim_end_matches('}').trim_end()), "other bytes changed:\n{text}");
    let parsed: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(parsed, json!({ "theme": "dark", "env": { "KEEP": "1" }, "autoMemoryEnabled": false }), "{text}");
    s.wait_for(
        "the toggle off",
        "const t = document.querySelector(arguments[0]); return t && !t.checked && t.parentElement.textContent.trim() === 'Off';",
        json!([toggle]),
    )
    .await;
    assert_eq!(s.invoke("machine_settings", json!({ "req": {} })).await.unwrap()["autoMemoryEnabled"], false);

    // Back on What Claude sees, memory is off and MEMORY.md is no longer loaded.
    s.click("nav a[href=\"#/context\"]").await;
    s.wait_for(
        "auto memory off",
        "return document.querySelector('[data-testid=automem-status]')?.textContent.includes('Auto memory is off')",
        json!([]),
    )
    .await;
    let block = s.wait_for("the exact block", BLOCK, json!([])).await;
    assert!(!block.as_str().unwrap().contains("MEMORY.md"), "auto memory off: MEMORY.md is no longer loaded");

    // A change on disk reaches the page by itself (the typed `files-changed` event): the block
    // reloads, and so does the open editor, which only reloads when the event names its file.
    s.click(&format!("button.file-row[data-path=\"{}\"]", claude_md.display())).await;
    s.wait_for(
        "the file's text in the editor",
        "const t = document.querySelector('section.editor textarea'); return t && t.value.includes('Use tabs.');",
        json!([]),
    )
    .await;
    std::fs::write(&claude_md, "# App\n\nUse tabs. See @docs/style.md\nLive edit.\n").unwrap();
    s.wait_for(
        "the edit made on disk",
        "const t = document.querySelector('section.editor textarea');\
         const b = document.querySelector('[data-testid=context-block]');\
         return t && b && t.value.includes('Live edit.') && b.textContent.includes('Live edit.');",
        json!([]),
    )
    .await;

    // The commands that came after the shell: the watched folders, the memory-folder setting
    // (a value Claude Code would ignore is refused and nothing is written), merge and its dry run.
    let watching = s.invoke("watching", json!({ "req": {} })).await.unwrap()["folders"].clone();
    // A folder is covered when it is watched itself or lies inside a folder watched recursively.
    let covered = |dir: &Path| {
        watching.as_array().unwrap().iter().any(|w| {
            let at = Path::new(w["path"].as_str().unwrap());
            w["active"] == true && (at == dir || (w["recursive"] == true && dir.starts_with(at)))
        })
    };
    assert!(covered(repo) && covered(f.memdir) && covered(&home.config_home()), "{watching}");
    let before = std::fs::read_to_string(f.settings).unwrap();
    let err = s.invoke("set_auto_memory_directory", json!({ "req": { "value": "relative/dir" } })).await.unwrap_err();
    assert_eq!(err["code"], "invalid_input", "{err}");
    assert_eq!(std::fs::read_to_string(f.settings).unwrap(), before);
    let plan = s.invoke("merge_memory", json!({ "req": { "from": f.orphan, "cwd": repo, "dryRun": true } })).await.unwrap();
    assert_eq!(plan["dryRun"], true, "{plan}");
    assert_eq!(plan["moved"][0]["toRelPath"], "old-note.md", "{plan}");
    assert!(f.orphan.join("memory/old-note.md").is_file() && !f.memdir.join("old-note.md").exists(), "a plan wrote");
    let done = s.invoke("merge_memory", json!({ "req": { "from": f.orphan, "cwd": repo } })).await.unwrap();
    assert_eq!((done["dryRun"].clone(), done["moved"].clone()), (json!(false), plan["moved"].clone()), "{done}");
    assert!(f.memdir.join("old-note.md").is_file() && !f.orphan.join("memory").exists(), "{done}");

    // The Graph under the app's real CSP: sigma draws on its canvas and the ForceAtlas2 layout,
    // which runs in a module worker loaded from the app's own origin, finishes (`settled` only
    // turns true when the worker posts its last positions), and nothing was blocked.
    s.click("nav a[href=\"#/graph\"]").await;
    s.element("[data-testid=graph-canvas] canvas").await;
    s.wait_for(
        "the graph layout (in its web worker) to finish",
        "const g = window.__mnemeGraph; return !!g && g.settled() && g.layoutStats().ms > 0 && g.positions().pts.length > 0;",
        json!([]),
    )
    .await;
    let violations = s.script("return window.__cspViolations").await;
    assert_eq!(violations, json!([]), "the CSP blocked something the UI loads");

    // The scheduler inside the app: a Claude Code session ends a turn in the project, its
    // extraction loop runs, and the run reaches the Dreams screen through the typed event.
    let status = s.invoke("dream_status", json!({ "req": { "cwd": repo } })).await.unwrap();
    assert_eq!(status["memoryDir"], json!(f.memdir), "{status}");
    s.click("nav a[href=\"#/dreams\"]").await;
    s.element("[data-testid=scheduler-running]").await;
    let session = "7c0ffee0-1111-4222-8333-444455556666";
    let line = |uuid: &str, parent: Value, message: Value| {
        json!({ "type": message["role"], "uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": repo,
            "sessionId": session, "timestamp": "2026-11-29T10:00:00.000Z", "message": message })
        .to_string()
    };
    let turn = format!(
        "{}\n{}\n",
        line("u1", Value::Null, json!({ "role": "user", "content": "Remember that the app ships on Fridays." })),
        line("a1", json!("u1"), json!({ "role": "assistant", "content": [{ "type": "text", "text": "Noted." }], "stop_reason": "end_turn" }))
    );
    std::fs::write(f.memdir.parent().unwrap().join(format!("{session}.jsonl")), turn).unwrap();
    s.wait_for(
        "the extraction run on the Dreams screen",
        "return document.querySelector('[data-testid=scheduler-events]')?.textContent.includes('Extraction started')",
        json!([]),
    )
    .await;
    let runs = s.invoke("background_runs", json!({ "req": { "job": "extraction" } })).await.unwrap();
    assert!(runs["runs"].as_array().is_some(), "{runs}");
}

/// What the window tests need besides a display: tauri-driver and WebKitWebDriver.
fn window_tools() -> PathBuf {
    let driver = std::env::var_os("TAURI_DRIVER").map(PathBuf::from).or_else(|| on_path("tauri-driver")).expect(
        "tauri-driver not found: cargo install tauri-driver --version '^2' --locked (or set TAURI_DRIVER)",
    );
    assert!(on_path("WebKitWebDriver").is_some(), "WebKitWebDriver not found: apt-get install webkit2gtk-driver");
    assert!(std::env::var_os("DISPLAY").is_some(), "no DISPLAY: run under scripts/with-xvfb.sh");
    driver
}

/// Starts the app through tauri-driver on `home`'s HOME with `vars`, and waits until its UI is up.
async fn open_window(driver: &Path, home: &TestHome, vars: &BTreeMap<String, String>) -> (common::Driver, Session) {
    let app = PathBuf::from(env!("CARGO_BIN_EXE_mneme-app"));
    let (driver, http, base) = start_driver(driver, vars, Duration::from_secs(60)).await;
    let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "wry", "tauri:options": {
        "application": app, "args": [home.home()],
    } } } });
    let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
    let id = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {res}")).to_string();
    let s = Session { http, base: format!("{base}/session/{id}") };
    s.element("nav.sidebar").await;
    (driver, s)
}

/// The main window's inner size and outer position, as the app reports them.
async fn geometry(s: &Session) -> (u64, u64, i64, i64) {
    let size = s.invoke("plugin:window|inner_size", json!({ "label": "main" })).await.unwrap();
    let at = s.invoke("plugin:window|outer_position", json!({ "label": "main" })).await.unwrap();
    (size["width"].as_u64().unwrap(), size["height"].as_u64().unwrap(), at["x"].as_i64().unwrap(), at["y"].as_i64().unwrap())
}

/// Asks the app to stop as a session does at logout (SIGTERM) and waits until it has.
fn stop_app(driver: &common::Driver) {
    let pid = app_pid(driver.0.id(), Path::new(env!("CARGO_BIN_EXE_mneme-app")));
    assert!(Command::new("kill").args(["-TERM", &pid.to_string()]).status().unwrap().success());
    let gone = || std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')));
    wait::until_within(PATIENCE, &format!("the app (PID {pid}) to stop after SIGTERM"), gone);
}

/// The window-state plugin's file (Tauri's config folder for the app, under the test's HOME).
fn window_state_file(home: &TestHome) -> PathBuf {
    home.home().join(".config/dev.mneme.app/.window-state.json")
}

fn remember(home: &TestHome, (width, height, x, y): (u64, u64, i64, i64)) {
    home.write(
        window_state_file(home),
        &json!({ "main": { "width": width, "height": height, "x": x, "y": y, "prev_x": x, "prev_y": y,
            "maximized": false, "visible": true, "decorated": true, "fullscreen": false } })
        .to_string(),
    );
}

/// The window opens where it was: its size and position are written when the app stops and
/// applied at the next start, and a remembered place no screen shows any more (a monitor since
/// unplugged) gives a window centered on the screen, never one off it.
#[tokio::test]
#[ignore = "needs a display, tauri-driver and WebKitWebDriver; see the module docs"]
async fn the_window_opens_where_it_was() {
    let driver = window_tools();
    let home = TestHome::new();
    let vars = app_vars(&home);

    // First launch: tauri.conf.json's size; stopping writes it down.
    let (d, s) = open_window(&driver, &home, &vars).await;
    let first = geometry(&s).await;
    let screen = s.invoke("plugin:window|primary_monitor", json!({})).await.unwrap();
    let (sw, sh) = (screen["size"]["width"].as_i64().unwrap(), screen["size"]["height"].as_i64().unwrap());
    assert!(!window_state_file(&home).exists(), "the state was written before the app stopped");
    stop_app(&d);
    drop(d);
    let saved: Value = serde_json::from_str(&std::fs::read_to_string(window_state_file(&home)).expect("the window state, written when the app stopped")).unwrap();
    assert_eq!((saved["main"]["width"].as_u64(), saved["main"]["height"].as_u64()), (Some(first.0), Some(first.1)), "{saved}");
    assert_eq!((saved["main"]["x"].as_i64(), saved["main"]["y"].as_i64()), (Some(first.2), Some(first.3)), "{saved}");

    // A place the person chose is where the window opens next time.
    remember(&home, (900, 600, 40, 30));
    let (d, s) = open_window(&driver, &home, &vars).await;
    assert_eq!(geometry(&s).await, (900, 600, 40, 30), "the remembered size and position were not applied");
    drop(d);

    // Off every screen, or with only a corner on one: centered on the screen instead.
    for away in [(900, 600, 5000, 5000), (900, 600, -850, sh - 100)] {
        remember(&home, away);
        let (d, s) = open_window(&driver, &home, &vars).await;
        let (w, h, x, y) = geometry(&s).await;
        assert_eq!((w, h), (900, 600), "remembered {away:?}");
        assert_eq!((x, y), ((sw - 900) / 2, (sh - 600) / 2), "remembered {away:?}: the window is not centered on the screen");
        drop(d);
    }
    // Bigger than the screen (saved on a larger monitor): cut to it.
    remember(&home, (sw as u64 + 640, sh as u64 + 400, 0, 0));
    let (d, s) = open_window(&driver, &home, &vars).await;
    assert_eq!(geometry(&s).await, (sw as u64, sh as u64, 0, 0), "a window larger than the screen");
    drop(d);
}

/// A private D-Bus session bus (the single-instance plugin's channel on Linux) for one test, so
/// it never meets the desktop's own Mneme or another test's. Its process group (the bus and
/// whatever it started for the app, the accessibility bus) is stopped with it.
struct Bus {
    child: std::process::Child,
    address: String,
}

impl Bus {
    fn start(home: &TestHome, vars: &BTreeMap<String, String>) -> Bus {
        use std::os::unix::process::CommandExt;
        let daemon = on_path("dbus-daemon").expect("dbus-daemon not found: apt-get install dbus");
        let socket = home.root.join("bus");
        let address = format!("unix:path={}", socket.display());
        let child = Command::new(daemon)
            .args(["--session", "--nofork", "--nopidfile", &format!("--address={address}")])
            .env_clear()
            .envs(vars)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .process_group(0)
            .spawn()
            .expect("dbus-daemon starts");
        wait::until_within(PATIENCE, &format!("dbus-daemon's socket at {}", socket.display()), || socket.exists());
        Bus { child, address }
    }
}

impl Drop for Bus {
    fn drop(&mut self) {
        let _ = Command::new("kill").args(["-TERM", "--", &format!("-{}", self.child.id())]).status();
        let _ = self.child.wait();
    }
}

/// The first launch of a second-launch test: the app's window open on `home`, on a session bus
/// of its own (the single-instance plugin's channel), with the environment a second launch on
/// that bus runs with. The driver is dropped before the bus (fields drop in order).
struct FirstLaunch {
    driver: common::Driver,
    s: Session,
    vars: BTreeMap<String, String>,
    bus: Bus,
}

impl FirstLaunch {
    async fn open(home: &TestHome) -> FirstLaunch {
        let tools = window_tools();
        let mut vars = app_vars(home);
        let bus = Bus::start(home, &vars);
        vars.insert("DBUS_SESSION_BUS_ADDRESS".into(), bus.address.clone());
        let (driver, s) = open_window(&tools, home, &vars).await;
        FirstLaunch { driver, s, vars, bus }
    }
}

/// Launching the app while it runs brings the running window forward and exits: no second
/// window, and the first keeps the background scheduler.
#[tokio::test]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and dbus-daemon; see the module docs"]
async fn a_second_launch_hands_over_to_the_first() {
    let home = TestHome::new();
    let first_launch = FirstLaunch::open(&home).await;
    let (d, s, vars, bus) = (&first_launch.driver, &first_launch.s, &first_launch.vars, &first_launch.bus);
    let first = app_pid(d.0.id(), Path::new(env!("CARGO_BIN_EXE_mneme-app")));

    let (status, err) = launch(&[&home.home().to_string_lossy()], &home.home(), vars);
    assert!(status.success(), "the second launch failed: {status}: {err}");

    // The first still runs, its window shown, with the scheduler; it is the only app process.
    assert_eq!(s.invoke("plugin:window|is_visible", json!({ "label": "main" })).await.unwrap(), true);
    assert_eq!(s.invoke("plugin:window|is_minimized", json!({ "label": "main" })).await.unwrap(), false);
    assert_eq!(s.invoke("home", json!({ "req": {} })).await.unwrap()["scheduler"], true, "the first window lost its scheduler");
    let app = Path::new(env!("CARGO_BIN_EXE_mneme-app")).canonicalize().unwrap();
    let running: Vec<u32> = pids().into_iter().filter(|&p| std::fs::read_link(format!("/proc/{p}/exe")).is_ok_and(|e| e == app)).filter(|&p| {
        std::fs::read_to_string(format!("/proc/{p}/environ")).is_ok_and(|e| e.split('\0').any(|v| v == format!("DBUS_SESSION_BUS_ADDRESS={}", bus.address)))
    }).collect();
    assert_eq!(running, vec![first], "app processes on this test's bus");
    drop(first_launch);
}

/// Runs `mneme-app ARGS` in `cwd` with `vars` until it exits (a second launch hands over and
/// exits at once; a refused first launch stops at its setup), answering its status and stderr.
fn launch(args: &[&str], cwd: &Path, vars: &BTreeMap<String, String>) -> (std::process::ExitStatus, String) {
    let mut app = Command::new(env!("CARGO_BIN_EXE_mneme-app"));
    app.args(args).current_dir(cwd).env_clear().envs(vars).stdout(std::process::Stdio::null()).stderr(std::process::Stdio::piped());
    let out = wait::command_within(Duration::from_secs(30), &mut app)
        .unwrap_or_else(|| panic!("mneme-app {args:?} was still running after 30 s (killed): it opened a window of its own"));
    (out.status, String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Sends keys (WebDriver's key codes: `\u{E007}` Enter, `\u{E00C}` Escape) to what has focus.
async fn press(s: &Session, keys: &str) {
    let active = s.send(reqwest::Method::GET, "/element/active", None).await;
    let el = active[common::ELEMENT].as_str().unwrap_or_else(|| panic!("nothing has focus: {active}")).to_string();
    s.send(reqwest::Method::POST, &format!("/element/{el}/value"), Some(json!({ "text": keys }))).await;
}

/// `mneme-app FOLDER` while the app runs: the running window offers FOLDER (taken from the
/// second launch's own working folder) in a banner that has the keyboard, and Enter opens it;
/// a FOLDER that is not there is the reason instead, in the words a first launch stops with.
/// This debug build answers to a D-Bus name of its own, never the installed app's.
#[tokio::test]
#[ignore = "needs a display, tauri-driver, WebKitWebDriver and dbus-daemon; see the module docs"]
async fn a_second_launch_naming_a_folder_offers_it() {
    let home = TestHome::new();
    let repo = home.git_repo("home/code/app");
    home.write(repo.join("CLAUDE.md"), "# App\n");
    let plain_vars = app_vars(&home);
    let first_launch = FirstLaunch::open(&home).await;
    let (s, vars, bus) = (&first_launch.s, &first_launch.vars, &first_launch.bus);

    // The name the running (debug) app holds on the bus.
    let names = Command::new("dbus-send")
        .args([&format!("--bus={}", bus.address), "--print-reply", "--dest=org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus.ListNames"])
        .output()
        .expect("dbus-send (apt-get install dbus)");
    let names = String::from_utf8_lossy(&names.stdout).into_owned();
    assert_eq!(names.contains("\"dev.mneme.app.debug.SingleInstance\""), cfg!(debug_assertions), "{names}");
    assert_eq!(names.contains("\"dev.mneme.app.SingleInstance\""), !cfg!(debug_assertions), "{names}");

    // Started: the page has its engine (the folder box is enabled once it has).
    s.wait_for("the page ready", "return !document.querySelector('#folder').disabled", json!([])).await;
    // A relative FOLDER, from the second launch's folder (the first runs elsewhere).
    let (status, err) = launch(&["code/app"], &home.home(), vars);
    assert!(status.success(), "the second launch failed: {status}: {err}");
    let banner = s
        .wait_for("the Open banner", "return document.querySelector('[data-testid=open-asked]')?.textContent.replace(/\\s+/g, ' ').trim()", json!([]))
        .await;
    assert!(banner.as_str().unwrap().starts_with("Open ~/code/app?"), "{banner}");
    assert_eq!(s.invoke("home", json!({ "req": {} })).await.unwrap()["lastProject"], Value::Null, "the folder was opened before anyone chose to");
    s.wait_for("the keyboard on Open", "return document.activeElement?.dataset.testid === 'open-asked-open'", json!([])).await;
    if let Some(shot) = shot_path() {
        let stem = shot.file_stem().unwrap().to_string_lossy().into_owned();
        std::fs::write(shot.with_file_name(format!("{stem}-open-asked.png")), s.screenshot().await.unwrap()).unwrap();
    }
    press(s, "\u{E007}").await;
    s.wait_for(
        "the project open, the banner gone",
        "return document.querySelector('#folder').value === arguments[0] && !document.querySelector('[data-testid=open-asked]')",
        json!([repo]),
    )
    .await;
    assert_eq!(s.invoke("home", json!({ "req": {} })).await.unwrap()["lastProject"], json!(repo));

    // A folder that is not there: the reason, as a first launch gives it; Escape dismisses it.
    let (status, err) = launch(&["no-such-folder"], &home.home(), vars);
    assert!(status.success(), "the second launch failed: {status}: {err}");
    let missing = home.home().join("no-such-folder");
    let said = s
        .wait_for("the reason in the banner", "return document.querySelector('[data-testid=open-asked].error')?.textContent", json!([]))
        .await;
    let reason = format!("{} does not exist; check the spelling", missing.display());
    assert!(said.as_str().unwrap().contains(&reason), "{said}");
    if let Some(shot) = shot_path() {
        let stem = shot.file_stem().unwrap().to_string_lossy().into_owned();
        std::fs::write(shot.with_file_name(format!("{stem}-open-refused.png")), s.screenshot().await.unwrap()).unwrap();
    }
    press(s, "\u{E00C}").await;
    s.wait_for("the banner gone after Escape", "return !document.querySelector('[data-testid=open-asked]')", json!([])).await;
    assert_eq!(s.invoke("home", json!({ "req": {} })).await.unwrap()["lastProject"], json!(repo), "the project changed");

    // The same FOLDER on a first launch (no bus, so no running app to hand it to) stops it.
    let (status, err) = launch(&["no-such-folder"], &home.home(), &plain_vars);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains(&format!("mneme-app: {reason}")), "{err}");
    drop(first_launch);
}
