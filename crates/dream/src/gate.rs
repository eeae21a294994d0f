//! When an automatic dream may run: Claude Code's gates, cheapest first (`autoDream.ts`):
//!
//! 0. **enabled**: `autoDreamEnabled` in the merged settings, auto memory on, not a remote
//!    session, not KAIROS mode (which distils its logs with its own nightly dream);
//! 1. **time**: at least `minHours` (24) since the lock file's mtime (0 when there is none);
//! 2. **scan throttle**: at most one transcript scan per 10 minutes for each launch folder and
//!    memory folder (Claude Code keeps it per process, and a process is one session there);
//! 3. **sessions**: at least `minSessions` (5) UUID-named `*.jsonl` transcripts in the launch
//!    folder's transcript folder modified after that mtime, the current session excepted;
//! 4. **lock**: `.consolidate-lock` not held (see [`crate::lock`]).
//!
//! [`Scheduler::check`] runs gates 0–3 as a scheduler tick does (recording the scan time);
//! [`Scheduler::status`] computes the same picture for display without touching the throttle.

use crate::lock::{ms_since_epoch, ns_since_epoch, ConsolidationLock, LockState};
use mneme_core::Clock;
use mneme_store::paths::{self, AutoMemoryReason};
use mneme_store::session::SessionMemory;
use mneme_store::settings::{SettingSource, Settings};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

/// `SESSION_SCAN_INTERVAL_MS`.
pub const SESSION_SCAN_INTERVAL: Duration = Duration::from_secs(10 * 60);
/// Default `minHours`.
pub const DEFAULT_MIN_HOURS: f64 = 24.0;
/// Default `minSessions`.
pub const DEFAULT_MIN_SESSIONS: usize = 5;

/// The thresholds (`tengu_onyx_plover`'s `minHours` / `minSessions`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DreamConfig {
    pub min_hours: f64,
    pub min_sessions: usize,
}

impl Default for DreamConfig {
    fn default() -> Self {
        DreamConfig { min_hours: DEFAULT_MIN_HOURS, min_sessions: DEFAULT_MIN_SESSIONS }
    }
}

impl DreamConfig {
    /// Claude Code's validation: each value must be finite and above 0, else its default.
    pub fn new(min_hours: f64, min_sessions: f64) -> Self {
        let ok = |v: f64| v.is_finite() && v > 0.0;
        DreamConfig {
            min_hours: if ok(min_hours) { min_hours } else { DEFAULT_MIN_HOURS },
            // A fractional minimum compares like JavaScript's `count < 4.5`: 5 sessions pass.
            min_sessions: if ok(min_sessions) { min_sessions.ceil() as usize } else { DEFAULT_MIN_SESSIONS },
        }
    }
}

/// Which memory a dream consolidates and where the sessions that feed it are.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DreamTarget {
    /// The auto-memory folder.
    pub memory_dir: PathBuf,
    /// `getProjectDir(getOriginalCwd())`: the transcripts of sessions started in the launch
    /// folder (not the git root).
    pub transcript_dir: PathBuf,
    /// The session that triggers the dream, left out of the count.
    pub current_session: Option<String>,
    /// The launch folder: where a model-driven dream's shell commands run.
    pub cwd: PathBuf,
}

impl DreamTarget {
    /// The memory folder and transcript folder of a session (the transcripts under the
    /// config home the session sees, after its settings' `env` blocks).
    pub fn for_session(session: &SessionMemory) -> DreamTarget {
        DreamTarget {
            memory_dir: session.dir.dir.clone(),
            transcript_dir: paths::transcript_dir(&session.env, &session.root),
            current_session: None,
            cwd: session.root.clone(),
        }
    }
}

/// Whether dreaming is switched on, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Enablement {
    On,
    /// `autoDreamEnabled` is not set, and Claude Code's server flag for auto dream
    /// (`tengu_onyx_plover`, as last cached in `~/.claude.json`) turns it on for this account.
    OnByServerFlag,
    /// `autoDreamEnabled` is false in this settings source, or unset (off by default: Claude
    /// Code turns it on only when Anthropic's server flag says so, which Mneme cannot see).
    AutoDreamOff { source: Option<SettingSource> },
    /// Auto memory is off, so there is nothing to consolidate.
    AutoMemoryOff { reason: String },
    /// A remote session (`CLAUDE_CODE_REMOTE`).
    Remote,
    /// KAIROS (assistant) mode: its logs are distilled by the nightly `/dream` instead.
    Kairos,
}

