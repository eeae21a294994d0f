//! The static browser UI: files from the built `ui/dist`, `index.html` for `/` and for any
//! other path the UI routes itself (a single-page app), and a short page saying how to
//! build the UI when it is not there (the API keeps working either way).

use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the built UI is when `--ui-dir` is not given: `$MNEME_UI_DIR`; else `ui/dist` in
/// the repository the executable sits in (found through its ancestors); else `ui/dist` in the
/// repository it was built from (builds usually go to a target folder outside the repository).
pub fn default_ui_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("MNEME_UI_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d));
    }
    let built = |root: &Path| {
        let d = root.join("ui").join("dist");
        d.join("index.html").is_file().then_some(d)
    };
    if let Some(exe) = std::env::current_exe().ok().and_then(|e| e.canonicalize().ok()) {
        if let Some(d) = exe.ancestors().skip(1).find_map(built) {
            return Some(d);
        }
    }
    // This crate lives at <repo>/crates/serve.
    built(Path::new(env!("CARGO_MANIFEST_DIR")).parent()?.parent()?)
}

pub(crate) async fn serve_ui(State(state): State<Arc<AppState>>, req: Request) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return StatusCode::METHOD_NOT_ALLOWED.into_response();
    }
    let path = req.uri().path();
    if path == "/api" || path.starts_with("/api/") {
        return crate::methods::error_response(StatusCode::NOT_FOUND, "not_found", "There is no such API endpoint.");
    }
    let Some(root) = state.ui_dir.as_deref().and_then(|d| d.canonicalize().ok()).filter(|d| d.join("index.html").is_file())
    else {
        return not_built(state.ui_dir.as_deref());
    };
    let file = resolve(&root, path).unwrap_or_else(|| root.join("index.html"));
    match tokio::fs::read(&file).await {
        Ok(bytes) => with_headers(bytes, &file),
        Err(_) => StatusCode::NOT_FOUND.into_response(),
    }
}

/// The file under `root` a URL path names, if it is a regular file inside `root`.
fn resolve(root: &Path, url_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(url_path)?;
    let mut p = root.to_path_buf();
    for seg in decoded.split('/').filter(|s| !s.is_empty()) {
        // No `..`, no hidden files, no Windows separators: only plain names reach the disk.
        if seg.starts_with('.') || seg.contains('\\') || seg.contains('\0') {
            return None;
        }
        p.push(seg);
    }
    // A symbolic link inside the UI folder must not lead outside it.
    let real = p.canonicalize().ok()?;
    (real.starts_with(root) && real.is_file()).then_some(real)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or("") {
        "html" => "text/html; charset=utf-8",
        "js" | "mjs" => "text/javascript; charset=utf-8",
        "css" => "text/css; charset=utf-8",
        "json" | "map" => "application/json",
        "svg" => "image/svg+xml",
        "png" => "image/png",
        "jpg" | "jpeg" => "image/jpeg",
        "gif" => "image/gif",
        "ico" => "image/x-icon",
        "webp" => "image/webp",
        "woff" => "font/woff",
        "woff2" => "font/woff2",
        "ttf" => "font/ttf",
        "txt" => "text/plain; charset=utf-8",
        "wasm" => "application/wasm",
        _ => "application/octet-stream",
    }
}

fn with_headers(bytes: Vec<u8>, file: &Path) -> Response {
    let mut resp = bytes.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type(file)));
    security_headers(h);
    // index.html names hashed assets; a cached copy would point at assets of an old build.
    let cache = if file.extension().is_some_and(|e| e == "html") { "no-store" } else { "no-cache" };
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    resp
}

/// The desktop app's Content-Security-Policy (`app.security.csp` in tauri.conf.json, read at
/// build time so the two cannot drift), with what differs in a browser: the UI talks to this
/// server over HTTP instead of Tauri's IPC (`connect-src 'self'`), runs the graph layout in a
/// worker loaded from this server (`worker-src 'self'`), and may not be framed.
pub fn content_security_policy() -> &'static str {
    static CSP: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    CSP.get_or_init(|| {
        let conf: serde_json::Value =
            serde_json::from_str(include_str!("../../../src-tauri/tauri.conf.json")).expect("tauri.conf.json is JSON");
        let mut out = Vec::new();
        if let Some(csp) = conf["app"]["security"]["csp"].as_object() {
            for (directive, value) in csp {
                let value = match directive.as_str() {
                    "connect-src" | "worker-src" => "'self'",
                    _ => value.as_str().unwrap_or("'none'"),
                };
                out.push(format!("{directive} {value}"));
            }
        }
        out.push("frame-ancestors 'none'".to_string());
        out.join("; ")
    })
}

/// The page URL carries the token: never send it on as a Referer, never let another site
/// frame the page, never let the browser guess types, and load nothing from elsewhere.
fn security_headers(h: &mut axum::http::HeaderMap) {
    if let Ok(csp) = HeaderValue::from_str(content_security_policy()) {
        h.insert(header::CONTENT_SECURITY_POLICY, csp);
    }
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
}

fn not_built(ui_dir: Option<&Path>) -> Response {
    let looked = match ui_dir {
        Some(d) => format!("<p>Looked in <code>{}</code>.</p>", escape(&d.display().to_string())),
        None => String::new(),
    };
    let page = format!(
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Mneme</title></head>\n<body>\n\
         <h1>Mneme's web UI is not built</h1>\n\
         <p>The API is running. To get the UI, run this in the Mneme repository, then reload this page:</p>\n\
         <pre>npm run build:ui</pre>\n{looked}\n\
         <p>Or point <code>mneme serve --ui-dir DIR</code> (or <code>MNEME_UI_DIR</code>) at a built UI.</p>\n\
         </body></html>\n"
    );
    let mut resp = (StatusCode::OK, page).into_response();
    resp.headers_mut().insert(header::CONTENT_TYPE, HeaderValue::from_static("text/html; charset=utf-8"));
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    security_headers(resp.headers_mut());
    resp
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_stay_inside_the_ui_folder() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("assets")).unwrap();
        std::fs::write(root.join("index.html"), "i").unwrap();
        std::fs::write(root.join("assets/app.js"), "a").unwrap();
        std::fs::write(root.join(".env"), "secret").unwrap();
        assert_eq!(resolve(&root, "/assets/app.js"), Some(root.join("assets/app.js")));
        assert_eq!(resolve(&root, "/assets%2Fapp.js"), Some(root.join("assets/app.js")));
        for bad in ["/../etc/passwd", "/assets/../../x", "/%2e%2e/x", "/.env", "/assets", "/nope", "/%zz"] {
            assert_eq!(resolve(&root, bad), None, "{bad}");
        }
    }
}
