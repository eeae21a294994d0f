//! Hostile Markdown for marked's lexer and Claude Code's HTML-comment stripping: CLAUDE.md
//! files and rules from cloned repositories, teammates' MEMORY.md, damaged, arbitrary and
//! 12,000 levels deep. The lexer answers tokens or an error saying why (never a panic), its
//! skipped ranges lie inside the text, and the kept ranges of a comment-stripped file are
//! exactly where the stripped text comes from.

// mneme-testsupport links this crate (through the store), so the generators are included
// rather than linked.
#[allow(dead_code)]
#[path = "../../testsupport/src/hostile.rs"]
mod hostile;

use hostile::{config, corpus, deep, mutated_text, testdata, text};
use mneme_markdown::{html_comment_kept_ranges, lex_with_skipped_as, strip_html_comments, Dialect, LexError};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    let mut s = corpus(&testdata().join("realworld"), &[".md"], 60);
    s.extend(corpus(&testdata().join("conformance"), &[".md"], 40));
    s.push(b"# Notes\n\n<!-- hidden -->\n- [a](a.md) <!-- x --> tail\n> quote <!--\n> still -->\n\n```\n<!-- code -->\n```\n[ref]: /x\n".to_vec());
    s
}

fn normalized(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\r', "\n")
}

fn check(content: &str) -> Result<(), TestCaseError> {
    let norm = normalized(content);
    for dialect in [Dialect::default(), Dialect { blockquote_ends_at_indented_html: true, ..Dialect::default() }] {
        match lex_with_skipped_as(content, dialect) {
            Ok((_, skipped)) => {
                let mut end = 0;
                for r in &skipped {
                    prop_assert!(end <= r.start && r.start <= r.end && r.end <= norm.len(), "{:?} in {}", r, norm.len());
                    prop_assert!(norm.is_char_boundary(r.start) && norm.is_char_boundary(r.end));
                    end = r.end;
                }
            }
            Err(LexError::Stuck { .. }) | Err(LexError::TooDeep { .. }) => {}
        }
    }
    let stripped = strip_html_comments(content);
    if !content.contains("<!--") {
        prop_assert_eq!(stripped.as_deref(), Some(content));
    }
    if let Some(kept) = html_comment_kept_ranges(content) {
        let mut end = 0;
        let mut joined = String::new();
        for r in &kept {
            prop_assert!(end <= r.start && r.start < r.end && r.end <= content.len(), "{:?}", r);
            prop_assert!(content.is_char_boundary(r.start) && content.is_char_boundary(r.end));
            joined.push_str(&content[r.clone()]);
            end = r.end;
        }
        // The promise callers rely on to place lines: the kept ranges, line ends normalized,
        // are the stripped text.
        prop_assert_eq!(Some(normalized(&joined)), stripped);
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn damaged_real_files(content in mutated_text(seeds())) {
        check(&content)?;
    }

    #[test]
    fn arbitrary_text(content in text(), comment in text()) {
        check(&content)?;
        check(&format!("{content}<!--{comment}-->{content}"))?;
        check(&format!("<!--{comment}\n\n{content}"))?;
    }
}

proptest! {
    // Deep nesting costs up to a second a case unoptimised.
    #![proptest_config(config(24))]

    #[test]
    fn deep_nesting(content in deep()) {
        check(&content)?;
        check(&format!("<!-- a -->\n{content}\n<!-- b -->\n"))?;
    }
}
