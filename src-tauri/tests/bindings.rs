//! The committed `ui/src/lib/bindings.ts` must be exactly what the commands and events generate
//! today, so the UI's types never drift from the Rust side. Regenerate with
//! `MNEME_UPDATE_BINDINGS=1 cargo test -p mneme-app --test bindings`.

use std::path::Path;

#[test]
fn typescript_bindings_match_the_committed_file() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let committed_path = root.join(mneme_app::BINDINGS_PATH);
    let dir = tempfile::tempdir().unwrap();
    let fresh_path = dir.path().join("bindings.ts");
    mneme_app::export_bindings(&fresh_path).unwrap();
    let fresh = std::fs::read_to_string(&fresh_path).unwrap();

    if std::env::var_os("MNEME_UPDATE_BINDINGS").is_some() {
        std::fs::write(&committed_path, &fresh).unwrap();
        return;
    }
    let committed = std::fs::read_to_string(&committed_path).unwrap_or_default();
    if committed != fresh {
        let first = committed.lines().zip(fresh.lines()).position(|(a, b)| a != b);
        panic!(
            "{} is out of date with the Tauri commands (first difference at line {}). Regenerate it with:\n  \
             MNEME_UPDATE_BINDINGS=1 cargo test -p mneme-app --test bindings\nand commit the result.",
            committed_path.display(),
            first.map_or_else(|| committed.lines().count().min(fresh.lines().count()) + 1, |i| i + 1),
        );
    }
}
