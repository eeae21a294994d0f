//! Team memory (`<memory>/team/`), shared by everyone working in a repository.
//!
//! [`wire`] is the HTTP API Claude Code's client speaks (and `mneme-team-server` serves),
//! [`server_wire`] the server's own sign-in and lead endpoints; both live in `mneme-team-proto`,
//! the contract shared with the server, and are re-exported here.
//!
//! The sync client: [`repo`] decides which repository a folder belongs to (Claude Code's
//! `getGithubRepo`), [`config`] which server to use, [`auth`] signs in with the device flow and
//! keeps tokens in the OS keyring, [`client`] pulls and pushes exactly as Claude Code does,
//! [`watch`] pushes on change, and [`lead`] reaches the history, rollback and removal API.
//! [`keys`] validates server keys exactly as Claude Code does and writes team files without
//! following links; [`policy`] decides what content may be written into team memory at all.

pub mod auth;
pub mod client;
pub mod config;
pub mod keys;
pub mod lead;
pub mod policy;
pub mod repo;
pub mod watch;

pub use mneme_team_proto::{server_wire, wire};

pub use policy::{check_team_restore, check_team_write};
pub use client::{answering_target, keyring_client, resolve_target, DriveNotAnswering, PullReport, PushReport, SyncClient, SyncError, SyncTarget};
