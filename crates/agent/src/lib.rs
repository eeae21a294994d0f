//! Mneme's own agent loop, for the API providers.
//!
//! Claude Code runs memory extraction, dream and session-memory updates as forked agents with
//! its `Read`, `Grep`, `Glob`, `Bash`, `Edit` and `Write` tools, gated by a permission function
//! (`createAutoMemCanUseTool`, or the session-memory one). This crate runs the same kind of agent
//! against any [`Provider`]: it sends the task, executes the model's `tool_use` blocks with the
//! same tools, input schemas, results and error texts, answers with `tool_result` blocks, and
//! stops at `end_turn`, at the turn budget, or on cancel.
//!
//! Unlike Claude Code, a run never writes as it goes. Every `Edit`/`Write` (and the `rm` the
//! memory policy allows) lands in an in-memory overlay that later reads see first, so a run
//! that fails or is cancelled half-way leaves nothing half-written. At the end the overlay
//! becomes a [`Changeset`]: each file's content before (as first read from disk) and after. In
//! [`Mode::Apply`] it is applied at once with [`apply_changeset`], which refuses the whole set if
//! any file changed on disk meanwhile; in [`Mode::Stage`] the memory folder is not touched and
//! the changeset is returned for review.
//!
//! A provider that runs its own agent (the Claude Code CLI, [`Provider::headless`]) gets a
//! scratch copy of the folder and the policy as Claude Code permission rules; the copy is then
//! diffed against the original into the same [`Changeset`], so both paths share one review flow.

mod bash;
mod changeset;
mod headless;
pub mod messages;
mod overlay;
mod policy;
pub mod prompts;
mod rules;
mod run;
mod schema;
mod tools;

pub use bash::{is_read_only_command, is_memory_rm_command};
pub use changeset::{apply_changeset, with_index_edits, Applied, ApplyError, Changeset, FileChange, Trashed};
pub use policy::{auto_mem_denial, auto_mem_prefix, bash_denial, is_auto_mem_write_path, session_memory_denial};
pub use rules::{parse_rule, PermissionRule, PermissionRules, RuleBehavior};

use mneme_core::Clock;
use mneme_model::{Cancel, ModelError, Provider};
pub use mneme_secrets::SecretScanner;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::sync::Arc;

/// What an agent is asked to do and what it may touch.
#[derive(Clone)]
pub struct AgentTask {
    /// The system prompt.
    pub system: String,
    /// The first user message.
    pub prompt: String,
    /// Which tool calls are allowed (Claude Code's permission function for this kind of run).
    pub policy: Policy,
    /// Model responses allowed before the run stops (extraction: `Some(5)`; dream: `None`).
    pub max_turns: Option<u32>,
    /// The working directory for `Bash`, and the default for `Grep`/`Glob` (the project's
    /// launch folder, as for Claude Code).
    pub cwd: PathBuf,
    /// What kind of run this is, e.g. `extract_memories`, `auto_dream`, `session_memory`
    /// (Claude Code's `forkLabel`); recorded in each change's reason.
    pub label: String,
    /// A folder of Mneme's own (inside `Environment::data_dir()`, never inside a memory folder)
    /// for scratch copies: the headless provider's copy of the folder, and the view `Bash`
    /// commands run against once the run has pending changes.
    pub work_dir: PathBuf,
    /// The injected clock: memory ages in `Read` results, trash stamps when applying.
    pub clock: Arc<dyn Clock>,
    /// The Claude Code release this run stands in for: a write into team memory is refused
    /// when its secret scanner (`Profile::secret_scanner`), or Mneme's own, finds a secret, and
    /// the tools answer as its tools do (`Profile::read_empty_file_warns`,
    /// `Profile::searches_report_refused_input`).
    pub release: mneme_core::versions::Profile,
    /// The user's `deny` and `ask` permission rules, from the settings the session applies:
    /// from 2.1.292 (`Profile::memory_agents_obey_permission_rules`) a call one of them covers
    /// is refused under the memory policy, as Claude Code's memory agents refuse it. They also
    /// carry `permissions.blockReadsOutsideWorkingDirectories` and the additional directories,
    /// which from 2.1.257 (`Profile::memory_agents_obey_read_block`) keep the agents' reads
    /// inside the working folder and the memory folder.
    pub permission_rules: PermissionRules,
}

impl std::fmt::Debug for AgentTask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentTask")
            .field("label", &self.label)
            .field("policy", &self.policy)
            .field("max_turns", &self.max_turns)
            .field("cwd", &self.cwd)
            .field("work_dir", &self.work_dir)
            .finish_non_exhaustive()
    }
}

