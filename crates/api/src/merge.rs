//! Merging an orphaned memory folder (its project folder is gone: a deleted worktree, a
//! renamed folder) into a living project's memory, then putting the emptied folder in
//! Mneme's trash so nothing is ever deleted. The moves are `mneme_store::memdir` (`merge_from`,
//! `trash_folder`); this module checks the request and reports.

use crate::{ApiError, ContextRequest, Mneme};
use mneme_store::memdir::{trash_folder, AddedIndexLine, Memdir, MergedFile, SkippedFile};
use mneme_store::paths::AUTO_MEM_DIRNAME;
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

/// What [`Mneme::merge_memory`] did (or, with `dry_run`, would do).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MergeReport {
    /// Nothing was written: this is the plan.
    pub dry_run: bool,
    /// The orphan's memory folder the files came from.
    pub from: PathBuf,
    /// The project's memory folder they went to.
    pub into: PathBuf,
    /// Moved under their own name.
    pub moved: Vec<MergedFile>,
    /// Moved under a `-merged` name because a different file had theirs.
    pub renamed: Vec<MergedFile>,
    /// Not moved, with why (identical copies already there, links, unreadable files).
    pub skipped: Vec<SkippedFile>,
    /// Lines appended to the project's index.
    pub index_lines_added: Vec<AddedIndexLine>,
    /// Where the orphan's memory folder went in Mneme's trash (with what was left in it).
    pub trashed_to: Option<PathBuf>,
    /// Set when the files merged but the emptied folder could not be moved to the trash.
    pub trash_problem: Option<String>,
    /// Set when files moved but the project's index could not take their lines: which lines
    /// to add by hand. The orphan folder is then left where it is, its index holding them too.
    pub index_problem: Option<String>,
}

/// The record written beside a trashed orphan folder, so it can be found and put back.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct MergeRecord<'a> {
    version: u32,
    merged_at_ms: u64,
    /// Where the folder was.
    original: &'a Path,
    report: &'a MergeReport,
}

impl Mneme {
    /// Moves every topic file of the orphan project folder `from_folder`
    /// (`<config>/projects/<name>`) into the memory folder Claude Code uses for `into`, appends
    /// the orphan's index lines for them, never overwrites (a different file with the same
    /// name is kept as `<name>-merged.md`), then moves the orphan's emptied memory folder to
    /// Mneme's trash (`<data dir>/trash/merged/`).
    pub fn merge_memory(&self, from_folder: &Path, into: &ContextRequest) -> Result<MergeReport, ApiError> {
        self.merge_memory_with(from_folder, into, false)
    }

    /// [`Self::merge_memory`] without writing anything: what it would do right now.
    pub fn plan_merge_memory(&self, from_folder: &Path, into: &ContextRequest) -> Result<MergeReport, ApiError> {
        self.merge_memory_with(from_folder, into, true)
    }

    fn merge_memory_with(&self, from_folder: &Path, into: &ContextRequest, dry_run: bool) -> Result<MergeReport, ApiError> {
        let source_dir = self.orphan_memory_dir(from_folder)?;
        let (_, target) = self.memdir(into)?;
        let real_target = fs::canonicalize(target.root()).unwrap_or_else(|_| target.root().to_path_buf());
        if real_target == source_dir || real_target.starts_with(&source_dir) || source_dir.starts_with(&real_target) {
            return Err(ApiError::invalid(format!(
                "{} is the memory folder of {} itself; pick another project to merge it into.",
                source_dir.display(),
                into.cwd.display()
            )));
        }
        let trash_root = self.env.data_dir().join("trash").join("merged");
        let source = Memdir::new(source_dir.clone(), trash_root.clone(), self.clock.clone());
        let outcome = target.merge_from(&source, !dry_run)?;
        let mut report = MergeReport {
            dry_run,
            from: source_dir.clone(),
            into: target.root().to_path_buf(),
            moved: outcome.moved,
            renamed: outcome.renamed,
            skipped: outcome.skipped,
            index_lines_added: outcome.index_lines_added,
            trashed_to: None,
            trash_problem: None,
            index_problem: None,
        };
        if dry_run {
            return Ok(report);
        }
        if let Some(problem) = outcome.index_problem {
            report.index_problem = Some(format!(
                "The files were moved, but {problem}. Add those lines to the project's index yourself; {} is left where it is, and its MEMORY.md still holds them.",
                source_dir.display()
            ));
            return Ok(report);
        }
        match trash_folder(&source_dir, &trash_root, self.clock.now_ms()) {
            Ok(entry) => {
                report.trashed_to = Some(entry.join(AUTO_MEM_DIRNAME));
                let now_ms = u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX);
                let record = MergeRecord { version: 1, merged_at_ms: now_ms, original: &source_dir, report: &report };
                // The folder is safe in the trash either way; the record only says where from.
                // Whole or absent: a record cut short by a crash would say nothing reliable.
                if let Ok(json) = serde_json::to_string_pretty(&record) {
                    let _ = mneme_store::atomic::write_atomic(&entry.join("merge.json"), (json + "\n").as_bytes());
                }
            }
            Err(e) => {
                report.trash_problem = Some(format!(
                    "The files were merged, but {} could not be moved to Mneme's trash ({e}); it is still there. Move or remove it yourself.",
                    source_dir.display()
                ))
            }
        }
        Ok(report)
    }

    /// The memory folder of an orphan project folder, canonical; refuses anything that is not
    /// a folder directly under `<config>/projects/` (or the memory base's `projects/`).
    fn orphan_memory_dir(&self, from_folder: &Path) -> Result<PathBuf, ApiError> {
        let config_projects = self.env.projects_dir();
        let memory_projects = self.env.memory_base().join("projects");
        let real = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        let not_project = || {
            ApiError::invalid(format!(
                "{} is not a project folder under {}. Name one of the folders `mneme projects` lists.",
                from_folder.display(),
                config_projects.display()
            ))
        };
        let folder = fs::canonicalize(from_folder).map_err(|_| {
            // The app meets this for a folder merged, moved or deleted since its list was drawn,
            // so it names the list, not a command (the command line adds its own).
            ApiError::not_found(format!(
                "{} does not exist now: it may have been merged, moved or deleted. The list of project folders shows the ones there are.",
                from_folder.display()
            ))
        })?;
        let parent = folder.parent().ok_or_else(not_project)?;
        if parent != real(&config_projects) && parent != real(&memory_projects) {
            return Err(not_project());
        }
        let name = folder.file_name().ok_or_else(not_project)?;
        // With CLAUDE_CODE_REMOTE_MEMORY_DIR the memory lives under the memory base.
        let memory = memory_projects.join(name).join(AUTO_MEM_DIRNAME);
        match fs::symlink_metadata(&memory) {
            Ok(m) if m.is_dir() => Ok(real(&memory)),
            Ok(_) => Err(ApiError::invalid(format!(
                "{} is not a plain folder (a link or a file); Mneme merges only real memory folders.",
                memory.display()
            ))),
            Err(_) => Err(ApiError::not_found(format!(
                "{} has no memory folder ({} does not exist); there is nothing to merge.",
                folder.display(),
                memory.display()
            ))),
        }
    }
}
