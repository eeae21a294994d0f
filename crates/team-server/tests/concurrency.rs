//! Writes that meet other writes: another replica's commit landing while a write waits for
//! the repository's lock, and a group commit in which one write fails. Run on SQLite and,
//! when configured, PostgreSQL.

mod common;

use common::{databases, Harness, REPO};
use mneme_team::wire::TeamMemoryData;
use mneme_team_server::admin::Role;
use mneme_team_server::memory::{Memory, Op, Permission};
use mneme_team_server::checksum::{entry_checksum, next_repo_checksum};
use mneme_team_server::store::{Change, Commit, SqlStore, Store};
use mneme_team_server::DatabaseUrl;
use reqwest::StatusCode;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;

/// Waits until some session of the database waits for a lock (PostgreSQL), or a moment
/// (SQLite, whose busy waits cannot be seen from outside).
async fn until_someone_waits_for_a_lock(db: &DatabaseUrl) {
    match db {
        DatabaseUrl::Postgres(url) => {
            use sqlx::Connection;
            let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
            for _ in 0..500 {
                let waiting: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM pg_locks WHERE NOT granted")
                    .fetch_one(&mut conn)
                    .await
                    .unwrap();
                if waiting > 0 {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            panic!("the push never waited for the repository's lock");
        }
        // A sleep on purpose: nothing to poll (see above); ample for the push to reach the lock.
        DatabaseUrl::Sqlite(_) => tokio::time::sleep(Duration::from_millis(500)).await,
    }
}

/// Two replicas: one (driven here through the store) holds the repository's lock while it
/// creates `x.md`; the other gets a push of `x.md` meanwhile and waits for the lock. Once it
/// has it, the key it reads must be the one just created: on PostgreSQL a statement that
/// waited for the row lock reads joined tables as of its own start, so a lock-and-read in one
/// statement saw no `x.md`, took the push for a new key and counted it live a second time
/// (the entry cap then refuses pushes early, and a lead's removal decides on stale state).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_waited_for_the_lock_sees_what_the_holder_committed() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        let lead = h.user("lena", REPO, Role::Lead).await;
        let other = Arc::new(SqlStore::connect(&h.db).await.unwrap());
        let repo = other.repo_by_slug(REPO).await.unwrap().unwrap();

        // The other replica's write, paused while it holds the lock.
        let (go_tx, go_rx) = std::sync::mpsc::channel::<()>();
        let (locked_tx, locked_rx) = tokio::sync::oneshot::channel::<()>();
        let holder = {
            let other = other.clone();
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                rt.block_on(async move {
                    let mut locked_tx = Some(locked_tx);
                    let mut decide = move |view: &mneme_team_server::store::WriteView| {
                        let _ = locked_tx.take().unwrap().send(());
                        go_rx.recv().unwrap();
                        let content = "from the other replica\n".to_string();
                        let checksum = entry_checksum(&content);
                        vec![Commit {
                            expected_version: view.repo.version,
                            version: view.repo.version + 1,
                            checksum: next_repo_checksum(&view.repo.checksum, [("x.md", checksum.as_str())], []),
                            now_ms: view.repo.last_modified_ms + 1,
                            author: None,
                            live_entries: view.repo.live_entries + 1,
                            history_bytes: view.repo.history_bytes + content.len() as i64,
                            live_bytes: view.repo.live_bytes + content.len() as i64,
                            changes: vec![Change { key: "x.md".into(), content, checksum, deleted: false, purge: false }],
                        }]
                    };
                    other.write(repo.id, &["x.md"], &mut decide).await.unwrap()
                })
            })
        };
        locked_rx.await.unwrap();

        // This replica's push of the same key queues behind that lock.
        let push = {
            let req = h.request(reqwest::Method::PUT, &h.memory_url(REPO), &lead).json(&json!({"entries": {"x.md": "from this replica\n"}}));
            tokio::spawn(async move { req.send().await.unwrap() })
        };
        until_someone_waits_for_a_lock(&h.db).await;
        go_tx.send(()).unwrap();
        holder.join().unwrap();
        let res = push.await.unwrap();
        assert_eq!(res.status(), StatusCode::OK, "{}", h.label);

        let data: TeamMemoryData = h.get(&lead, REPO).await.json().await.unwrap();
        assert_eq!(data.version, 2, "{}", h.label);
        assert_eq!(data.content.entries.len(), 1, "{}", h.label);
        assert_eq!(data.content.entries["x.md"], "from this replica\n", "{}", h.label);
        let row = other.repo_by_slug(REPO).await.unwrap().unwrap();
        assert_eq!(row.live_entries, 1, "{}: the row counts x.md once", h.label);
        assert_eq!(row.live_bytes, "from this replica\n".len() as i64, "{}", h.label);
        other.close().await;
        h.shutdown().await;
    }
}

/// Writes that queue for one repository are committed together in one transaction; when the
/// database refuses one of them, the others must still land. Here the refused write names an
/// author the database does not know (a foreign key both backends enforce) and, on
/// PostgreSQL, one holds a NUL, which its text cannot store (the HTTP edge refuses NULs; this
/// is the database's own refusal, reached from below it). Before, the whole group failed.
#[tokio::test]
async fn a_write_the_database_refuses_fails_alone_in_its_group() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        let lead = h.user("lena", REPO, Role::Lead).await;
        h.put(&lead, REPO, json!({"entries": {"seed.md": "seed\n"}}), None).await.error_for_status().unwrap();
        let store = Arc::new(SqlStore::connect(&h.db).await.unwrap());
        let repo = store.repo_by_slug(REPO).await.unwrap().unwrap();
        let memory = Memory::new(store.clone(), h.clock.clone(), 1000, 1 << 30);
        let upsert = |key: &str, content: &str| vec![Op::Upsert { key: key.into(), content: content.into() }];
        let postgres = matches!(h.db, DatabaseUrl::Postgres(_));
        let nul = if postgres { "a NUL \0 here\n" } else { "stored as any text on SQLite\n" };
        // Polled together on this one thread, all four queue before the group is committed.
        let (ops_a, ops_ghost, ops_nul, ops_b) =
            (upsert("a.md", "A\n"), upsert("ghost.md", "G\n"), upsert("nul.md", nul), upsert("b.md", "B\n"));
        let (a, unknown_author, with_nul, b) = tokio::join!(
            memory.write(&repo, None, Permission::Member, None, &ops_a),
            memory.write(&repo, Some(i64::MAX), Permission::Member, None, &ops_ghost),
            memory.write(&repo, None, Permission::Member, None, &ops_nul),
            memory.write(&repo, None, Permission::Member, None, &ops_b),
        );
        assert!(a.is_ok(), "{}: {a:?}", h.label);
        assert!(b.is_ok(), "{}: {b:?}", h.label);
        assert!(unknown_author.is_err(), "{}", h.label);
        assert_eq!(with_nul.is_err(), postgres, "{}: {with_nul:?}", h.label);
        let data: TeamMemoryData = h.get(&lead, REPO).await.json().await.unwrap();
        let mut keys: Vec<&str> = data.content.entries.keys().map(String::as_str).collect();
        keys.sort();
        let expected: &[&str] = if postgres { &["a.md", "b.md", "seed.md"] } else { &["a.md", "b.md", "nul.md", "seed.md"] };
        assert_eq!(keys, expected, "{}", h.label);
        assert_eq!(store.repo_by_slug(REPO).await.unwrap().unwrap().live_entries, expected.len() as i64, "{}", h.label);
        store.close().await;
        h.shutdown().await;
    }
}
