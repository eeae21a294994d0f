//! The Team screen's api against the real sync server, started in-process on 127.0.0.1:0 with
//! SQLite: repository and server discovery, device sign-in approved on the server's own page,
//! pull / push / sync with secrets held back, the files' status, history, rollback and removal
//! by a lead, refusals for members, and a replaced local edit restored from the trash.
//!
//! Credentials are kept in memory (`Mneme::with_team_credentials`), as the sync client's own
//! tests keep them; `keyring_sign_in_through_the_api` (ignored, run under
//! `scripts/with-keyring.sh`) goes through the real OS keyring instead.

use mneme_api::{
    ContextRequest, ErrorCode, Mneme, TeamConflictKind, TeamFileStatus, TeamRole, TeamServerSource, TeamSignInState,
};
use mneme_core::Clock;
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
use mneme_team::client::hash_content;
use mneme_team_server::{admin::Admin, DatabaseUrl, Role, RunningServer, ServerConfig};
use mneme_testsupport::{git, topic, write_file, TestHome};
use std::collections::BTreeMap;
use std::fs;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const PASSWORD: &str = "correct horse battery staple";

/// One clock for the server and the app, moved by hand (device polling waits on it).
#[derive(Debug)]
struct ManualClock(AtomicU64);

impl ManualClock {
    fn advance(&self, d: Duration) {
        self.0.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

struct Server {
    rt: tokio::runtime::Runtime,
    server: Option<RunningServer>,
    url: String,
    admin: Admin,
    clock: Arc<ManualClock>,
    _dir: tempfile::TempDir,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        let clock = Arc::new(ManualClock(AtomicU64::new(now)));
        let mut config = ServerConfig::new(DatabaseUrl::Sqlite(dir.path().join("team.db")));
        config.clock = clock.clone();
        config.device_poll_interval = Duration::from_secs(2);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let server = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            mneme_team_server::spawn(config, listener).await.unwrap()
        });
        let (url, admin) = (server.url(), server.admin());
        rt.block_on(admin.create_team("acme")).unwrap();
        Server { rt, server: Some(server), url, admin, clock, _dir: dir }
    }

    /// A user with `role` in `repo`, and an access token minted for them.
    fn user(&self, name: &str, repo: &str, role: Role) -> String {
        self.rt.block_on(self.admin.create_user(name, PASSWORD)).unwrap();
        self.rt.block_on(self.admin.grant(name, Some("acme"), repo, role)).unwrap();
        self.rt.block_on(self.admin.mint_token(name)).unwrap()
    }

    /// What the server holds for `repo`, read the way Claude Code reads it.
    fn entries(&self, repo: &str, token: &str) -> BTreeMap<String, String> {
        let url = format!("{}/api/claude_code/team_memory?repo={}", self.url, repo.replace('/', "%2F"));
        let mut resp = ureq::get(&url)
            .header("Authorization", format!("Bearer {token}"))
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .unwrap();
        if resp.status().as_u16() == 404 {
            return BTreeMap::new();
        }
        let v: serde_json::Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        serde_json::from_value(v["content"]["entries"].clone()).unwrap()
    }

    /// Approves (or denies) a user code on the server's `/device` page, as a browser posts it.
    fn decide(&self, user_code: &str, user: &str, action: &str) -> String {
        let mut resp = ureq::post(&format!("{}/device", self.url))
            .config()
            .http_status_as_error(false)
            .build()
            .send_form([("user_code", user_code), ("username", user), ("password", PASSWORD), ("action", action)])
            .unwrap();
        resp.body_mut().read_to_string().unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
    }
}

const REPO: &str = "acme/shop";

/// One person's machine: a clone of github.com/acme/shop and the app pointed at the server.
struct Machine {
    t: TestHome,
    repo: PathBuf,
    mneme: Mneme,
    store: Arc<MemoryStore>,
}

impl Machine {
    fn new(s: &Server) -> Machine {
        let t = TestHome::new();
        let repo = t.git_repo("code/shop");
        git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
        let store = Arc::new(MemoryStore::default());
        let env = t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &s.url);
        let mneme = Mneme::new(env, s.clock.clone()).with_team_credentials(store.clone());
        Machine { t, repo, mneme, store }
    }

    /// Signed in with a token the server's admin minted.
    fn signed_in(s: &Server, user: &str, role: Role) -> Machine {
        let m = Machine::new(s);
        let token = s.user(user, REPO, role);
        let c = Credentials { access_token: token, refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some(user.into()), extra: Default::default() };
        m.store.save(&s.url, &c).unwrap();
        m
    }

    fn req(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    fn team(&self) -> PathBuf {
        self.t.memdir_for(&self.repo).join("team")
    }

    fn write(&self, key: &str, text: &str) {
        write_file(&self.team().join(key), text);
    }

    fn read(&self, key: &str) -> Option<String> {
        fs::read_to_string(self.team().join(key)).ok()
    }
}

