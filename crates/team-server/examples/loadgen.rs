//! Load generator for the team sync server on loopback: no-op pulls (304), full pulls (200),
//! and pushes, with throughput and latency percentiles, against SQLite or PostgreSQL.
//!
//! ```text
//! cargo run --release -p mneme-team-server --example loadgen -- --db sqlite
//! eval "$(scripts/pg.sh)" && cargo run --release -p mneme-team-server --example loadgen -- --db postgres --replicas 2
//! ```
//! Every phase is bounded by a request count. The servers run in this process (on its own
//! runtime threads) and listen on 127.0.0.1; clients are keep-alive HTTP/1.1 connections.
//! With `--replicas N` (PostgreSQL) N servers share the database and client `i` talks to
//! replica `i % N`, as behind a load balancer.

use mneme_team_proto::wire::{TeamMemoryData, TEAM_MEMORY_PATH};
use mneme_team_server::admin::Role;
use mneme_team_server::{DatabaseUrl, ServerConfig};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant};

struct Options {
    db: String,
    clients: usize,
    requests: usize,
    entries: usize,
    entry_bytes: usize,
    replicas: usize,
    /// Full pulls to make (they carry the whole repository, so large ones are costly).
    full_pulls: Option<usize>,
}

fn parse_args() -> anyhow::Result<Options> {
    let mut o = Options { db: "sqlite".into(), clients: 16, requests: 4000, entries: 200, entry_bytes: 1000, replicas: 1, full_pulls: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or_else(|| anyhow::anyhow!("{flag} needs a value"));
        match flag.as_str() {
            "--db" => o.db = value()?,
            "--clients" => o.clients = value()?.parse()?,
            "--requests" => o.requests = value()?.parse()?,
            "--entries" => o.entries = value()?.parse()?,
            "--entry-bytes" => o.entry_bytes = value()?.parse()?,
            "--replicas" => o.replicas = value()?.parse()?,
            "--full-pulls" => o.full_pulls = Some(value()?.parse()?),
            other => anyhow::bail!(
                "unknown option {other}; use --db sqlite|postgres --clients N --requests N --entries N --entry-bytes N --replicas N --full-pulls N"
            ),
        }
    }
    Ok(o)
}

/// Latencies of one phase → (requests per second, p50 ms, p99 ms).
fn summarize(mut latencies: Vec<Duration>, wall: Duration) -> (f64, f64, f64) {
    latencies.sort();
    let pct = |p: f64| {
        let i = ((latencies.len() as f64 * p).ceil() as usize).clamp(1, latencies.len()) - 1;
        latencies[i].as_secs_f64() * 1000.0
    };
    (latencies.len() as f64 / wall.as_secs_f64(), pct(0.50), pct(0.99))
}

/// Runs `total` requests from `clients` concurrent clients; `make(i)` performs request `i` and
/// returns what went wrong, if anything.
async fn phase<F, Fut>(clients: usize, total: usize, make: F) -> (f64, f64, f64)
where
    F: Fn(usize) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let make = Arc::new(make);
    let next = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (make, next) = (make.clone(), next.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= total {
                    return lat;
                }
                let t = Instant::now();
                if let Err(e) = make(i).await {
                    panic!("request {i}: {e:#}");
                }
                lat.push(t.elapsed());
            }
        }));
    }
    let mut latencies = Vec::with_capacity(total);
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    summarize(latencies, start.elapsed())
}

