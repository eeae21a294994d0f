//! Push (local wins for edited keys): the local files against the server's per-key checksums,
//! cut to the learned entry cap, sent in `PUT` batches under 200,000 bytes with `If-Match`; a
//! 412 probes `?view=hashes` and retries at most twice. See the module overview in `client` for
//! the whole policy (secrets left out, deletions never propagated, a teammate's edit not pushed
//! back over).

use super::http::Request;
use super::state::{self, Conflict, ConflictKind, Outcome, SkippedSecret, Suppression, SyncState};
use super::{files, hash_content, js_sort, strip_quotes, SkippedKey, SyncClient, SyncError};
use crate::wire::{entry_put_bytes, PutBody, EMPTY_PUT_BYTES, MAX_CONFLICT_RETRIES, MAX_PUT_BODY_BYTES};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
    /// Keys uploaded, in upload order.
    pub uploaded: Vec<String>,
    /// PUT requests that carried them.
    pub batches: usize,
    /// Files left out because the scanner found a secret.
    pub skipped_secrets: Vec<SkippedSecret>,
    /// Files left out by the learned entry cap.
    pub skipped_over_cap: Vec<String>,
    /// Files left out for being over 250,000 bytes.
    pub oversized: Vec<String>,
    /// Files left out because their key breaks Mneme's strict key policy, with the reason.
    pub refused_keys: Vec<SkippedKey>,
    /// Keys the server deleted that exist locally; never uploaded.
    pub tombstoned: Vec<String>,
    /// 412 rounds it took.
    pub conflict_retries: u32,
    /// Keys where this push replaced a teammate's newer version.
    pub conflicts: Vec<Conflict>,
    /// Files an automatic push left out because the server lost that same content
    /// [`MAX_LOST_PUSHES`](super::state::MAX_LOST_PUSHES) times in a row; a push by hand sends them.
    pub held_back_lost: Vec<String>,
}

/// The hashes view, its maps counted while parsed as a pull's are
/// ([`MAX_PULL_KEYS`](super::pull::MAX_PULL_KEYS)): its removals go into the sync state, saved
/// and read again by every pull, and a hostile server's answer of tiny keys would otherwise
/// cost many times its (up to 1 GiB of) bytes.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HashesBody {
    #[serde(default)]
    checksum: Option<String>,
    #[serde(default, deserialize_with = "super::pull::capped_optional_map")]
    entry_checksums: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "super::pull::capped_optional_map")]
    deleted_entries: Option<BTreeMap<String, f64>>,
}

#[derive(Deserialize)]
struct PutReply {
    #[serde(default)]
    checksum: Option<String>,
}

impl SyncClient {
    /// Pushes the local delta: a push asked for by a person (the CLI, the app). It also sends
    /// files the server kept losing, which automatic pushes hold back, and starts their count
    /// again.
    pub fn push(&self) -> Result<PushReport, SyncError> {
        self.push_with(false)
    }

    /// Pushes the local delta as the watcher does, on its own: files whose same content the
    /// server acknowledged and then lost [`MAX_LOST_PUSHES`](super::state::MAX_LOST_PUSHES)
    /// times in a row are left out (a server that keeps losing them is not helped by every
    /// pull sending them again), until they are edited here or pushed by hand.
    pub fn push_automatic(&self) -> Result<PushReport, SyncError> {
        self.push_with(true)
    }

    fn push_with(&self, automatic: bool) -> Result<PushReport, SyncError> {
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (server, repo) = self.server_and_repo()?;
        let mut st = state::load(&self.state_path, &server, &repo)?;
        let result = self.push_inner(&server, &repo, &mut st, automatic);
        let now = self.now_ms();
        match &result {
            Ok(r) => {
                st.last_push = Some(Outcome { at_ms: now, ok: true, summary: r.summary(), error_class: None });
                st.suppressed = None;
            }
            Err(e) => {
                st.last_push = Some(Outcome { at_ms: now, ok: false, summary: e.to_string(), error_class: Some(e.class().into()) });
                if e.is_permanent() {
                    st.suppressed = Some(Suppression { reason: e.suppression_reason(), at_ms: now });
                }
            }
        }
        state::save(&self.state_path, &st)?;
        result
    }