/// A GitHub token that is not real but looks it, built at run time.
fn fake_github_token() -> String {
    format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd")
}

#[test]
fn without_a_repository_or_server_the_status_says_what_to_do() {
    let t = TestHome::new();
    let plain = t.root.join("notes");
    fs::create_dir_all(&plain).unwrap();
    let m = Mneme::new(t.env.clone(), Arc::new(mneme_api::FixedClock::at_unix_secs(1_700_000_000)))
        .with_team_credentials(Arc::new(MemoryStore::default()));
    let at = |cwd: &PathBuf| ContextRequest { cwd: cwd.clone(), ..Default::default() };

    let st = m.team_status(&at(&plain)).unwrap();
    assert_eq!(st.repo, None);
    assert!(st.repo_problem.as_deref().unwrap().contains("not in a git repository"), "{:?}", st.repo_problem);
    assert_eq!(st.server.server_url, None);
    assert!(!st.signed_in && st.files.is_empty());
    assert_eq!(st.team_dir, t.memdir_for(&plain).join("team"));

    let repo = t.git_repo("code/app");
    let st = m.team_status(&at(&repo)).unwrap();
    assert!(st.repo_problem.as_deref().unwrap().contains("no `origin` remote"), "{:?}", st.repo_problem);
    git(&repo, &["remote", "add", "origin", "https://gitlab.com/acme/app.git"]);
    let st = m.team_status(&at(&repo)).unwrap();
    assert_eq!(st.remote_url.as_deref(), Some("https://gitlab.com/acme/app.git"));
    assert!(st.repo_problem.as_deref().unwrap().contains("not a github.com repository"), "{:?}", st.repo_problem);

    // Nothing to sync with: the errors point at the app's own controls.
    let e = m.team_pull(&at(&repo)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("Team → Server"), "{}", e.message);
    let e = m.team_sign_in(None).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("Team → Server"), "{}", e.message);
}

#[test]
fn the_server_address_is_saved_and_the_environment_wins() {
    let t = TestHome::new();
    let clock = Arc::new(mneme_api::FixedClock::at_unix_secs(1_700_000_000));
    let m = Mneme::new(t.env.clone(), clock.clone());
    let saved = m.set_team_server(Some(" https://team.example.com/ ")).unwrap();
    assert_eq!(saved.server_url.as_deref(), Some("https://team.example.com"));
    assert_eq!(saved.source, Some(TeamServerSource::Setting));
    let e = m.set_team_server(Some("team.example.com")).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("http:// or https://"), "{}", e.message);

    let overridden = Mneme::new(t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", "http://127.0.0.1:9"), clock.clone());
    let st = overridden.set_team_server(Some("https://other.example.com")).unwrap();
    assert_eq!(st.server_url.as_deref(), Some("http://127.0.0.1:9"));
    assert_eq!(st.source, Some(TeamServerSource::Environment));
    assert_eq!(st.saved_server_url.as_deref(), Some("https://other.example.com"));

    let cleared = m.set_team_server(None).unwrap();
    assert_eq!((cleared.server_url, cleared.source, cleared.saved_server_url), (None, None, None));
}

