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
//! - **No GL in the app's own process** ([`GL_OFF`], set before GTK starts). Without
//!   compositing the window process only copies finished pixels, yet GTK (its GLX check at
//!   start) and WebKit (asking EGL which GPU the web process should render on, and whether it
//!   can share DMA-BUF buffers) both load the GL driver there; on a machine without a GPU that
//!   is Mesa's software driver and LLVM, ~25 MiB of PSS. GL stays in the web process, where
//!   WebGL (the Graph) draws.
//! - **The JavaScript JIT only for hot code** ([`JIT_LATER`], reaching the web process
//!   through its environment). By default JavaScriptCore compiles a function that has run a
//!   few hundred times and optimizes it soon after; at start that is much of the UI's set-up
//!   code, which then hardly runs again, and the compilers' code and output cost ~5 MiB of
//!   the web process. With thresholds a hundred times higher only code that really runs hot
//!   is compiled: the Graph's layout, whose loops turn over every node of the graph, crosses
//!   them in its first rounds and lays out as fast as before. (The JIT off altogether saves
//!   ~10 MiB but makes the Graph's layout 4.6 times slower.)
//!
//! These variables are read only by GTK and WebKit in this process, and by the web process
//! WebKit starts, all while the window is built, so [`forget_after_launch`] takes them out
//! again before the app starts anything else (editor, file manager, Claude Code).

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

/// The variables that keep GL out of the window process, and their values:
/// - `GDK_GL=disable`: GTK 3 skips its GLX set-up (it opens the GL driver to pick visuals).
/// - `WEBKIT_DISABLE_DMABUF_RENDERER=1`: no DMA-BUF buffer sharing, which WebKit checks for
///   with EGL; with compositing off there are no GPU buffers to share.
/// - `WEBKIT_WEB_RENDER_DEVICE_FILE`: the render device WebKit would otherwise ask EGL for, to
///   hand to the web process. That process only uses it for DMA-BUF buffers, which are off,
///   so a name that is no device (`/dev/null`) saves the question without changing anything.
pub const GL_OFF: &[(&str, &str)] = &[
    ("GDK_GL", "disable"),
    ("WEBKIT_DISABLE_DMABUF_RENDERER", "1"),
    ("WEBKIT_WEB_RENDER_DEVICE_FILE", "/dev/null"),
];

/// JavaScriptCore's tier-up thresholds (its `JSC_` options, read by the web process as it
/// starts), a hundred times their defaults (500, 100, 1,000 and 1,000 in JavaScriptCore 2.50):
/// the counts of calls and loop turns after which a function is compiled (baseline JIT) and
/// then optimized (DFG, and from there FTL).
pub const JIT_LATER: &[(&str, &str)] = &[
    ("JSC_thresholdForJITAfterWarmUp", "50000"),
    ("JSC_thresholdForJITSoon", "10000"),
    ("JSC_thresholdForOptimizeAfterWarmUp", "100000"),
    ("JSC_thresholdForOptimizeSoon", "100000"),
];

/// Sets [`GL_OFF`]'s and [`JIT_LATER`]'s variables that the person has not set themselves
/// (their own value wins) and returns the names it set. Call before GTK starts and before any
/// thread: setting the environment is only sound while nothing else reads it.
pub fn set_for_launch() -> Vec<&'static str> {
    let mut set = Vec::new();
    for (name, value) in GL_OFF.iter().chain(JIT_LATER) {
        if std::env::var_os(name).is_none() {
            std::env::set_var(name, value);
            set.push(*name);
        }
    }
    set
}

/// Takes the variables [`set_for_launch`] set out of the environment again, so programs the
/// app starts (an editor, the file manager, Claude Code, the agent's shell) run as they would
/// from the person's own shell. GTK read `GDK_GL` when it started, WebKit read the other two
/// GL variables when the window launched its web process (once: WebKit keeps the answers for
/// any later web process), and that web process was started with the `JSC_` ones, so by the
/// time the window exists they have done their work. (A web process WebKit starts later, after
/// a crash, runs with JavaScriptCore's defaults: larger, nothing else.) The threads running by
/// then are GTK's, WebKit's and the async runtime's; the app's own code reads the environment
/// only through the `Environment` read at start.
pub fn forget_after_launch(set: &[&str]) {
    for name in set {
        std::env::remove_var(name);
    }
}