    fn push_inner(&self, server: &str, repo: &str, st: &mut SyncState, automatic: bool) -> Result<PushReport, SyncError> {
        // Signed out is `no_oauth` even when there is nothing to send, as in Claude Code.
        self.token(server)?;
        files::check_canonical(&self.target.memory_dir)?;
        let local = files::read_local(&self.target.team_dir())?;
        let mut report = PushReport {
            skipped_secrets: local.skipped_secrets.clone(),
            oversized: local.oversized.clone(),
            refused_keys: local.refused_keys.clone(),
            ..Default::default()
        };
        st.skipped_for_secrets = local.skipped_secrets.clone();

        let mut keys: Vec<String> = local.entries.keys().cloned().collect();
        js_sort(&mut keys);
        if let Some(cap) = st.server_max_entries {
            let cap = usize::try_from(cap).unwrap_or(usize::MAX);
            if keys.len() > cap {
                report.skipped_over_cap = keys.split_off(cap);
            }
        }
        st.skipped_over_cap = report.skipped_over_cap.clone();

        // key → hash of what may be sent; tombstoned keys are never re-uploaded.
        let mut hashes: BTreeMap<String, String> = BTreeMap::new();
        for k in &keys {
            if st.tombstoned_keys.contains_key(k) {
                report.tombstoned.push(k.clone());
                continue;
            }
            let hash = hash_content(&local.entries[k]);
            if automatic && st.gave_up_on(k, &hash) {
                report.held_back_lost.push(k.clone());
                continue;
            }
            hashes.insert(k.clone(), hash);
        }

        // Never synced with this server (or it had nothing): without a checksum to send as
        // If-Match the first write would replace a teammate's newer copy unseen, so ask what
        // the server holds first, as after a conflict.
        if st.last_known_checksum.is_none() && !hashes.is_empty() {
            let probe = self.probe(server, repo, st)?;
            self.reconcile(probe, st, &mut hashes, &local.disk_keys, &mut report);
        }
        for round in 0..=MAX_CONFLICT_RETRIES {
            let delta: BTreeMap<String, String> = hashes
                .iter()
                .filter(|(k, h)| st.server_checksums.get(*k) != Some(*h) && st.kept_divergent.get(*k) != Some(*h))
                .map(|(k, _)| (k.clone(), local.entries[k].clone()))
                .collect();
            if delta.is_empty() {
                return Ok(report);
            }
            let batches = batch_by_bytes(&delta);
            let mut conflict = false;
            for batch in &batches {
                let put = self.put(server, repo, st.last_known_checksum.as_deref(), batch);
                if let Err(SyncError::TooManyEntries { max_entries, .. }) = &put {
                    st.server_max_entries = Some(*max_entries);
                }
                match put? {
                    PutOutcome::Committed(checksum) => {
                        if let Some(c) = checksum {
                            st.last_known_checksum = Some(c);
                        }
                        for k in batch.keys() {
                            st.server_checksums.insert(k.clone(), hashes[k].clone());
                            st.kept_divergent.remove(k);
                            // Acknowledged, not yet seen: a pull confirms it (see `unconfirmed_pushes`).
                            st.unconfirmed_pushes.insert(k.clone(), hashes[k].clone());
                            // Content the server lost before is being sent again: the next pull
                            // that finds it missing counts one more loss. A push by hand starts
                            // the count again; other content is not the one that was lost.
                            match st.lost_pushes.get_mut(k) {
                                Some(lost) if lost.hash == hashes[k] => {
                                    lost.resent = true;
                                    if !automatic {
                                        lost.times = 0;
                                    }
                                }
                                Some(_) => {
                                    st.lost_pushes.remove(k);
                                }
                                None => {}
                            }
                            report.uploaded.push(k.clone());
                        }
                        report.batches += 1;
                    }
                    PutOutcome::Conflict => {
                        conflict = true;
                        break;
                    }
                }
            }
            if !conflict {
                return Ok(report);
            }
            if round >= MAX_CONFLICT_RETRIES {
                return Err(SyncError::Conflict { attempts: round + 1 });
            }
            report.conflict_retries += 1;
            let probe = self.probe(server, repo, st)?;
            self.reconcile(probe, st, &mut hashes, &local.disk_keys, &mut report);
        }
        Err(SyncError::Conflict { attempts: MAX_CONFLICT_RETRIES + 1 })
    }

