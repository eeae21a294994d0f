//! Line diffs, computed once here for every front end: the CLI prints them, the UI draws them
//! (a dream's or an inbox item's files, a team file's versions, a save refused by a conflict).
//!
//! The diff itself is the `similar` crate's: nothing about a diff has to match Claude Code, so a
//! well-kept library beats a hand-written longest-common-subsequence table (which was quadratic in
//! time and memory). Texts are compared line by line with their line endings taken off, so a file
//! that ends in a newline does not show a phantom empty last line, CRLF and LF lines compare
//! equal, and a new or removed file is all additions or all removals.

use serde::Serialize;
use similar::{Algorithm, ChangeTag, TextDiff};
use std::time::Duration;

/// Past this a diff stops looking for the smallest edit and finishes with a coarser but still
/// correct one, so a huge file never stalls a request.
const DIFF_TIMEOUT: Duration = Duration::from_millis(300);

/// What a line of a diff is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DiffOp {
    /// In both texts.
    Same,
    /// Only in the text before.
    Removed,
    /// Only in the text after.
    Added,
}

/// One line of a diff, without its line ending.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct DiffLine {
    pub op: DiffOp,
    pub text: String,
}

/// Every line of two texts in order (unchanged ones too, so a front end can show context),
/// removals before additions where a run of lines was replaced, and how many of each.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
pub struct LineDiff {
    pub lines: Vec<DiffLine>,
    pub added: u32,
    pub removed: u32,
}

impl LineDiff {
    /// Whether the texts differ in any line.
    pub fn changed(&self) -> bool {
        self.added + self.removed > 0
    }
}

/// The line diff from `before` to `after`.
pub fn line_diff(before: &str, after: &str) -> LineDiff {
    let old: Vec<&str> = before.lines().collect();
    let new: Vec<&str> = after.lines().collect();
    // Patience keeps unique lines (headings, list items) lined up instead of matching the blank
    // lines and `---` fences Markdown repeats everywhere, which reads better than a minimal diff.
    let diff = TextDiff::configure().algorithm(Algorithm::Patience).timeout(DIFF_TIMEOUT).diff_slices(&old, &new);
    let (mut added, mut removed) = (0, 0);
    let lines = diff
        .iter_all_changes()
        .map(|c| {
            let op = match c.tag() {
                ChangeTag::Equal => DiffOp::Same,
                ChangeTag::Delete => {
                    removed += 1;
                    DiffOp::Removed
                }
                ChangeTag::Insert => {
                    added += 1;
                    DiffOp::Added
                }
            };
            DiffLine { op, text: c.value().to_string() }
        })
        .collect();
    LineDiff { lines, added, removed }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(d: &LineDiff) -> Vec<(char, &str)> {
        d.lines
            .iter()
            .map(|l| {
                let op = match l.op {
                    DiffOp::Same => ' ',
                    DiffOp::Removed => '-',
                    DiffOp::Added => '+',
                };
                (op, l.text.as_str())
            })
            .collect()
    }

    #[test]
    fn common_lines_are_kept_and_removals_come_before_additions() {
        let d = line_diff("a\nb\nc\n", "a\nx\nc\n");
        assert_eq!(ops(&d), [(' ', "a"), ('-', "b"), ('+', "x"), (' ', "c")]);
        assert_eq!((d.added, d.removed), (1, 1));
        assert!(d.changed());
        let d = line_diff("a\nb", "b\nc");
        assert_eq!(ops(&d), [('-', "a"), (' ', "b"), ('+', "c")]);
    }

    #[test]
    fn line_endings_do_not_count_as_changes() {
        let d = line_diff("one\r\ntwo\r\n", "one\ntwo");
        assert_eq!(ops(&d), [(' ', "one"), (' ', "two")]);
        assert!(!d.changed());
    }

    #[test]
    fn a_new_or_removed_file_is_all_additions_or_all_removals() {
        // Blank lines included: against an empty text nothing may match.
        assert_eq!(ops(&line_diff("", "# T\n\nbody\n")), [('+', "# T"), ('+', ""), ('+', "body")]);
        assert_eq!(ops(&line_diff("x\n\n", "")), [('-', "x"), ('-', "")]);
        assert!(line_diff("", "").lines.is_empty());
    }

    #[test]
    fn large_texts_finish_quickly_and_stay_correct() {
        // Two 20,000-line texts with nothing in common: the old table would have had 400 million cells.
        let a: String = (0..20_000).map(|i| format!("a{i}\n")).collect();
        let b: String = (0..20_000).map(|i| format!("b{i}\n")).collect();
        let started = std::time::Instant::now();
        let d = line_diff(&a, &b);
        assert!(started.elapsed() < Duration::from_secs(5), "took {:?}", started.elapsed());
        assert_eq!((d.removed, d.added), (20_000, 20_000));
        // Rebuilding both sides from the diff gives the texts back.
        let side = |keep: DiffOp| -> String {
            d.lines.iter().filter(|l| l.op == DiffOp::Same || l.op == keep).map(|l| format!("{}\n", l.text)).collect()
        };
        assert_eq!(side(DiffOp::Removed), a);
        assert_eq!(side(DiffOp::Added), b);
    }

    #[test]
    fn answers_serialise_as_the_ui_reads_them() {
        let json = serde_json::to_value(line_diff("a\n", "b\n")).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"lines": [{"op": "removed", "text": "a"}, {"op": "added", "text": "b"}], "added": 1, "removed": 1})
        );
    }
}
