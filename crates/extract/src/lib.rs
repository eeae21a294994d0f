//! Memory extraction as Claude Code 2.1.197 does it, run by Mneme from outside the session;
//! session memory; and the review inbox.
//!
//! - [`transcript`]: Claude Code's session transcripts (JSONL), read tolerantly while they are
//!   being written (byte cursor over complete lines, unknown entry types kept), the main
//!   thread's conversation, tool-call pairing, and turn-end detection.
//! - [`watch`]: a `notify` watcher reporting transcripts that grew.
//! - [`rules`]: when extraction runs — the cursor, the direct-write and no-prose skips, the
//!   every-N throttle and the one trailing run — as synchronous state.
//! - [`prompt`]: the extraction agent's prompts, checked against Claude Code's own function.
//! - [`offline`]: the offline extractor (explicit statements, Claude Code's type taxonomy and
//!   what-not-to-save rules) producing a changeset.
//! - [`run`]: [`run::Extractor`] ties it together: a run over a transcript or at a live turn
//!   end, by the offline extractor or a model through `mneme-agent` (Claude Code's memory
//!   policy, 5 turns), applied or staged by the project's [`record::ReviewMode`], and recorded
//!   with Claude Code's "● Saved N memories" line.
//! - [`inbox`]: staged changesets and what the user does with them (keep, edit, discard,
//!   promote to CLAUDE.md or team memory).
//! - [`session_memory`]: the per-session notes file: template, overrides, prompt, thresholds,
//!   and the Edit-only update run.
//!
//! Nothing here reads the process environment or the wall clock: an [`mneme_store::Environment`]
//! and a [`mneme_core::Clock`] come in. Mneme's own state (run log, cursors, modes, inbox) lives in
//! `Environment::data_dir()`, never in a memory folder.

mod data;
pub mod inbox;
pub mod offline;
pub mod prompt;
pub mod record;
pub mod rules;
pub mod run;
pub mod session_memory;
pub mod transcript;
pub mod watch;

pub use data::trash_dir;
pub use inbox::{Inbox, InboxError, InboxItem, ItemStatus, NotPruned, PromoteTarget, Proposal};
pub use record::{recent_runs, ReviewMode, RunOutcome, RunRecord};
pub use run::{Engine, ExtractError, ExtractOptions, Extractor, Project, Session};
