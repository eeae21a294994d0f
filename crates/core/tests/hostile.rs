//! Hostile input for core's pure text rules: frontmatter from cloned repositories and
//! teammates' memories, `paths:` globs, `[[links]]`, MEMORY.md truncation, the project-folder
//! sanitizer and `claude --version` output. None may panic or grow without bound; where the
//! answer has a shape (byte ranges, char boundaries, caps) the properties check it.

// mneme-testsupport links mneme-core, so the generators are included rather than linked.
#[allow(dead_code)]
#[path = "../../testsupport/src/hostile.rs"]
mod hostile;

use hostile::{config, corpus, deep, mutated_text, testdata, text};
use mneme_core::frontmatter;
use mneme_core::text::{truncate_entrypoint, utf16_len};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    let mut s = corpus(&testdata().join("realworld"), &[".md"], 60);
    s.extend(corpus(&testdata().join("conformance"), &[".md"], 40));
    s
}

fn check_frontmatter(content: &str) {
    let parsed = frontmatter::parse(content);
    match &parsed.frontmatter {
        None => assert_eq!(parsed.body, content),
        Some(fm) => {
            assert!(fm.block_len <= content.len());
            assert_eq!(parsed.body, &content[fm.block_len..]);
            if let Some(e) = &fm.error {
                assert!(!e.message.is_empty());
                assert!(fm.fields.is_empty());
            }
            // The accessors read whatever the YAML held without panicking.
            let _ = (fm.description(), fm.name(), fm.memory_type(), fm.generation(), fm.unknown_keys());
            if let Some(globs) = frontmatter::rule_globs(Some(fm)) {
                assert!(globs.len() <= frontmatter::MAX_EXPANDED_PATHS);
            }
        }
    }
    let _ = frontmatter::links(parsed.body);
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn frontmatter_of_damaged_real_files(content in mutated_text(seeds())) {
        check_frontmatter(&content);
    }

    #[test]
    fn frontmatter_of_arbitrary_text(body in text(), yaml in text()) {
        check_frontmatter(&body);
        check_frontmatter(&format!("---\n{yaml}\n---\n{body}"));
        check_frontmatter(&format!("---\r\n{yaml}"));
    }

}

proptest! {
    // The YAML parser refuses nesting past 128 levels with a clear error, but unoptimised it
    // takes a second to scan 10,000 brackets, so fewer cases here.
    #![proptest_config(config(24))]

    #[test]
    fn frontmatter_of_deep_nesting(yaml in deep()) {
        check_frontmatter(&format!("---\n{yaml}\n---\nbody\n"));
        check_frontmatter(&format!("---\npaths: {yaml}\n---\nbody\n"));
        check_frontmatter(&format!("---\nmetadata:\n  type: {yaml}\n---\n"));
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// Brace groups multiply (`{a,b}{a,b}…`): the expansion stays bounded.
    #[test]
    fn paths_braces_stay_bounded(groups in 0usize..40, width in 1usize..6, tail in text()) {
        let group = format!("{{{}}}", (0..width).map(|i| i.to_string()).collect::<Vec<_>>().join(","));
        let pattern = format!("src/{}{tail}", group.repeat(groups));
        let out = frontmatter::split_paths(&[pattern]);
        prop_assert!(out.len() <= frontmatter::MAX_EXPANDED_PATHS);
    }

    #[test]
    fn entrypoint_truncation_cuts_on_char_boundaries(content in mutated_text(seeds())) {
        let t = truncate_entrypoint(&content);
        // The cut text plus the note is bounded whatever came in.
        prop_assert!(utf16_len(&t.content) <= mneme_core::text::MAX_ENTRYPOINT_UNITS + 1_000);
        prop_assert!(t.content.lines().count() <= mneme_core::text::MAX_ENTRYPOINT_LINES + 5);
    }

    #[test]
    fn sanitized_folder_names_are_safe(path in text()) {
        let s = mneme_core::sanitize::sanitize_path(&path);
        prop_assert!(s.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
        prop_assert!(s.len() <= 200 + 1 + 7);
    }

    #[test]
    fn version_output_never_panics(out in text()) {
        let _ = mneme_core::versions::ClaudeVersion::from_version_output(&out);
    }
}

/// `{0,1}` forty times would be 2^40 patterns: the first ones are kept, in Claude Code's order.
#[test]
fn brace_bomb_in_paths_is_cut() {
    let out = frontmatter::split_paths(&[format!("src/{}", "{0,1}".repeat(40))]);
    assert_eq!(out.len(), frontmatter::MAX_EXPANDED_PATHS);
    assert_eq!(out[0], format!("src/{}", "0".repeat(40)));
    assert_eq!(out[1], format!("src/{}1", "0".repeat(39)));
    // Ten thousand one-way groups: no stack overflow, and nothing half-expanded is kept.
    let out = frontmatter::split_paths(&["{a}".repeat(20_000)]);
    assert!(out.iter().all(|p| !p.contains('{')));
    // Ordinary patterns are untouched.
    assert_eq!(frontmatter::split_paths(&["src/*.{ts,tsx}, lib/**".to_string()]), ["src/*.ts", "src/*.tsx", "lib/**"]);
    // 250,000 alternatives around a 500 KB tail would be 125 GB of patterns if built at once:
    // only what fits the budget is made.
    let bomb = format!("{{{}}}{}", vec!["a"; 250_000].join(","), "y".repeat(500_000));
    assert!(bomb.len() < frontmatter::MAX_EXPANSION_BYTES);
    let out = frontmatter::split_paths(&[bomb]);
    assert!(out.len() <= 1 && out.iter().all(|p| p.len() == 500_001), "{}", out.len());
}

/// Only fences: `---\n---\n`, `---`, `---\n`, `------`.
#[test]
fn frontmatter_with_only_fences() {
    for c in ["---", "---\n", "---\n---", "---\n---\n", "------\n", "---\r\n---\r\n", "---\n\n---", "---\0\n---\n"] {
        check_frontmatter(c);
    }
}