#[test]
fn device_sign_in_approved_on_the_servers_page_then_sign_out() {
    let s = Server::start();
    s.user("dana", REPO, Role::Member);
    let m = Machine::new(&s);
    let st = m.mneme.team_status(&m.req()).unwrap();
    assert_eq!(st.repo.as_deref(), Some(REPO));
    assert_eq!(st.server.source, Some(TeamServerSource::Environment));
    assert!(!st.signed_in);

    // Signed out: pushing says where to sign in, and automatic pushes are suppressed.
    m.write("notes.md", "Deploy from main.\n");
    let e = m.mneme.team_push(&m.req()).unwrap_err();
    assert_eq!(e.code, ErrorCode::SignInRequired);
    assert!(e.message.contains("Team → Sign in"), "{}", e.message);
    let sup = m.mneme.team_status(&m.req()).unwrap().sync.suppressed.unwrap();
    assert_eq!(sup.reason, "no_oauth");
    assert!(sup.recovery.contains("Sign in"), "{}", sup.recovery);

    let login = m.mneme.team_sign_in(None).unwrap();
    assert_eq!(login.server, s.url);
    assert_eq!(login.verification_uri, format!("{}/device", s.url));
    assert!(login.verification_uri_complete.starts_with(&login.verification_uri), "{}", login.verification_uri_complete);
    assert_eq!(login.interval_secs, 2);
    let polled = m.mneme.team_sign_in_poll(&login.id).unwrap();
    assert_eq!(polled.state, TeamSignInState::Pending);
    // Asked again at once: the server says slow down and the interval grows by five seconds.
    let polled = m.mneme.team_sign_in_poll(&login.id).unwrap();
    assert_eq!((polled.state, polled.interval_secs), (TeamSignInState::SlowDown, 7));

    let page = s.decide(&login.user_code, "dana", "approve");
    assert!(page.contains("Device signed in"), "{page}");
    s.clock.advance(Duration::from_secs(polled.interval_secs));
    let done = m.mneme.team_sign_in_poll(&login.id).unwrap();
    assert_eq!((done.state, done.user.as_deref()), (TeamSignInState::SignedIn, Some("dana")));
    let e = m.mneme.team_sign_in_poll(&login.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "a finished sign-in cannot be polled again");

    let st = m.mneme.team_status(&m.req()).unwrap();
    assert!(st.signed_in);
    assert_eq!(st.user.as_deref(), Some("dana"));
    let remote = m.mneme.team_remote(&m.req()).unwrap();
    assert_eq!((remote.user.as_str(), remote.role, remote.team.as_deref()), ("dana", Some(TeamRole::Member), Some("acme")));

    // The stored token works: the push goes through and clears the suppression.
    let pushed = m.mneme.team_push(&m.req()).unwrap();
    assert_eq!(pushed.uploaded, ["notes.md"]);
    assert_eq!(m.mneme.team_status(&m.req()).unwrap().sync.suppressed, None);

    let out = m.mneme.team_sign_out(None).unwrap();
    assert_eq!(out.server, s.url);
    assert!(!m.mneme.team_status(&m.req()).unwrap().signed_in);
    assert!(m.store.load(&s.url).unwrap().is_none(), "signing out forgets the token");
}

#[test]
fn a_denied_sign_in_says_so() {
    let s = Server::start();
    s.user("eve", REPO, Role::Member);
    let m = Machine::new(&s);
    let login = m.mneme.team_sign_in(None).unwrap();
    s.decide(&login.user_code, "eve", "deny");
    let e = m.mneme.team_sign_in_poll(&login.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::Forbidden);
    assert!(e.message.contains("denied") && e.message.contains("Sign in"), "{}", e.message);
    assert!(m.store.load(&s.url).unwrap().is_none());
}

/// Asking the server who you are names no repository, so a folder in none (no github.com
/// `origin`) gets the answer too: the signed-in person, with no role, team or files there.
/// Before, it failed as "not in a GitHub repository" before asking.
#[test]
fn who_you_are_is_answered_for_a_folder_in_no_repository() {
    let s = Server::start();
    let m = Machine::signed_in(&s, "nina", Role::Member);
    git(&m.repo, &["remote", "remove", "origin"]);
    assert_eq!(m.mneme.team_status(&m.req()).unwrap().repo, None);
    let remote = m.mneme.team_remote(&m.req()).unwrap();
    assert_eq!((remote.user.as_str(), remote.role, remote.team.as_deref()), ("nina", None, None));
    assert!(remote.entries.is_empty() && remote.max_entries.is_none(), "{remote:?}");
}

