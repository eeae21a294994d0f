// tauri.conf.json sits beside this file, where both tauri-build and the bundler (`npm run dist`)
// look for it; `frontendDist` and the icons are named relative to it.
include!("../scripts/build_stamp.rs");

fn main() {
    stamp_commit();
    if let Err(e) = tauri_build::try_build(tauri_build::Attributes::new()) {
        panic!("tauri-build failed: {e:#}");
    }
}
