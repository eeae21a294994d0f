//! The HTTP contract Claude Code's client relies on (reference §8.2), plus the lead API, run
//! against SQLite and, when a cluster is configured, PostgreSQL.

mod common;

use common::{databases, Harness, REPO};
use mneme_team::server_wire::{HashesWithTombstones, HistoryResponse, LatestEntry, LatestResponse, MeResponse, RepoRole};
use mneme_team::wire::{ErrorBody, PutResponse, TeamMemoryData, TOO_MANY_ENTRIES};
use mneme_team_server::admin::Role;
use mneme_team_server::checksum::{empty_repo_checksum, entry_checksum, next_repo_checksum};
use mneme_team_server::RateLimit;
use reqwest::{Method, StatusCode};
use serde_json::json;
use std::time::Duration;

async fn each_backend<F, Fut>(tweak: fn(&mut mneme_team_server::ServerConfig), test: F)
where
    F: Fn(Harness) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    for db in databases().await {
        test(Harness::start(db, tweak).await).await;
    }
}

fn defaults(_: &mut mneme_team_server::ServerConfig) {}

async fn error_code(res: reqwest::Response) -> String {
    let body: ErrorBody = res.json().await.unwrap();
    body.error.details.unwrap().error_code
}

#[tokio::test]
async fn missing_or_invalid_tokens_are_401_and_no_grant_is_403() {
    each_backend(defaults, |h| async move {
        let alice = h.user("alice", REPO, Role::Member).await;
        // No Authorization header at all.
        let res = h.http.get(h.memory_url(REPO)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        assert_eq!(error_code(res).await, "unauthorized");
        // A token the server never issued.
        assert_eq!(h.get("mneme_at_forged", REPO).await.status(), StatusCode::UNAUTHORIZED);
        let res = h.put("mneme_at_forged", REPO, json!({"entries": {"a.md": "x"}}), None).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        // A live token without a grant for the repository: 403 for a known and an unknown one.
        h.admin.grant("alice", None, "acme/other", Role::Member).await.unwrap();
        let bob = h.user("bob", "acme/other", Role::Lead).await;
        assert_eq!(h.get(&bob, REPO).await.status(), StatusCode::FORBIDDEN);
        assert_eq!(h.put(&bob, REPO, json!({"entries": {"a.md": "x"}}), None).await.status(), StatusCode::FORBIDDEN);
        let res = h.get(&alice, "acme/unknown").await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(error_code(res).await, "forbidden");
        // An expired token is refused: tokens minted by admin live one hour.
        assert_eq!(h.get(&alice, REPO).await.status(), StatusCode::NOT_FOUND);
        h.clock.advance(Duration::from_secs(3601));
        assert_eq!(h.get(&alice, REPO).await.status(), StatusCode::UNAUTHORIZED);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn pull_is_404_before_the_first_push_then_200_and_304() {
    each_backend(defaults, |h| async move {
        let token = h.user("alice", REPO, Role::Member).await;
        let res = h.get(&token, REPO).await;
        assert_eq!(res.status(), StatusCode::NOT_FOUND);
        assert_ne!(error_code(res).await, "team_memory_feature_unavailable");
        let hashes = h
            .request(Method::GET, &format!("{}&view=hashes", h.memory_url(REPO)), &token)
            .send()
            .await
            .unwrap();
        assert_eq!(hashes.status(), StatusCode::NOT_FOUND);

        let res = h.put(&token, REPO, json!({"entries": {"MEMORY.md": "# Team\n", "notes/ü.md": "grüße"}}), None).await;
        assert_eq!(res.status(), StatusCode::OK);
        let etag = res.headers()["etag"].to_str().unwrap().to_string();
        let put: PutResponse = res.json().await.unwrap();
        assert_eq!(etag, format!("\"{}\"", put.checksum));
        assert_eq!(put.version, Some(1));
        assert_eq!(put.last_modified, "2026-11-29T15:00:00.000Z");

        let res = h.get(&token, REPO).await;
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.headers()["etag"].to_str().unwrap(), etag);
        let data: TeamMemoryData = res.json().await.unwrap();
        assert_eq!(data.repo, REPO);
        assert_eq!(data.organization_id, "acme");
        assert_eq!(data.version, 1);
        assert_eq!(data.checksum, put.checksum);
        assert_eq!(data.last_modified, put.last_modified);
        assert_eq!(data.content.entries["MEMORY.md"], "# Team\n");
        assert_eq!(data.content.entries["notes/ü.md"], "grüße");
        let sums = data.content.entry_checksums.clone().unwrap();
        assert_eq!(sums["notes/ü.md"], entry_checksum("grüße"));
        assert_eq!(sums.len(), 2);
        // The repository checksum chains the first commit's changes onto the empty repository's.
        assert_eq!(
            data.checksum,
            next_repo_checksum(&empty_repo_checksum(), sums.iter().map(|(k, v)| (k.as_str(), v.as_str())), [])
        );

        // If-None-Match as Claude Code sends it → 304 with no body.
        let res = h.request(Method::GET, &h.memory_url(REPO), &token).header("if-none-match", &etag).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
        assert_eq!(res.headers()["etag"].to_str().unwrap(), etag);
        assert!(res.bytes().await.unwrap().is_empty());
        // A stale tag gets the full body.
        let res =
            h.request(Method::GET, &h.memory_url(REPO), &token).header("if-none-match", "\"sha256:00\"").send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        // The repository name is matched as GitHub does, ignoring case.
        assert_eq!(h.get(&token, "ACME/App").await.status(), StatusCode::OK);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn put_is_an_upsert_and_only_changes_bump_the_version() {
    each_backend(defaults, |h| async move {
        let token = h.user("alice", REPO, Role::Member).await;
        h.put(&token, REPO, json!({"entries": {"a.md": "A", "b.md": "B"}}), None).await.error_for_status().unwrap();
        h.clock.advance(Duration::from_millis(1500));
        let res = h.put(&token, REPO, json!({"entries": {"b.md": "B2", "c.md": "C"}}), None).await;
        let put: PutResponse = res.json().await.unwrap();
        assert_eq!(put.version, Some(2));
        assert_eq!(put.last_modified, "2026-11-29T15:00:01.500Z");
        let data: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        let keys: Vec<_> = data.content.entries.iter().map(|(k, v)| format!("{k}={v}")).collect();
        assert_eq!(keys, ["a.md=A", "b.md=B2", "c.md=C"]);
        // Sending what is already there commits nothing.
        let again: PutResponse =
            h.put(&token, REPO, json!({"entries": {"a.md": "A"}}), None).await.json().await.unwrap();
        assert_eq!(again.version, Some(2));
        assert_eq!(again.checksum, put.checksum);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_stale_if_match_is_412_and_changes_nothing() {
    each_backend(defaults, |h| async move {
        let alice = h.user("alice", REPO, Role::Member).await;
        let bob = h.user("bob", REPO, Role::Member).await;
        // On a repository with no data, a made-up tag cannot match.
        let res = h.put(&alice, REPO, json!({"entries": {"a.md": "A"}}), Some("sha256:feed")).await;
        assert_eq!(res.status(), StatusCode::PRECONDITION_FAILED);
        assert_eq!(h.get(&alice, REPO).await.status(), StatusCode::NOT_FOUND);

        let first: PutResponse = h.put(&alice, REPO, json!({"entries": {"a.md": "A"}}), None).await.json().await.unwrap();
        let second: PutResponse =
            h.put(&bob, REPO, json!({"entries": {"a.md": "A by bob"}}), Some(&first.checksum)).await.json().await.unwrap();
        // Alice still holds the first checksum: her write is refused, Bob's survives.
        let res = h.put(&alice, REPO, json!({"entries": {"a.md": "A again"}}), Some(&first.checksum)).await;
        assert_eq!(res.status(), StatusCode::PRECONDITION_FAILED);
        assert_eq!(error_code(res).await, "precondition_failed");
        let data: TeamMemoryData = h.get(&alice, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries["a.md"], "A by bob");
        assert_eq!(data.version, 2);
        // With the current checksum it goes through.
        let res = h.put(&alice, REPO, json!({"entries": {"a.md": "A again"}}), Some(&second.checksum)).await;
        assert_eq!(res.status(), StatusCode::OK);
        h.shutdown().await;
    })
    .await;
}

/// An `If-Match` whose value is not visible ASCII was dropped as if absent, so a conditional
/// write went through unconditionally over whatever had changed. It is 400 now, with nothing
/// written, even beside a readable value.
#[tokio::test]
async fn an_if_match_that_cannot_be_read_is_400_not_ignored() {
    each_backend(defaults, |h| async move {
        let alice = h.user("alice", REPO, Role::Member).await;
        h.put(&alice, REPO, json!({"entries": {"a.md": "A"}}), None).await.error_for_status().unwrap();
        let current = h.get(&alice, REPO).await.json::<TeamMemoryData>().await.unwrap().checksum;
        for values in [vec![&b"\"sha256:caf\xc3\xa9\""[..]], vec![format!("\"{current}\"").as_bytes(), &b"\"\xff\""[..]]] {
            let mut req = h.request(Method::PUT, &h.memory_url(REPO), &alice).json(&json!({"entries": {"a.md": "overwritten"}}));
            for v in values {
                req = req.header("if-match", reqwest::header::HeaderValue::from_bytes(v).unwrap());
            }
            let res = req.send().await.unwrap();
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{}", h.label);
            let body: ErrorBody = res.json().await.unwrap();
            assert!(body.error.message.unwrap().contains("If-Match"));
        }
        let data: TeamMemoryData = h.get(&alice, REPO).await.json().await.unwrap();
        assert_eq!((data.version, data.content.entries["a.md"].as_str()), (1, "A"), "{}", h.label);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn the_hashes_view_has_checksums_and_tombstones_but_no_content() {
    each_backend(defaults, |h| async move {
        let token = h.user("alice", REPO, Role::Lead).await;
        h.put(&token, REPO, json!({"entries": {"a.md": "A", "b.md": "B"}}), None).await.error_for_status().unwrap();
        h.put(&token, REPO, json!({"entries": {}, "soft_delete_keys": ["b.md"]}), None).await.error_for_status().unwrap();
        let res = h.request(Method::GET, &format!("{}&view=hashes", h.memory_url(REPO)), &token).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let raw: serde_json::Value = res.json().await.unwrap();
        assert!(raw.get("content").is_none() && raw.get("entries").is_none(), "{raw}");
        let hashes: HashesWithTombstones = serde_json::from_value(raw).unwrap();
        assert_eq!(hashes.hashes.version, 2);
        assert_eq!(hashes.hashes.entry_checksums.unwrap().into_iter().collect::<Vec<_>>(), [("a.md".to_string(), entry_checksum("A"))]);
        assert_eq!(hashes.deleted_entries.unwrap().keys().collect::<Vec<_>>(), ["b.md"]);
        let full: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        assert_eq!(hashes.hashes.checksum, full.checksum);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn soft_deletes_leave_tombstones_until_the_key_is_written_again() {
    each_backend(defaults, |h| async move {
        // Soft deletes remove entries for everyone, so they take a lead (see hardening.rs).
        let token = h.user("alice", REPO, Role::Lead).await;
        h.put(&token, REPO, json!({"entries": {"a.md": "A", "b.md": "B"}}), None).await.error_for_status().unwrap();
        h.clock.advance(Duration::from_secs(10));
        let before: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        let res = h.put(&token, REPO, json!({"entries": {}, "soft_delete_keys": ["a.md", "never-existed.md"]}), Some(&before.checksum)).await;
        assert_eq!(res.status(), StatusCode::OK);
        let data: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries.keys().collect::<Vec<_>>(), ["b.md"]);
        let tombstones = data.content.deleted_entries.clone().unwrap();
        assert_eq!(tombstones.len(), 1);
        assert_eq!(tombstones["a.md"], 1_795_964_410_000);
        assert!(!data.content.entry_checksums.as_ref().unwrap().contains_key("a.md"));
        assert_ne!(data.checksum, before.checksum);
        // A key may not be written and deleted at once.
        let res = h.put(&token, REPO, json!({"entries": {"b.md": "x"}, "soft_delete_keys": ["b.md"]}), None).await;
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        // Writing the key again brings it back and clears the tombstone.
        h.put(&token, REPO, json!({"entries": {"a.md": "A2"}}), None).await.error_for_status().unwrap();
        let data: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries["a.md"], "A2");
        assert!(data.content.deleted_entries.unwrap_or_default().is_empty());
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn too_many_entries_is_claude_codes_structured_413() {
    each_backend(defaults, |h| async move {
        let token = h.user("alice", REPO, Role::Lead).await;
        h.admin.set_max_entries(REPO, Some(2)).await.unwrap();
        h.put(&token, REPO, json!({"entries": {"a.md": "A"}}), None).await.error_for_status().unwrap();
        let res = h.put(&token, REPO, json!({"entries": {"b.md": "B", "c.md": "C"}}), None).await;
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        let raw: serde_json::Value = res.json().await.unwrap();
        // The exact shape Claude Code's zod schema parses.
        assert_eq!(raw["error"]["details"], json!({"error_code": TOO_MANY_ENTRIES, "max_entries": 2, "received_entries": 3}));
        // Nothing of the refused push landed; pushes within the cap still do.
        let data: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries.len(), 1);
        h.put(&token, REPO, json!({"entries": {"a.md": "A2", "b.md": "B"}}), None).await.error_for_status().unwrap();
        // Lowering the cap below the current count still lets people edit and shrink.
        h.admin.set_max_entries(REPO, Some(1)).await.unwrap();
        h.put(&token, REPO, json!({"entries": {"a.md": "A3"}}), None).await.error_for_status().unwrap();
        h.put(&token, REPO, json!({"entries": {}, "soft_delete_keys": ["b.md"]}), None).await.error_for_status().unwrap();
        let res = h.put(&token, REPO, json!({"entries": {"z.md": "Z"}}), None).await;
        assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn oversized_entries_and_bodies_are_413() {
    each_backend(
        |c| c.max_body_bytes = 600_000,
        |h| async move {
            let token = h.user("alice", REPO, Role::Member).await;
            let limit = mneme_team::wire::MAX_FILE_SIZE_BYTES as usize;
            // Exactly at the limit (in UTF-8 bytes, "é" is two) is fine; one byte more is not.
            let at_limit = "é".repeat(limit / 2);
            h.put(&token, REPO, json!({"entries": {"big.md": at_limit}}), None).await.error_for_status().unwrap();
            let over = format!("{at_limit}x");
            let res = h.put(&token, REPO, json!({"entries": {"bigger.md": over}}), None).await;
            assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
            assert_eq!(error_code(res).await, "team_memory_entry_too_large");
            // A body over the server's limit, whatever its entries.
            let parts: serde_json::Map<_, _> =
                (0..3).map(|i| (format!("p{i}.md"), json!("x".repeat(limit - 10)))).collect();
            let res = h.put(&token, REPO, json!({"entries": parts}), None).await;
            assert_eq!(res.status(), StatusCode::PAYLOAD_TOO_LARGE);
            assert_eq!(error_code(res).await, "team_memory_body_too_large");
            let data: TeamMemoryData = h.get(&token, REPO).await.json().await.unwrap();
            assert_eq!(data.content.entries.keys().collect::<Vec<_>>(), ["big.md"]);
            h.shutdown().await;
        },
    )
    .await;
}

#[tokio::test]
async fn keys_claude_code_would_refuse_are_400() {
    each_backend(defaults, |h| async move {
        let token = h.user("alice", REPO, Role::Member).await;
        for (key, message) in [
            ("../escape.md", "Key escapes team memory directory: \"../escape.md\""),
            ("/etc/passwd", "Absolute path key: \"/etc/passwd\""),
            ("a\\b.md", "Backslash in path key: \"a\\b.md\""),
            ("%2e%2e/x.md", "URL-encoded traversal in path key: \"%2e%2e/x.md\""),
        ] {
            let res = h.put(&token, REPO, json!({"entries": {"ok.md": "fine", key: "x"}}), None).await;
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "{key}");
            let body: ErrorBody = res.json().await.unwrap();
            assert_eq!(body.error.message.as_deref(), Some(message));
            assert_eq!(body.error.details.unwrap().error_code, "team_memory_invalid_key");
        }
        // Nothing of a refused request is stored.
        assert_eq!(h.get(&token, REPO).await.status(), StatusCode::NOT_FOUND);
        // A body that is not Claude Code's shape is a 400 too.
        let res = h.request(Method::PUT, &h.memory_url(REPO), &token).body("{\"entries\": [1]}").send().await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn a_token_over_its_rate_limit_gets_429_with_retry_after() {
    each_backend(
        |c| c.rate_limit = Some(RateLimit { burst: 3, period: Duration::from_secs(3600) }),
        |h| async move {
            let first = h.user("alice", REPO, Role::Member).await;
            for _ in 0..3 {
                assert_eq!(h.get(&first, REPO).await.status(), StatusCode::NOT_FOUND);
            }
            let res = h.get(&first, REPO).await;
            assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS);
            let retry: u64 = res.headers()["retry-after"].to_str().unwrap().parse().unwrap();
            // One request is refilled every 20 minutes.
            assert!((1..=1200).contains(&retry), "{retry}");
            assert_eq!(error_code(res).await, "rate_limited");
            assert_eq!(
                h.put(&first, REPO, json!({"entries": {"a.md": "A"}}), None).await.status(),
                StatusCode::TOO_MANY_REQUESTS
            );
            // The limit is per token.
            let second = h.admin.mint_token("alice").await.unwrap();
            assert_eq!(h.get(&second, REPO).await.status(), StatusCode::NOT_FOUND);
            h.shutdown().await;
        },
    )
    .await;
}

#[tokio::test]
async fn leads_audit_roll_back_and_remove_members_only_read() {
    each_backend(defaults, |h| async move {
        let lead = h.user("lena", REPO, Role::Lead).await;
        let member = h.user("mo", REPO, Role::Member).await;

        let me: MeResponse = h.request(Method::GET, &h.url("/api/mneme/me"), &lead).send().await.unwrap().json().await.unwrap();
        assert_eq!(me.user, "lena");
        assert_eq!(me.repos.len(), 1);
        assert_eq!((me.repos[0].repo.as_str(), me.repos[0].team.as_str(), me.repos[0].role), (REPO, "acme", RepoRole::Lead));
        assert_eq!(me.repos[0].max_entries, mneme_team_server::config::DEFAULT_MAX_ENTRIES);

        h.put(&member, REPO, json!({"entries": {"plan.md": "v1"}}), None).await.error_for_status().unwrap();
        h.clock.advance(Duration::from_secs(60));
        h.put(&lead, REPO, json!({"entries": {"plan.md": "v2", "other.md": "o"}}), None).await.error_for_status().unwrap();

        // Both versions of plan.md and other.md count against the storage cap.
        let me: MeResponse = h.request(Method::GET, &h.url("/api/mneme/me"), &member).send().await.unwrap().json().await.unwrap();
        assert_eq!(me.repos[0].stored_bytes, Some(5));
        assert_eq!(me.repos[0].max_bytes, Some(mneme_team_server::config::DEFAULT_MAX_REPO_BYTES));

        let history_url = format!("{}?repo=acme%2Fapp&key=plan.md", h.url("/api/mneme/team_memory/history"));
        let history: HistoryResponse = h.request(Method::GET, &history_url, &member).send().await.unwrap().json().await.unwrap();
        let seen: Vec<_> = history.versions.iter().map(|v| (v.version, v.author.as_deref(), v.content.as_str(), v.deleted)).collect();
        assert_eq!(seen, [(2, Some("lena"), "v2", false), (1, Some("mo"), "v1", false)]);
        assert_eq!(history.versions[1].time, "2026-11-29T15:00:00.000Z");
        assert_eq!(history.more_before, None);
        // Paged: one at a time, newest first, then the next page from where it stopped.
        let page: HistoryResponse =
            h.request(Method::GET, &format!("{history_url}&limit=1"), &member).send().await.unwrap().json().await.unwrap();
        assert_eq!((page.versions.len(), page.versions[0].version, page.more_before), (1, 2, Some(2)));
        let next: HistoryResponse =
            h.request(Method::GET, &format!("{history_url}&limit=1&before=2"), &member).send().await.unwrap().json().await.unwrap();
        assert_eq!((next.versions.len(), next.versions[0].version, next.more_before), (1, 1, None));
        for bad in ["0", "501"] {
            let res = h.request(Method::GET, &format!("{history_url}&limit={bad}"), &member).send().await.unwrap();
            assert_eq!(res.status(), StatusCode::BAD_REQUEST, "limit={bad}");
        }
        assert_eq!(history.versions[0].checksum, entry_checksum("v2"));

        // Rolling back and removing are for leads.
        let rollback_url = format!("{}?repo=acme%2Fapp", h.url("/api/mneme/team_memory/rollback"));
        let res = h.request(Method::POST, &rollback_url, &member).json(&json!({"key": "plan.md", "version": 1})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(error_code(res).await, "lead_required");
        let entry_url = format!("{}?repo=acme%2Fapp&key=other.md", h.url("/api/mneme/team_memory/entry"));
        assert_eq!(h.request(Method::DELETE, &entry_url, &member).send().await.unwrap().status(), StatusCode::FORBIDDEN);

        let res = h.request(Method::POST, &rollback_url, &lead).json(&json!({"key": "plan.md", "version": 1})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let rolled: PutResponse = res.json().await.unwrap();
        assert_eq!(rolled.version, Some(3));
        let res = h.request(Method::POST, &rollback_url, &lead).json(&json!({"key": "plan.md", "version": 99})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND);

        // Removal leaves a tombstone clients honour, and history keeps what was removed.
        let res = h.request(Method::DELETE, &entry_url, &lead).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(h.request(Method::DELETE, &entry_url, &lead).send().await.unwrap().status(), StatusCode::NOT_FOUND);
        let data: TeamMemoryData = h.get(&member, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>(), ["plan.md=v1"]);
        assert!(data.content.deleted_entries.unwrap().contains_key("other.md"));
        let other_url = format!("{}?repo=acme%2Fapp&key=other.md", h.url("/api/mneme/team_memory/history"));
        let other: HistoryResponse = h.request(Method::GET, &other_url, &lead).send().await.unwrap().json().await.unwrap();
        assert!(other.versions[0].deleted);
        assert_eq!(other.versions[0].content, "o");
        assert_eq!(other.versions[0].author.as_deref(), Some("lena"));
        // A member cannot undo the removal by writing the key again; a lead can.
        let res = h.put(&member, REPO, json!({"entries": {"other.md": "back"}}), None).await;
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        let body = res.text().await.unwrap();
        assert!(body.contains("lead_required") && body.contains("only a lead can bring it back"), "{body}");
        let data: TeamMemoryData = h.get(&member, REPO).await.json().await.unwrap();
        assert!(!data.content.entries.contains_key("other.md"));
        // A rollback to before the removal restores it.
        let res = h.request(Method::POST, &rollback_url, &lead).json(&json!({"key": "other.md", "version": 2})).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        let data: TeamMemoryData = h.get(&member, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries["other.md"], "o");
        assert!(data.content.deleted_entries.unwrap_or_default().is_empty());
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn latest_lists_every_keys_newest_version_with_tombstones_and_no_content() {
    each_backend(defaults, |h| async move {
        let lead = h.user("lena", REPO, Role::Lead).await;
        let member = h.user("mo", REPO, Role::Member).await;
        let latest_url = |repo: &str| format!("{}?repo={}", h.url("/api/mneme/team_memory/latest"), common::encode_uri_component(repo));
        let latest = |token: String| {
            let url = latest_url(REPO);
            let req = h.request(Method::GET, &url, &token);
            async move {
                let res = req.send().await.unwrap();
                assert_eq!(res.status(), StatusCode::OK);
                res.json::<LatestResponse>().await.unwrap()
            }
        };

        // Same rules as history: 401 without a live token, 403 without a grant (known or not).
        let res = h.http.get(latest_url(REPO)).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(res.headers()["www-authenticate"], "Bearer");
        assert_eq!(h.request(Method::GET, &latest_url(REPO), "mneme_at_forged").send().await.unwrap().status(), StatusCode::UNAUTHORIZED);
        let outsider = h.user("olga", "acme/other", Role::Lead).await;
        let res = h.request(Method::GET, &latest_url(REPO), &outsider).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        assert_eq!(error_code(res).await, "forbidden");
        let res = h.request(Method::GET, &latest_url("acme/unknown"), &member).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::FORBIDDEN);
        let no_repo = h.request(Method::GET, &h.url("/api/mneme/team_memory/latest"), &member).send().await.unwrap();
        assert_eq!(no_repo.status(), StatusCode::BAD_REQUEST);

        // A repository without data yet lists nothing (rather than 404: there is nothing to hide).
        let empty = latest(member.clone()).await;
        assert_eq!((empty.repo.as_str(), empty.entries.len()), (REPO, 0));

        h.put(&member, REPO, json!({"entries": {"plan.md": "v1", "a.md": "first"}}), None).await.error_for_status().unwrap();
        h.clock.advance(Duration::from_secs(60));
        // Upper case sorts before lower case in byte order, whatever the database's collation.
        h.put(&lead, REPO, json!({"entries": {"plan.md": "v2", "Zeta.md": "z"}}), None).await.error_for_status().unwrap();
        h.clock.advance(Duration::from_millis(1500));
        let entry_url = format!("{}?repo=acme%2Fapp&key=a.md", h.url("/api/mneme/team_memory/entry"));
        h.request(Method::DELETE, &entry_url, &lead).send().await.unwrap().error_for_status().unwrap();
        // Another repository's keys stay out of this one's answer.
        h.put(&outsider, "acme/other", json!({"entries": {"plan.md": "elsewhere", "b.md": "b"}}), None)
            .await
            .error_for_status()
            .unwrap();

        let got = latest(member.clone()).await;
        assert_eq!(got.repo, REPO);
        let entry = |key: &str, version, content: &str, author: &str, time: &str, deleted, versions| LatestEntry {
            key: key.into(),
            version,
            checksum: entry_checksum(content),
            author: Some(author.into()),
            time: time.into(),
            deleted,
            versions,
        };
        assert_eq!(got.entries, [
            entry("Zeta.md", 2, "z", "lena", "2026-11-29T15:01:00.000Z", false, 1),
            entry("a.md", 3, "first", "lena", "2026-11-29T15:01:01.500Z", true, 2),
            entry("plan.md", 2, "v2", "lena", "2026-11-29T15:01:00.000Z", false, 2),
        ]);
        // No contents on the wire.
        let raw: serde_json::Value = h.request(Method::GET, &latest_url(REPO), &lead).send().await.unwrap().json().await.unwrap();
        assert!(raw["entries"].as_array().unwrap().iter().all(|e| e.get("content").is_none()), "{raw}");
        assert_eq!(raw["entries"][0]["versions"], 1);

        // Each entry is the newest row of that key's history.
        for e in &got.entries {
            let url = format!("{}?repo=acme%2Fapp&key={}", h.url("/api/mneme/team_memory/history"), e.key);
            let history: HistoryResponse = h.request(Method::GET, &url, &member).send().await.unwrap().json().await.unwrap();
            let newest = &history.versions[0];
            assert_eq!(
                (newest.version, &newest.checksum, &newest.author, &newest.time, newest.deleted, history.versions.len() as u64),
                (e.version, &e.checksum, &e.author, &e.time, e.deleted, e.versions),
                "{}",
                e.key
            );
        }
        h.shutdown().await;
    })
    .await;
}

#[tokio::test]
async fn healthz_answers_ok() {
    each_backend(defaults, |h| async move {
        let res = h.http.get(h.url("/healthz")).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::OK);
        assert_eq!(res.text().await.unwrap(), "ok");
        h.shutdown().await;
    })
    .await;
}

/// Each writer increments one shared counter and adds its own key, pulling and retrying on
/// 412 as Claude Code's protocol does. Every acknowledged increment must be in the final value.
/// Half the writers go through a second server on the same database, as replicas behind a
/// load balancer would, so nothing may depend on one process's memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_writers_lose_no_acknowledged_update() {
    each_backend(defaults, |h| async move {
        const WRITERS: usize = 50;
        let h = std::sync::Arc::new(h);
        let seed = h.user("seed", REPO, Role::Member).await;
        h.put(&seed, REPO, json!({"entries": {"counter.md": "0"}}), None).await.error_for_status().unwrap();
        // One user, one token per writer (each token is its own client).
        h.user("writer", REPO, Role::Member).await;
        let mut tokens = Vec::new();
        for _ in 0..WRITERS {
            tokens.push(h.admin.mint_token("writer").await.unwrap());
        }
        let replica = h.replica().await;
        let urls = std::sync::Arc::new([h.memory_url(REPO), format!("{}{}?repo=acme%2Fapp", replica.url(), mneme_team::wire::TEAM_MEMORY_PATH)]);
        let mut tasks = Vec::new();
        for (i, token) in tokens.into_iter().enumerate() {
            let (h, urls) = (h.clone(), urls.clone());
            tasks.push(tokio::spawn(async move {
                let url = &urls[i % 2];
                let mut conflicts = 0u32;
                loop {
                    let res = h.request(Method::GET, url, &token).send().await.unwrap();
                    let data: TeamMemoryData = res.json().await.unwrap();
                    let n: u64 = data.content.entries["counter.md"].parse().unwrap();
                    let body = json!({"entries": {"counter.md": (n + 1).to_string(), format!("w/{i}.md"): format!("by {i}")}});
                    let res = h
                        .request(Method::PUT, url, &token)
                        .header("if-match", format!("\"{}\"", data.checksum))
                        .json(&body)
                        .send()
                        .await
                        .unwrap();
                    match res.status() {
                        StatusCode::OK => return conflicts,
                        StatusCode::PRECONDITION_FAILED => conflicts += 1,
                        other => panic!("writer {i}: unexpected {other}"),
                    }
                }
            }));
        }
        let mut conflicts = 0;
        for t in tasks {
            conflicts += t.await.unwrap();
        }
        let data: TeamMemoryData = h.get(&seed, REPO).await.json().await.unwrap();
        assert_eq!(data.content.entries["counter.md"], WRITERS.to_string(), "{conflicts} conflicts were retried");
        assert_eq!(data.content.entries.len(), WRITERS + 1);
        assert_eq!(data.version, WRITERS as u64 + 1);
        let history_url = format!("{}?repo=acme%2Fapp&key=counter.md", h.url("/api/mneme/team_memory/history"));
        let history: HistoryResponse = h.request(Method::GET, &history_url, &seed).send().await.unwrap().json().await.unwrap();
        let values: Vec<String> = history.versions.iter().map(|v| v.content.clone()).collect();
        let expected: Vec<String> = (0..=WRITERS).rev().map(|n| n.to_string()).collect();
        assert_eq!(values, expected);
        replica.shutdown().await;
        match std::sync::Arc::try_unwrap(h) {
            Ok(h) => h.shutdown().await,
            Err(_) => panic!("a writer still holds the harness"),
        }
    })
    .await;
}
