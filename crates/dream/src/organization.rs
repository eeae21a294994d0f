//! Whether Claude Code dreams over a folder's sessions, given the organizations they ran under.
//!
//! Once its other gates pass and it holds the lock, Claude Code searches the launch folder's
//! transcript folder (every file whose name holds `.jsonl`, in sub-folders such as a session's
//! `subagents` too, hidden ones included) for lines with either mark below, and gives the lock
//! back without dreaming when they show sessions of another organization:
//!
//! - from 2.1.331, `"type":"hybrid-organization"` records (their `organizationUuid`): more
//!   than one organization, or one that is not the session's, skips the dream
//!   (`other_hybrid_organization`; 2.1.330 has no such records);
//! - from 2.1.337, also `"type":"session-owner"` records carrying `"restricted"` (an account
//!   of an organization that keeps conversations for a limited time, `ldr`): unless the session
//!   runs under that same owner, the dream is skipped (`other_retention_organization`); with
//!   such an owner, any hybrid-organization record skips it too. The server flag
//!   `tengu_mellow_petal` (on unless cached `false`) turns this second check on.
//!
//! A search that fails skips the dream as well (`hybrid_organization_check_failed`).
//!
//! Mneme looks from outside any session: the session's organization and account are the
//! sign-in Claude Code keeps in its global config (`oauthAccount`), and an owner without an
//! organization is taken as another sign-in's (Mneme cannot see whether the session's own
//! account carries the same restriction).

use mneme_core::versions::Profile;
use mneme_store::Environment;
use serde_json::Value;
use memchr::memmem;
use std::io::Read;
use std::path::{Path, PathBuf};

/// The text a hybrid-organization record's line holds (searched for as it is).
pub const HYBRID_MARK: &str = r#""type":"hybrid-organization""#;
/// The text a restricted owner's line holds (2.1.337).
pub const RESTRICTED_MARK: &str = r#""restricted""#;
/// The restrictions 2.1.337 knows an owner by: `ldr`, an organization that keeps conversations
/// for a limited time. Others in the record are ignored.
pub const KNOWN_RESTRICTIONS: &[&str] = &["ldr"];

/// Why Claude Code would give the lock back without dreaming.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OrganizationSkip {
    /// The folder could not be searched (`hybrid_organization_check_failed`).
    /// `permission`: the system refused to let Mneme read it (so permissions are the fix).
    SearchFailed { path: PathBuf, error: String, permission: bool },
    /// Hybrid-organization records of another organization, or of several
    /// (`other_hybrid_organization`).
    OtherHybridOrganization { found: Found },
    /// A restricted owner's session that is not the signed-in one's
    /// (`other_retention_organization`).
    OtherRetentionOrganization { owner: Owner },
}

/// The organization the hybrid-organization records name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    One(String),
    Several,
}

/// A restricted owner named by a `session-owner` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Owner {
    pub account_uuid: String,
    pub organization_uuid: Option<String>,
}

impl OrganizationSkip {
    /// The reason Claude Code logs (`[autoDream] skip — <reason>`).
    pub fn code(&self) -> &'static str {
        match self {
            OrganizationSkip::SearchFailed { .. } => "hybrid_organization_check_failed",
            OrganizationSkip::OtherHybridOrganization { .. } => "other_hybrid_organization",
            OrganizationSkip::OtherRetentionOrganization { .. } => "other_retention_organization",
        }
    }

    /// One sentence for people, with what to do.
    pub fn explanation(&self) -> String {
        let code = self.code();
        match self {
            // Permissions are the fix only when the system refused: a drive that fails or a
            // file that went away mid-search needs something else.
            OrganizationSkip::SearchFailed { path, error, permission } => format!(
                "the sessions could not be searched for the organizations they ran under ({}: {error}), and Claude Code does not dream over them then ({code}); {}, and Mneme tries again at the next check",
                path.display(),
                if *permission { "let your account read it (its permissions)" } else { "check that the drive holding it answers and the file can be read" }
            ),
            OrganizationSkip::OtherHybridOrganization { found: Found::One(org) } => format!(
                "sessions in this folder ran under organization {org}, not the one Claude Code is signed in to, and Claude Code does not dream over them ({code}); sign in to that organization to dream here"
            ),
            OrganizationSkip::OtherHybridOrganization { found: Found::Several } => format!(
                "sessions in this folder ran under more than one organization, and Claude Code does not dream over them ({code})"
            ),
            OrganizationSkip::OtherRetentionOrganization { owner } => {
                let whose = owner.organization_uuid.as_deref().map_or_else(|| format!("account {}", owner.account_uuid), |o| format!("organization {o}"));
                format!(
                    "a session in this folder ran for {whose}, which keeps conversations for a limited time, and Claude Code 2.1.337 or later does not dream over it from another sign-in ({code}); sign in to that {} to dream here",
                    if owner.organization_uuid.is_some() { "organization" } else { "account" }
                )
            }
        }
    }
}

