//! Team memory's contract between the sync client (`mneme-team`) and the sync server
//! (`mneme-team-server`): what both sides must agree on, and nothing else.
//!
//! [`wire`] is the HTTP API Claude Code's client speaks (and the server serves); [`server_wire`]
//! the server's own sign-in and lead endpoints; [`keys`] the rules a team memory key must pass
//! (Claude Code's `sanitizePathKey` and Mneme's strict canonical policy), which need no file
//! system. Kept apart so the server does not link the client's HTTP client, file watcher and
//! keyring.

pub mod keys;
pub mod server_wire;
pub mod wire;
