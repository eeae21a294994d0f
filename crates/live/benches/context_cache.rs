//! "What Claude sees" for a repository with 2,000 rules (the material of
//! crates/api/benches/engine.rs and benches/make_bench_fixtures.py), built each time as the CLI
//! does, against answered from the context cache the app shells keep (with the real watcher
//! behind it), as the `context` operation answers: the kept view cloned for the reply.
//! `cargo bench -p mneme-live --bench context_cache`; figures in docs/benchmarks.md.

use mneme_api::{ContextCache, ContextRequest, FixedClock, Mneme};
use mneme_live::events::Events;
use mneme_testsupport::{populate_rules, TestHome};
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

fn main() {
    // Build the fixture, start the watcher and keep the view before timing starts.
    world();
    divan::main();
}

struct World {
    _home: TestHome,
    _runtime: tokio::runtime::Runtime,
    _stop: tokio::sync::watch::Sender<bool>,
    mneme: Mneme,
    events: Events,
    rules_repo: PathBuf,
}

fn world() -> &'static World {
    static WORLD: OnceLock<World> = OnceLock::new();
    WORLD.get_or_init(|| {
        let home = TestHome::new();
        let rules = home.git_repo("rules");
        populate_rules(&rules, 2_000);
        let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_800_000_000)));
        let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let (stop, stop_rx) = tokio::sync::watch::channel(false);
        let events = runtime.block_on(async { Events::start(&home.env, stop_rx) }).expect("the watcher starts");
        let w = World { _home: home, _runtime: runtime, _stop: stop, mneme, events, rules_repo: rules };
        for _ in 0..3 {
            w.mneme.context_cached(&at(&w), w.events.context_cache()).unwrap();
        }
        assert_eq!(w.events.context_cache().stats().entries, 1, "the view was not kept");
        w
    })
}

fn at(w: &World) -> ContextRequest {
    ContextRequest { cwd: w.rules_repo.clone(), date: Some("2026-11-29".into()), ..Default::default() }
}

#[divan::bench(sample_count = 20)]
fn context_2000_rules_built() -> usize {
    let w = world();
    w.mneme.context(&at(w)).expect("context").files.len()
}

#[divan::bench(sample_count = 200)]
fn context_2000_rules_cached() -> usize {
    let w = world();
    let cache: &ContextCache = w.events.context_cache();
    let view = w.mneme.context_cached(&at(w), cache).expect("context");
    // The operation answers an owned view: the clone is part of a cached call's cost.
    let answer = (*view).clone();
    answer.files.len()
}