#[test]
fn a_key_only_the_server_would_refuse_is_held_back_and_the_rest_still_pushes() {
    // A documented example key: Mneme's own scanner lets it pass, the server's (Claude Code's
    // table) refuses it, and a refused file fails its whole batch.
    let s = Server::start();
    let lead = Machine::signed_in(&s, "lena", Role::Lead);
    let token = s.rt.block_on(s.admin.mint_token("lena")).unwrap();
    lead.write("aws.md", "Our docs use aws_access_key: AKIAIOSFODNN7EXAMPLE as the example.\n");
    lead.write("deploys.md", "Deploy from main only.\n");
    let pushed = lead.mneme.team_push(&lead.req()).unwrap();
    assert_eq!(pushed.uploaded, ["deploys.md"]);
    let held: Vec<_> = pushed.skipped_secrets.iter().map(|h| (h.path.as_str(), h.label.as_str())).collect();
    assert_eq!(held, [("aws.md", "AWS Access Token")]);
    assert_eq!(s.entries(REPO, &token).keys().collect::<Vec<_>>(), ["deploys.md"]);
    let st = lead.mneme.team_status(&lead.req()).unwrap();
    assert!(st.sync.last_push.as_ref().unwrap().ok);
    assert_eq!(st.files.iter().find(|f| f.key == "aws.md").unwrap().status, TeamFileStatus::Secret);
}

