//! Where Claude Code keeps memory on disk, and how to read and write it safely.
//!
//! Everything here takes an [`Environment`] (home, config home, env vars, managed dir) instead
//! of reading the process environment, so tests run against temporary homes.

pub mod agents;
pub mod claude_install;
pub mod claude_text;
pub mod drive;
pub mod env;
pub mod file_lock;
pub mod fold;
pub mod git;
pub mod atomic;
pub mod local_time;
pub mod memdir;
pub mod open;
pub mod paths;
pub mod projects;
pub mod settings;
pub mod session;
pub mod server_flags;
pub mod settings_env;
pub mod text_form;
pub mod textfile;

pub use env::{Environment, NoHome};
