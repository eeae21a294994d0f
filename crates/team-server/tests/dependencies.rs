//! The server links the team contract (`mneme-team-proto`), not the sync client: a server
//! build must not carry an HTTP client, a file watcher, the OS keyring or the disk layer it
//! never uses (issue 11). Checked on the real dependency graph, as `cargo tree` resolves it.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;

/// Crates the server must never link, with why each would be there.
const FORBIDDEN: &[(&str, &str)] = &[
    ("mneme-team", "the sync client"),
    ("mneme-store", "the client's disk layer"),
    ("ureq", "the client's HTTP client"),
    ("notify", "the client's file watcher"),
    ("keyring", "the client's sign-in token store"),
];

#[test]
fn the_server_does_not_link_the_sync_client() {
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    // The cargo running this test (set for test processes), so the toolchain is the same.
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(&cargo)
        .args(["tree", "--offline", "-p", "mneme-team-server", "-e", "normal", "--prefix", "none", "--manifest-path"])
        .arg(&manifest)
        .output()
        .expect("run cargo tree");
    assert!(out.status.success(), "cargo tree failed: {}", String::from_utf8_lossy(&out.stderr));
    let tree = String::from_utf8_lossy(&out.stdout);
    // Each line is `name vX.Y.Z [(path)] [(*)]`.
    let names: BTreeSet<&str> = tree.lines().filter_map(|l| l.split_whitespace().next()).collect();
    assert!(names.contains("mneme-team-proto"), "the tree was not read (no mneme-team-proto in it):\n{tree}");
    let found: Vec<String> =
        FORBIDDEN.iter().filter(|(n, _)| names.contains(n)).map(|(n, why)| format!("{n} ({why})")).collect();
    assert!(
        found.is_empty(),
        "mneme-team-server links {}; depend on mneme-team-proto for what client and server share, \
         and keep client-only crates out of crates/team-server/Cargo.toml's [dependencies]",
        found.join(", ")
    );
}