#[test]
fn push_pull_history_rollback_and_removal() {
    let s = Server::start();
    let lead = Machine::signed_in(&s, "lena", Role::Lead);
    let member = Machine::signed_in(&s, "mo", Role::Member);
    let token = s.rt.block_on(s.admin.mint_token("lena")).unwrap();

    let deploys_v1 = topic("deploys", "How we deploy", "project", "Deploy from main only.");
    lead.write("deploys.md", &deploys_v1);
    lead.write("ci.md", &format!("The CI token is {}\n", fake_github_token()));
    lead.write(".draft.md", "not synced: starts with a dot");

    // Before any sync nothing is known about the files.
    let st = lead.mneme.team_status(&lead.req()).unwrap();
    let status: BTreeMap<_, _> = st.files.iter().map(|f| (f.key.as_str(), f.status)).collect();
    assert_eq!(status, BTreeMap::from([("ci.md", TeamFileStatus::Secret), ("deploys.md", TeamFileStatus::Unknown)]));

    let pushed = lead.mneme.team_push(&lead.req()).unwrap();
    assert_eq!(pushed.uploaded, ["deploys.md"]);
    assert_eq!(pushed.skipped_secrets.len(), 1);
    let held = &pushed.skipped_secrets[0];
    assert_eq!((held.path.as_str(), held.rule_id.as_str(), held.label.as_str()), ("ci.md", "github-pat", "GitHub PAT"));
    assert!(pushed.summary.contains("\"ci.md\" (GitHub PAT)"), "{}", pushed.summary);
    let json = serde_json::to_string(&pushed).unwrap();
    assert!(!json.contains(&fake_github_token()), "the secret itself is never reported");
    assert_eq!(s.entries(REPO, &token).keys().collect::<Vec<_>>(), ["deploys.md"], "the secret never reached the server");

    let st = lead.mneme.team_status(&lead.req()).unwrap();
    let deploys = st.files.iter().find(|f| f.key == "deploys.md").unwrap();
    assert_eq!(deploys.status, TeamFileStatus::Synced);
    assert_eq!(deploys.local_hash.as_deref(), Some(hash_content(&deploys_v1).as_str()));
    assert_eq!(deploys.size, Some(deploys_v1.len() as u64));
    let ci = st.files.iter().find(|f| f.key == "ci.md").unwrap();
    assert_eq!((ci.status, ci.secret_label.as_deref()), (TeamFileStatus::Secret, Some("GitHub PAT")));
    assert_eq!(st.sync.skipped_for_secrets[0].label, "GitHub PAT");
    assert!(st.sync.last_push.as_ref().unwrap().ok);

    // The member syncs, edits, and pushes; the lead sees who changed what.
    let synced = member.mneme.team_sync(&member.req()).unwrap();
    assert_eq!(synced.pull.written, ["deploys.md"]);
    assert!(synced.push.uploaded.is_empty());
    let deploys_v2 = deploys_v1.replace("main only.", "main only, after CI is green.");
    member.write("deploys.md", &deploys_v2);
    member.write("style.md", "Prefer small pull requests.\n");
    assert_eq!(
        member.mneme.team_status(&member.req()).unwrap().files.iter().map(|f| (f.key.as_str(), f.status)).collect::<Vec<_>>(),
        [("deploys.md", TeamFileStatus::Modified), ("style.md", TeamFileStatus::New)]
    );
    assert_eq!(member.mneme.team_push(&member.req()).unwrap().uploaded, ["deploys.md", "style.md"]);

    // The lead's console lists the member's new file before the lead has pulled it.
    let remote = lead.mneme.team_remote(&lead.req()).unwrap();
    assert_eq!((remote.user.as_str(), remote.role), ("lena", Some(TeamRole::Lead)));
    let by_key: BTreeMap<_, _> = remote.entries.iter().map(|e| (e.key.as_str(), e)).collect();
    assert_eq!(by_key.keys().copied().collect::<Vec<_>>(), ["deploys.md", "style.md"], "ci.md was never uploaded");
    assert_eq!(by_key["deploys.md"].author.as_deref(), Some("mo"));
    assert_eq!(by_key["deploys.md"].checksum, hash_content(&deploys_v2));
    assert_eq!(by_key["deploys.md"].versions, 2);
    assert!(by_key["deploys.md"].time.ends_with('Z'), "{}", by_key["deploys.md"].time);

    let pulled = lead.mneme.team_pull(&lead.req()).unwrap();
    assert_eq!(pulled.written, ["deploys.md", "style.md"]);
    assert_eq!(lead.read("deploys.md").as_deref(), Some(deploys_v2.as_str()));

    let h = lead.mneme.team_history(&lead.req(), "deploys.md").unwrap();
    assert_eq!(h.versions.iter().map(|v| (v.author.as_deref(), v.content.as_str())).collect::<Vec<_>>(), [
        (Some("mo"), deploys_v2.as_str()),
        (Some("lena"), deploys_v1.as_str())
    ]);
    assert_eq!(h.local.as_deref(), Some(deploys_v2.as_str()));
    let first = h.versions[1].version;

    // A member may not roll back or remove; the message says why.
    for e in [
        member.mneme.team_rollback(&member.req(), "deploys.md", first).unwrap_err(),
        member.mneme.team_remove(&member.req(), "style.md").unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("Only a lead"), "{}", e.message);
    }

    // The lead rolls back; the rollback is a new version and arrives here at once.
    let back = lead.mneme.team_rollback(&lead.req(), "deploys.md", first).unwrap();
    assert!(back.checksum.starts_with("sha256:"), "{}", back.checksum);
    assert_eq!(back.pull.as_ref().unwrap().written, ["deploys.md"]);
    assert_eq!(lead.read("deploys.md").as_deref(), Some(deploys_v1.as_str()));
    assert_eq!(s.entries(REPO, &token)["deploys.md"], deploys_v1);
    assert_eq!(lead.mneme.team_history(&lead.req(), "deploys.md").unwrap().versions.len(), 3, "history is never rewritten");
    let e = lead.mneme.team_rollback(&lead.req(), "deploys.md", 999).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);

    // Removal for everyone: a tombstone; each client's copy goes to its trash on pull.
    let removed = lead.mneme.team_remove(&lead.req(), "style.md").unwrap();
    assert_eq!(removed.pull.as_ref().unwrap().trashed, ["style.md"]);
    assert_eq!(lead.read("style.md"), None);
    let pulled = member.mneme.team_pull(&member.req()).unwrap();
    assert_eq!(pulled.trashed, ["style.md"]);
    assert_eq!(member.read("style.md"), None);
    let st = member.mneme.team_status(&member.req()).unwrap();
    let c = &st.sync.conflicts[0];
    assert_eq!((c.key.as_str(), c.kind), ("style.md", TeamConflictKind::DeletedByTeammate));
    assert!(c.trash_id.is_some());
    let remote = lead.mneme.team_remote(&lead.req()).unwrap();
    let style = remote.entries.iter().find(|e| e.key == "style.md").unwrap();
    assert!(style.deleted);
    assert_eq!(style.author.as_deref(), Some("lena"));
    let e = lead.mneme.team_remove(&lead.req(), "style.md").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{}", e.message);

    // Purge (the Team screen's, issue 13): only a lead; the removed key's history then holds
    // the purge alone, with no content.
    for e in [
        member.mneme.team_purge(&member.req(), "style.md").unwrap_err(),
        member.mneme.team_sign_ins(&member.req()).unwrap_err(),
    ] {
        assert_eq!(e.code, ErrorCode::Forbidden);
        assert!(e.message.contains("Only a lead"), "{}", e.message);
    }
    assert_eq!(lead.mneme.team_history(&lead.req(), "style.md").unwrap().versions.len(), 2);
    let purged = lead.mneme.team_purge(&lead.req(), "style.md").unwrap();
    assert!(purged.pull_error.is_none(), "{:?}", purged.pull_error);
    let h = lead.mneme.team_history(&lead.req(), "style.md").unwrap();
    assert_eq!(h.versions.len(), 1, "{:?}", h.versions);
    assert!(h.versions[0].deleted && h.versions[0].content.is_empty(), "{:?}", h.versions[0]);
    assert_eq!(h.versions[0].author.as_deref(), Some("lena"));
    let e = lead.mneme.team_purge(&lead.req(), "never.md").unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{}", e.message);

    // Sign-ins: both people's (here tokens the admin minted), none revoked.
    let sign_ins = lead.mneme.team_sign_ins(&lead.req()).unwrap();
    assert_eq!(sign_ins.repo, REPO);
    let mut users: Vec<&str> = sign_ins.sign_ins.iter().map(|x| x.user.as_str()).collect();
    users.sort_unstable();
    users.dedup();
    assert_eq!(users, ["lena", "mo"], "{sign_ins:?}");
    assert!(sign_ins.sign_ins.iter().all(|x| x.revoked.is_none() && x.expires > x.created), "{sign_ins:?}");
}

