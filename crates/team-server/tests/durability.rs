//! A server process killed with SIGKILL while pushes are in flight loses nothing it
//! acknowledged: restarted on the same database, every acknowledged entry is there.

mod common;

use common::process::{provision, ServerProcess};
use common::{encode_uri_component, fresh_pg_database, pg_url, REPO};
use mneme_team::wire::TeamMemoryData;
use mneme_team_server::DatabaseUrl;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const WRITERS: usize = 8;
/// The kill comes once this many pushes were acknowledged, while the writers keep pushing.
const KILL_AFTER: usize = 150;

async fn killed_mid_push_loses_nothing_acknowledged(db: &str) {
    let token = provision(db);
    let mut server = ServerProcess::start(db);
    let url = format!("{}/api/claude_code/team_memory?repo={}", server.url(), encode_uri_component(REPO));
    let http = reqwest::Client::new();
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let count = Arc::new(AtomicUsize::new(0));
    let enough = Arc::new(tokio::sync::Notify::new());
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (http, url, token, acked, count, enough) =
            (http.clone(), url.clone(), token.clone(), acked.clone(), count.clone(), enough.clone());
        writers.push(tokio::spawn(async move {
            // Push until the server is gone; return how the last push failed.
            for n in 0.. {
                let key = format!("w{w}/{n}.md");
                let content = format!("writer {w}, push {n}\n{}", "x".repeat(n % 7 * 300));
                let res = http
                    .put(&url)
                    .bearer_auth(&token)
                    .json(&serde_json::json!({"entries": {&key: &content}}))
                    .send()
                    .await;
                match res {
                    Ok(r) if r.status().is_success() => {
                        acked.lock().unwrap().push((key, content));
                        if count.fetch_add(1, Ordering::SeqCst) + 1 == KILL_AFTER {
                            enough.notify_one();
                        }
                    }
                    Ok(r) => panic!("writer {w}: unexpected {}", r.status()),
                    Err(e) => return e.is_connect(),
                }
            }
            unreachable!()
        }));
    }
    enough.notified().await;
    // SIGKILL: no shutdown code runs, in-flight transactions die with the process.
    server.child.kill().unwrap();
    server.child.wait().unwrap();
    let mut refused = 0;
    for w in writers {
        refused += usize::from(w.await.unwrap());
    }
    let acked = acked.lock().unwrap().clone();
    eprintln!("{} pushes acknowledged before the kill; {} writers then found the port closed", acked.len(), refused);

    let server = ServerProcess::start(db);
    let url = format!("{}/api/claude_code/team_memory?repo={}", server.url(), encode_uri_component(REPO));
    let data: TeamMemoryData = http.get(&url).bearer_auth(&token).send().await.unwrap().json().await.unwrap();
    for (key, content) in &acked {
        assert_eq!(data.content.entries.get(key), Some(content), "acknowledged {key} was lost");
    }
    // Every version is one push: no half-applied push shows up either.
    assert_eq!(data.version as usize, data.content.entries.len());
    assert!(data.content.entries.len() >= acked.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sqlite_killed_mid_push_loses_nothing_acknowledged() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("team.db").display());
    killed_mid_push_loses_nothing_acknowledged(&db).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn postgres_killed_mid_push_loses_nothing_acknowledged() {
    let Some(base) = pg_url() else {
        eprintln!("MNEME_TEST_PG_URL is not set: PostgreSQL not tested here");
        return;
    };
    let DatabaseUrl::Postgres(db) = fresh_pg_database(&base).await else { unreachable!() };
    killed_mid_push_loses_nothing_acknowledged(&db).await;
}
