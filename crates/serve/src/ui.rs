//! The static browser UI: files from the built `ui/dist`, `index.html` for `/` and for any
//! other path the UI routes itself (a single-page app), and a short page saying how to
//! build the UI when it is not there (the API keeps working either way).

use crate::AppState;
use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderName, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use percent_encoding::percent_decode_str;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tower_http::services::{ServeDir, ServeFile};

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
    // tower-http's ServeDir does the file serving (decoding, `..` refusal, content types,
    // conditional and range requests, HEAD); index.html answers every path it does not find,
    // directories included, since the UI routes those itself.
    let index = ServeFile::new(root.join("index.html"));
    let answer = if is_public(&root, path) {
        let mut files = ServeDir::new(&root).append_index_html_on_directories(false).fallback(index);
        tower_service::Service::call(&mut files, req).await
    } else {
        let mut index = index;
        tower_service::Service::call(&mut index, req).await
    };
    match answer {
        Ok(resp) => with_headers(resp.map(Body::new)),
        Err(e) => match e {},
    }
}

/// What this server refuses on top of ServeDir's own checks: hidden files (a `.env` beside a
/// build, also when a link with an ordinary name leads to one), Windows separators, and
/// symbolic links inside the UI folder that lead outside it. A path that names nothing is
/// public: ServeDir answers it with index.html.
fn is_public(root: &Path, url_path: &str) -> bool {
    let Ok(decoded) = percent_decode_str(url_path).decode_utf8() else {
        return false;
    };
    let mut p = root.to_path_buf();
    for seg in decoded.split('/').filter(|s| !s.is_empty()) {
        if seg.starts_with('.') || seg.contains('\\') || seg.contains('\0') {
            return false;
        }
        p.push(seg);
    }
    p.canonicalize().map_or(true, |real| {
        real.strip_prefix(root)
            .is_ok_and(|inside| !inside.components().any(|c| c.as_os_str().to_string_lossy().starts_with('.')))
    })
}

fn with_headers(mut resp: Response) -> Response {
    let h = resp.headers_mut();
    let content_type = h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_string();
    // The UI's text files are UTF-8; say so rather than leave the browser to guess.
    if content_type.starts_with("text/") && !content_type.contains("charset") {
        if let Ok(v) = HeaderValue::from_str(&format!("{content_type}; charset=utf-8")) {
            h.insert(header::CONTENT_TYPE, v);
        }
    }
    security_headers(h);
    // index.html names hashed assets; a cached copy would point at assets of an old build.
    let cache = if content_type.starts_with("text/html") { "no-store" } else { "no-cache" };
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
/// frame the page, never let the browser guess types, and load nothing from elsewhere. Nor
/// resolve the hosts of links in a preview ahead of a click: a teammate's memory linking to
/// `https://<id>.attacker.example` would otherwise tell that name server it was viewed.
fn security_headers(h: &mut axum::http::HeaderMap) {
    h.insert(HeaderName::from_static("x-dns-prefetch-control"), HeaderValue::from_static("off"));
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
    fn hidden_files_and_links_out_of_the_ui_folder_are_not_public() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("ui");
        std::fs::create_dir_all(root.join("assets")).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("index.html"), "i").unwrap();
        std::fs::write(root.join("assets/app.js"), "a").unwrap();
        std::fs::write(root.join(".env"), "secret").unwrap();
        std::fs::write(dir.path().join("outside.txt"), "secret").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(dir.path().join("outside.txt"), root.join("assets/out.txt")).unwrap();
        // A link with an ordinary name to a hidden file inside the folder.
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join(".env"), root.join("assets/env.txt")).unwrap();
        for ok in ["/assets/app.js", "/assets%2Fapp.js", "/assets", "/nope", "/memories/testing", "/%zz"] {
            assert!(is_public(&root, ok), "{ok}");
        }
        for bad in ["/.env", "/%2eenv", "/assets/..%5c..%5cx", "/a%00b", "/%ff", "/assets/out.txt", "/assets/env.txt"] {
            assert!(!is_public(&root, bad), "{bad}");
        }
    }
}