#[test]
fn a_local_edit_a_pull_replaced_is_restored_from_the_trash() {
    let s = Server::start();
    let a = Machine::signed_in(&s, "ada", Role::Member);
    let b = Machine::signed_in(&s, "bo", Role::Member);
    a.write("oncall.md", "Pager rota is in the wiki.\n");
    a.mneme.team_push(&a.req()).unwrap();
    b.mneme.team_pull(&b.req()).unwrap();

    a.write("oncall.md", "Pager rota moved to the handbook.\n");
    b.write("oncall.md", "Pager rota is in the wiki, page 3.\n");
    b.mneme.team_push(&b.req()).unwrap();
    let pulled = a.mneme.team_pull(&a.req()).unwrap();
    assert_eq!(pulled.written, ["oncall.md"]);
    assert_eq!(a.read("oncall.md").as_deref(), Some("Pager rota is in the wiki, page 3.\n"), "the server wins per key");
    let c = &a.mneme.team_status(&a.req()).unwrap().sync.conflicts[0];
    assert_eq!(c.kind, TeamConflictKind::PulledOverLocalEdit);
    let trash_id = c.trash_id.clone().unwrap();

    let restored = a.mneme.team_restore_conflict(&a.req(), &trash_id).unwrap();
    assert_eq!(restored.path, a.team().join("oncall.md"));
    assert_eq!(a.read("oncall.md").as_deref(), Some("Pager rota moved to the handbook.\n"));
    // The teammate's version is in the trash in turn, and the file now waits for a push.
    let replaced = restored.replaced_trash_id.unwrap();
    let trash = a.mneme.trash(&a.req()).unwrap();
    assert!(trash.entries.iter().any(|e| e.id == replaced && e.original_rel_path == "team/oncall.md"));
    let st = a.mneme.team_status(&a.req()).unwrap();
    assert_eq!(st.files[0].status, TeamFileStatus::Modified);
    let e = a.mneme.team_restore_conflict(&a.req(), &trash_id).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound);
}

/// A replaced local edit holding a secret (written by Claude Code, which no policy of Mneme's
/// saw) is not put back: restoring writes into team memory like any other write, and a push
/// would hold the file back. Refused before anything moves, with the rule's label, never the
/// secret, and what to do; the team's version and the trash entry stay as they were.
#[test]
fn a_replaced_local_edit_holding_a_secret_is_not_restored() {
    let s = Server::start();
    let a = Machine::signed_in(&s, "ada", Role::Member);
    let b = Machine::signed_in(&s, "bo", Role::Member);
    a.write("ci.md", "CI runs on every push.\n");
    a.mneme.team_push(&a.req()).unwrap();
    b.mneme.team_pull(&b.req()).unwrap();

    let mine = format!("CI runs on every push with the bot token {}.\n", fake_github_token());
    a.write("ci.md", &mine);
    b.write("ci.md", "CI runs on every push to main.\n");
    b.mneme.team_push(&b.req()).unwrap();
    a.mneme.team_pull(&a.req()).unwrap();
    let c = &a.mneme.team_status(&a.req()).unwrap().sync.conflicts[0];
    assert_eq!(c.kind, TeamConflictKind::PulledOverLocalEdit);
    let trash_id = c.trash_id.clone().unwrap();
    let trash_before = a.mneme.trash(&a.req()).unwrap().entries;

    let e = a.mneme.team_restore_conflict(&a.req(), &trash_id).unwrap_err();
    assert_eq!(e.code, ErrorCode::SecretsRefused, "{}", e.message);
    assert!(e.message.starts_with("Not restored: your version of team/ci.md appears to contain secrets (GitHub PAT)"), "{}", e.message);
    assert!(e.message.contains("without the secret, then push") && e.message.contains(&trash_id), "{}", e.message);
    assert!(!e.message.contains(&fake_github_token()[4..]), "{}", e.message);
    assert_eq!(a.read("ci.md").as_deref(), Some("CI runs on every push to main.\n"), "the team's version stays");
    assert_eq!(a.mneme.trash(&a.req()).unwrap().entries, trash_before, "the trash is as it was");
    let kept = a.mneme.trash(&a.req()).unwrap().entries.into_iter().find(|x| x.id == trash_id).unwrap();
    assert_eq!(kept.original_rel_path, "team/ci.md");
    assert_eq!(a.mneme.team_status(&a.req()).unwrap().files[0].status, TeamFileStatus::Synced);
}

