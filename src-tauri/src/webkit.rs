//! WebKitGTK settings that keep the Linux app small (issue 19; figures in docs/benchmarks.md,
//! "Desktop app", measured with `tests/perf.rs`):
//!
//! - **No accelerated compositing** (`HardwareAccelerationPolicy::Never`). Composited, WebKit
//!   keeps every layer of the page as tiles in GPU buffers (under software GL, in the web
//!   process's own heap); the app's pages are text and lists that WebKit paints straight into
//!   one buffer just as well. This is most of the saving: about 90 MiB of the web process with
//!   the 10,000-memory project open. The Graph's WebGL canvas still draws (it has a GL context
//!   of its own).
//! - **The document-viewer cache model and no page cache.** The app shows one page that never
//!   navigates, so WebKit's browser-sized memory cache and its back/forward page cache hold
//!   nothing worth keeping (not measured apart: they can only hold less).

use webkit2gtk::{CacheModel, HardwareAccelerationPolicy, SettingsExt, WebContextExt, WebViewExt};

/// Applies the settings above to the window's web view. WebKit applies them to a page that is
/// already loading, so this may run after the window was created.
pub fn keep_small(webview: &webkit2gtk::WebView) {
    if let Some(settings) = WebViewExt::settings(webview) {
        settings.set_hardware_acceleration_policy(HardwareAccelerationPolicy::Never);
        settings.set_enable_page_cache(false);
    }
    if let Some(context) = webview.context() {
        context.set_cache_model(CacheModel::DocumentViewer);
    }
}
