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

/// A first part that leaves 3 bytes of budget, then `{,}`: its two empty expansions cost a
/// byte each. The budget ran below zero (a panic unoptimised; optimised it wrapped to
/// usize::MAX and the bomb after it was built: 4.9 GB).
#[test]
fn brace_budget_never_runs_below_zero() {
    let pad = "x".repeat(frontmatter::MAX_EXPANSION_BYTES - 3);
    let bomb = format!("{{{}}}{}", vec!["a"; 250_000].join(","), "y".repeat(500_000));
    let out = frontmatter::split_paths(&[format!("{pad},{{,}},{bomb}")]);
    assert_eq!(out, std::slice::from_ref(&pad));
    let text = format!("---\npaths: \"{pad},{{,}}\"\n---\nbody\n");
    assert_eq!(frontmatter::rule_globs(frontmatter::parse(&text).frontmatter.as_ref()), Some(vec![pad]));
}

/// Only fences: `---\n---\n`, `---`, `---\n`, `------`.
#[test]
fn frontmatter_with_only_fences() {
    for c in ["---", "---\n", "---\n---", "---\n---\n", "------\n", "---\r\n---\r\n", "---\n\n---", "---\0\n---\n"] {
        check_frontmatter(c);
    }
}

/// "Billion laughs": eight levels of anchors, each a list of nine aliases to the one before, are
/// 414 bytes that would copy 9^9 values (24 GB). The copies are counted and the block refused
/// as Bun refuses it, long before.
#[test]
fn yaml_alias_bombs_are_refused_as_excessive_aliasing() {
    use mneme_core::js_yaml;
    use mneme_core::versions::YamlParser;
    let mut y = String::from("a0: &a0 [lol,lol,lol,lol,lol,lol,lol,lol,lol]\n");
    for i in 1..=8 {
        y.push_str(&format!("a{i}: &a{i} [{}]\n", vec![format!("*a{}", i - 1); 9].join(",")));
    }
    assert!(y.len() < 500);
    // (The refusal comes after about a million copies, a tenth of a second unoptimised: two
    // parsers and one frontmatter reading.)
    for parser in [YamlParser::Node, YamlParser::Bun1_4] {
        let e = js_yaml::parse(&y, parser).unwrap_err();
        assert!(e.message.starts_with("Excessive aliasing"), "{parser:?}: {e:?}");
    }
    let text = format!("---\n{y}---\nbody\n");
    let p = frontmatter::parse(&text);
    let fm = p.frontmatter.unwrap();
    assert!(fm.fields.is_empty() && fm.error.unwrap().message.starts_with("Excessive aliasing"));
    assert_eq!(p.body, "body\n");
    // A long text anchored once and aliased many times is counted by its bytes.
    let y = format!("a: &a \"{}\"\nb: [{}]\n", "x".repeat(100_000), vec!["*a"; 200].join(", "));
    assert!(js_yaml::parse(&y, YamlParser::Bun1_4).unwrap_err().message.starts_with("Excessive aliasing"));
    // Ordinary anchors and merges still read.
    let v = js_yaml::parse("base: &b {x: 1}\nc: {<<: *b, y: 2}\nl: [*b, *b]\n", YamlParser::Bun1_4).unwrap();
    assert_eq!(v["c"]["x"].as_i64(), Some(1));
    assert_eq!(v["l"][1]["x"].as_i64(), Some(1));
}

/// `- - - … x` 50,000 deep (100 KB) built a value whose drop overflowed a 2 MiB thread stack.
/// Nesting past `MAX_NESTING` is a parse error; a value at the limit can be dropped, cloned,
/// compared, printed and serialized on such a thread (this test's own, in a debug build).
#[test]
fn yaml_nesting_is_bounded() {
    use mneme_core::js_yaml::{self, MAX_NESTING};
    use mneme_core::versions::{FrontmatterReader, YamlParser};
    let deep = format!("---\nname: n\nlist:\n{}x\n---\nbody\n", "- ".repeat(50_000));
    let handle = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        for reader in FrontmatterReader::ALL {
            let p = frontmatter::parse_with(&deep, reader);
            let fm = p.frontmatter.unwrap();
            assert!(fm.error.unwrap().message.contains("nesting"), "{reader:?}");
            assert!(fm.fields.is_empty());
        }
    });
    handle.unwrap().join().unwrap();
    // At the limit: a mapping holding MAX_NESTING - 1 lists.
    let at_limit = format!("list:\n{}x\n", "- ".repeat(MAX_NESTING - 1));
    let over = format!("list:\n{}x\n", "- ".repeat(MAX_NESTING));
    for parser in [YamlParser::Node, YamlParser::Bun1_3, YamlParser::Bun1_4] {
        assert!(js_yaml::parse(&over, parser).is_err(), "{parser:?}");
        // Several documents are a list of their roots: one level more.
        assert!(js_yaml::parse(&format!("a: 1\n---\n{at_limit}"), parser).is_err(), "{parser:?}");
        assert!(js_yaml::parse(&format!("a: 1\n---\n{over}"), parser).is_err(), "{parser:?}");
        let v = js_yaml::parse(&at_limit, parser).unwrap();
        let copy = v.clone();
        assert_eq!(copy, v);
        assert!(format!("{v:?}").len() > MAX_NESTING);
        assert!(serde_json::to_string(&v).unwrap().len() > MAX_NESTING);
        drop((v, copy));
    }
    // Mappings at the limit, on a 2 MiB thread.
    let maps: String = (0..MAX_NESTING).map(|i| format!("{}k{i}:\n", " ".repeat(i))).collect::<String>() + &" ".repeat(MAX_NESTING) + "x\n";
    let handle = std::thread::Builder::new().stack_size(2 << 20).spawn(move || {
        let v = js_yaml::parse(&maps, YamlParser::Bun1_4).unwrap();
        let copy = v.clone();
        assert_eq!(copy, v);
        assert!(format!("{v:?}").len() > MAX_NESTING);
        assert!(serde_json::to_string(&v).unwrap().len() > MAX_NESTING);
        drop((v, copy));
    });
    handle.unwrap().join().unwrap();
    // An alias cannot carry a value past the limit either.
    let nested = format!("a: &a\n{}x\nb:\n{}*a\n", "- ".repeat(MAX_NESTING - 1), "- ".repeat(3));
    let e = js_yaml::parse(&nested, YamlParser::Bun1_4).unwrap_err();
    assert!(e.message.contains("nesting"), "{e:?}");
}

/// Bun 1.3 reads the longest number at the start of `1....`; looking for it took time in the
/// square of the length (160,000 dots: 6.7 s optimised). Not a timing test: at 2,000,000 dots
/// one pass takes a fraction of a second even unoptimised on a loaded machine, while the
/// square would take hours, so a parse still running after a minute can only be the square
/// (the parse runs on a thread, so it fails the test instead of hanging it).
#[test]
fn bun_1_3_number_prefix_is_one_pass() {
    use mneme_core::js_yaml;
    use mneme_core::versions::YamlParser;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let y = format!("description: 1{}\n", ".".repeat(2_000_000));
        let _ = tx.send(js_yaml::parse(&y, YamlParser::Bun1_3).map(|v| v["description"].as_i64()).map_err(|e| e.message));
    });
    let parsed = rx.recv_timeout(std::time::Duration::from_secs(60)).expect("2,000,000 dots still parsing after a minute: the number prefix is searched in the square of its length again");
    assert_eq!(parsed, Ok(Some(1)));
}
