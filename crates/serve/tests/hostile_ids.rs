//! Every operation that takes a memory name, a trash, inbox or dream id, a date, a file path or
//! an agent, called over HTTP with names a hostile page, transcript or memory index could put
//! there: traversal (`../`, `%2e%2e`, `team/../..`, `name:../..`), absolute and Windows-style
//! paths, a NUL byte, a 70,000-character name, `.`, `..` and empty ones. None may read a file
//! outside the memory folder, write one, or panic (checked fine; kept so it stays so).

mod common;
use common::Server;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_names_and_ids_stay_inside_the_memory_folder() {
    let s = Server::start().await;
    let outside = s.home.root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "---\nname: s\ndescription: d\ntype: user\n---\nTOPSECRET\n").unwrap();
    std::fs::write(outside.join("MEMORY.md"), "TOPSECRET index\n").unwrap();
    let memdir = s.home.memdir_for(&s.repo);
    let rel = pathdiff(&outside, &memdir);
    let long = "a".repeat(70_000);
    let ids: Vec<String> = vec![
        format!("{rel}/secret.md"), format!("{rel}/secret"), outside.join("secret.md").display().to_string(),
        "../../../../../../etc/passwd".into(), "/etc/passwd".into(), "..\\..\\secret.md".into(), "a\0b.md".into(),
        long.clone(), "team/../../../outside/secret.md".into(), "%2e%2e/%2e%2e/secret.md".into(), "name:../../x".into(),
        "".into(), ".".into(), "..".into(), "team".into(), "/".into(),
    ];
    let cwd = s.repo.display().to_string();
    for id in &ids {
        let calls = vec![
            ("memory", json!({"cwd": cwd, "memory": id})),
            ("deleteMemory", json!({"cwd": cwd, "memory": id})),
            ("editMemory", json!({"cwd": cwd, "memory": id, "body": "PWNED"})),
            ("editMemory", json!({"cwd": cwd, "memory": "x", "fileName": id})),
            ("createMemory", json!({"cwd": cwd, "name": "n", "description": "d", "kind": "user", "body": "PWNED", "fileName": id})),
            ("saveMemory", json!({"cwd": cwd, "relPath": id, "content": "PWNED", "revision": "absent"})),
            ("restoreMemory", json!({"cwd": cwd, "id": id})),
            ("purgeTrash", json!({"cwd": cwd, "id": id})),
            ("teamRestoreConflict", json!({"cwd": cwd, "trashId": id})),
            ("inboxKeep", json!({"id": id})),
            ("inboxDiscard", json!({"id": id})),
            ("inboxEdit", json!({"id": id, "file": id, "content": "PWNED"})),
            ("dream", json!({"cwd": cwd, "id": id})),
            ("approveDream", json!({"cwd": cwd, "id": id})),
            ("rejectDream", json!({"cwd": cwd, "id": id})),
            ("undoDream", json!({"cwd": cwd, "id": id})),
            ("dailyLog", json!({"cwd": cwd, "date": id})),
            ("readFile", json!({"cwd": cwd, "path": id})),
            ("saveFile", json!({"cwd": cwd, "path": id, "content": "PWNED", "revision": "absent"})),
            ("teamSignInPoll", json!({"id": id})),
            ("memories", json!({"cwd": cwd, "agent": id})),
            ("createMemory", json!({"cwd": cwd, "agent": id, "name": "n", "description": "d", "kind": "user", "body": "PWNED"})),
        ];
        for (m, body) in calls {
            let resp = s.post(m, body).send().await.unwrap();
            let st = resp.status().as_u16();
            let text = resp.text().await.unwrap();
            let short: String = id.chars().take(40).collect();
            assert!(!text.contains("TOPSECRET"), "{m} {short:?}: {text}");
            assert!(!text.contains("root:x:0"), "{m} {short:?}: {text}");
            assert!(!text.contains("panicked"), "{m} {short:?}: {text}");
            assert!(st != 200 || !matches!(m, "memory" | "readFile" | "restoreMemory" | "saveFile" | "saveMemory"), "{m} {short:?}: {text}");
        }
    }
    let after: Vec<_> = std::fs::read_dir(&outside).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(after.len(), 2, "{after:?}");
    assert!(std::fs::read_to_string(outside.join("secret.md")).unwrap().contains("TOPSECRET"));
    // Nothing the calls sent was written anywhere but the memory folder (a literal
    // `%2e%2e` folder inside it is only a name).
    for f in mneme_testsupport::files_under(&s.home.root) {
        if std::fs::read_to_string(&f).is_ok_and(|t| t.contains("PWNED")) {
            assert!(f.starts_with(&memdir), "written outside the memory folder: {}", f.display());
        }
    }
    s.stop().await;
}

/// `to` relative to `from`, with `..` for each folder of `from` below their common part.
fn pathdiff(to: &std::path::Path, from: &std::path::Path) -> String {
    let n = from.components().count();
    let common = to.components().zip(from.components()).take_while(|(a, b)| a == b).count();
    let mut s: Vec<String> = std::iter::repeat_n("..".to_string(), n - common).collect();
    s.extend(to.components().skip(common).map(|c| c.as_os_str().to_string_lossy().into_owned()));
    s.join("/")
}