/// The sign-in Claude Code keeps in the global config the session reads (`oauthAccount`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignIn {
    pub account_uuid: Option<String>,
    pub organization_uuid: Option<String>,
}

impl SignIn {
    pub fn read(env: &Environment) -> SignIn {
        let config = mneme_store::paths::read_global_config(env).ok().flatten();
        let account = config.as_ref().and_then(|c| c.get("oauthAccount"));
        let field = |k: &str| account.and_then(|a| a.get(k)).and_then(Value::as_str).filter(|s| !s.is_empty()).map(str::to_string);
        SignIn { account_uuid: field("accountUuid"), organization_uuid: field("organizationUuid") }
    }
}

/// Every line holding one of the marks the release searches for, in the files it searches.
fn marked_lines(transcript_dir: &Path, marks: &[&str]) -> Result<Vec<String>, OrganizationSkip> {
    let finders: Vec<memmem::Finder> = marks.iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
    let mut out = Vec::new();
    let mut folders = vec![transcript_dir.to_path_buf()];
    while let Some(dir) = folders.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            // A transcript folder that is not there holds no sessions to dream over.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && dir == transcript_dir => return Ok(out),
            Err(e) => return Err(search_failed(dir, &e)),
        };
        for entry in entries.flatten() {
            let path = entry.path();
            // Not following links, as ripgrep does not.
            let Ok(kind) = entry.file_type() else { continue };
            if kind.is_dir() {
                folders.push(path);
            } else if kind.is_file() && entry.file_name().to_string_lossy().contains(".jsonl") {
                let failed = |e: std::io::Error| search_failed(path.clone(), &e);
                let file = std::fs::File::open(&path).map_err(failed)?;
                marked_lines_of(file, &finders, &mut out).map_err(failed)?;
            }
        }
    }
    Ok(out)
}

/// The search could not read `path`.
fn search_failed(path: PathBuf, e: &std::io::Error) -> OrganizationSkip {
    OrganizationSkip::SearchFailed { path, error: e.to_string(), permission: e.kind() == std::io::ErrorKind::PermissionDenied }
}

/// The lines of one transcript that hold a mark, in file order, each once. Transcripts run to
/// tens of megabytes a session and the Dreams screen's status searches them all on each look,
/// so the bytes are searched a megabyte at a time for the marks themselves (SIMD `memmem`) and
/// only a line holding one is cut out and decoded; a line split across two reads is kept until
/// its end arrives, unless it runs past [`LONGEST_LINE`].
fn marked_lines_of(file: impl Read, finders: &[memmem::Finder], out: &mut Vec<String>) -> std::io::Result<()> {
    marked_lines_within(file, finders, LONGEST_LINE, out)
}

/// The longest line the search reads. The records it looks for are a few hundred bytes, which
/// Claude Code writes on a line of their own; a transcript line can be far longer (a tool's
/// whole output), and one whose end never comes (a damaged file, or one filled on purpose)
/// would otherwise be held whole, a gigabyte for a gigabyte's line, on every look of the Dreams
/// screen. A longer line cannot be one of those records and is passed over, its bytes let go as
/// they are read.
const LONGEST_LINE: usize = 16 << 20;