#[tokio::main(flavor = "multi_thread")]
async fn main() -> anyhow::Result<()> {
    let o = parse_args()?;
    let dir = tempfile::tempdir()?;
    let database = match o.db.as_str() {
        "sqlite" => DatabaseUrl::Sqlite(dir.path().join("team.db")),
        "postgres" => {
            let base = std::env::var("MNEME_TEST_PG_URL")
                .map_err(|_| anyhow::anyhow!("set MNEME_TEST_PG_URL (eval \"$(scripts/pg.sh)\") for --db postgres"))?;
            fresh_pg_database(&base).await?
        }
        other => anyhow::bail!("--db is sqlite or postgres, not {other}"),
    };
    anyhow::ensure!(o.replicas >= 1, "--replicas must be at least 1");
    anyhow::ensure!(o.replicas == 1 || o.db == "postgres", "several replicas need a shared database: --db postgres");
    let mut servers = Vec::new();
    for _ in 0..o.replicas {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        servers.push(mneme_team_server::spawn(ServerConfig::new(database.clone()), listener).await?);
    }
    let admin = servers[0].admin();
    admin.create_team("acme").await?;
    admin.create_user("bench", "benchmark password").await?;
    admin.grant("bench", Some("acme"), "acme/app", Role::Member).await?;
    let urls: Vec<String> = servers.iter().map(|s| format!("{}{TEAM_MEMORY_PATH}?repo=acme%2Fapp", s.url())).collect();
    let url = Arc::new(urls[0].clone());
    let urls = Arc::new(urls);
    let mut tokens = Vec::new();
    for _ in 0..o.clients {
        tokens.push(admin.mint_token("bench").await?);
    }
    let tokens = Arc::new(tokens);
    let http = reqwest::Client::builder().pool_max_idle_per_host(o.clients).build()?;

    // A repository of `entries` entries, pushed in batches under Claude Code's 200 KB.
    let body = "m".repeat(o.entry_bytes);
    let per_batch = (150_000 / o.entry_bytes.max(1)).max(1);
    for chunk in (0..o.entries).collect::<Vec<_>>().chunks(per_batch) {
        let entries: serde_json::Map<_, _> = chunk.iter().map(|i| (format!("notes/{i:05}.md"), json!(body))).collect();
        http.put(url.as_str()).bearer_auth(&tokens[0]).json(&json!({"entries": entries})).send().await?.error_for_status()?;
    }
    let data: TeamMemoryData = http.get(url.as_str()).bearer_auth(&tokens[0]).send().await?.json().await?;
    let etag = Arc::new(format!("\"{}\"", data.checksum));

    let (h, u, t, e) = (http.clone(), url.clone(), tokens.clone(), etag.clone());
    let noop = phase(o.clients, o.requests, move |i| {
        let req = h.get(u.as_str()).bearer_auth(&t[i % t.len()]).header("if-none-match", e.as_str());
        async move { expect(req, 304).await }
    })
    .await;

    let (h, u, t) = (http.clone(), url.clone(), tokens.clone());
    let full_pulls = o.full_pulls.unwrap_or(o.requests / 10);
    let full = phase(o.clients, full_pulls, move |i| {
        let req = h.get(u.as_str()).bearer_auth(&t[i % t.len()]);
        async move { expect(req, 200).await }
    })
    .await;

    // Each push changes one existing entry, as an edit in Claude Code does.
    let (h, u, t, n) = (http.clone(), urls.clone(), tokens.clone(), o.entries);
    let push = phase(o.clients, o.requests / 4, move |i| {
        let body = json!({"entries": {format!("notes/{:05}.md", i % n): format!("edit {i}\n{}", "e".repeat(900))}});
        let req = h.put(u[i % u.len()].as_str()).bearer_auth(&t[i % t.len()]).json(&body);
        async move { expect(req, 200).await }
    })
    .await;

    // A push whose If-Match names a checksum that is no longer current: refused with 412.
    let (h, u, t, e) = (http.clone(), urls.clone(), tokens.clone(), etag.clone());
    let stale = phase(o.clients, o.requests / 10, move |i| {
        let body = json!({"entries": {"notes/00000.md": format!("stale {i}")}});
        let req = h.put(u[i % u.len()].as_str()).bearer_auth(&t[i % t.len()]).header("if-match", e.as_str()).json(&body);
        async move { expect(req, 412).await }
    })
    .await;

    println!(
        "backend={} replicas={} clients={} entries={}x{}B\n\
         | operation | requests | requests/s | p50 ms | p99 ms |\n|---|---:|---:|---:|---:|\n\
         | no-op pull (304) | {} | {:.0} | {:.2} | {:.2} |\n\
         | full pull (200, {} KB) | {} | {:.0} | {:.2} | {:.2} |\n\
         | push (one entry, 200) | {} | {:.0} | {:.2} | {:.2} |\n\
         | stale push (412) | {} | {:.0} | {:.2} | {:.2} |",
        o.db,
        o.replicas,
        o.clients,
        o.entries,
        o.entry_bytes,
        o.requests,
        noop.0,
        noop.1,
        noop.2,
        data.content.entries.values().map(String::len).sum::<usize>() / 1000,
        full_pulls,
        full.0,
        full.1,
        full.2,
        o.requests / 4,
        push.0,
        push.1,
        push.2,
        o.requests / 10,
        stale.0,
        stale.1,
        stale.2,
    );
    for server in servers {
        server.shutdown().await;
    }
    Ok(())
}

/// Sends `req` and reads the whole answer; an error unless the status is `status`.
async fn expect(req: reqwest::RequestBuilder, status: u16) -> anyhow::Result<()> {
    let res = req.send().await?;
    let got = res.status().as_u16();
    let body = res.bytes().await?;
    anyhow::ensure!(got == status, "{got} {}", String::from_utf8_lossy(&body));
    Ok(())
}

async fn fresh_pg_database(base: &str) -> anyhow::Result<DatabaseUrl> {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(base).await?;
    let name = format!("mneme_loadgen_{}", mneme_team_server::auth::random_hex(6)?);
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await?;
    let (head, query) = base.split_once('?').map(|(h, q)| (h, Some(q))).unwrap_or((base, None));
    let (scheme, rest) = head.split_once("://").ok_or_else(|| anyhow::anyhow!("not a URL: {base}"))?;
    let host = rest.split_once('/').map(|(h, _)| h).unwrap_or(rest);
    let url = match query {
        Some(q) => format!("{scheme}://{host}/{name}?{q}"),
        None => format!("{scheme}://{host}/{name}"),
    };
    Ok(DatabaseUrl::Postgres(url))
}
