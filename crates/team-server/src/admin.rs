//! Administration: teams, users, grants, entry caps and tokens for scripts. The
//! `mneme-server admin …` commands call these, and so can tests (through
//! [`crate::RunningServer::admin`], which shares the running server's database pool).

use crate::auth;
use crate::checksum::empty_repo_checksum;
use crate::config::DatabaseUrl;
use crate::store::{Pruned, SignInRow, SqlStore, Store, StoreError};
pub use crate::store::Role;
use mneme_core::{Clock, SystemClock};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    #[error("{0:?} is not a valid name: use 1 to 64 characters without spaces or control characters.")]
    BadName(String),
    #[error("{0:?} is not a repository name: use owner/name as on GitHub (letters, digits, '-', '_', '.').")]
    BadRepo(String),
    #[error("Passwords must be at least {MIN_PASSWORD_CHARS} characters.")]
    ShortPassword,
    #[error("There is no user {0:?}. Create it first with `mneme-server admin create-user`.")]
    NoUser(String),
    #[error("There is no team {0:?}. Create it first with `mneme-server admin create-team`.")]
    NoTeam(String),
    #[error("There is no repository {0:?}. Grant someone access to it first with `mneme-server admin grant`.")]
    NoRepo(String),
    #[error("{repo:?} belongs to the team {team:?}, not {asked:?}.")]
    OtherTeam { repo: String, team: String, asked: String },
    #[error("{repo:?} is new, so say which team it belongs to with --team (teams: {teams}).")]
    TeamRequired { repo: String, teams: String },
    #[error("There are no teams yet. Create one first with `mneme-server admin create-team`.")]
    NoTeams,
    #[error("The entry limit must be at least 1.")]
    ZeroMaxEntries,
    #[error("The storage limit must be at least 1 byte.")]
    ZeroMaxBytes,
    #[error("The live-content limit must be at least 1 byte.")]
    ZeroMaxLiveBytes,
    #[error("Keep at least 1 version of each key (--keep): its newest is what a rollback and the Team screen's history start from.")]
    ZeroKeep,
    #[error("{user:?} has no grant for {repo:?}; nothing to revoke.")]
    NoGrant { user: String, repo: String },
    #[error("Tokens minted here may live at most {max_days} days; ask for less with --expires-in (seconds).")]
    TokenTooLong { max_days: u64 },
    #[error("{0:?} is disabled. Enable the user first with `mneme-server admin enable-user`.")]
    Disabled(String),
    #[error(transparent)]
    Write(#[from] crate::memory::WriteError),
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub const MIN_PASSWORD_CHARS: usize = 8;

/// Epoch milliseconds as ISO 8601 in UTC with milliseconds (JavaScript's `toISOString()`), for
/// printing and on the wire.
pub fn iso(ms: i64) -> String {
    mneme_core::text::iso8601_millis(i128::from(ms))
}

/// Administration over one database.
#[derive(Clone)]
pub struct Admin {
    store: Arc<dyn Store>,
    clock: Arc<dyn Clock>,
    access_ttl: Duration,
}

fn check_name(name: &str) -> Result<(), AdminError> {
    let ok = !name.is_empty() && name.chars().count() <= 64 && !name.chars().any(|c| c.is_whitespace() || c.is_control());
    ok.then_some(()).ok_or_else(|| AdminError::BadName(name.to_string()))
}

/// GitHub's `owner/name`: Claude Code sends exactly this slug (reference §8.1).
fn check_repo(repo: &str) -> Result<(), AdminError> {
    let segment_ok = |s: &str| {
        !s.is_empty() && s != "." && s != ".." && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    match repo.split_once('/') {
        Some((owner, name)) if segment_ok(owner) && segment_ok(name) && !name.contains('/') => Ok(()),
        _ => Err(AdminError::BadRepo(repo.to_string())),
    }
}

impl Admin {
    pub(crate) fn new(store: Arc<dyn Store>, clock: Arc<dyn Clock>, access_ttl: Duration) -> Admin {
        Admin { store, clock, access_ttl }
    }

    /// Opens the database on its own (for the command line). Tokens minted through it live
    /// one hour, like signed-in ones.
    pub async fn connect(database: &DatabaseUrl) -> Result<Admin, AdminError> {
        let store = SqlStore::connect(database).await?;
        Ok(Admin::new(Arc::new(store), Arc::new(SystemClock), Duration::from_secs(3600)))
    }

    fn now_ms(&self) -> i64 {
        i64::try_from(self.clock.now_ms()).unwrap_or(i64::MAX)
    }

    pub async fn create_team(&self, name: &str) -> Result<(), AdminError> {
        check_name(name)?;
        self.store.create_team(name, self.now_ms()).await?;
        Ok(())
    }

    pub async fn create_user(&self, name: &str, password: &str) -> Result<(), AdminError> {
        check_name(name)?;
        if password.chars().count() < MIN_PASSWORD_CHARS {
            return Err(AdminError::ShortPassword);
        }
        let password = password.to_string();
        // argon2 is deliberately slow: keep it off the async workers.
        let hash = tokio::task::spawn_blocking(move || auth::hash_password(&password))
            .await
            .map_err(|e| auth::AuthError::Hash(e.to_string()))??;
        self.store.create_user(name, &hash, self.now_ms()).await?;
        Ok(())
    }

    /// Gives `user` the `role` in `repo`, registering the repository under `team` if it is new.
    /// `team` may be omitted for a known repository, or when there is only one team.
    pub async fn grant(&self, user: &str, team: Option<&str>, repo: &str, role: Role) -> Result<(), AdminError> {
        check_repo(repo)?;
        let user_row = self.store.user_by_name(user).await?.ok_or_else(|| AdminError::NoUser(user.to_string()))?;
        let repo_row = match self.store.repo_by_slug(repo).await? {
            Some(r) => {
                if let Some(asked) = team.filter(|t| *t != r.team) {
                    return Err(AdminError::OtherTeam { repo: r.slug, team: r.team, asked: asked.to_string() });
                }
                r
            }
            None => {
                let teams = self.store.team_names().await?;
                let team = match team {
                    Some(t) if teams.iter().any(|n| n == t) => t.to_string(),
                    Some(t) => return Err(AdminError::NoTeam(t.to_string())),
                    None if teams.len() == 1 => teams[0].clone(),
                    None if teams.is_empty() => return Err(AdminError::NoTeams),
                    None => return Err(AdminError::TeamRequired { repo: repo.to_string(), teams: teams.join(", ") }),
                };
                match self.store.create_repo(&team, repo, &empty_repo_checksum()).await {
                    Ok(r) => r,
                    // Registered concurrently by another admin: use theirs.
                    Err(StoreError::AlreadyExists(_)) => {
                        self.store.repo_by_slug(repo).await?.ok_or_else(|| AdminError::NoRepo(repo.to_string()))?
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        };
        self.store.set_grant(user_row.id, repo_row.id, role).await?;
        Ok(())
    }

    /// An access token for `user`, for scripts and tests (no refresh token).
    pub async fn mint_token(&self, user: &str) -> Result<String, AdminError> {
        self.mint_token_for(user, self.access_ttl).await
    }

    /// An access token for `user` that lives `ttl` (at most [`auth::MAX_ADMIN_TOKEN_TTL`]),
    /// recorded as a sign-in so that leads see it and `revoke-tokens` ends it.
    pub async fn mint_token_for(&self, user: &str, ttl: Duration) -> Result<String, AdminError> {
        if ttl > auth::MAX_ADMIN_TOKEN_TTL {
            return Err(AdminError::TokenTooLong { max_days: auth::MAX_ADMIN_TOKEN_TTL.as_secs() / 86_400 });
        }
        let user_row = self.user(user).await?;
        if user_row.disabled_ms.is_some() {
            return Err(AdminError::Disabled(user.to_string()));
        }
        let now = self.now_ms();
        let issued = auth::issue(self.store.as_ref(), user_row.id, None, now, ttl, None).await?;
        self.store
            .insert_sign_in(&SignInRow {
                family: issued.family.clone(),
                user_id: user_row.id,
                user: String::new(),
                client_id: auth::ADMIN_CLIENT_ID.to_string(),
                created_ms: now,
                last_used_ms: now,
                expires_ms: now.saturating_add(auth::duration_ms(ttl)),
                revoked_ms: None,
            })
            .await?;
        Ok(issued.access_token)
    }

    async fn user(&self, name: &str) -> Result<crate::store::User, AdminError> {
        self.store.user_by_name(name).await?.ok_or_else(|| AdminError::NoUser(name.to_string()))
    }

    async fn repo(&self, slug: &str) -> Result<crate::store::Repo, AdminError> {
        self.store.repo_by_slug(slug).await?.ok_or_else(|| AdminError::NoRepo(slug.to_string()))
    }

    /// Takes `user`'s access to `repo` away at once (their tokens stay valid for other
    /// repositories).
    pub async fn revoke_grant(&self, user: &str, repo: &str) -> Result<(), AdminError> {
        let user_row = self.user(user).await?;
        let repo_row = self.repo(repo).await?;
        if !self.store.delete_grant(user_row.id, repo_row.id).await? {
            return Err(AdminError::NoGrant { user: user.to_string(), repo: repo_row.slug });
        }
        Ok(())
    }

    /// Ends every sign-in of `user` (access and refresh tokens); returns how many were live.
    pub async fn revoke_tokens(&self, user: &str) -> Result<u64, AdminError> {
        let user_row = self.user(user).await?;
        Ok(self.store.revoke_user_tokens(user_row.id, self.now_ms()).await?)
    }

    /// Disables `user`: every token ends now and no new sign-in is accepted. Grants and
    /// history are kept, so `enable_user` restores the account as it was.
    pub async fn disable_user(&self, user: &str) -> Result<u64, AdminError> {
        let user_row = self.user(user).await?;
        let now = self.now_ms();
        self.store.set_disabled(user_row.id, Some(now)).await?;
        Ok(self.store.revoke_user_tokens(user_row.id, now).await?)
    }

    pub async fn enable_user(&self, user: &str) -> Result<(), AdminError> {
        let user_row = self.user(user).await?;
        self.store.set_disabled(user_row.id, None).await?;
        Ok(())
    }

    /// Sign-ins of `user`, newest first, or of everyone when `None`.
    pub async fn sign_ins(&self, user: Option<&str>) -> Result<Vec<SignInRow>, AdminError> {
        let user_id = match user {
            Some(u) => Some(self.user(u).await?.id),
            None => None,
        };
        Ok(self.store.sign_ins(user_id, None).await?)
    }

    /// Removes `key` from `repo` for everyone and erases every earlier version of it from
    /// history (a leaked secret). The purge is recorded without an author.
    pub async fn purge(&self, repo: &str, key: &str) -> Result<(), AdminError> {
        let repo_row = self.repo(repo).await?;
        let memory = crate::memory::Memory::new(self.store.clone(), self.clock.clone(), crate::config::DEFAULT_MAX_ENTRIES, crate::config::DEFAULT_MAX_REPO_BYTES);
        memory
            .write(&repo_row, None, crate::memory::Permission::Lead, None, &[crate::memory::Op::Purge { key: key.to_string() }])
            .await?;
        Ok(())
    }

    /// Frees room under the storage cap without removing anything teammates pull: drops each
    /// key's history versions beyond its `keep` newest, only those written more than
    /// `older_than` ago when given. `dry_run` reports what would go and changes nothing.
    pub async fn prune_history(
        &self,
        repo: &str,
        keep: u64,
        older_than: Option<Duration>,
        dry_run: bool,
    ) -> Result<Pruned, AdminError> {
        if keep == 0 {
            return Err(AdminError::ZeroKeep);
        }
        let repo_row = self.repo(repo).await?;
        let before_ms = match older_than {
            Some(age) => self.now_ms().saturating_sub(i64::try_from(age.as_millis()).unwrap_or(i64::MAX)),
            None => i64::MAX,
        };
        let keep = i64::try_from(keep).unwrap_or(i64::MAX);
        self.store
            .prune_history(repo_row.id, keep, before_ms, dry_run)
            .await?
            .ok_or_else(|| AdminError::NoRepo(repo.to_string()))
    }

    /// Caps the number of live entries in `repo`; `None` returns it to the server default.
    pub async fn set_max_entries(&self, repo: &str, max: Option<u64>) -> Result<(), AdminError> {
        let (id, max) = self.cap_for(repo, max, AdminError::ZeroMaxEntries).await?;
        Ok(self.store.set_max_entries(id, max).await?)
    }

    /// Caps the bytes of history `repo` may hold; `None` returns it to the server default.
    pub async fn set_max_bytes(&self, repo: &str, max: Option<u64>) -> Result<(), AdminError> {
        let (id, max) = self.cap_for(repo, max, AdminError::ZeroMaxBytes).await?;
        Ok(self.store.set_max_bytes(id, max).await?)
    }

    /// Caps the bytes of current content `repo` may hold (what a full pull carries); `None`
    /// returns it to the server default.
    pub async fn set_max_live_bytes(&self, repo: &str, max: Option<u64>) -> Result<(), AdminError> {
        let (id, max) = self.cap_for(repo, max, AdminError::ZeroMaxLiveBytes).await?;
        Ok(self.store.set_max_live_bytes(id, max).await?)
    }

    /// A repository cap's checks: not zero (`zero` otherwise), a repository that exists; its
    /// id and the cap as the store keeps it.
    async fn cap_for(&self, repo: &str, max: Option<u64>, zero: AdminError) -> Result<(i64, Option<i64>), AdminError> {
        if max == Some(0) {
            return Err(zero);
        }
        let repo_row = self.repo(repo).await?;
        Ok((repo_row.id, max.map(|m| i64::try_from(m).unwrap_or(i64::MAX))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repository_names_are_github_slugs() {
        for ok in ["acme/app", "Acme-Corp/my_app.rs", "a/b"] {
            assert!(check_repo(ok).is_ok(), "{ok}");
        }
        for bad in ["acme", "acme/", "/app", "a/b/c", "a b/c", "../x", "acme/..", "github.com/acme/app"] {
            assert!(check_repo(bad).is_err(), "{bad}");
        }
        assert!(check_name("alice").is_ok());
        assert!(check_name("").is_err());
        assert!(check_name("a b").is_err());
    }
}
