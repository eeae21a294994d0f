//! The server's own API beyond Claude Code's, for the app's Team screen: who is signed in,
//! every key's newest version, a key's history, and — for the repository's lead — rolling a
//! key back to an earlier version and removing an entry (which leaves a tombstone every
//! client honours by moving its copy to the trash). A rollback or removal is a new version;
//! only a purge (a leaked secret) rewrites history, erasing every earlier version of a key.
//! Leads also see every sign-in of the repository's people.
//!
//! Each call goes through [`SyncClient::send_signed`], as pulls and pushes do: a 401 for a token
//! the local clock still calls current (a clock stepped back since it was issued) gets one token
//! refresh and one retry, so a lead's rollback does not fail with "sign in again" for a token a
//! refresh would have renewed; a second 401 is final.

use crate::client::{encode_uri_component, http_request, SyncClient, SyncError, MAX_PULL_KEYS, MAX_SIGN_IN_RESPONSE_BYTES};
use crate::server_wire::{
    HashesWithTombstones, HistoryResponse, LatestEntry, LatestResponse, MeResponse, PurgeRequest, RollbackRequest, SignInsResponse,
    ENTRY_PATH, HISTORY_PAGE, HISTORY_PATH, LATEST_PATH, PURGE_PATH, ROLLBACK_PATH, SIGN_INS_PATH,
};
use crate::wire::{PutResponse, MAX_FILE_SIZE_BYTES, TEAM_MEMORY_PATH};

fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, SyncError> {
    serde_json::from_str(body).map_err(|e| SyncError::Parse { detail: e.to_string() })
}

/// [`LatestResponse`] with its entries counted while they are parsed.
#[derive(serde::Deserialize)]
struct CappedLatest {
    repo: String,
    #[serde(deserialize_with = "capped_entries")]
    entries: Vec<LatestEntry>,
}

/// A JSON array of at most [`MAX_PULL_KEYS`] entries, refused at the next one before it is
/// allocated: the answer may be 1 GiB, and a list of keys costs several times its bytes.
fn capped_entries<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Vec<LatestEntry>, D::Error> {
    struct Capped;
    impl<'de> serde::de::Visitor<'de> for Capped {
        type Value = Vec<LatestEntry>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a list of team memory keys")
        }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut out = Vec::new();
            while let Some(entry) = seq.next_element::<LatestEntry>()? {
                if out.len() >= MAX_PULL_KEYS {
                    return Err(serde::de::Error::custom(format!(
                        "it names more than {MAX_PULL_KEYS} files, far more than any team memory holds, so Mneme acted on none of it; ask the server's administrator to check this repository"
                    )));
                }
                out.push(entry);
            }
            Ok(out)
        }
    }
    de.deserialize_seq(Capped)
}

/// Refuses a history answer no server keeping to the API sends: more versions than the page
/// asked for, a version larger than an entry may be, or another key's versions. The Team
/// screen diffs every version against the one before it and against the local copy, so an
/// answer of thousands of versions, or of megabytes each, would cost minutes and gigabytes
/// for one click (a hostile server's answer may be up to 1 GiB).
fn check_history(key: &str, history: &HistoryResponse) -> Result<(), SyncError> {
    let refuse = |why: String| Err(SyncError::Parse { detail: format!("{why}, so it was not shown; check the server address, or ask its administrator") });
    if history.key != key {
        return refuse(format!("the server answered with the history of {:?} when asked for {key:?}", history.key));
    }
    if history.versions.len() as u64 > HISTORY_PAGE {
        return refuse(format!("the server's history of {key:?} holds {} versions where at most {HISTORY_PAGE} were asked for", history.versions.len()));
    }
    if let Some(v) = history.versions.iter().find(|v| v.content.len() as u64 > MAX_FILE_SIZE_BYTES) {
        return refuse(format!(
            "version {} of {key:?} in the server's history is {} bytes, over the {MAX_FILE_SIZE_BYTES}-byte limit of a team memory entry",
            v.version,
            v.content.len()
        ));
    }
    Ok(())
}

impl SyncClient {
    fn lead_url(&self, server: &str, path: &str, repo: &str, key: Option<&str>) -> String {
        let mut u = format!("{}{path}?repo={}", server.trim_end_matches('/'), encode_uri_component(repo));
        if let Some(k) = key {
            u.push_str("&key=");
            u.push_str(&encode_uri_component(k));
        }
        u
    }

