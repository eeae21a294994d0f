//! `mneme settings provider` end to end: the real binary in a hermetic home, the connection test
//! against the stub model server on 127.0.0.1.

use mneme_stub_model::{Reply, StubModel};
use mneme_testsupport::TestHome;
use std::process::Output;

fn service() -> String {
    format!("mneme-cli-test-{}", std::process::id())
}

/// `mneme settings provider` in the hermetic home, under this test run's own keyring service.
fn command(h: &TestHome) -> std::process::Command {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.env("MNEME_KEYRING_SERVICE", service()).args(["settings", "provider"]);
    cmd
}

fn run(h: &TestHome, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = command(h);
    cmd.args(args);
    // Under scripts/with-keyring.sh the session bus is passed on, so `key set` really stores.
    if let Ok(bus) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", bus);
    }
    mneme_testsupport::output_with_stdin(cmd, Some(stdin.unwrap_or("").as_bytes()))
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "mneme failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn one_line_error(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8(out.stderr.clone()).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    err
}

#[test]
fn show_set_and_test_against_the_stub() {
    let h = TestHome::new();
    let settings = h.root.join("mneme-data/providers.json");
    assert_eq!(stdout(&run(&h, &[], None)), format!("Provider:  offline (no model)\nSettings:  {}\n", settings.display()));

    let err = one_line_error(&run(&h, &["set", "--kind", "openai"], None));
    assert!(err.starts_with("mneme: An OpenAI-compatible endpoint needs a model name"), "{err}");
    assert!(!settings.exists());

    let stub = StubModel::start_blocking();
    let url = stub.openai_base_url();
    let out = stdout(&run(&h, &["set", "--kind", "openai", "--model", "local-model", "--base-url", &url, "--timeout", "20"], None));
    assert!(out.contains("Provider:  openai (OpenAI-compatible endpoint)\nModel:     local-model\n"), "{out}");
    assert!(out.contains(&format!("Endpoint:  {url}\nTimeout:   20 s\n")), "{out}");

    // Options not given keep their saved values.
    let out = stdout(&run(&h, &["set", "--timeout", "45", "--json"], None));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!((v["kind"].as_str(), v["model"].as_str(), v["timeoutSecs"].as_u64()), (Some("openai"), Some("local-model"), Some(45)));

    let out = stdout(&run(&h, &["test"], None));
    assert!(out.starts_with("Connected: local-model answered. Reply: \"ok\""), "{out}");
    stub.push(Reply::status(404));
    let err = one_line_error(&run(&h, &["test"], None));
    assert_eq!(err, "mneme: model `local-model` was not found; pick another model in Settings → Model provider\n");

    // Switching kind starts from that kind's defaults instead of borrowing the endpoint.
    let out = stdout(&run(&h, &["set", "--kind", "anthropic"], None));
    let want = format!("Model:     {} (default)\nEndpoint:  https://api.anthropic.com (default)\n", mneme_model::DEFAULT_ANTHROPIC_MODEL);
    assert!(out.contains(&want), "{out}");
}