/// The same policy holds for Memories → Trash: a team memory Claude Code wrote with a secret in
/// it, deleted in Mneme, does not come back into the shared folder; the trash keeps it, and a
/// private memory with the same text is restored as before.
#[test]
fn a_trashed_team_memory_holding_a_secret_is_not_restored() {
    let s = Server::start();
    let a = Machine::new(&s);
    let text = format!("CI runs on every push with the bot token {}.\n", fake_github_token());
    a.write("ci.md", &text);
    let trashed = a.mneme.delete_memory(&a.req(), "team/ci.md").unwrap();
    assert_eq!(a.read("ci.md"), None);
    let trash_before = a.mneme.trash(&a.req()).unwrap().entries;

    let e = a.mneme.restore_memory(&a.req(), &trashed.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::SecretsRefused, "{}", e.message);
    assert!(e.message.starts_with("Not restored: your version of team/ci.md appears to contain secrets (GitHub PAT)"), "{}", e.message);
    assert!(e.message.contains("team/ci.md stays as it is") && e.message.contains(&trashed.id), "{}", e.message);
    assert!(!e.message.contains(&fake_github_token()[4..]), "{}", e.message);
    assert_eq!(a.read("ci.md"), None, "nothing came back into team memory");
    assert_eq!(a.mneme.trash(&a.req()).unwrap().entries, trash_before, "the trash is as it was");

    let private = a.t.memdir_for(&a.repo).join("ci.md");
    write_file(&private, &text);
    let trashed = a.mneme.delete_memory(&a.req(), "ci.md").unwrap();
    assert_eq!(a.mneme.restore_memory(&a.req(), &trashed.id).unwrap(), private, "private memory is the user's own");
    assert_eq!(fs::read_to_string(&private).unwrap(), text);
}

#[test]
fn writing_a_secret_into_team_memory_is_refused_with_its_own_code() {
    let s = Server::start();
    let m = Machine::new(&s);
    m.write("deploys.md", &topic("deploys", "How we deploy", "project", "Deploy from main."));
    let detail = m.mneme.memory(&m.req(), "team/deploys.md").unwrap();
    let text = detail.content.replace("Deploy from main.", &format!("Use {} to deploy.", fake_github_token()));
    let e = m.mneme.save_memory(&m.req(), "team/deploys.md", &text, &detail.revision).unwrap_err();
    assert_eq!(e.code, ErrorCode::SecretsRefused);
    assert!(e.message.contains("GitHub PAT") && !e.message.contains(&fake_github_token()), "{}", e.message);
    assert!(!m.read("deploys.md").unwrap().contains("ghp_"));
}