/// [`marked_lines_of`], passing over lines longer than `longest` bytes.
fn marked_lines_within(mut file: impl Read, finders: &[memmem::Finder], longest: usize, out: &mut Vec<String>) -> std::io::Result<()> {
    const CHUNK: usize = 1 << 20;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK);
    // Inside a line longer than `longest`: its bytes are dropped until its end.
    let mut passing_over = false;
    loop {
        let held = buf.len();
        buf.resize(held + CHUNK, 0);
        let n = match file.read(&mut buf[held..]) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                buf.truncate(held);
                continue;
            }
            Err(e) => return Err(e),
        };
        buf.truncate(held + n);
        if n == 0 {
            // The last line, without a newline after it.
            if !passing_over {
                push_marked(&buf, finders, longest, out);
            }
            return Ok(());
        }
        // Whole lines only; the rest waits for its end. Only the new bytes can hold a newline.
        let mut new_from = held;
        if passing_over {
            // Nothing is held while passing over: every byte is new.
            match memchr::memchr(b'\n', &buf) {
                Some(end) => {
                    buf.drain(..=end);
                    passing_over = false;
                    new_from = 0;
                }
                None => {
                    buf.clear();
                    continue;
                }
            }
        }
        if let Some(last) = memchr::memrchr(b'\n', &buf[new_from..]).map(|i| new_from + i) {
            push_marked(&buf[..=last], finders, longest, out);
            buf.drain(..=last);
        }
        if buf.len() > longest {
            buf.clear();
            passing_over = true;
        }
    }
}

/// Pushes the lines of `text` (whole lines) that hold any of the marks and are at most
/// `longest` bytes, in order, each once.
fn push_marked(text: &[u8], finders: &[memmem::Finder], longest: usize, out: &mut Vec<String>) {
    let mut starts: Vec<usize> = finders
        .iter()
        .flat_map(|f| f.find_iter(text))
        .map(|at| memchr::memrchr(b'\n', &text[..at]).map_or(0, |nl| nl + 1))
        .collect();
    starts.sort_unstable();
    starts.dedup();
    for start in starts {
        let end = memchr::memchr(b'\n', &text[start..]).map_or(text.len(), |i| start + i);
        if end - start <= longest {
            out.push(String::from_utf8_lossy(&text[start..end]).into_owned());
        }
    }
}

/// The organization a hybrid-organization line names, lowercased.
fn hybrid_organization(line: &str) -> Option<String> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")? == "hybrid-organization").then_some(())?;
    v.get("organizationUuid")?.as_str().filter(|s| !s.is_empty()).map(str::to_lowercase)
}

/// The restricted owner a `session-owner` line names (an account, and a restriction the
/// release knows).
fn restricted_owner(line: &str) -> Option<Owner> {
    let v: Value = serde_json::from_str(line).ok()?;
    (v.get("type")? == "session-owner").then_some(())?;
    let account_uuid = v.get("accountUuid")?.as_str().filter(|s| !s.is_empty())?.to_string();
    let restricted = v.get("restricted")?.as_array()?;
    restricted.iter().any(|r| r.as_str().is_some_and(|r| KNOWN_RESTRICTIONS.contains(&r))).then_some(())?;
    let organization_uuid = v.get("organizationUuid").and_then(Value::as_str).map(str::to_string);
    Some(Owner { account_uuid, organization_uuid })
}

