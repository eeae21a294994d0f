//! Extraction's own files as a newer Mneme leaves them: `modes.json`, inbox items and session
//! state keep what this build does not know, and say "update Mneme" where it matters
//! (ARCHITECTURE.md, "Mneme's own files across versions").

use mneme_extract::record::{mode, set_mode};
use mneme_extract::ReviewMode;
use std::path::Path;

/// `modes.json` holds every project's mode in one map: one mode a newer Mneme added for one
/// project made every project's mode unreadable here, and setting any mode failed.
#[test]
fn one_project_s_newer_mode_does_not_hide_the_others() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("extract");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.json"), r#"{"/a/memory": "review", "/b/memory": "batch"}"#).unwrap();
    assert_eq!(mode(data.path(), Path::new("/a/memory")).unwrap(), ReviewMode::Review);
    assert_eq!(mode(data.path(), Path::new("/c/memory")).unwrap(), ReviewMode::Automatic);
    let text = mode(data.path(), Path::new("/b/memory")).unwrap_err().to_string();
    assert!(text.contains("/b/memory") && text.contains("modes.json") && text.contains("update Mneme"), "{text}");
    assert!(!text.contains("not valid JSON"), "not a damaged file: {text}");

    set_mode(data.path(), Path::new("/c/memory"), ReviewMode::Off).unwrap();
    set_mode(data.path(), Path::new("/a/memory"), ReviewMode::Automatic).unwrap();
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("modes.json")).unwrap()).unwrap();
    assert_eq!(kept, serde_json::json!({"/b/memory": "batch", "/c/memory": "off"}));

    // Choosing that project's mode here replaces the newer one.
    set_mode(data.path(), Path::new("/b/memory"), ReviewMode::Review).unwrap();
    assert_eq!(mode(data.path(), Path::new("/b/memory")).unwrap(), ReviewMode::Review);
}