/// The same sign-in through the real OS keyring: run with
/// `scripts/with-keyring.sh cargo test -p mneme-api --test team -- --ignored keyring`.
#[test]
#[ignore = "needs a Secret Service: run under scripts/with-keyring.sh"]
fn keyring_sign_in_through_the_api() {
    let s = Server::start();
    s.user("kai", REPO, Role::Member);
    let t = TestHome::new();
    let repo = t.git_repo("code/shop");
    git(&repo, &["remote", "add", "origin", "https://github.com/acme/shop.git"]);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let service = format!("mneme-api-test-{}-{nanos}", std::process::id());
    let env = t.env.clone().set_var("MNEME_KEYRING_SERVICE", &service);
    // The address is given at sign-in, so it is saved once signed in.
    let m = Mneme::new(env, s.clock.clone());
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let login = m.team_sign_in(Some(&s.url)).unwrap();
    s.decide(&login.user_code, "kai", "approve");
    let done = m.team_sign_in_poll(&login.id).unwrap();
    assert_eq!((done.state, done.user.as_deref()), (TeamSignInState::SignedIn, Some("kai")));
    let st = m.team_status(&req).unwrap();
    assert_eq!(st.server.source, Some(TeamServerSource::Setting));
    assert!(st.signed_in, "keyring problem: {:?}", st.keyring_problem);
    let stored = mneme_keychain::Keychain::new(&service).get(&format!("team-token:{}", s.url)).unwrap().unwrap();
    assert!(stored.contains("accessToken"));
    write_file(&t.memdir_for(&repo).join("team/notes.md"), "Deploy from main.\n");
    assert_eq!(m.team_push(&req).unwrap().uploaded, ["notes.md"]);
    m.team_sign_out(None).unwrap();
    assert_eq!(mneme_keychain::Keychain::new(&service).get(&format!("team-token:{}", s.url)).unwrap(), None);
    assert!(!m.team_status(&req).unwrap().signed_in);
}

/// The sync state file of a folder, in Mneme's data folder (the one file there once it synced).
fn state_file(m: &Machine) -> PathBuf {
    let files: Vec<PathBuf> = fs::read_dir(m.t.env.data_dir().join("team-sync")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// A sync state file that cannot be read (not JSON, or a FIFO, which a plain read would wait on
/// for ever) is shown by the Team screen's status and `mneme team status`'s alike, in the same
/// words, with the files and the sign-in still shown, and the sign-in decided in one place for
/// both; deleted as the words say, the next pull rebuilds it.
#[test]
fn an_unreadable_sync_state_is_shown_with_the_rest_and_the_next_pull_rebuilds_it() {
    use mneme_testsupport::special_files::{mkfifo, within};
    let s = Server::start();
    let m = Machine::signed_in(&s, "ada", Role::Member);
    m.write("oncall.md", "Pager rota is in the wiki.\n");
    m.mneme.team_push(&m.req()).unwrap();
    let path = state_file(&m);

    fs::write(&path, "{ not json").unwrap();
    let app = m.mneme.team_status(&m.req()).unwrap();
    let cli = m.mneme.team_sync_status(&m.repo).unwrap();
    let problem = app.state_problem.clone().unwrap_or_else(|| panic!("{app:?}"));
    assert!(problem.contains("could not be used: it does not parse") && problem.contains("delete it to start afresh"), "{problem}");
    assert_eq!(cli.state_problem.as_deref(), Some(problem.as_str()), "the same words both ways");
    assert!(cli.state.is_none() && app.sync.last_push.is_none());
    assert_eq!(app.files.iter().map(|f| f.key.as_str()).collect::<Vec<_>>(), ["oncall.md"], "the files are still listed");
    assert!(app.signed_in && cli.signed_in);
    assert_eq!((app.user.as_deref(), app.keyring_problem.as_deref()), (cli.signed_in_as.as_deref(), cli.keyring_problem.as_deref()));
    assert_eq!(app.user.as_deref(), Some("ada"));

    fs::remove_file(&path).unwrap();
    mkfifo(&path);
    let (env, clock, store, req, repo) = (m.t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &s.url), s.clock.clone(), m.store.clone(), m.req(), m.repo.clone());
    let (app, cli) = within("the team status with a FIFO as its sync state", move || {
        let mneme = Mneme::new(env, clock).with_team_credentials(store);
        (mneme.team_status(&req).unwrap().state_problem, mneme.team_sync_status(&repo).unwrap().state_problem)
    });
    let problem = app.unwrap();
    assert!(problem.contains("it is a named pipe (FIFO), not a plain file; delete it to start afresh"), "{problem}");
    assert_eq!(cli.as_deref(), Some(problem.as_str()));

    fs::remove_file(&path).unwrap();
    m.mneme.team_pull(&m.req()).unwrap();
    let cli = m.mneme.team_sync_status(&m.repo).unwrap();
    assert!(cli.state_problem.is_none() && cli.state.is_some_and(|st| st.last_pull.is_some_and(|o| o.ok)), "rebuilt by the pull");
    let app = m.mneme.team_status(&m.req()).unwrap();
    assert!(app.state_problem.is_none() && app.sync.last_pull.is_some());
}
