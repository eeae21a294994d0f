//! `providers.json` replaced by a FIFO, a folder or a huge file: every command that may ask a
//! model, the app and `mneme serve` load it, and a FIFO held them for ever. The load runs on
//! a thread and must return within a generous limit, so a hang fails instead of never ending.

use mneme_model::{ProviderSettings, ProviderSettingsError};
use mneme_testsupport::TestHome;
use std::os::unix::fs::FileTypeExt;
use std::sync::mpsc;
use std::time::Duration;

fn load_within(env: &mneme_store::Environment) -> Result<ProviderSettings, ProviderSettingsError> {
    let (tx, rx) = mpsc::channel();
    let env = env.clone();
    std::thread::spawn(move || {
        let _ = tx.send(ProviderSettings::load(&env));
    });
    rx.recv_timeout(Duration::from_secs(25)).expect("the provider settings load did not return within 25 s: it is waiting on the FIFO")
}

#[test]
fn a_fifo_as_the_provider_settings_is_refused_at_once() {
    let home = TestHome::new();
    let path = ProviderSettings::path(&home.env);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&path).status().unwrap().success());
    let text = load_within(&home.env).unwrap_err().to_string();
    assert!(text.contains("providers.json is a named pipe (FIFO)") && text.contains("move it aside or delete it"), "{text}");
    assert!(text.contains("offline provider") && !text.contains("permissions"), "{text}");
    assert!(std::fs::symlink_metadata(&path).unwrap().file_type().is_fifo(), "left in place");
}

#[test]
fn a_folder_or_a_huge_file_as_the_provider_settings_says_what_it_is() {
    let home = TestHome::new();
    let path = ProviderSettings::path(&home.env);
    std::fs::create_dir_all(&path).unwrap();
    let text = load_within(&home.env).unwrap_err().to_string();
    assert!(text.contains("providers.json is a folder, not a plain file") && !text.contains("os error"), "{text}");

    std::fs::remove_dir(&path).unwrap();
    // Valid JSON, padded far past what provider settings take.
    let mut big = String::from("{\"kind\": \"offline\"}");
    big.push_str(&" ".repeat(2 << 20));
    std::fs::write(&path, big).unwrap();
    let text = load_within(&home.env).unwrap_err().to_string();
    assert!(text.contains("providers.json is larger than 1 MiB") && text.contains("move it aside or delete it"), "{text}");
}
