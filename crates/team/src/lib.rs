//! Team memory (`<memory>/team/`), shared by everyone working in a repository.
//!
//! `wire` is the HTTP API Claude Code's client speaks (and `mneme-team-server` serves).
//! [`keys`] validates server keys exactly as Claude Code does and writes team files without
//! following links.

pub mod keys;
pub mod repo;
pub mod server_wire;
pub mod wire;