    /// What the server holds, from the hashes view, weighed against what would be sent: keys a
    /// teammate changed where this copy is merely stale are held back, ones changed on both
    /// sides are recorded as conflicts, and keys a lead removed are not sent again.
    fn reconcile(
        &self,
        probe: Probe,
        st: &mut SyncState,
        hashes: &mut BTreeMap<String, String>,
        disk_keys: &std::collections::BTreeSet<String>,
        report: &mut PushReport,
    ) {
        // Keep only keys this client knew about or has on disk; a teammate's new keys
        // arrive with the next pull.
        let before = std::mem::take(&mut st.server_checksums);
        for (k, h) in &probe.entry_checksums {
            if before.contains_key(k) || disk_keys.contains(k) {
                st.server_checksums.insert(k.clone(), h.clone());
            }
        }
        for (k, h) in hashes.iter() {
            let theirs = probe.entry_checksums.get(k);
            if theirs.is_none() || theirs == before.get(k) || theirs == Some(h) {
                continue;
            }
            if before.get(k) == Some(h) {
                // Unchanged here since the last sync, changed by a teammate: the local copy
                // is merely stale. Claude Code 2.1.197 pushes it anyway for team memory
                // (reverting the teammate); Mneme holds it back, as Claude Code does for
                // personal memory, until it is edited here or the next pull refreshes it.
                st.kept_divergent.insert(k.clone(), h.clone());
                continue;
            }
            let c = Conflict { key: k.clone(), at_ms: self.now_ms(), kind: ConflictKind::PushedOverTeammate, trash_id: None };
            st.record_conflict(c.clone());
            report.conflicts.push(c);
        }
        for (k, at) in probe.deleted_entries {
            st.tombstoned_keys.insert(k.clone(), at);
            if hashes.remove(&k).is_some() {
                report.tombstoned.push(k);
            }
        }
    }

    fn put(&self, server: &str, repo: &str, if_match: Option<&str>, entries: &BTreeMap<String, String>) -> Result<PutOutcome, SyncError> {
        let url = self.url(server, repo, None);
        let body = PutBody { entries: entries.clone(), soft_delete_keys: Vec::new() };
        let json = serde_json::to_string(&body).map_err(|e| SyncError::Parse { detail: e.to_string() })?;
        let reply = self.send_signed(server, &[200, 412], || {
            let mut req = Request::new("PUT", &url);
            req.json = Some(json.clone());
            if let Some(c) = if_match {
                req.headers.push(("If-Match", format!("\"{}\"", strip_quotes(c))));
            }
            req
        })?;
        if reply.status == 412 {
            return Ok(PutOutcome::Conflict);
        }
        let checksum = serde_json::from_str::<PutReply>(&reply.body).ok().and_then(|r| r.checksum).filter(|c| !c.is_empty());
        Ok(PutOutcome::Committed(checksum))
    }

    /// `GET …&view=hashes`; updates the last known checksum as Claude Code does.
    fn probe(&self, server: &str, repo: &str, st: &mut SyncState) -> Result<Probe, SyncError> {
        let url = self.url(server, repo, Some("hashes"));
        let reply = self.send_signed(server, &[200, 404], || Request::new("GET", &url))?;
        if reply.status == 404 {
            st.last_known_checksum = None;
            return Ok(Probe::default());
        }
        let body: HashesBody =
            serde_json::from_str(&reply.body).map_err(|e| SyncError::Parse { detail: format!("the hashes view did not parse: {e}") })?;
        let checksum = body
            .checksum
            .clone()
            .filter(|c| !c.is_empty())
            .or_else(|| reply.etag.as_deref().map(|e| e.trim_start_matches('"').trim_end_matches('"').to_string()));
        let Some(entry_checksums) = body.entry_checksums else {
            return Err(SyncError::Parse { detail: "the server did not return entryChecksums (?view=hashes unsupported)".into() });
        };
        if let Some(c) = checksum.filter(|c| !c.is_empty()) {
            st.last_known_checksum = Some(c);
        }
        let deleted_entries = body.deleted_entries.unwrap_or_default().into_iter().map(|(k, v)| (k, v as i64)).collect();
        Ok(Probe { entry_checksums, deleted_entries })
    }
}

enum PutOutcome {
    Committed(Option<String>),
    Conflict,
}

#[derive(Default)]
struct Probe {
    entry_checksums: BTreeMap<String, String>,
    deleted_entries: BTreeMap<String, i64>,
}