impl Enablement {
    pub fn is_on(&self) -> bool {
        matches!(self, Enablement::On | Enablement::OnByServerFlag)
    }

    /// One sentence for people.
    pub fn explanation(&self) -> String {
        match self {
            Enablement::On => "On: autoDreamEnabled is true and auto memory is on.".into(),
            Enablement::OnByServerFlag => SERVER_FLAG_ON.into(),
            Enablement::AutoDreamOff { source: Some(s) } => {
                format!("Off: autoDreamEnabled is false in the {} settings; turn it on with `mneme settings auto-dream on`.", s.as_str())
            }
            Enablement::AutoDreamOff { source: None } => {
                "Off: autoDreamEnabled is not set (off by default); turn it on with `mneme settings auto-dream on`.".into()
            }
            Enablement::AutoMemoryOff { reason } => format!("Off: auto memory is off ({reason})."),
            Enablement::Remote => "Off: this is a remote session (CLAUDE_CODE_REMOTE).".into(),
            Enablement::Kairos => "Off: KAIROS mode distils its daily logs with its own nightly dream.".into(),
        }
    }
}

/// Gate 0 (`isGateOpen` + `isAutoDreamEnabled`), from the environment, merged settings and
/// the server flags Claude Code last cached. `kairos_active` says whether the session is a
/// long-lived KAIROS assistant session, which only the caller can know.
pub fn enablement(env: &Environment, settings: &Settings, kairos_active: bool, flags: &CachedFlags) -> Enablement {
    if kairos_active {
        return Enablement::Kairos;
    }
    if env.is_truthy("CLAUDE_CODE_REMOTE") {
        return Enablement::Remote;
    }
    let reason: AutoMemoryReason = paths::auto_memory_reason(env, settings);
    if !reason.enabled() {
        return Enablement::AutoMemoryOff { reason: reason.explanation().trim_end_matches('.').to_string() };
    }
    match settings.auto_dream_enabled() {
        Some(true) => Enablement::On,
        Some(false) => Enablement::AutoDreamOff { source: settings.effective_source("autoDreamEnabled") },
        None if flags.enable_dream() => Enablement::OnByServerFlag,
        None => Enablement::AutoDreamOff { source: None },
    }
}

/// [`Enablement::OnByServerFlag`] in a sentence.
pub const SERVER_FLAG_ON: &str =
    "On: autoDreamEnabled is not set, and Claude Code's server flag for auto dream (as last cached in ~/.claude.json) turns it on for this account.";

/// The server flags that bear on dreams, as Claude Code last cached them in its global config:
/// `cachedGrowthBookFeatures` whenever it is there and not `null`, else `cachedFeatureFlags`
/// (2.1.332 and 2.1.337 read `cachedGrowthBookFeatures ?? cachedFeatureFlags` as a whole, so a
/// flag missing from the first is not looked for in the second).
/// Read once per question: that file can be large, and one status needs several of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CachedFlags {
    /// `tengu_onyx_plover`: whether auto dream is on when the setting is unset, whether it is
    /// offered at all, and its thresholds.
    auto_dream: Option<serde_json::Value>,
    /// `tengu_herring_clock`: team memory.
    team_memory: Option<serde_json::Value>,
    /// `tengu_mellow_petal`: whether a limited-retention owner's sessions are told apart
    /// (2.1.337, [`crate::organization`]); on unless cached as a false value.
    retention_checks: Option<serde_json::Value>,
}

impl CachedFlags {
    /// The flags as the global config holds them now, for a session with `env` (its settings'
    /// `env` blocks applied); none when it is missing or unreadable (an account that never ran
    /// Claude Code online), or when the session uses no cached flags at all (telemetry off,
    /// GrowthBook off, a Bedrock, Vertex or Foundry session: `mneme_store::server_flags`).
    pub fn read(env: &Environment) -> Self {
        CachedFlags::of(&mneme_store::server_flags::ServerFlags::for_session(env, env))
    }

    /// The dream flags among the session's server flags.
    pub fn of(flags: &mneme_store::server_flags::ServerFlags) -> Self {
        CachedFlags {
            auto_dream: flags.get("tengu_onyx_plover").cloned(),
            team_memory: flags.get("tengu_herring_clock").cloned(),
            retention_checks: flags.get("tengu_mellow_petal").cloned(),
        }
    }