/// Why the release `profile` describes would not dream over the sessions in `transcript_dir`
/// for a session signed in as `sign_in`, with `retention_checks` (the flag
/// `tengu_mellow_petal`) as the session sees it; `None` when it would.
pub fn skip(transcript_dir: &Path, profile: &Profile, sign_in: &SignIn, retention_checks: bool) -> Option<OrganizationSkip> {
    if !profile.dream_skips_other_hybrid_organization {
        return None;
    }
    let marks: &[&str] = if profile.dream_skips_other_retention_owner { &[HYBRID_MARK, RESTRICTED_MARK] } else { &[HYBRID_MARK] };
    let lines = match marked_lines(transcript_dir, marks) {
        Ok(l) => l,
        Err(e) => return Some(e),
    };
    let mut found: Option<Found> = None;
    for org in lines.iter().filter(|l| l.contains(HYBRID_MARK)).filter_map(|l| hybrid_organization(l)) {
        found = match found {
            None => Some(Found::One(org)),
            Some(Found::One(known)) if known == org => Some(Found::One(known)),
            _ => Some(Found::Several),
        };
    }
    let signed_in_org = sign_in.organization_uuid.as_deref().map(str::to_lowercase);
    match &found {
        Some(Found::One(org)) if signed_in_org.as_deref() == Some(org.as_str()) => {}
        None => {}
        Some(f) => return Some(OrganizationSkip::OtherHybridOrganization { found: f.clone() }),
    }
    if !profile.dream_skips_other_retention_owner || !retention_checks {
        return None;
    }
    lines.iter().filter_map(|l| restricted_owner(l)).find_map(|owner| {
        // Beside any hybrid-organization record, a restricted owner is always another's.
        let same = found.is_none()
            && match &owner.organization_uuid {
                Some(org) => signed_in_org.as_deref() == Some(org.to_lowercase().as_str()),
                None => false,
            };
        (!same).then_some(OrganizationSkip::OtherRetentionOrganization { owner })
    })
}

/// What a release looks for before it dreams, given the server flag: a screen that says "no
/// session ran under another organization" must not say it where nothing was looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Checks {
    /// The release has no such look (before 2.1.331).
    None,
    /// Hybrid-organization records only (2.1.331 on, or 2.1.337 with `tengu_mellow_petal` off).
    Organizations,
    /// Those and restricted session owners (2.1.337 with `tengu_mellow_petal` on).
    OrganizationsAndOwners,
}

/// What [`skip`] looks for under `profile` with `retention_checks` (`tengu_mellow_petal`).
pub fn checks(profile: &Profile, retention_checks: bool) -> Checks {
    match (profile.dream_skips_other_hybrid_organization, profile.dream_skips_other_retention_owner && retention_checks) {
        (false, _) => Checks::None,
        (true, false) => Checks::Organizations,
        (true, true) => Checks::OrganizationsAndOwners,
    }
}

impl crate::DreamSite {
    /// Why the release `profile` describes would not dream over this site's sessions for the
    /// organizations they ran under; `None` when it would. The sign-in and
    /// `tengu_mellow_petal` are the session's own (its global config, which settings' `env`
    /// blocks can move), as are the flags the site's other gates read. The scheduler's last look
    /// before it dreams and the status every front end shows both ask here, so the Dreams
    /// screen says the very reason the scheduler skips a folder for. It reads every transcript
    /// of the folder: the scheduler keeps the answer for the scan throttle's 10 minutes, a
    /// status asked for by hand reads it afresh (a sign-in changed a moment ago counts).
    pub fn organization_skip(&self, profile: &Profile) -> Option<OrganizationSkip> {
        skip(&self.target.transcript_dir, profile, &SignIn::read(&self.env), self.flags.retention_checks())
    }

    /// What [`organization_skip`](Self::organization_skip) looks for here, with the same flags.
    pub fn organization_checks(&self, profile: &Profile) -> Checks {
        checks(profile, self.flags.retention_checks())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::versions::{behaviours, ClaudeVersion};
    use serde_json::json;

    const ORG: &str = "5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    const OTHER: &str = "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b";

    fn v(s: &str) -> Profile {
        behaviours(s.parse::<ClaudeVersion>().unwrap())
    }

    fn signed_in(org: &str) -> SignIn {
        SignIn { account_uuid: Some("acc-1".into()), organization_uuid: Some(org.to_uppercase()) }
    }

    fn folder(lines: &[(&str, serde_json::Value)]) -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for (file, line) in lines {
            let p = d.path().join(file);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            let mut text = std::fs::read_to_string(&p).unwrap_or_default();
            text.push_str(&format!("{line}\n"));
            std::fs::write(&p, text).unwrap();
        }
        d
    }

    fn hybrid(org: &str) -> serde_json::Value {
        json!({"type": "hybrid-organization", "organizationUuid": org})
    }

