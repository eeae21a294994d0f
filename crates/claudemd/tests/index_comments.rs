//! The memory folder reads which `MEMORY.md` lines sit inside an HTML comment with a line-based
//! rule of its own (`mneme_store::memdir::parse_index`: a commented line holds no entry), while
//! the cap measurement strips comments with the markdown lexer (`html_comment_kept_ranges`), as
//! Claude Code does. The store cannot link the lexer, so the two must agree: for every index
//! line that is an entry, the store drops it exactly when the lexer's stripping leaves nothing
//! of it. Generated from the pieces index files are made of.

use mneme_claudemd::html_comment_kept_ranges;
use mneme_store::memdir::{parse_index, Scope};
use proptest::prelude::*;
use std::path::Path;

/// Lines an index is written with: entries, comment openers and closers alone or around an
/// entry, one-line comments, fences, blanks and prose.
fn line() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => (0..40u32).prop_map(|n| format!("- [Note {n}](note-{n}.md) — a hook")),
        1 => Just("<!--".to_string()),
        1 => Just("-->".to_string()),
        1 => Just("<!-- a note -->".to_string()),
        1 => (0..40u32).prop_map(|n| format!("<!-- - [Old {n}](old-{n}.md) -->")),
        1 => Just("  <!-- indented".to_string()),
        1 => Just("old notes -->".to_string()),
        1 => Just("```".to_string()),
        1 => Just("~~~".to_string()),
        1 => Just(String::new()),
        1 => Just("# Memory index".to_string()),
        1 => Just("Some prose about the folder.".to_string()),
    ]
}

/// For each line of `content`, whether any of its non-blank bytes survives the lexer's stripping.
fn kept_by_lexer(content: &str) -> Vec<bool> {
    let kept = html_comment_kept_ranges(content);
    let mut out = Vec::new();
    let mut start = 0;
    for piece in content.split('\n') {
        let end = start + piece.len();
        let survives = match &kept {
            None => !piece.trim().is_empty(),
            Some(ranges) => piece
                .char_indices()
                .filter(|(_, c)| !c.is_whitespace())
                .any(|(i, _)| ranges.iter().any(|r| r.contains(&(start + i)))),
        };
        out.push(survives);
        start = end + 1;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn the_store_and_the_lexer_agree_on_which_entries_a_comment_hides(lines in prop::collection::vec(line(), 1..24), crlf in any::<bool>()) {
        let content = lines.join(if crlf { "\r\n" } else { "\n" }) + "\n";
        let lexer = kept_by_lexer(&content);
        for l in parse_index(&content, Scope::Private, Path::new("/m")) {
            let is_entry_line = l.text.trim_start().starts_with("- [");
            if !is_entry_line {
                continue;
            }
            prop_assert_eq!(
                l.entry.is_some(),
                lexer[l.number - 1],
                "line {} ({:?}) of\n{}",
                l.number,
                l.text,
                content
            );
        }
    }
}