    /// Whether `tengu_mellow_petal` leaves the limited-retention owner check on: its default
    /// is on, and only a cached value JavaScript reads as false turns it off.
    pub fn retention_checks(&self) -> bool {
        use serde_json::Value;
        match &self.retention_checks {
            None => true,
            Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
            Some(Value::String(s)) => !s.is_empty(),
            Some(_) => true,
        }
    }

    fn auto_dream_marks(&self, key: &str) -> bool {
        self.auto_dream.as_ref().and_then(|f| f.get(key)) == Some(&serde_json::Value::Bool(true))
    }

    /// Whether the auto-dream flag says `enabled`: with the setting unset, it is the default.
    pub fn enable_dream(&self) -> bool {
        self.auto_dream_marks("enabled")
    }

    /// The thresholds Claude Code takes from the auto-dream flag (`minHours`, `minSessions`),
    /// each validated as it does: a finite number above 0, else the default.
    pub fn dream_config(&self) -> DreamConfig {
        let number = |k: &str| self.auto_dream.as_ref().and_then(|f| f.get(k)).and_then(serde_json::Value::as_f64).unwrap_or(f64::NAN);
        DreamConfig::new(number("minHours"), number("minSessions"))
    }

    /// [`ClaudeCodeOffer`] for the release `profile` describes, in a session with `env`.
    pub fn claude_code_offer(&self, env: &Environment, profile: &mneme_core::Profile) -> ClaudeCodeOffer {
        if self.auto_dream_marks("enabled") || self.auto_dream_marks("available") {
            return ClaudeCodeOffer::Offered;
        }
        // 2.1.101-2.1.209 also offer it where team memory is on (memory stores, or its own
        // flag) and the session found content on the server.
        let team_memory = env.var("CLAUDE_MEMORY_STORES").is_some_and(|v| !v.trim().is_empty()) || self.team_memory == Some(serde_json::Value::Bool(true));
        if profile.dream_offered_by_team_memory && team_memory {
            ClaudeCodeOffer::Unknown
        } else {
            ClaudeCodeOffer::NotOffered
        }
    }
}

/// Whether Claude Code itself dreams for this account at all, whatever `autoDreamEnabled`
/// says (Mneme's own scheduler follows the setting).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum ClaudeCodeOffer {
    /// The cached server flag (`tengu_onyx_plover`) offers auto dream: `enabled` or `available`.
    Offered,
    /// It does not (or was never cached: an account that has not run Claude Code online).
    NotOffered,
    /// The flag does not, but the release also offers it in a session whose team memory holds
    /// content on Anthropic's server, which Mneme cannot see, and team memory may be on here.
    Unknown,
}

/// `listSessionsTouchedSince(lastAt)` minus the current session: session ids (UUID-named
/// `*.jsonl`) in `transcript_dir` whose whole-millisecond mtime is later than `last_at`
/// (`None` = never), sorted.
pub fn sessions_touched_since(transcript_dir: &Path, last_at: Option<SystemTime>, current: Option<&str>) -> Vec<String> {
    let Ok(entries) = fs::read_dir(transcript_dir) else { return Vec::new() };
    let last_ns = last_at.map_or(0, ns_since_epoch);
    let mut out = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        let Some(stem) = name.strip_suffix(".jsonl") else { continue };
        if !paths::is_session_id(stem) || Some(stem) == current {
            continue;
        }
        let Ok(mtime) = fs::metadata(e.path()).and_then(|m| m.modified()) else { continue };
        // Claude Code compares `stat.mtime.getTime()` (whole milliseconds) with the lock's
        // fractional `mtimeMs`.
        let whole_ms_ns = ns_since_epoch(mtime).div_euclid(1_000_000) * 1_000_000;
        if whole_ms_ns > last_ns {
            out.push(stem.to_string());
        }
    }
    out.sort();
    out
}

/// The gates, in the order they are checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Gate {
    Enabled,
    Time,
    Throttle,
    Sessions,
    Lock,
}

impl Gate {
    pub fn as_str(self) -> &'static str {
        match self {
            Gate::Enabled => "enabled",
            Gate::Time => "time",
            Gate::Throttle => "throttle",
            Gate::Sessions => "sessions",
            Gate::Lock => "lock",
        }
    }
}

