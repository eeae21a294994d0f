//! The one facade every Mneme front end calls (the CLI today; the desktop shell and the local
//! HTTP server later). Each public method is one user operation; inputs and outputs are plain
//! serde DTOs so any transport can carry them. Below this crate nothing reads the process
//! environment or the wall clock: [`Mneme`] holds the injected [`Environment`] and [`Clock`].

mod context;
mod error;
mod files;
mod graph;
mod memories;
mod memory_dir;
mod merge;

pub use context::{AutoMemoryInfo, ContextFile, ContextRequest, ContextView, SkippedEntry, TouchedView};
pub use error::{ApiError, ErrorCode};
pub use files::{FileText, SavedFile};
pub use graph::{Graph, GraphEdge, GraphNode};
pub use memories::{MachineSettings, MemoryDetail, MemoryEdit, MemoryListFilter, MemorySummary, NewMemoryRequest, Trashed};
pub use memory_dir::AutoMemDirChange;
pub use merge::MergeReport;
pub use mneme_store::memdir::{AddedIndexLine, MergedFile, SkippedFile};
pub use mneme_core::{Clock, FixedClock, SystemClock};
pub use mneme_store::projects::ProjectInfo;
pub use mneme_store::memdir::{Health, TrashListing};
pub use mneme_store::Environment;

use std::sync::Arc;

/// The engine, bound to one machine's environment and clock.
#[derive(Clone)]
pub struct Mneme {
    env: Environment,
    clock: Arc<dyn Clock>,
    /// The machine's offset from UTC, for "today" in the context block; injected because
    /// reading it is only reliable before threads start (front ends read it at start-up).
    utc_offset_secs: i32,
}

impl Mneme {
    pub fn new(env: Environment, clock: Arc<dyn Clock>) -> Self {
        Mneme { env, clock, utc_offset_secs: 0 }
    }

    /// Sets the local offset from UTC used for today's date.
    pub fn with_utc_offset(mut self, secs: i32) -> Self {
        self.utc_offset_secs = secs;
        self
    }

    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// Every project Claude Code has a folder for, newest first, with orphans flagged.
    pub fn projects(&self) -> Vec<ProjectInfo> {
        mneme_store::projects::discover_projects(&self.env)
    }

    /// Today's date as Claude Code writes it in the context block (`YYYY-MM-DD`, local time).
    pub fn today(&self) -> String {
        let now = time::OffsetDateTime::from(self.clock.now());
        let offset = time::UtcOffset::from_whole_seconds(self.utc_offset_secs).unwrap_or(time::UtcOffset::UTC);
        let local = now.to_offset(offset);
        format!("{:04}-{:02}-{:02}", local.year(), u8::from(local.month()), local.day())
    }
}
