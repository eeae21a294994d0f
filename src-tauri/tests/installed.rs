//! The app as a person gets it: run by `scripts/test-dist.sh` (`npm run test:dist`) after it
//! has installed the built .deb with apt-get. Nothing here is built from this checkout: the
//! window is the installed `/usr/bin/mneme-app`, started the way the desktop entry starts it
//! (its `Exec=` line), on a fixture home; the CLI is the installed `mneme` beside it.
//!
//! It checks that the installed window shows "What Claude sees" for a project, byte for byte
//! what the installed `mneme context` prints for it, that its About names the installed
//! package's version and the commit the CLI names, and saves a screenshot. Ignored by default
//! (it needs the package installed, a display, tauri-driver and WebKitWebDriver).
//!
//! `MNEME_DESKTOP_ENTRY` names the installed .desktop file; `MNEME_INSTALLED_SHOT` where the
//! screenshot goes (relative to the repository root); `MNEME_PACKAGE_VERSION` the version
//! dpkg reports for the package.

mod common;

use common::{on_path, start_driver, Session};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn var(key: &str) -> String {
    std::env::var(key).unwrap_or_else(|_| panic!("{key} is not set; run this through scripts/test-dist.sh"))
}

/// The program a desktop entry's `Exec=` line starts (field codes such as %F dropped).
fn exec_of(entry: &str) -> (String, Vec<String>) {
    let line = entry.lines().find_map(|l| l.strip_prefix("Exec=")).expect("the desktop entry has an Exec= line");
    let mut words = line.split_whitespace().filter(|w| !w.starts_with('%')).map(str::to_string);
    (words.next().expect("Exec= names a program"), words.collect())
}

#[tokio::test]
#[ignore = "needs the .deb installed; run by scripts/test-dist.sh"]
async fn the_installed_app_shows_what_claude_sees() {
    let entry_path = PathBuf::from(var("MNEME_DESKTOP_ENTRY"));
    let entry = std::fs::read_to_string(&entry_path).unwrap();
    assert!(entry.contains("Type=Application") && entry.contains("Name=Mneme"), "{entry}");
    let icon = entry.lines().find_map(|l| l.strip_prefix("Icon=")).expect("the desktop entry names an icon");
    let (program, args) = exec_of(&entry);
    let app = if program.starts_with('/') { PathBuf::from(&program) } else { on_path(&program).expect("Exec= is on the PATH") };
    assert_eq!(app, Path::new("/usr/bin/mneme-app"), "the desktop entry starts {program}");
    assert!(
        Path::new(&format!("/usr/share/icons/hicolor/128x128/apps/{icon}.png")).is_file(),
        "the icon {icon} is not installed"
    );
    let cli = Path::new("/usr/bin/mneme");
    assert!(cli.is_file(), "the mneme CLI is not installed beside the app");

    // A project with a CLAUDE.md that includes a file, a user CLAUDE.md and auto memory.
    let home = TestHome::new();
    let repo = home.git_repo("home/code/app");
    home.write(repo.join("CLAUDE.md"), "# App\n\nUse tabs. See @docs/style.md\n");
    home.write(repo.join("docs/style.md"), "Style: short functions.\n");
    home.write(home.config_home().join("CLAUDE.md"), "I am the user layer.\n");
    let memdir = home.memdir_for(&repo);
    home.write(memdir.join("testing.md"), &mneme_testsupport::topic("Testing", "how we test", "feedback", "Run it."));
    home.write(memdir.join("MEMORY.md"), "- [Testing](testing.md) — how we test\n");

    let mut vars: BTreeMap<String, String> = home.env.vars.clone();
    vars.insert("HOME".into(), home.home().to_string_lossy().into_owned());
    for key in ["PATH", "DISPLAY", "XAUTHORITY", "XDG_RUNTIME_DIR", "LANG"] {
        if let Ok(v) = std::env::var(key) {
            vars.insert(key.into(), v);
        }
    }
    // No session bus: the desktop's own (XDG_RUNTIME_DIR/bus) holds the single-instance name of
    // any Mneme running there, which would take this launch for a second one and end it.
    vars.insert("DBUS_SESSION_BUS_ADDRESS".into(), format!("unix:path={}", home.root.join("no-bus").display()));

    // The installed CLI: its version line and the block it prints for the project.
    let version = Command::new(cli).arg("--version").env_clear().envs(&vars).output().unwrap();
    let version = String::from_utf8(version.stdout).unwrap();
    let package_version = var("MNEME_PACKAGE_VERSION");
    let commit = version
        .trim()
        .strip_prefix(&format!("mneme {package_version} (commit "))
        .and_then(|r| r.strip_suffix(')'))
        .unwrap_or_else(|| panic!("mneme --version says {version:?}, the package is {package_version}"))
        .to_string();
    let out = Command::new(cli).arg("context").current_dir(&repo).env_clear().envs(&vars).output().unwrap();
    assert!(out.status.success(), "installed mneme context: {}", String::from_utf8_lossy(&out.stderr));
    let cli_block = String::from_utf8(out.stdout).unwrap();
    assert!(cli_block.contains("Style: short functions.") && cli_block.contains("I am the user layer."), "{cli_block}");

    let driver = std::env::var_os("TAURI_DRIVER").map(PathBuf::from).or_else(|| on_path("tauri-driver")).expect("tauri-driver");
    let (_driver, http, base) = start_driver(&driver, &vars, Duration::from_secs(60)).await;
    // As a launcher starts it: the Exec= program with the entry's own arguments (none), so it
    // opens on the home folder; the project is then opened through the folder picker.
    let caps = json!({ "capabilities": { "alwaysMatch": { "browserName": "wry", "tauri:options": {
        "application": app, "args": args,
    } } } });
    let res: Value = http.post(format!("{base}/session")).json(&caps).send().await.unwrap().json().await.unwrap();
    let id = res["value"]["sessionId"].as_str().unwrap_or_else(|| panic!("no WebDriver session: {res}")).to_string();
    let s = Session { http: http.clone(), base: format!("{base}/session/{id}") };

    let href = s.script("return location.href").await;
    assert!(href.as_str().unwrap_or("").starts_with("tauri://"), "the installed app shows {href}, not its embedded UI");
    s.type_into("#folder", &repo.to_string_lossy()).await;
    s.click("form.folder-picker button[type=submit]").await;
    let block = s
        .wait_for(
            "What Claude sees for the project",
            "const b = document.querySelector('[data-testid=context-block]'); \
             return b && b.textContent.includes('Style: short functions.') ? b.textContent : null;",
            json!([]),
        )
        .await;
    assert_eq!(block.as_str().unwrap(), cli_block, "the installed window and the installed CLI disagree");
    let shot = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().join(var("MNEME_INSTALLED_SHOT"));
    std::fs::write(&shot, s.screenshot().await.expect("a screenshot")).unwrap();
    eprintln!("saved {}", shot.display());

    // About (Settings) names the installed package's version and the CLI's commit.
    s.click("nav a[href=\"#/settings\"]").await;
    let about = s
        .wait_for(
            "About on Settings",
            "const v = document.querySelector('[data-testid=about-version]'); \
             const c = document.querySelector('[data-testid=about-commit]'); \
             return v && c ? [v.textContent, c.textContent] : null;",
            json!([]),
        )
        .await;
    assert_eq!(about, json!([package_version, commit]), "About does not name the installed build");
    let _ = http.delete(&s.base).send().await;
}