    /// Who the stored token belongs to, and their role in each repository: [`crate::auth::whoami`]'s
    /// request, sent with the session's token (renewed once if the server refuses it). It names
    /// no repository, so a client whose folder is in none (or no GitHub one) may ask it too.
    pub fn me(&self) -> Result<MeResponse, SyncError> {
        let server = self.server()?;
        let url = crate::auth::me_url(&server);
        let reply = self.send_signed(&server, &[200], || {
            let mut req = http_request("GET", &url);
            req.max_body = MAX_SIGN_IN_RESPONSE_BYTES;
            req
        })?;
        parse(&reply.body)
    }

    /// The server's per-key checksums and tombstones right now (`?view=hashes`), leaving the
    /// sync state alone: what the Team screen lists before anything is pulled. `None` while
    /// the repository has no team memory.
    pub fn server_hashes(&self) -> Result<Option<HashesWithTombstones>, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let mut url = self.lead_url(&server, TEAM_MEMORY_PATH, &repo, None);
        url.push_str("&view=hashes");
        let reply = self.send_signed(&server, &[200, 404], || http_request("GET", &url))?;
        if reply.status == 404 {
            return Ok(None);
        }
        parse(&reply.body).map(Some)
    }

    /// A key's versions, newest first: the server's first page ([`HISTORY_PAGE`] versions at
    /// most, since no `limit` is sent).
    pub fn history(&self, key: &str) -> Result<HistoryResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, HISTORY_PATH, &repo, Some(key));
        let reply = self.send_signed(&server, &[200], || http_request("GET", &url))?;
        let history: HistoryResponse = parse(&reply.body)?;
        check_history(key, &history)?;
        Ok(history)
    }

    /// Every key's newest version on the server (removed ones included, flagged), without
    /// contents, in one request: what the Team screen lists. At most
    /// [`MAX_PULL_KEYS`](crate::client::MAX_PULL_KEYS) keys, counted while the answer is parsed,
    /// as a pull's are: the screen lists every one.
    pub fn latest(&self) -> Result<LatestResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, LATEST_PATH, &repo, None);
        let reply = self.send_signed(&server, &[200], || http_request("GET", &url))?;
        let CappedLatest { repo, entries } = parse(&reply.body)?;
        Ok(LatestResponse { repo, entries })
    }

    /// Makes `key` what it was at `version` (lead only). The next pull brings it here.
    pub fn rollback(&self, key: &str, version: u64) -> Result<PutResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, ROLLBACK_PATH, &repo, None);
        let body = serde_json::to_string(&RollbackRequest { key: key.to_string(), version }).unwrap_or_default();
        let reply = self.send_signed(&server, &[200], || {
            let mut req = http_request("POST", &url);
            req.json = Some(body.clone());
            req
        })?;
        parse(&reply.body)
    }

    /// Removes an entry for the whole team (lead only): the server keeps it in history and
    /// reports a tombstone, and each client moves its copy to the trash on its next pull.
    pub fn remove_entry(&self, key: &str) -> Result<PutResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, ENTRY_PATH, &repo, Some(key));
        let reply = self.send_signed(&server, &[200], || http_request("DELETE", &url))?;
        parse(&reply.body)
    }

    /// Removes `key` for the whole team and erases every earlier version of it from the
    /// server's history (lead only): for a secret that should never have been shared. Copies
    /// teammates already pulled stay in their trash, so the secret must still be rotated.
    pub fn purge(&self, key: &str) -> Result<PutResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, PURGE_PATH, &repo, None);
        let body = serde_json::to_string(&PurgeRequest { key: key.to_string() }).unwrap_or_default();
        let reply = self.send_signed(&server, &[200], || {
            let mut req = http_request("POST", &url);
            req.json = Some(body.clone());
            req
        })?;
        parse(&reply.body)
    }

    /// Every sign-in of the people granted this repository, newest first (lead only).
    pub fn sign_ins(&self) -> Result<SignInsResponse, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let url = self.lead_url(&server, SIGN_INS_PATH, &repo, None);
        let reply = self.send_signed(&server, &[200], || http_request("GET", &url))?;
        parse(&reply.body)
    }
}