    fn owner(org: Option<&str>, restricted: serde_json::Value) -> serde_json::Value {
        let mut o = json!({"type": "session-owner", "sessionId": "s", "accountUuid": "acc-9", "restricted": restricted});
        if let Some(org) = org {
            o["organizationUuid"] = json!(org);
        }
        o
    }

    /// Hybrid-organization records from 2.1.331: none, or only the signed-in organization's
    /// (in any case), lets the dream run; another's, or two organizations, skips it. 2.1.330
    /// has no such check. A sub-agent's transcript is searched too.
    #[test]
    fn hybrid_organization_records_of_another_organization_skip_the_dream_from_2_1_331() {
        let (new, old) = (v("2.1.331"), v("2.1.330"));
        let none = folder(&[("a.jsonl", json!({"type": "user"}))]);
        assert_eq!(skip(none.path(), &new, &signed_in(ORG), true), None);
        let mine = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", hybrid(&ORG.to_uppercase()))]);
        assert_eq!(skip(mine.path(), &new, &signed_in(ORG), true), None);
        let theirs = folder(&[("s/subagents/agent-a.jsonl", hybrid(OTHER))]);
        let got = skip(theirs.path(), &new, &signed_in(ORG), true).unwrap();
        assert_eq!(got, OrganizationSkip::OtherHybridOrganization { found: Found::One(OTHER.into()) });
        assert!(got.explanation().contains(OTHER) && got.explanation().contains("other_hybrid_organization"));
        assert_eq!(skip(theirs.path(), &old, &signed_in(ORG), true), None);
        assert!(skip(theirs.path(), &new, &SignIn::default(), true).is_some(), "no sign-in is not that organization's");
        let both = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl.bak", hybrid(OTHER))]);
        assert_eq!(skip(both.path(), &new, &signed_in(ORG), true), Some(OrganizationSkip::OtherHybridOrganization { found: Found::Several }));
        // Only files whose name holds `.jsonl` are searched.
        let elsewhere = folder(&[("notes.txt", hybrid(OTHER))]);
        assert_eq!(skip(elsewhere.path(), &new, &signed_in(ORG), true), None);
        assert_eq!(skip(Path::new("/nonexistent/transcripts"), &new, &signed_in(ORG), true), None);
    }

    /// Restricted owners from 2.1.337: another organization's (or an owner without one) skips
    /// the dream, the signed-in organization's does not, unless a hybrid-organization record is
    /// there too; an unknown restriction is no restriction; the flag off, or 2.1.332, ignores
    /// them.
    #[test]
    fn a_restricted_owner_of_another_organization_skips_the_dream_from_2_1_337() {
        let (new, old) = (v("2.1.337"), v("2.1.332"));
        let theirs = folder(&[("a.jsonl", owner(Some(OTHER), json!(["ldr"])))]);
        let got = skip(theirs.path(), &new, &signed_in(ORG), true).unwrap();
        assert_eq!(got.code(), "other_retention_organization");
        assert!(got.explanation().contains(OTHER) && got.explanation().contains("limited time"), "{}", got.explanation());
        assert_eq!(skip(theirs.path(), &old, &signed_in(ORG), true), None);
        assert_eq!(skip(theirs.path(), &new, &signed_in(ORG), false), None, "tengu_mellow_petal off");
        let mine = folder(&[("a.jsonl", owner(Some(&ORG.to_uppercase()), json!(["ldr"])))]);
        assert_eq!(skip(mine.path(), &new, &signed_in(ORG), true), None);
        let no_org = folder(&[("a.jsonl", owner(None, json!(["ldr"])))]);
        assert_eq!(skip(no_org.path(), &new, &signed_in(ORG), true).map(|s| s.code()), Some("other_retention_organization"));
        let unknown = folder(&[("a.jsonl", owner(Some(OTHER), json!(["xyz"])))]);
        assert_eq!(skip(unknown.path(), &new, &signed_in(ORG), true), None);
        let beside = folder(&[("a.jsonl", hybrid(ORG)), ("b.jsonl", owner(Some(ORG), json!(["ldr"])))]);
        assert_eq!(skip(beside.path(), &new, &signed_in(ORG), true).map(|s| s.code()), Some("other_retention_organization"));
    }