/// `mneme settings provider key set` stores the key from stdin in the OS keyring: read back
/// through Secret Service itself (not just reported as set), gone after `key clear`, and never
/// in Mneme's files. Needs the keyring scripts/with-keyring.sh provides, as `npm test` does.
#[test]
#[ignore = "needs a Secret Service: run under scripts/with-keyring.sh (npm test does)"]
fn keyring_key_set_stores_the_key_from_stdin() {
    assert!(mneme_testsupport::keyring_required(), "run under scripts/with-keyring.sh, which provides the keyring");
    let h = TestHome::new();
    let err = one_line_error(&run(&h, &["key", "set"], Some("sk-x\n")));
    assert!(err.contains("Offline mode"), "{err}");
    stdout(&run(&h, &["set", "--kind", "anthropic"], None));
    let err = one_line_error(&run(&h, &["key", "set"], Some("  \n")));
    assert!(err.contains("no key on stdin"), "{err}");

    let shown: serde_json::Value = serde_json::from_str(&stdout(&run(&h, &["show", "--json"], None))).unwrap();
    let account = shown["key"]["account"].as_str().expect("the key's keyring account").to_string();
    assert_eq!(mneme_testsupport::secret_tool_lookup(&service(), &account), None);
    let out = stdout(&run(&h, &["key", "set"], Some("sk-ant-cli-secret\n")));
    assert!(out.starts_with("Stored the API key in the OS keyring"), "{out}");
    assert_eq!(mneme_testsupport::secret_tool_lookup(&service(), &account).as_deref(), Some("sk-ant-cli-secret"));
    assert!(stdout(&run(&h, &[], None)).contains("API key:   set in the OS keyring"));
    assert_no_key_in_files(&h, "sk-ant-cli-secret");

    stdout(&run(&h, &["key", "clear"], None));
    assert!(stdout(&run(&h, &[], None)).contains("API key:   not set"));
    assert_eq!(mneme_testsupport::secret_tool_lookup(&service(), &account), None);
}

/// With no keyring reachable (no session bus), `key set` fails with the keyring's advice and
/// writes the key nowhere.
#[test]
fn key_set_without_a_keyring_says_what_to_do_and_keeps_nothing() {
    let h = TestHome::new();
    stdout(&run(&h, &["set", "--kind", "anthropic"], None));
    let mut cmd = command(&h);
    // A bus address where nothing listens: the Secret Service cannot be reached.
    cmd.env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", h.root.join("no-bus").display())).args(["key", "set"]);
    let err = one_line_error(&mneme_testsupport::output_with_stdin(cmd, Some(b"sk-ant-cli-secret\n")));
    assert!(err.contains("no OS keyring is reachable"), "{err}");
    assert_no_key_in_files(&h, "sk-ant-cli-secret");
}

fn assert_no_key_in_files(h: &TestHome, key: &str) {
    let saved = std::fs::read_to_string(h.root.join("mneme-data/providers.json")).unwrap();
    assert!(saved.contains("anthropic") && !saved.contains(key), "{saved}");
}

/// At a terminal, the pasted key is not echoed: run under `script` (a real pseudo-terminal),
/// with the key typed a moment after the command starts, as a person pastes it after the
/// prompt, the terminal's transcript after the prompt never holds the key.
#[cfg(unix)]
#[test]
fn a_key_pasted_at_a_terminal_is_not_shown() {
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("skipped: no `script` (util-linux) to give the command a terminal");
        return;
    }
    let h = TestHome::new();
    stdout(&run(&h, &["set", "--kind", "anthropic"], None));
    let mneme = env!("CARGO_BIN_EXE_mneme");
    let transcript = h.root.join("typescript");
    let mut cmd = mneme_testsupport::command_in("sh", &h);
    cmd.env("MNEME_KEYRING_SERVICE", service())
        .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", h.root.join("no-bus").display()))
        .args([
            "-c",
            "(sleep 2; printf 'sk-ant-typed-secret\\n') | script -q -e -c \"$0 settings provider key set\" \"$1\"",
            mneme,
            transcript.to_str().unwrap(),
        ]);
    let out = mneme_testsupport::output_with_stdin(cmd, None);
    let seen = std::fs::read_to_string(&transcript).unwrap_or_default() + &String::from_utf8_lossy(&out.stdout);
    let prompt = "Paste the API key and press Enter";
    let after = seen.find(prompt).map(|at| &seen[at..]).unwrap_or_else(|| panic!("no prompt at a terminal: {seen:?}"));
    assert!(!after.contains("sk-ant-typed-secret"), "the key was echoed: {seen:?}");
    assert!(after.contains("no OS keyring is reachable"), "the key was not read: {seen:?}");
    assert_no_key_in_files(&h, "sk-ant-typed-secret");
}
