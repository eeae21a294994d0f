// The real tauri.conf.json lives at the repository root, so `frontendDist` and `icons` resolve
// from there; `generate_context!` in src/lib.rs names the same file.
fn main() {
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new().config_path("../tauri.conf.json")) {
        panic!("tauri-build failed: {e:#}");
    }
}