/// Everything the Dreams screen shows about when the next automatic dream may run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GateStatus {
    pub memory_dir: PathBuf,
    pub transcript_dir: PathBuf,
    /// Gate 0.
    pub enabled: bool,
    pub enabled_explanation: String,
    /// The lock file's mtime (ms since the epoch); `None` when it has never run.
    pub last_consolidated_at_ms: Option<i64>,
    /// Hours since then; `None` when it has never run.
    pub hours_since: Option<f64>,
    pub min_hours: f64,
    /// Sessions touched since then (the current one excepted).
    pub sessions_since: usize,
    pub session_ids: Vec<String>,
    pub min_sessions: usize,
    /// The lock file as it is now.
    pub lock: LockState,
    /// When this scheduler may scan transcripts again (ms), if it is throttled now.
    pub throttled_until_ms: Option<i64>,
    /// The earliest time the time, throttle and lock gates all allow a dream (ms); the session
    /// gate may still wait for more sessions after that.
    pub next_eligible_at_ms: i64,
    /// The first gate that blocks, in check order; `None` when a dream would start now.
    pub blocked_by: Option<Gate>,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// What a scheduler tick decided.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// Gates 0–3 pass: try the lock, then dream over these sessions.
    Go { last_at: Option<SystemTime>, sessions: Vec<String> },
    /// This gate said no.
    Skip(Gate),
}

/// Whose scan a throttle entry is: the memory folder and the transcript folder of the launch
/// folder, which is what one Claude Code session scans.
type ScanKey = (PathBuf, PathBuf);

fn scan_key(target: &DreamTarget) -> ScanKey {
    (target.memory_dir.clone(), target.transcript_dir.clone())
}

/// Whether a scan at `prev` still throttles one at `now`. A scan "in the future" means the
/// clock was stepped back since: the throttle is over, or the folder would wait for the clock
/// to catch up.
fn throttles(prev: SystemTime, now: SystemTime) -> bool {
    let elapsed = ns_since_epoch(now) - ns_since_epoch(prev);
    (0..SESSION_SCAN_INTERVAL.as_nanos() as i128).contains(&elapsed)
}

/// One scheduler's gate state, kept for its life: create one per background worker. The scan
/// throttle is kept per session folder ([`ScanKey`]): Claude Code keeps it per process, that is
/// per session, so one folder's scan never holds back another's (a scheduler looking after
/// many projects with one throttle would only ever scan the first folder past its time gate).
#[derive(Debug, Default)]
pub struct Scheduler {
    config: Mutex<DreamConfig>,
    last_scan: Mutex<HashMap<ScanKey, SystemTime>>,
}

impl Scheduler {
    pub fn new(config: DreamConfig) -> Self {
        Scheduler { config: Mutex::new(config), last_scan: Mutex::new(HashMap::new()) }
    }

    /// New thresholds (the server flag's, read again before each check), keeping the throttle.
    pub fn set_config(&self, config: DreamConfig) {
        *self.config.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = config;
    }

