//! Administration: teams, users, grants, entry caps and tokens for scripts. The
//! `mneme-server admin …` commands call these, and so can tests (through
//! [`crate::RunningServer::admin`], which shares the running server's database pool).

use crate::auth;
use crate::checksum::empty_repo_checksum;
use crate::config::DatabaseUrl;
use crate::store::{SqlStore, Store, StoreError};
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
    #[error(transparent)]
    Auth(#[from] auth::AuthError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

pub const MIN_PASSWORD_CHARS: usize = 8;

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

    /// An access token for `user` that lives `ttl`.
    pub async fn mint_token_for(&self, user: &str, ttl: Duration) -> Result<String, AdminError> {
        let user_row = self.store.user_by_name(user).await?.ok_or_else(|| AdminError::NoUser(user.to_string()))?;
        let issued = auth::issue(self.store.as_ref(), user_row.id, None, self.now_ms(), ttl, None).await?;
        Ok(issued.access_token)
    }

    /// Caps the number of live entries in `repo`; `None` returns it to the server default.
    pub async fn set_max_entries(&self, repo: &str, max: Option<u64>) -> Result<(), AdminError> {
        if max == Some(0) {
            return Err(AdminError::ZeroMaxEntries);
        }
        let repo_row = self.store.repo_by_slug(repo).await?.ok_or_else(|| AdminError::NoRepo(repo.to_string()))?;
        let max = max.map(|m| i64::try_from(m).unwrap_or(i64::MAX));
        self.store.set_max_entries(repo_row.id, max).await?;
        Ok(())
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
