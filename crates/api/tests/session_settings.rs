//! Every part of Mneme that acts on a project's memory sees the settings as the session does:
//! a settings file's `env` block that turns auto memory off or moves its folder counts for the
//! Dreams screen, the dream and extraction folders and team sync as it does for What Claude
//! sees. And the Settings screen says when something above the user's file decides.

use mneme_api::records::MemoryFolder;
use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::path::PathBuf;
use std::sync::Arc;

fn mneme(t: &TestHome) -> Mneme {
    Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_778_068_800)))
}

fn user_settings(t: &TestHome, json: &str) {
    t.write(t.config_home().join("settings.json"), json);
}

#[test]
fn an_env_block_that_turns_auto_memory_off_counts_everywhere() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    user_settings(&t, r#"{"autoDreamEnabled": true, "env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}}"#);
    let m = mneme(&t);
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    assert!(!m.context(&req).unwrap().auto_memory.enabled);
    let gates = m.dream_status(&req).unwrap();
    assert!(!gates.enabled, "{}", gates.enabled_explanation);
    assert!(gates.enabled_explanation.contains("auto memory is off"), "{}", gates.enabled_explanation);
    let status = m.dream_gate_status(&MemoryFolder::Cwd(repo)).unwrap().status;
    assert!(!status.enabled, "{}", status.enabled_explanation);
}