    pub fn config(&self) -> DreamConfig {
        *self.config.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn last_scan(&self, target: &DreamTarget) -> Option<SystemTime> {
        self.last_scan.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get(&scan_key(target)).copied()
    }

    fn hours_since(now: SystemTime, last_at: Option<SystemTime>) -> f64 {
        (ns_since_epoch(now) - last_at.map_or(0, ns_since_epoch)) as f64 / 3.6e12
    }

    /// A scheduler tick: gates 0–3 in order, stopping at the first that fails. Passing the
    /// time gate records this scan for the throttle, as Claude Code does.
    pub fn check(&self, enabled: &Enablement, target: &DreamTarget, clock: &dyn Clock) -> Decision {
        let config = self.config();
        if !enabled.is_on() {
            return Decision::Skip(Gate::Enabled);
        }
        let lock = ConsolidationLock::new(&target.memory_dir);
        let last_at = lock.last_consolidated_at();
        let now = clock.now();
        if Self::hours_since(now, last_at) < config.min_hours {
            return Decision::Skip(Gate::Time);
        }
        {
            let mut scans = self.last_scan.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            let key = scan_key(target);
            if scans.get(&key).is_some_and(|prev| throttles(*prev, now)) {
                return Decision::Skip(Gate::Throttle);
            }
            // Scans that no longer throttle anything are let go, so a scheduler that runs for
            // months keeps only the folders scanned in the last 10 minutes.
            scans.retain(|_, prev| throttles(*prev, now));
            scans.insert(key, now);
        }
        let sessions = sessions_touched_since(&target.transcript_dir, last_at, target.current_session.as_deref());
        if sessions.len() < config.min_sessions {
            return Decision::Skip(Gate::Sessions);
        }
        Decision::Go { last_at, sessions }
    }

    /// The gates as they stand, for display; changes nothing.
    pub fn status(&self, enabled: &Enablement, target: &DreamTarget, clock: &dyn Clock) -> GateStatus {
        let config = self.config();
        let now = clock.now();
        let lock = ConsolidationLock::new(&target.memory_dir);
        let last_at = lock.last_consolidated_at();
        let lock_state = lock.state(now);
        let sessions = sessions_touched_since(&target.transcript_dir, last_at, target.current_session.as_deref());
        let hours = Self::hours_since(now, last_at);
        let throttled_until = self
            .last_scan(target)
            .filter(|t| ns_since_epoch(*t) <= ns_since_epoch(now))
            .and_then(|t| t.checked_add(SESSION_SCAN_INTERVAL))
            .filter(|until| ns_since_epoch(*until) > ns_since_epoch(now));
        let time_ok_at = last_at.map_or(i64::MIN, |t| {
            ms_since_epoch(t).saturating_add((config.min_hours * 3.6e6).ceil() as i64)
        });
        let lock_free_at = if lock_state.held { lock_state.stale_at_ms.unwrap_or(i64::MIN) } else { i64::MIN };
        let next = [ms_since_epoch(now), time_ok_at, throttled_until.map_or(i64::MIN, ms_since_epoch), lock_free_at]
            .into_iter()
            .max()
            .unwrap_or_default();
        let blocked_by = if !enabled.is_on() {
            Some(Gate::Enabled)
        } else if hours < config.min_hours {
            Some(Gate::Time)
        } else if throttled_until.is_some() {
            Some(Gate::Throttle)
        } else if sessions.len() < config.min_sessions {
            Some(Gate::Sessions)
        } else if lock_state.held {
            Some(Gate::Lock)
        } else {
            None
        };
        GateStatus {
            memory_dir: target.memory_dir.clone(),
            transcript_dir: target.transcript_dir.clone(),
            enabled: enabled.is_on(),
            enabled_explanation: enabled.explanation(),
            last_consolidated_at_ms: last_at.map(ms_since_epoch),
            hours_since: last_at.map(|_| hours),
            min_hours: config.min_hours,
            sessions_since: sessions.len(),
            session_ids: sessions,
            min_sessions: config.min_sessions,
            lock: lock_state,
            throttled_until_ms: throttled_until.map(ms_since_epoch),
            next_eligible_at_ms: next,
            blocked_by,
            extra: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use mneme_store::settings::SettingsFile;
    use serde_json::json;

    const T0: u64 = 1_800_000_000;

    struct World {
        _d: tempfile::TempDir,
        target: DreamTarget,
    }

    fn world() -> World {
        let d = tempfile::tempdir().unwrap();
        let target = DreamTarget {
            memory_dir: d.path().join("memory"),
            transcript_dir: d.path().join("transcripts"),
            current_session: Some("aaaaaaaa-0000-4000-8000-000000000000".into()),
            cwd: d.path().to_path_buf(),
        };
        fs::create_dir_all(&target.memory_dir).unwrap();
        fs::create_dir_all(&target.transcript_dir).unwrap();
        World { _d: d, target }
    }

    fn session(w: &World, n: u32, mtime: u64) {
        let p = w.target.transcript_dir.join(format!("{n:08x}-1111-4111-8111-111111111111.jsonl"));
        fs::write(&p, "{}\n").unwrap();
        filetime::set_file_mtime(&p, filetime::FileTime::from_unix_time(mtime as i64, 0)).unwrap();
    }

    fn stamp_lock(w: &World, mtime: u64) {
        let p = w.target.memory_dir.join(crate::lock::LOCK_FILE);
        fs::write(&p, "").unwrap();
        filetime::set_file_mtime(&p, filetime::FileTime::from_unix_time(mtime as i64, 0)).unwrap();
    }

    fn settings(v: serde_json::Value) -> Settings {
        Settings::from_files(vec![SettingsFile::from_value(SettingSource::User, "/u/settings.json", v)])
    }

    #[test]
    fn enablement_follows_settings_env_and_mode() {
        let env = Environment::with_home("/h");
        let none = CachedFlags::default();
        assert_eq!(enablement(&env, &settings(json!({})), false, &none), Enablement::AutoDreamOff { source: None });
        // The cached server flag decides only while the setting is unset.
        let flagged = CachedFlags { auto_dream: Some(json!({"enabled": true})), ..CachedFlags::default() };
        assert_eq!(enablement(&env, &settings(json!({})), false, &flagged), Enablement::OnByServerFlag);
        assert_eq!(
            enablement(&env, &settings(json!({"autoDreamEnabled": false})), false, &flagged),
            Enablement::AutoDreamOff { source: Some(SettingSource::User) }
        );
        assert_eq!(enablement(&env, &settings(json!({"autoDreamEnabled": true})), false, &none), Enablement::On);
        assert_eq!(
            enablement(&env, &settings(json!({"autoDreamEnabled": false})), false, &none),
            Enablement::AutoDreamOff { source: Some(SettingSource::User) }
        );
        let on = settings(json!({"autoDreamEnabled": true, "autoMemoryEnabled": false}));
        assert!(matches!(enablement(&env, &on, false, &none), Enablement::AutoMemoryOff { .. }));
        let on = settings(json!({"autoDreamEnabled": true}));
        assert_eq!(enablement(&env, &on, true, &none), Enablement::Kairos);
        let remote = env.clone().set_var("CLAUDE_CODE_REMOTE", "1");
        assert_eq!(enablement(&remote, &on, false, &none), Enablement::Remote);
        let no_mem = env.set_var("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1");
        assert!(matches!(enablement(&no_mem, &on, false, &none), Enablement::AutoMemoryOff { .. }));
    }

    /// The global config as 2.1.337 saves the flags it fetched (both copies, the times, and
    /// `cachedFeatureFlagsWithoutPlanAt`, new in 2.1.337), then the cases where the two copies
    /// differ: Claude Code reads `cachedGrowthBookFeatures` whenever it is there, a flag missing
    /// from it included, and `cachedFeatureFlags` only when it is missing or `null`.
    /// A session that uses no cached flags (telemetry off, GrowthBook off, a cloud provider's
    /// session) never sees the auto-dream flag, so it neither dreams by it nor is offered it.
    #[test]
    fn cached_flags_count_only_where_the_session_uses_them() {
        let t = tempfile::tempdir().unwrap();
        let env = Environment::with_home(t.path());
        fs::write(env.global_config_path(), json!({"cachedGrowthBookFeatures": {"tengu_onyx_plover": {"enabled": true}}}).to_string()).unwrap();
        assert!(CachedFlags::read(&env).enable_dream());
        for (k, v) in [
            ("DISABLE_TELEMETRY", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("DO_NOT_TRACK", "1"),
            ("DISABLE_GROWTHBOOK", "1"),
            ("CLAUDE_CODE_DISABLE_FEATURE_FLAGS", "true"),
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
        ] {
            assert!(!CachedFlags::read(&env.clone().set_var(k, v)).enable_dream(), "{k}");
        }
        let kept = env.clone().set_var("DISABLE_TELEMETRY", "1").set_var("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", "1");
        assert!(CachedFlags::read(&kept).enable_dream());
    }

    #[test]
    fn cached_flags_are_read_from_the_copy_claude_code_reads() {
        let t = tempfile::tempdir().unwrap();
        let env = Environment::with_home(t.path());
        let flags = |config: serde_json::Value| {
            fs::write(env.global_config_path(), config.to_string()).unwrap();
            let f = CachedFlags::read(&env);
            (f.enable_dream(), f.dream_config())
        };
        let plover = json!({"tengu_onyx_plover": {"enabled": true, "minHours": 6, "minSessions": 2}, "tengu_other": false});
        let as_saved = json!({
            "numStartups": 3,
            "cachedFeatureFlags": plover, "cachedExperimentFeatures": [], "cachedExperimentData": {},
            "cachedFeatureFlagsAt": 1_796_656_630_375_u64, "cachedFeatureFlagsWithoutPlanAt": 1_796_656_630_375_u64,
            "cachedGrowthBookFeatures": plover, "cachedGrowthBookFeaturesAt": 1_796_656_630_375_u64,
        });
        assert_eq!(flags(as_saved), (true, DreamConfig { min_hours: 6.0, min_sessions: 2 }));
        let off = (false, DreamConfig::default());
        assert_eq!(flags(json!({"cachedGrowthBookFeatures": {"tengu_other": true}, "cachedFeatureFlags": plover})), off);
        assert_eq!(flags(json!({"cachedGrowthBookFeatures": [], "cachedFeatureFlags": plover})), off);
        assert!(flags(json!({"cachedGrowthBookFeatures": null, "cachedFeatureFlags": plover})).0);
        assert!(flags(json!({"cachedFeatureFlags": plover})).0);
    }

    /// `tengu_mellow_petal` is on by default: only a cached value JavaScript reads as false
    /// turns the limited-retention owner check off.
    #[test]
    fn the_retention_owner_check_is_on_unless_its_flag_is_cached_false() {
        let of = |v: Option<serde_json::Value>| CachedFlags { retention_checks: v, ..CachedFlags::default() }.retention_checks();
        assert!(of(None) && of(Some(json!(true))) && of(Some(json!({}))) && of(Some(json!("on"))));
        assert!(!of(Some(json!(false))) && !of(Some(json!(0))) && !of(Some(json!(""))));
    }

    #[test]
    fn config_validation_matches_claude_code() {
        assert_eq!(DreamConfig::new(f64::NAN, -1.0), DreamConfig::default());
        assert_eq!(DreamConfig::new(0.0, f64::INFINITY), DreamConfig::default());
        assert_eq!(DreamConfig::new(2.5, 3.0), DreamConfig { min_hours: 2.5, min_sessions: 3 });
    }

    #[test]
    fn sessions_count_only_uuid_transcripts_newer_than_the_lock_minus_the_current_one() {
        let w = world();
        for n in 0..3 {
            session(&w, n, T0 + 10);
        }
        session(&w, 7, T0 - 10); // older than the lock
        fs::write(w.target.transcript_dir.join("agent-abc.jsonl"), "").unwrap();
        fs::write(w.target.transcript_dir.join("notes.txt"), "").unwrap();
        let current = w.target.transcript_dir.join("aaaaaaaa-0000-4000-8000-000000000000.jsonl");
        fs::write(&current, "").unwrap();
        let last = Some(std::time::UNIX_EPOCH + Duration::from_secs(T0));
        let got = sessions_touched_since(&w.target.transcript_dir, last, w.target.current_session.as_deref());
        assert_eq!(got.len(), 3, "{got:?}");
        assert_eq!(sessions_touched_since(&w.target.transcript_dir, None, None).len(), 5);
        // Equal whole milliseconds do not count ("mtime > lastAt").
        session(&w, 9, T0);
        assert_eq!(sessions_touched_since(&w.target.transcript_dir, last, None).len(), 3);
        assert!(sessions_touched_since(Path::new("/nonexistent/x"), None, None).is_empty());
    }

    /// The clock stepped back after a scan: the throttle is over rather than lasting until
    /// the clock catches up with the scan.
    #[test]
    fn a_clock_stepped_back_does_not_stretch_the_throttle() {
        let w = world();
        let on = Enablement::On;
        let s = Scheduler::new(DreamConfig::default());
        let at = |secs: u64| FixedClock::at_unix_secs(secs);
        stamp_lock(&w, T0);
        let t1 = T0 + 48 * 3600;
        assert_eq!(s.check(&on, &w.target, &at(t1)), Decision::Skip(Gate::Sessions));
        assert_eq!(s.check(&on, &w.target, &at(t1 + 60)), Decision::Skip(Gate::Throttle));
        let back = t1 - 3600;
        assert_eq!(s.status(&on, &w.target, &at(back)).throttled_until_ms, None);
        assert_eq!(s.check(&on, &w.target, &at(back)), Decision::Skip(Gate::Sessions), "scanned again");
    }

    #[test]
    fn gates_run_cheapest_first_with_the_throttle() {
        let w = world();
        let on = Enablement::On;
        let s = Scheduler::new(DreamConfig::default());
        let at = |secs: u64| FixedClock::at_unix_secs(secs);
        assert_eq!(s.check(&Enablement::Remote, &w.target, &at(T0)), Decision::Skip(Gate::Enabled));

        stamp_lock(&w, T0);
        assert_eq!(s.check(&on, &w.target, &at(T0 + 23 * 3600)), Decision::Skip(Gate::Time));
        assert_eq!(s.last_scan(&w.target), None, "the time gate stops before the throttle records a scan");

        for n in 0..4 {
            session(&w, n, T0 + 60);
        }
        let t1 = T0 + 24 * 3600;
        assert_eq!(s.check(&on, &w.target, &at(t1)), Decision::Skip(Gate::Sessions));
        session(&w, 4, T0 + 60);
        // Scanned less than 10 minutes ago: throttled even though 5 sessions exist now.
        assert_eq!(s.check(&on, &w.target, &at(t1 + 599)), Decision::Skip(Gate::Throttle));
        let status = s.status(&on, &w.target, &at(t1 + 599));
        assert_eq!(status.blocked_by, Some(Gate::Throttle));
        assert_eq!(status.throttled_until_ms, Some(((t1 + 600) * 1000) as i64));
        match s.check(&on, &w.target, &at(t1 + 600)) {
            Decision::Go { sessions, last_at } => {
                assert_eq!(sessions.len(), 5);
                assert_eq!(last_at.map(ms_since_epoch), Some((T0 * 1000) as i64));
            }
            other => panic!("{other:?}"),
        }
    }

    /// One scheduler looks after many folders: each has its own scan throttle, as each Claude
    /// Code session has its own. A shared one let the first folder past its time gate throttle
    /// every other folder for good.
    #[test]
    fn each_folder_has_its_own_scan_throttle() {
        let (a, b) = (world(), world());
        let on = Enablement::On;
        let s = Scheduler::new(DreamConfig::default());
        let at = |secs: u64| FixedClock::at_unix_secs(secs);
        stamp_lock(&a, T0);
        stamp_lock(&b, T0);
        for n in 0..5 {
            session(&b, n, T0 + 60);
        }
        let t1 = T0 + 48 * 3600;
        assert_eq!(s.check(&on, &a.target, &at(t1)), Decision::Skip(Gate::Sessions));
        assert!(matches!(s.check(&on, &b.target, &at(t1 + 1)), Decision::Go { .. }), "b is not held back by a's scan");
        assert_eq!(s.status(&on, &b.target, &at(t1 + 2)).throttled_until_ms, Some(((t1 + 1 + 600) * 1000) as i64));
        assert_eq!(s.check(&on, &a.target, &at(t1 + 2)), Decision::Skip(Gate::Throttle), "a's own throttle still holds");
        // A session started in a sub-folder of the same repository: same memory folder, its
        // own transcripts, its own throttle.
        let sub = DreamTarget { transcript_dir: b.target.transcript_dir.join("sub"), ..a.target.clone() };
        assert_eq!(s.check(&on, &sub, &at(t1 + 3)), Decision::Skip(Gate::Sessions));
        // Ten minutes after b's scan, a is scanned again, and the scans that no longer throttle
        // are let go.
        assert_eq!(s.check(&on, &a.target, &at(t1 + 601)), Decision::Skip(Gate::Sessions));
        assert_eq!(s.last_scan.lock().unwrap().len(), 2, "b's scan was let go, sub's still throttles");
    }

    #[test]
    fn status_reports_every_gate() {
        let w = world();
        let s = Scheduler::new(DreamConfig::default());
        let clock = FixedClock::at_unix_secs(T0 + 3600);
        stamp_lock(&w, T0);
        session(&w, 1, T0 + 5);
        let st = s.status(&Enablement::On, &w.target, &clock);
        assert_eq!(st.blocked_by, Some(Gate::Time));
        assert_eq!(st.hours_since, Some(1.0));
        assert_eq!(st.sessions_since, 1);
        assert_eq!(st.next_eligible_at_ms, ((T0 + 24 * 3600) * 1000) as i64);
        assert!(!st.lock.held && st.lock.exists && st.lock.holder_pid.is_none());
        let off = s.status(&Enablement::AutoDreamOff { source: None }, &w.target, &clock);
        assert_eq!(off.blocked_by, Some(Gate::Enabled));
        assert!(off.enabled_explanation.contains("mneme settings auto-dream on"));

        // Old enough, enough sessions, but a live holder: the lock gate blocks.
        for n in 2..6 {
            session(&w, n, T0 + 5);
        }
        let later = FixedClock::at_unix_secs(T0 + 25 * 3600);
        let p = w.target.memory_dir.join(crate::lock::LOCK_FILE);
        fs::write(&p, std::process::id().to_string()).unwrap();
        filetime::set_file_mtime(&p, filetime::FileTime::from_unix_time((T0 + 25 * 3600 - 60) as i64, 0)).unwrap();
        // The lock was just stamped, so the time gate closes first.
        let st = s.status(&Enablement::On, &w.target, &later);
        assert_eq!(st.blocked_by, Some(Gate::Time));
        assert!(st.lock.held && st.lock.holder_alive);
    }
}