/// `batchDeltaByBytes`: keys in JavaScript sort order, greedily packed so each PUT body stays
/// within 200,000 bytes as Claude Code counts them; an entry too big for any batch goes alone.
pub fn batch_by_bytes(delta: &BTreeMap<String, String>) -> Vec<BTreeMap<String, String>> {
    let mut keys: Vec<String> = delta.keys().cloned().collect();
    if keys.is_empty() {
        return Vec::new();
    }
    js_sort(&mut keys);
    let mut batches = Vec::new();
    let mut current = BTreeMap::new();
    let mut size = EMPTY_PUT_BYTES;
    for k in keys {
        let v = &delta[&k];
        let add = entry_put_bytes(&k, v);
        if size + add > MAX_PUT_BODY_BYTES && !current.is_empty() {
            batches.push(std::mem::take(&mut current));
            size = EMPTY_PUT_BYTES;
        }
        size += add;
        current.insert(k, v.clone());
    }
    batches.push(current);
    batches
}

impl PushReport {
    /// One line for people.
    pub fn summary(&self) -> String {
        let mut s = if self.uploaded.is_empty() {
            "nothing to upload".to_string()
        } else {
            format!("{} files uploaded in {} request{}", self.uploaded.len(), self.batches, if self.batches == 1 { "" } else { "s" })
        };
        if !self.skipped_secrets.is_empty() {
            let list: Vec<String> = self.skipped_secrets.iter().map(SkippedSecret::describe).collect();
            s.push_str(&format!(
                "; {} file(s) held back because they look like they hold secrets: {}. Take the secret out of each file and it is pushed on the next sync.",
                self.skipped_secrets.len(),
                list.join(", ")
            ));
        }
        if !self.skipped_over_cap.is_empty() {
            s.push_str(&format!("; {} file(s) over the server's entry cap will not sync: {}", self.skipped_over_cap.len(), self.skipped_over_cap.join(", ")));
        }
        if !self.oversized.is_empty() {
            s.push_str(&format!("; {} file(s) over 250,000 bytes skipped", self.oversized.len()));
        }
        if !self.held_back_lost.is_empty() {
            s.push_str(&format!(
                "; {} file(s) the server kept losing not sent automatically ({}): check the team server, then push them by hand (Push on the Team screen, or `mneme team push`)",
                self.held_back_lost.len(),
                self.held_back_lost.join(", ")
            ));
        }
        if !self.refused_keys.is_empty() {
            let list: Vec<String> = self.refused_keys.iter().map(|k| k.reason.clone()).collect();
            s.push_str(&format!("; {} file(s) not synced because of their names: {}", self.refused_keys.len(), list.join("; ")));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_claude_code() {
        let mut delta = BTreeMap::new();
        assert!(batch_by_bytes(&delta).is_empty());
        // Three entries of ~90 KB: two fit in one 200 KB body, the third starts a new one.
        for k in ["c.md", "a.md", "b.md"] {
            delta.insert(k.to_string(), "x".repeat(90_000));
        }
        let b = batch_by_bytes(&delta);
        assert_eq!(b.iter().map(|m| m.keys().cloned().collect::<Vec<_>>()).collect::<Vec<_>>(), [vec!["a.md", "b.md"], vec!["c.md"]]);
        // The exact boundary: a body counted at exactly 200,000 bytes still fits.
        let mut exact = BTreeMap::new();
        let fill = MAX_PUT_BODY_BYTES - EMPTY_PUT_BYTES - entry_put_bytes("a", "");
        exact.insert("a".to_string(), "y".repeat(fill));
        exact.insert("b".to_string(), String::new());
        let b = batch_by_bytes(&exact);
        assert_eq!(b.len(), 2, "a alone fills the body; b needs its own");
        let body = serde_json::to_string(&PutBody { entries: b[0].clone(), soft_delete_keys: vec![] }).unwrap();
        // Claude Code counts a comma after every entry, the last included, so the real body
        // is one byte under the count.
        assert_eq!(body.len() + 1, MAX_PUT_BODY_BYTES);
        // An entry bigger than any body goes alone.
        let mut big = BTreeMap::new();
        big.insert("a".to_string(), "z".repeat(MAX_PUT_BODY_BYTES));
        big.insert("b".to_string(), "small".to_string());
        assert_eq!(batch_by_bytes(&big).len(), 2);
    }
}
