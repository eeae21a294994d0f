//! A hermetic world for dream tests: a temporary HOME, a memory folder, a settable clock.

#![allow(dead_code)]

use mneme_core::Clock;
use mneme_dream::{CachedFlags, Dreams, Engine, Enablement, RunOptions, Trigger};
use mneme_model::Cancel;
use mneme_testsupport::TestHome;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// 2026-05-06T12:00:00Z.
pub const NOW: u64 = 1_778_068_800;

/// A clock tests can move.
#[derive(Debug)]
pub struct TestClock(Mutex<SystemTime>);

impl TestClock {
    pub fn at(secs: u64) -> Arc<TestClock> {
        Arc::new(TestClock(Mutex::new(UNIX_EPOCH + Duration::from_secs(secs))))
    }
    pub fn advance(&self, secs: u64) {
        *self.0.lock().unwrap() += Duration::from_secs(secs);
    }
}

impl Clock for TestClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }
}

pub struct World {
    pub home: TestHome,
    pub mem: PathBuf,
    pub clock: Arc<TestClock>,
    pub dreams: Dreams,
}

impl World {
    pub fn new() -> World {
        let home = TestHome::new();
        let mem = home.root.join("home/.claude/projects/-repo/memory");
        fs::create_dir_all(&mem).unwrap();
        let clock = TestClock::at(NOW);
        let dreams = Dreams::new(home.env.clone(), clock.clone());
        World { home, mem, clock, dreams }
    }

    /// The same folder, its dreams run for a Claude Code `version` installed on `PATH` (a script
    /// that answers `--version` as the release does), as the user's release is found.
    pub fn installed(mut self, version: &str) -> World {
        use std::os::unix::fs::PermissionsExt;
        let bin = self.home.root.join("bin");
        fs::create_dir_all(&bin).unwrap();
        fs::write(bin.join("claude"), format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
        fs::set_permissions(bin.join("claude"), fs::Permissions::from_mode(0o755)).unwrap();
        let env = self.home.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
        self.dreams = Dreams::new(env, self.clock.clone());
        self
    }

    pub fn write(&self, rel: &str, text: &str) -> PathBuf {
        let p = self.mem.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, text).unwrap();
        filetime::set_file_mtime(&p, filetime::FileTime::from_unix_time(NOW as i64 - 3600, 0)).unwrap();
        p
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.mem.join(rel)).unwrap()
    }

    pub fn target(&self) -> mneme_dream::DreamTarget {
        self.dreams.target_for_memory_dir(&self.mem)
    }

    pub fn opts(&self, engine: Engine<'static>, apply_now: bool) -> RunOptions<'static> {
        RunOptions { trigger: Trigger::Manual, engine, apply_now, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() }
    }

    pub fn offline(&self, apply_now: bool) -> Result<mneme_dream::DreamRecord, mneme_dream::DreamError> {
        block_on(self.dreams.run(&self.target(), &self.opts(Engine::Offline, apply_now)))
    }

    pub fn snapshot(&self) -> BTreeMap<String, Vec<u8>> {
        tree(&self.mem)
    }
}

/// Every file under `dir` (relative path → bytes), except the dream lock, whose mtime records
/// that a dream happened and is deliberately not undone.
pub fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if e.file_name() != mneme_dream::LOCK_FILE {
                out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

pub fn topic(name: &str, desc: &str, kind: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {desc}\ntype: {kind}\n---\n\n{body}\n")
}

/// Runs a model dream of `turns` (then a closing text) against a stub API with `--yes`, in the
/// folder's mode (automatic unless the test set another).
pub async fn model_dream(w: &World, turns: Vec<mneme_stub_model::Turn>) -> mneme_dream::DreamRecord {
    let stub = mneme_stub_model::StubModel::start().await;
    for t in turns {
        stub.push(t);
    }
    stub.push(mneme_stub_model::Turn::text("Tidied the memories."));
    let provider = mneme_model::AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: true, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
    w.dreams.run(&w.target(), &opts).await.unwrap()
}

/// The lines a dream's "what moved where" report lists as lost: (the file they left, the text).
pub fn lost(rec: &mneme_dream::DreamRecord) -> Vec<(&str, &str)> {
    rec.moved.iter().filter(|m| m.lost()).map(|m| (m.from.as_str(), m.text.as_str())).collect()
}