    /// A reader that hands out `step` bytes at a time, so marks and lines fall across reads.
    struct Trickle<'a> {
        rest: &'a [u8],
        step: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            let n = self.step.min(self.rest.len()).min(buf.len());
            buf[..n].copy_from_slice(&self.rest[..n]);
            self.rest = &self.rest[n..];
            Ok(n)
        }
    }

    #[test]
    fn a_failed_search_names_permissions_only_when_the_system_refused() {
        let refused = search_failed(PathBuf::from("/t/a.jsonl"), &std::io::Error::from(std::io::ErrorKind::PermissionDenied));
        assert!(refused.explanation().contains("its permissions"), "{}", refused.explanation());
        let failing = search_failed(PathBuf::from("/t/a.jsonl"), &std::io::Error::from_raw_os_error(5));
        let said = failing.explanation();
        assert!(said.contains("/t/a.jsonl") && said.contains("drive holding it answers") && !said.contains("permission"), "{said}");
    }

    #[test]
    fn a_line_longer_than_the_longest_is_passed_over_without_being_held() {
        const LONGEST: usize = 40;
        let long = format!("{{\"type\":\"hybrid-organization\",\"organizationUuid\":\"{ORG}\",\"pad\":\"{}\"}}", "x".repeat(3 * LONGEST));
        let short = |n: u32| format!("{{\"n\":{n},\"k\":\"restricted\"}}");
        assert!(short(1).len() <= LONGEST);
        let finders: Vec<memmem::Finder> = [HYBRID_MARK, RESTRICTED_MARK].iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
        // Long lines in the middle, and last with no newline after it.
        let text = format!("{}\n{long}\n{}\n{long}\n{}\n{long}", short(1), short(2), short(3));
        for step in [1, 2, 3, 7, 64, text.len()] {
            let mut out = Vec::new();
            marked_lines_within(Trickle { rest: text.as_bytes(), step }, &finders, LONGEST, &mut out).unwrap();
            assert_eq!(out, vec![short(1), short(2), short(3)], "reads of {step} bytes");
        }
    }

    #[test]
    fn what_is_checked_follows_the_release_and_the_flag() {
        assert_eq!(checks(&v("2.1.330"), true), Checks::None);
        assert_eq!(checks(&v("2.1.331"), true), Checks::Organizations);
        assert_eq!(checks(&v("2.1.337"), false), Checks::Organizations);
        assert_eq!(checks(&v("2.1.337"), true), Checks::OrganizationsAndOwners);
    }

    #[test]
    fn marked_lines_are_found_whole_however_the_reads_fall() {
        let text = format!(
            "{{\"type\":\"user\"}}\n{{\"type\":\"hybrid-organization\",\"organizationUuid\":\"{ORG}\"}}\r\n\
             {{\"type\":\"session-owner\",\"restricted\":[\"ldr\"],\"note\":\"\"type\":\"hybrid-organization\"\"}}\n\
             plain\n\"restricted\" at the end, no newline"
        );
        let finders: Vec<memmem::Finder> = [HYBRID_MARK, RESTRICTED_MARK].iter().map(|m| memmem::Finder::new(m.as_bytes())).collect();
        let lines: Vec<&str> = text.split('\n').collect();
        let want = vec![lines[1].to_string(), lines[2].to_string(), lines[4].to_string()];
        for step in [1, 2, 3, 7, 64, text.len()] {
            let mut out = Vec::new();
            marked_lines_of(Trickle { rest: text.as_bytes(), step }, &finders, &mut out).unwrap();
            assert_eq!(out, want, "reads of {step} bytes");
        }
        // A line holding both marks is one line, once.
        let mut out = Vec::new();
        marked_lines_of(Trickle { rest: lines[2].as_bytes(), step: 5 }, &finders, &mut out).unwrap();
        assert_eq!(out, vec![lines[2].to_string()]);
    }
}