#[test]
fn an_env_block_that_moves_the_memory_folder_moves_every_engine() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let moved = t.home().join("cowork-memory");
    user_settings(&t, &format!(r#"{{"env": {{"CLAUDE_COWORK_MEMORY_PATH_OVERRIDE": "{}"}}}}"#, moved.display()));
    let m = mneme(&t);
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    assert_eq!(m.context(&req).unwrap().auto_memory.dir, moved);
    assert_eq!(m.dream_status(&req).unwrap().memory_dir, moved);
    assert_eq!(m.dream_memory_dir(&MemoryFolder::Cwd(repo.clone())).unwrap(), moved);
    assert_eq!(m.extraction_memory_dir(&repo), moved);
    assert_eq!(mneme_team::client::resolve_target(&t.env, &repo).memory_dir, moved);
}

#[test]
fn the_settings_screen_says_what_decides_above_the_users_file() {
    let t = TestHome::new();
    user_settings(&t, r#"{"autoMemoryEnabled": true, "autoDreamEnabled": true}"#);
    let m = mneme(&t);
    let s = m.machine_settings().unwrap();
    assert_eq!((s.auto_memory_overridden, s.auto_dream_overridden, s.auto_memory_directory_overridden), (None, None, None));

    // Managed policy wins over the user's file.
    let policy = t.env.managed_dir.join("managed-settings.json");
    t.write(&policy, r#"{"autoMemoryEnabled": false, "autoDreamEnabled": false, "autoMemoryDirectory": "/srv/memory"}"#);
    let s = m.machine_settings().unwrap();
    let memory = s.auto_memory_overridden.expect("policy decides auto memory");
    assert!(memory.contains("managed settings") && memory.contains("autoMemoryEnabled to false"), "{memory}");
    assert!(s.auto_dream_overridden.expect("policy decides auto dream").contains("autoDreamEnabled to false"));
    assert!(s.auto_memory_directory_overridden.expect("policy decides the folder").contains("\"/srv/memory\""));
    assert_eq!(s.auto_memory_enabled, Some(true), "the user's own value is still shown");

    // A variable set in an env block of the user's file, named with where it comes from.
    std::fs::remove_file(&policy).unwrap();
    user_settings(&t, r#"{"autoMemoryEnabled": true, "env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}}"#);
    let why = m.machine_settings().unwrap().auto_memory_overridden.expect("the env block decides");
    assert!(why.contains("CLAUDE_CODE_DISABLE_AUTO_MEMORY=\"1\" in the env block of"), "{why}");

    // The shell's environment.
    user_settings(&t, "{}");
    let env = t.env.clone().set_var("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "0");
    let why = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(0))).machine_settings().unwrap().auto_memory_overridden;
    assert!(why.expect("the environment decides").contains("in the environment"));
}

#[test]
fn settings_given_as_json_on_the_command_line() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let m = mneme(&t);
    let req = |flag: &str| ContextRequest { cwd: repo.clone(), settings_file: Some(PathBuf::from(flag)), ..Default::default() };
    let view = m.context(&req(r#" {"autoMemoryEnabled": false} "#)).unwrap();
    assert!(!view.auto_memory.enabled, "{}", view.auto_memory.reason);
    let err = m.context(&req(r#"{"autoMemoryEnabled": fals}"#)).unwrap_err();
    assert!(err.message.contains("Invalid JSON provided to --settings"), "{}", err.message);
    // A file name that only starts with a brace is still a file.
    let err = m.context(&req("{notes.json")).unwrap_err();
    assert!(err.message.contains("Settings file not found"), "{}", err.message);
}

fn at(cwd: &std::path::Path, release: &str) -> ContextRequest {
    ContextRequest { cwd: cwd.to_path_buf(), claude_version: Some(release.parse().unwrap()), ..Default::default() }
}

/// Started in a sub-folder, 2.1.211 on read the working folder's own local settings and the
/// repository root's (which wins), never a folder in between; 2.1.210 only the working folder's.
#[test]
fn local_settings_from_a_sub_folder_as_each_release_reads_them() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let sub = repo.join("a/b");
    std::fs::create_dir_all(&sub).unwrap();
    let local = |dir: &std::path::Path, on: bool| {
        t.write(dir.join(".claude/settings.local.json"), &format!(r#"{{"autoMemoryEnabled": {on}}}"#));
    };
    let m = mneme(&t);
    let on = |release: &str| m.context(&at(&sub, release)).unwrap().auto_memory.enabled;
    // Root off, intermediate and working folder on: the root wins from 2.1.211.
    local(&repo, false);
    local(&repo.join("a"), true);
    local(&sub, true);
    assert!(on("2.1.210"));
    assert!(!on("2.1.211") && !on("2.1.332"));
    // Without the working folder's own file the intermediate one is never read.
    std::fs::remove_file(sub.join(".claude/settings.local.json")).unwrap();
    local(&repo, true);
    local(&repo.join("a"), false);
    assert!(on("2.1.210") && on("2.1.332"));
    // The working folder's own file applies where the root has none.
    std::fs::remove_file(repo.join(".claude/settings.local.json")).unwrap();
    local(&sub, false);
    assert!(!on("2.1.210") && !on("2.1.332"));
}

/// A managed-settings file with a wrong-typed key: left out whole up to 2.1.165, only that key
/// from 2.1.166. One that is not a JSON object stops Claude Code from 2.1.259.
#[test]
fn managed_settings_as_each_release_reads_them() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let m = mneme(&t);
    let policy = t.env.managed_dir.join("managed-settings.json");
    t.write(&policy, r#"{"autoMemoryEnabled": false, "autoDreamEnabled": "x"}"#);
    assert!(m.context(&at(&repo, "2.1.165")).unwrap().auto_memory.enabled, "the whole file left out");
    assert!(!m.context(&at(&repo, "2.1.166")).unwrap().auto_memory.enabled, "only the bad key left out");
    assert!(!m.context(&at(&repo, "2.1.332")).unwrap().auto_memory.enabled);

    t.write(&policy, "[1, 2]");
    assert!(m.context(&at(&repo, "2.1.258")).is_ok());
    let err = m.context(&at(&repo, "2.1.259")).unwrap_err();
    assert!(err.message.contains("does not start") && err.message.contains("could not be parsed as a JSON object"), "{}", err.message);
    // Empty is an empty object, for every release.
    t.write(&policy, "  \n");
    assert!(m.context(&at(&repo, "2.1.332")).is_ok());
    // A folder where the file should be: unreadable, which stops 2.1.285 on.
    std::fs::remove_file(&policy).unwrap();
    std::fs::create_dir_all(&policy).unwrap();
    assert!(m.context(&at(&repo, "2.1.284")).is_ok());
    assert!(m.context(&at(&repo, "2.1.285")).unwrap_err().message.contains("Unable to read managed policy settings"));
}

/// A value anywhere in a settings file that breaks the release's schema makes Claude Code
/// ignore the whole file, whatever key it is in: the context, the settings screen and the
/// managed-settings rule (one bad key dropped from 2.1.166) all follow the release's rules.
#[test]
fn a_value_the_release_refuses_anywhere_leaves_the_file_out() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let m = mneme(&t);
    let on = |release: &str| m.context(&at(&repo, release)).unwrap().auto_memory.enabled;
    user_settings(&t, r#"{"autoMemoryEnabled": false, "cleanupPeriodDays": 0}"#);
    assert!(on("2.1.197") && on("2.1.332"), "the whole file is left out");
    let view = m.context(&at(&repo, "2.1.332")).unwrap();
    let problem = view.settings_problems.join("\n");
    assert!(problem.contains("\"cleanupPeriodDays\" must be a whole number above 0, but it is 0"), "{problem}");
    assert!(problem.contains("none of its settings apply"), "{problem}");
    let machine = m.machine_settings().unwrap();
    assert!(machine.problems.iter().any(|p| p.contains("cleanupPeriodDays")), "{:?}", machine.problems);
    // Mneme leaves a file Claude Code ignores alone: a switch written there would do nothing.
    let file = t.config_home().join("settings.json");
    let before = std::fs::read(&file).unwrap();
    for refused in [m.set_auto_memory(true).map(drop), m.set_auto_dream(true).map(drop), m.set_auto_memory_directory(None).map(drop)] {
        let e = refused.unwrap_err();
        assert_eq!(e.code, mneme_api::ErrorCode::Malformed);
        assert!(e.message.contains("cleanupPeriodDays") && e.message.ends_with("Mneme will not change this file until it is fixed."), "{}", e.message);
    }
    assert_eq!(std::fs::read(&file).unwrap(), before, "untouched");

    // A key Mneme never reads, of the wrong type, does the same; valid values do not.
    user_settings(&t, r#"{"autoMemoryEnabled": false, "permissions": {"allow": []}, "model": 5}"#);
    assert!(on("2.1.332"));
    user_settings(&t, r#"{"autoMemoryEnabled": false, "cleanupPeriodDays": 3, "model": "sonnet", "someFutureKey": 5}"#);
    assert!(!on("2.1.100") && !on("2.1.332"));
    assert!(m.machine_settings().unwrap().problems.is_empty());
    // Fixed, the file takes changes again.
    m.set_auto_memory(true).unwrap();
    assert!(on("2.1.332"));

    // A key a release adds counts from that release on: 2.1.337 ignores a file whose
    // `disableLocalMcpServers` is not true or false, which 2.1.332 does not know and passes.
    user_settings(&t, r#"{"autoMemoryEnabled": false, "disableLocalMcpServers": "yes"}"#);
    assert!(!on("2.1.332") && on("2.1.337"));
    let problem = m.context(&at(&repo, "2.1.337")).unwrap().settings_problems.join("\n");
    assert!(problem.contains("\"disableLocalMcpServers\" must be true or false"), "{problem}");

    // Managed settings: the bad key alone is dropped from 2.1.166.
    user_settings(&t, "{}");
    t.write(t.env.managed_dir.join("managed-settings.json"), r#"{"cleanupPeriodDays": -1, "autoMemoryEnabled": false}"#);
    assert!(on("2.1.165"));
    assert!(!on("2.1.166") && !on("2.1.332"));
}

/// `CLAUDE_CODE_SAFE_MODE` from a repository's settings turns memory off up to 2.1.245; from
/// 2.1.246 a repository cannot set it (the user's own settings still can).
#[test]
fn safe_mode_from_a_repository_as_each_release_reads_it() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    t.write(repo.join(".claude/settings.json"), r#"{"env": {"CLAUDE_CODE_SAFE_MODE": "1"}}"#);
    let m = mneme(&t);
    assert!(!m.context(&at(&repo, "2.1.245")).unwrap().auto_memory.enabled);
    assert!(m.context(&at(&repo, "2.1.246")).unwrap().auto_memory.enabled);
    user_settings(&t, r#"{"env": {"CLAUDE_CODE_SAFE_MODE": "1"}}"#);
    assert!(!m.context(&at(&repo, "2.1.332")).unwrap().auto_memory.enabled);
}

/// With `autoDreamEnabled` unset, Claude Code's cached server flag decides: an account whose
/// flag is on dreams by default, and the Dreams screen says so instead of "off".
#[test]
fn an_unset_auto_dream_follows_the_cached_server_flag() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let m = mneme(&t);
    let req = ContextRequest { cwd: repo, ..Default::default() };
    let gates = m.dream_status(&req).unwrap();
    assert!(!gates.enabled && gates.enabled_explanation.contains("does not turn it on"), "{}", gates.enabled_explanation);
    t.write(t.env.global_config_path(), r#"{"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"enabled": true, "minHours": 24}}}"#);
    let gates = m.dream_status(&req).unwrap();
    assert!(gates.enabled && gates.enabled_explanation.contains("server flag"), "{}", gates.enabled_explanation);
    assert_eq!((gates.min_hours, gates.min_sessions), (24.0, 5));
    // The same flag's thresholds count, each checked as Claude Code checks it.
    t.write(t.env.global_config_path(), r#"{"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"enabled": true, "minHours": 6, "minSessions": 2}}}"#);
    let gates = m.dream_status(&req).unwrap();
    assert_eq!((gates.min_hours, gates.min_sessions), (6.0, 2));
    t.write(t.env.global_config_path(), r#"{"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"enabled": true, "minHours": -1, "minSessions": "2"}}}"#);
    let gates = m.dream_status(&req).unwrap();
    assert_eq!((gates.min_hours, gates.min_sessions), (24.0, 5));
    // The user's own setting still wins.
    user_settings(&t, r#"{"autoDreamEnabled": false}"#);
    assert!(!m.dream_status(&req).unwrap().enabled);
}

/// Claude Code dreams only for an account its server flag offers auto dream to, whatever
/// autoDreamEnabled says; 2.1.101 to 2.1.209 also where team memory holds content on the
/// server, which Mneme cannot see. The Dreams screen says so beside the setting.
#[test]
fn whether_claude_code_itself_offers_auto_dream() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let m = mneme(&t);
    user_settings(&t, r#"{"autoDreamEnabled": true}"#);
    let at = |release: &str| ContextRequest { cwd: repo.clone(), claude_version: Some(release.parse().unwrap()), ..Default::default() };
    let gates = m.dream_status(&at("2.1.332")).unwrap();
    assert!(gates.enabled, "Mneme's own dreams follow the setting");
    assert_eq!(gates.claude_code_offers, Some(false));
    assert!(gates.offer_note.as_deref().is_some_and(|n| n.contains("will not dream for this account")), "{:?}", gates.offer_note);
    // Team memory on (its cached flag): 2.1.150 may offer it, 2.1.100 and 2.1.210 do not.
    t.write(t.env.global_config_path(), r#"{"cachedGrowthBookFeatures": {"tengu_herring_clock": true}}"#);
    assert_eq!(m.dream_status(&at("2.1.150")).unwrap().claude_code_offers, None);
    assert_eq!(m.dream_status(&at("2.1.100")).unwrap().claude_code_offers, Some(false));
    assert_eq!(m.dream_status(&at("2.1.210")).unwrap().claude_code_offers, Some(false));
    // Offered by the flag: every release.
    t.write(t.env.global_config_path(), r#"{"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"available": true}}}"#);
    for release in ["2.1.100", "2.1.150", "2.1.332"] {
        let gates = m.dream_status(&at(release)).unwrap();
        assert_eq!((gates.claude_code_offers, gates.offer_note), (Some(true), None), "{release}");
    }
}
