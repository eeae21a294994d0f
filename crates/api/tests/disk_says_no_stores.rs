//! The disk says no to Mneme's own files: a dream record rewritten, a project's dream mode, the
//! provider settings (`providers.json`), the team server (`team.json`), the team sync state
//! (`team-sync/<folder>.json`), the project opened last (`last-project.json`) and the Claude
//! Code check (`claude-code-check.json`), each written on a disk that is full or mounted
//! read-only, is refused with its own error code (`disk_full`, `read_only`) and the disk's words,
//! leaves every file byte for byte as it was and no temporary file. A memory saved or created
//! there is refused with a sentence naming the memory file being saved, not the folder its
//! temporary file was to go in. Real conditions, as in `disk_says_no.rs`: a small tmpfs filled
//! to the brim, then the same tmpfs remounted read-only; Mneme's data folder and Claude Code's
//! configuration both live on it. A folder this account may not write (`permission_denied`)
//! needs another account and is not covered here.
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

mod common;

use common::{Before, Refusal};
use mneme_api::{
    ApiError, ContextRequest, DreamModeName, DreamState, FixedClock, Mneme, NewMemoryRequest, ProviderChoice, ProviderSettingsInput,
};
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{topic, write_file, TestHome};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A stand-in `claude` that reports `version` and fails when run for real: the check records
/// its answer without running anything.
///
/// It is run once here before it is handed over. While another test thread forks, the child
/// holds this file's write descriptor until it execs, and running the file then fails with
/// "text file busy" (ETXTBSY): the check would find no Claude Code, record nothing and write
/// nothing, and "recording the Claude Code check" would not be refused (seen once in 100 runs).
/// Once it has run, no descriptor to write it is left anywhere.
fn fake_claude(bin: &Path, version: &str) {
    std::fs::create_dir_all(bin).unwrap();
    let p = bin.join("claude");
    std::fs::write(&p, format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\nexit 3\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    for tries in 0.. {
        match std::process::Command::new(&p).arg("--version").output() {
            Err(e) if e.kind() == std::io::ErrorKind::ExecutableFileBusy && tries < 100 => std::thread::sleep(std::time::Duration::from_millis(10)),
            done => {
                let out = done.unwrap_or_else(|e| panic!("running {}: {e}", p.display()));
                assert!(out.status.success(), "{} --version: {out:?}", p.display());
                break;
            }
        }
    }
}

/// A project, its memory folder, Claude Code's configuration and Mneme's data folder on one
/// drive, with each of Mneme's own files written once while the drive still had room.
struct World {
    // Holds the temporary folder (dropped after the drive is unmounted: fields drop in order).
    drive: Tmpfs,
    t: TestHome,
    repo: PathBuf,
    memdir: PathBuf,
    data: PathBuf,
    /// The dream held for review.
    dream: String,
}

impl World {
    fn new() -> Option<World> {
        let (t, drive) = common::home_with_drive("256k")?;
        let config = drive.path().join("claude");
        let data = drive.path().join("mneme-data");
        let repo = drive.path().join("repo");
        write_file(&repo.join("CLAUDE.md"), "Use tabs.\n");
        write_file(&config.join("settings.json"), "{\n  \"autoMemoryEnabled\": true\n}\n");
        let memdir = config.join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join("memory");
        write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n- [Tabs too](tabs_new.md) — tabs\n");
        write_file(&memdir.join("tabs.md"), &topic("Tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style."));
        // A near-duplicate: the offline dream merges it, so the dream has changes to review.
        write_file(
            &memdir.join("tabs_new.md"),
            &topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style."),
        );
        let mut w = World { drive, t, repo, memdir, data, dream: String::new() };
        let m = w.mneme("2.1.300");
        let req = w.req();
        m.open_project(&req).unwrap();
        m.set_provider_settings(&ProviderSettingsInput { kind: ProviderChoice::Anthropic, model: None, base_url: None, timeout_secs: None, claude_binary: None })
            .unwrap();
        m.set_team_server(Some("https://team.example.com")).unwrap();
        m.set_dream_mode(&req, DreamModeName::Review).unwrap();
        let dream = m.run_dream(&req, None).unwrap();
        assert_eq!(dream.item.state, DreamState::Pending);
        w.dream = dream.item.id;
        assert!(m.version_check().unwrap().ran_now);
        for file in ["last-project.json", "providers.json", "team.json", "claude-code-check.json"] {
            assert!(w.data.join(file).is_file(), "{file} was written");
        }
        Some(w)
    }

    /// Mneme as the app runs it, with Claude Code `release` installed.
    fn mneme(&self, release: &str) -> Mneme {
        let bin = self.t.root.join(format!("bin-{release}"));
        fake_claude(&bin, release);
        let env = self
            .t
            .env
            .clone()
            .set_var("CLAUDE_CONFIG_DIR", self.drive.path().join("claude").to_string_lossy().to_string())
            .set_var("MNEME_DATA_DIR", self.data.to_string_lossy().to_string())
            .set_var("PATH", bin.to_string_lossy().to_string());
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
    }

    fn req(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    /// The drive made to say `no`, then every write of one of Mneme's own files, each refused
    /// with its code and words naming the drive; the drive must be exactly as it was after each.
    fn every_write_is_refused(&self, no: Refusal) {
        no.make(&self.drive);
        // A newer Claude Code: the check is due again, and records its answer.
        let m = self.mneme("2.1.301");
        let req = self.req();
        let memory = m.memory(&req, "tabs.md").unwrap();
        let before = Before::take(&[self.drive.path()]);
        let refused = |what: &str, r: Result<(), ApiError>| {
            let e = r.expect_err(what);
            no.assert_answers(what, &e, self.drive.path());
            before.assert_unchanged(what);
            e
        };
        refused("rejecting a dream (its record)", m.reject_dream(&req, &self.dream).map(|_| ()));
        refused("setting the dream mode", m.set_dream_mode(&req, DreamModeName::Automatic).map(|_| ()));
        refused(
            "saving the provider settings",
            m.set_provider_settings(&ProviderSettingsInput { kind: ProviderChoice::Offline, model: None, base_url: None, timeout_secs: None, claude_binary: None })
                .map(|_| ()),
        );
        refused("saving the team server", m.set_team_server(Some("https://other.example.com")).map(|_| ()));
        refused("forgetting the team server", m.set_team_server(None).map(|_| ()));
        refused("remembering the project opened", m.open_project(&req).map(|_| ()));
        refused("recording the Claude Code check", m.version_check().map(|_| ()));
        // The memory folder: the refusal names the memory being saved.
        let typed = memory.content.replace("Always indent with tabs.", "Indent with tabs.");
        let e = refused("saving a memory", m.save_memory(&req, "tabs.md", &typed, &memory.revision).map(|_| ()));
        assert!(e.message.contains(&self.memdir.join("tabs.md").display().to_string()), "saving a memory names the memory: {e}");
        let new = NewMemoryRequest { name: "Reviews".into(), description: "reviews need two approvals".into(), kind: "project".into(), body: "Two approvals.".into(), file_name: Some("reviews.md".into()) };
        let e = refused("creating a memory", m.create_memory(&req, &new).map(|_| ()));
        assert!(e.message.contains(&self.memdir.join("reviews.md").display().to_string()), "creating a memory names the memory: {e}");
    }
}

#[test]
fn a_full_disk_refuses_mnemes_own_files_as_disk_full_and_leaves_them_as_they_were() {
    let Some(w) = World::new() else { return };
    w.every_write_is_refused(Refusal::Full);
}

#[test]
fn a_read_only_disk_refuses_mnemes_own_files_as_read_only_and_leaves_them_as_they_were() {
    let Some(w) = World::new() else { return };
    w.every_write_is_refused(Refusal::ReadOnly);
}

/// The team sync state (`team-sync/<folder>.json` in Mneme's data folder) on a full, then a
/// read-only disk: a pull that would record its outcome there is refused with the disk's code
/// and words, and the state is left as it was. The sync server is in-process on 127.0.0.1:0
/// and holds nothing for the repository, so the pull has no memory file to write.
#[test]
fn the_team_sync_state_is_refused_as_disk_full_then_read_only_and_left_as_it_was() {
    use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
    use mneme_team_server::{DatabaseUrl, Role, ServerConfig};

    let Some((t, drive)) = common::home_with_drive("256k") else { return };
    let db = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let server = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        mneme_team_server::spawn(ServerConfig::new(DatabaseUrl::Sqlite(db.path().join("team.db"))), listener).await.unwrap()
    });
    let (url, admin) = (server.url(), server.admin());
    rt.block_on(async {
        admin.create_team("acme").await.unwrap();
        admin.create_user("ann", "correct horse battery staple").await.unwrap();
        admin.grant("ann", Some("acme"), "acme/shop", Role::Member).await.unwrap();
    });
    let token = rt.block_on(admin.mint_token("ann")).unwrap();

    let repo = t.git_repo("shop");
    mneme_testsupport::git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    let data = drive.path().join("mneme-data");
    let store = Arc::new(MemoryStore::default());
    store.save(&url, &Credentials { access_token: token, refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some("ann".into()), extra: Default::default() }).unwrap();
    let env = t
        .env
        .clone()
        .set_var("CLAUDE_CONFIG_DIR", drive.path().join("claude").to_string_lossy().to_string())
        .set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string())
        .set_var("TEAM_MEMORY_SYNC_URL", &url);
    let m = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000))).with_team_credentials(store);
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    m.team_pull(&req).unwrap();
    let states: Vec<_> = std::fs::read_dir(data.join("team-sync")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(states.len(), 1, "the pull recorded its state: {states:?}");

    for no in [Refusal::Full, Refusal::ReadOnly] {
        no.make(&drive);
        let before = Before::take(&[drive.path()]);
        let what = format!("a pull on a drive that is {no:?}");
        let e = m.team_pull(&req).expect_err(&what);
        no.assert_answers(&what, &e, &states[0]);
        before.assert_unchanged(&what);
    }
    drop(drive);
    rt.block_on(server.shutdown());
}
