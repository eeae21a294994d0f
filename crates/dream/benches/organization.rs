//! The dream organization search (`mneme_dream::organization`) over a project folder of many
//! large transcripts, as the Dreams screen's status runs it at every look: read afresh (the
//! command line, a fresh process each time) and through a warm `SearchCache` (the desktop app
//! and `mneme serve`, one process). Figures are written down in docs/benchmarks.md.

use mneme_core::versions::{behaviours, ClaudeVersion};
use mneme_dream::organization::{skip_searching, Search, SearchCache, SignIn};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Transcripts in the folder, and the size of each: 200 sessions of 2 MiB (400 MiB), a
/// year of daily work with long tool outputs.
const SESSIONS: usize = 200;
const SESSION_BYTES: usize = 2 << 20;

fn main() {
    // Built before timing starts, and settled (a file changed within 2 s of its read is not
    // kept), so no sample pays for it.
    folder();
    divan::main();
}

struct Folder {
    _dir: tempfile::TempDir,
    path: PathBuf,
    cache: SearchCache,
}

fn folder() -> &'static Folder {
    static FOLDER: OnceLock<Folder> = OnceLock::new();
    FOLDER.get_or_init(|| {
        let dir = tempfile::tempdir().expect("a temporary folder");
        let path = dir.path().join("projects/-home-me-work");
        std::fs::create_dir_all(path.join("s/subagents")).unwrap();
        // Lines of a few hundred bytes to a few KiB, as a session's are; one session ran under
        // the signed-in organization.
        let mut session = String::with_capacity(SESSION_BYTES + 4096);
        let mut n = 0;
        while session.len() < SESSION_BYTES {
            let pad = "x".repeat(200 + (n * 37) % 3000);
            session.push_str(&format!("{{\"type\":\"assistant\",\"n\":{n},\"message\":{{\"content\":\"{pad}\"}}}}\n"));
            n += 1;
        }
        for i in 0..SESSIONS {
            let name = if i % 10 == 9 { format!("s/subagents/agent-{i:04}.jsonl") } else { format!("{i:08}-1111-4111-8111-111111111111.jsonl") };
            let mut text = session.clone();
            if i == 0 {
                text.push_str("{\"type\":\"hybrid-organization\",\"organizationUuid\":\"5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f\"}\n");
            }
            std::fs::write(path.join(name), text).unwrap();
        }
        std::thread::sleep(mneme_dream::organization::SETTLE + std::time::Duration::from_millis(100));
        let cache = SearchCache::default();
        search(&path, Some(&cache));
        assert_eq!(cache.len(), SESSIONS, "every transcript is kept");
        Folder { _dir: dir, path, cache }
    })
}

fn search(path: &Path, cache: Option<&SearchCache>) {
    let profile = behaviours("2.1.337".parse::<ClaudeVersion>().unwrap());
    let sign_in = SignIn { account_uuid: Some("acc".into()), organization_uuid: Some("5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f".into()) };
    let skip = skip_searching(path, &profile, &sign_in, true, Search { cache, limit: None });
    assert!(skip.is_none(), "{skip:?}");
}

/// Every transcript read (from the page cache: a drive's own speed comes on top).
#[divan::bench(sample_count = 10)]
fn search_read_afresh() {
    search(&folder().path, None);
}

/// Every transcript unchanged since the last look: listed and `stat`ed only.
#[divan::bench(sample_count = 50)]
fn search_through_a_warm_cache() {
    let f = folder();
    search(&f.path, Some(&f.cache));
}