/// Claude Code's tool permission functions for its memory agents.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Policy {
    /// `createAutoMemCanUseTool(memoryDir)` (extraction and dream): `Read`, `Grep`, `Glob`
    /// anywhere; `Bash` when read-only, or `rm` of `.md` files inside the folder; `Edit`/`Write`
    /// of `.md` files inside the folder (`team/` included).
    AutoMem { memory_dir: PathBuf },
    /// The session-memory update: only `Edit` of exactly this file.
    SessionMemory { path: PathBuf },
}

/// What happens to the changes when the run ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Mode {
    /// Apply the changeset at the end: atomic writes, refused as a whole if any file changed
    /// on disk since the run read it. Removed files go to this trash folder (Mneme's data dir).
    Apply { trash_dir: PathBuf },
    /// Touch nothing; the changeset is returned for review.
    Stage,
}

/// A tool call the policy refused, with the message the model was given.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Denial {
    pub tool: String,
    pub message: String,
    /// Fields a newer Mneme wrote on the denial (a dream record keeps its denials), kept
    /// through this build's rewrite of the record.
    #[serde(flatten, default, skip_serializing_if = "mneme_core::own_files::Unknown::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// Why the run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum Stop {
    /// The model ended its turn without calling a tool.
    Completed,
    /// The turn budget ran out (Claude Code's `max_turns_reached`): the last response's tool
    /// calls were executed and no further model call was made.
    MaxTurns { max_turns: u32 },
    /// The caller cancelled. A cancelled run is never applied.
    Cancelled,
}

impl Stop {
    /// Claude Code's text for a run that hit its turn budget (its `-p` result error).
    pub fn max_turns_message(max_turns: u32) -> String {
        format!("Reached maximum number of turns ({max_turns})")
    }
}

/// What a run did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentOutcome {
    /// Every file the run changed, before and after.
    pub changeset: Changeset,
    /// What [`Mode::Apply`] wrote and trashed; `None` in [`Mode::Stage`], for a cancelled run,
    /// and for an empty changeset.
    pub applied: Option<Applied>,
    /// The unique `file_path` values of the model's `Edit`/`Write` calls that the policy would
    /// allow, in first-use order, whether or not the call succeeded (Claude Code's `writtenPaths`
    /// for "Saved N memories"; its memory count leaves out `MEMORY.md`).
    pub written_paths: Vec<PathBuf>,
    /// Model responses received.
    pub turns: u32,
    /// Tool calls the policy refused, in order.
    pub denials: Vec<Denial>,
    /// The last response's text; [`Stop::max_turns_message`] when the budget ran out.
    pub final_text: String,
    pub stop: Stop,
}

/// Every way a run fails.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("the model call failed: {0}")]
    Model(#[from] ModelError),
    /// The run finished but its changes could not be applied (usually because Claude Code
    /// changed one of the files meanwhile). Nothing was written; the outcome carries the
    /// changeset so it can be reviewed and applied again.
    #[error("the agent's changes were not applied: {source}")]
    NotApplied { outcome: Box<AgentOutcome>, source: ApplyError },
    #[error("could not prepare the agent's scratch copy at {path}: {source}. Check that Mneme's data folder is writable.")]
    Scratch { path: PathBuf, source: std::io::Error },
    #[error("the memory folder could not be read: {0}")]
    Memdir(#[from] mneme_store::memdir::MemdirError),
}

/// Runs `task` against `provider` and returns what it changed. See the crate documentation.
pub async fn run_agent(
    provider: &dyn Provider,
    task: &AgentTask,
    mode: Mode,
    cancel: &Cancel,
) -> Result<AgentOutcome, AgentError> {
    let outcome = match provider.headless() {
        Some(agent) => headless::run(agent, task, cancel).await?,
        None => run::run(provider, task, cancel).await?,
    };
    finish(outcome, task, mode)
}

/// Applies the outcome's changeset in [`Mode::Apply`].
fn finish(mut outcome: AgentOutcome, task: &AgentTask, mode: Mode) -> Result<AgentOutcome, AgentError> {
    let Mode::Apply { trash_dir } = mode else {
        return Ok(outcome);
    };
    if outcome.stop == Stop::Cancelled || outcome.changeset.changes.is_empty() {
        return Ok(outcome);
    }
    match apply_changeset(&outcome.changeset, &trash_dir, task.clock.clone(), &task.release) {
        Ok(applied) => {
            outcome.applied = Some(applied);
            Ok(outcome)
        }
        Err(source) => Err(AgentError::NotApplied { outcome: Box::new(outcome), source }),
    }
}
