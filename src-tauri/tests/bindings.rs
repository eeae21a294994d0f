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

fn repo_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

/// The generated `commands` object's keys (`fixIndex`, …).
fn generated_commands(bindings: &str) -> Vec<String> {
    let start = bindings.find("export const commands = {").expect("bindings have a commands object");
    let end = start + bindings[start..].find("\n}").expect("the commands object ends");
    bindings[start..end]
        .lines()
        .filter_map(|l| l.strip_prefix('\t'))
        .filter_map(|l| l.split_once(": (").map(|(name, _)| name.to_string()))
        .filter(|name| name.chars().all(|c| c.is_ascii_alphanumeric()))
        .collect()
}

/// Every Tauri command is an api operation (or one of the few desktop-only actions, named in
/// `commands::DESKTOP_ONLY`), and every api operation is a command.
#[test]
fn every_command_is_an_api_operation() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bindings.ts");
    mneme_app::export_bindings(&path).unwrap();
    let mut commands: Vec<String> =
        generated_commands(&std::fs::read_to_string(&path).unwrap()).iter().map(|c| mneme_api::ops::snake_case(c)).collect();
    let mut expected: Vec<String> =
        mneme_api::ops::NAMES.iter().chain(mneme_app::commands::DESKTOP_ONLY).map(|s| s.to_string()).collect();
    commands.sort();
    expected.sort();
    assert_eq!(commands, expected, "a Tauri command exists without its api operation (or the reverse)");

    // A command written by hand outside the list must be a desktop-only action.
    for entry in std::fs::read_dir(repo_root().join("src-tauri/src")).unwrap() {
        let file = entry.unwrap().path();
        let text = std::fs::read_to_string(&file).unwrap();
        let mut rest = text.as_str();
        while let Some(at) = rest.find("#[tauri::command]") {
            rest = &rest[at + 1..];
            let sig = rest.lines().find(|l| l.contains("fn ")).unwrap_or_default();
            let name = sig.split("fn ").nth(1).unwrap_or_default().split(['(', '<']).next().unwrap_or_default().trim();
            assert!(
                name == "$name" || mneme_app::commands::DESKTOP_ONLY.contains(&name),
                "{}: the command `{name}` is not an api operation; add it to `mneme_api::operations!` instead",
                file.display()
            );
        }
    }
}

/// The UI's engine types come only from the generated bindings: there is no hand-written
/// copy of a Rust type anywhere under `ui/src`, and the old hand-kept `types.ts` is gone.
#[test]
fn the_ui_uses_only_generated_types() {
    let ui = repo_root().join("ui/src");
    assert!(!ui.join("lib/types.ts").exists(), "ui/src/lib/types.ts is back; import from ./bindings instead");
    let bindings = std::fs::read_to_string(repo_root().join(mneme_app::BINDINGS_PATH)).unwrap();
    let generated: std::collections::HashSet<&str> = bindings
        .lines()
        .filter_map(|l| l.strip_prefix("export type "))
        .filter_map(|l| l.split([' ', '<', '=']).next())
        .collect();
    assert!(generated.contains("ContextView") && generated.contains("ApiError"), "{generated:?}");

    let mut files = vec![ui.clone()];
    let mut problems = Vec::new();
    while let Some(p) = files.pop() {
        if p.is_dir() {
            files.extend(std::fs::read_dir(&p).unwrap().map(|e| e.unwrap().path()));
            continue;
        }
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or_default();
        if !matches!(ext, "ts" | "svelte") || p.ends_with("lib/bindings.ts") {
            continue;
        }
        let text = std::fs::read_to_string(&p).unwrap();
        for (n, line) in text.lines().enumerate() {
            let t = line.trim_start().trim_start_matches("export ");
            for keyword in ["interface ", "type "] {
                let Some(rest) = t.strip_prefix(keyword) else { continue };
                let name = rest.split(|c: char| !c.is_ascii_alphanumeric() && c != '_').next().unwrap_or_default();
                if generated.contains(name) {
                    problems.push(format!("{}:{}: `{name}` is declared by hand; import it from lib/bindings", p.display(), n + 1));
                }
            }
            if line.contains("from '") && (line.contains("/types'") || line.contains("./types'")) && !line.contains("sigma/types") {
                problems.push(format!("{}:{}: imports the removed types module", p.display(), n + 1));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
