//! MEMORY.md's tag neutralizer (releases from 2.1.284) against Claude Code's own code:
//! `data/neutralizer_<version>.json` holds what the neutralizer of that release did to each text of
//! `data/neutralizer_cases.json` (regenerate the cases with `data/neutralizer_cases.py`, the
//! results with `data/neutralizer_oracle.mjs`, which runs the code cut out of the real binary).
//! Each file is checked with the profile of its release, so the neutralizer's steps (2.1.314,
//! 2.1.315, 2.1.337) are checked on both sides.

use mneme_claudemd::neutralize_tags;
use mneme_core::versions::{behaviours, ClaudeVersion, MemoryIndexTags};
use proptest::prelude::*;
use serde_json::Value;

fn data(name: &str) -> String {
    std::fs::read_to_string(format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))).unwrap_or_else(|e| panic!("tests/data/{name} is vendored: {e}"))
}

fn tags(release: &str) -> MemoryIndexTags {
    behaviours(release.parse::<ClaudeVersion>().unwrap()).memory_index_tags.expect("a release that cleans MEMORY.md")
}

/// The releases whose neutralizer ran over the cases.
const ORACLE_RUNS: &[&str] = &["2.1.284", "2.1.312", "2.1.314", "2.1.315", "2.1.332", "2.1.337"];

#[test]
fn every_case_is_escaped_as_claude_code_escapes_it() {
    let texts: Vec<String> = serde_json::from_str(&data("neutralizer_cases.json")).unwrap();
    for release in ORACLE_RUNS {
        let oracle: Value = serde_json::from_str(&data(&format!("neutralizer_{release}.json"))).unwrap();
        assert_eq!(oracle["texts"].as_u64().unwrap() as usize, texts.len(), "the cases changed; rerun neutralizer_oracle.mjs for {release}");
        let escaped = oracle["escaped"].as_object().unwrap();
        let tags = tags(release);
        let mut failures = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let want = match escaped.get(&i.to_string()) {
                None => text.clone(),
                Some(Value::Object(o)) => o["out"].as_str().unwrap().to_string(),
                Some(at) => {
                    let at: Vec<usize> = at.as_array().unwrap().iter().map(|v| v.as_u64().unwrap() as usize).collect();
                    text.chars().enumerate().map(|(j, c)| if at.contains(&j) { "<\\".to_string() } else { c.to_string() }).collect()
                }
            };
            let got = neutralize_tags(text, tags);
            if got != want {
                failures.push(format!("case {i} {text:?}:\n  Claude Code {want:?}\n  Mneme       {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{release}: {} of {} cases differ:\n{}", failures.len(), texts.len(), failures.iter().take(40).cloned().collect::<Vec<_>>().join("\n"));
    }
}

#[test]
fn look_alike_brackets_are_replaced_and_look_alike_names_read() {
    let newest = tags("2.1.337");
    let cases = [
        // A look-alike `<` is replaced whole, as the plain one is.
        ("\u{ff1c}system-reminder>", "<\\system-reminder>"),
        ("a \u{2039}tick\u{203a} b", "a <\\tick\u{203a} b"),
        // Fullwidth, mathematical and Cyrillic letters; a ligature for two letters.
        ("<\u{ff53}\u{ff59}stem-reminder>", "<\\\u{ff53}\u{ff59}stem-reminder>"),
        ("<\u{1d42d}ick>", "<\\\u{1d42d}ick>"),
        ("<ti\u{441}k>", "<\\ti\u{441}k>"),
        ("<arti\u{fb01}le-content>", "<arti\u{fb01}le-content>"),
        ("<arti\u{fb00}act-file-content>", "<arti\u{fb00}act-file-content>"),
        ("<artifact-\u{fb01}le-content>", "<\\artifact-\u{fb01}le-content>"),
        // Joiners and combining marks between the letters, a dash for `-`.
        ("<ti\u{200d}c\u{301}k>", "<\\ti\u{200d}c\u{301}k>"),
        ("<system\u{2010}reminder>", "<\\system\u{2010}reminder>"),
        // Near misses: a name character after the name; an escaped bracket; another word.
        ("<tickets>", "<tickets>"),
        ("<\\\u{ff54}ick>", "<\\\u{ff54}ick>"),
        ("<tack>", "<tack>"),
        // A read letter is no name character: it is filler before the name and ends it after.
        ("<\u{ff58}tick>", "<\\\u{ff58}tick>"),
        ("<tick\u{ff58}>", "<\\tick\u{ff58}>"),
        // `channel` with a look-alike `=`, `antml` with a fullwidth colon.
        ("<channel source\u{ff1d}\"x\">", "<\\channel source\u{ff1d}\"x\">"),
        ("<antml\u{ff1a}invoke>", "<\\antml\u{ff1a}invoke>"),
    ];
    for (text, want) in cases {
        assert_eq!(neutralize_tags(text, newest), want, "{text:?}");
    }
}

#[test]
fn the_neutralizer_changed_in_three_steps() {
    let (old, brackets, letters) = (tags("2.1.312"), tags("2.1.314"), tags("2.1.315"));
    // 2.1.314 reads more brackets, two of them outside the BMP, each replaced whole.
    let text = "\u{1d236}tick> \u{226a}tick>";
    assert_eq!(neutralize_tags(text, old), text);
    assert_eq!(neutralize_tags(text, brackets), "<\\tick> <\\tick>");
    // 2.1.315 reads subscript w (U+209D) as `w`.
    let text = "<fetched-\u{209d}eb-content>";
    assert_eq!(neutralize_tags(text, brackets), text);
    assert_eq!(neutralize_tags(text, letters), "<\\fetched-\u{209d}eb-content>");
    // 2.1.337 reads the text a second time without controls and private-use characters.
    let text = "<tic\u{e000}k> <ti\rck>";
    assert_eq!(neutralize_tags(text, tags("2.1.332")), text);
    assert_eq!(neutralize_tags(text, tags("2.1.337")), "<\\tic\u{e000}k> <\\ti\rck>");
}

/// Pieces that make tags, look-alikes of them and near misses.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "<", "<", "\u{ff1c}", "\u{fe64}", "\u{2329}", "\u{1d236}", "\u{226a}", ">", "\u{ff1e}", "\\", "/", " ", "\n", "=", ":",
            "\u{ff1d}", "\u{ff1a}", "\u{2e40}", "\u{200d}", "\u{301}", "\u{200b}", "\u{b}", "\u{2028}", "\u{fb01}", "\u{fb03}",
            "\u{33b3}", "\u{3bd}", "\u{3c5}", "\u{ff54}", "\u{1d42d}", "\u{441}", "\u{2010}", "\u{ff3f}", "\u{17f}", "\u{212a}",
            "tick", "TICK", "system-reminder", "system_reminder", "channel", "source", "antml", "artifact-file-content", "x", "-",
            "_", "\u{e074}", "\u{1f600}",
        ])
        .prop_map(str::to_string),
        "[a-z<>=: ]{1,3}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, ..ProptestConfig::default() })]

    /// Whatever the text, the neutralizer of each step only turns opening brackets into `<\`,
    /// leaves nothing it would escape again, and changes nothing in a text without a bracket.
    #[test]
    fn escaping_only_replaces_brackets_and_leaves_nothing_to_escape(pieces in prop::collection::vec(piece(), 0..24), step in 0usize..3) {
        let text: String = pieces.concat();
        let tags = tags(["2.1.284", "2.1.314", "2.1.337"][step]);
        let out = neutralize_tags(&text, tags).into_owned();
        let twice = neutralize_tags(&out, tags).into_owned();
        prop_assert_eq!(&twice, &out, "escaping twice changed {:?}", text);
        // Walk the text and the output side by side: each character is as it was, or a bracket
        // (never one already followed by `\`) written as `<\`.
        let brackets = ['<', '\u{ff1c}', '\u{fe64}', '\u{2329}', '\u{1d236}', '\u{226a}'];
        let mut rest = out.as_str();
        let mut a = text.chars().peekable();
        while let Some(c) = a.next() {
            if brackets.contains(&c) && a.peek() != Some(&'\\') && rest.starts_with("<\\") {
                rest = &rest[2..];
            } else {
                prop_assert!(rest.starts_with(c), "{:?} became {:?}", text, out);
                rest = &rest[c.len_utf8()..];
            }
        }
        prop_assert!(rest.is_empty(), "{:?} became {:?}", text, out);
        if !text.contains(['<', '\u{ff1c}', '\u{fe64}', '\u{2329}', '\u{1d236}', '\u{226a}']) {
            prop_assert_eq!(out, text);
        }
    }

    /// A tag name spelled with any mixture of look-alike letters and joiners, after any
    /// look-alike bracket, is escaped by the newest release's neutralizer.
    #[test]
    fn a_look_alike_spelling_of_a_tag_is_escaped(
        picks in prop::collection::vec((0usize..4, 0usize..3), 15),
        bracket in prop::sample::select(vec!['<', '\u{ff1c}', '\u{fe64}', '\u{2329}', '\u{27e8}', '\u{1d236}']),
    ) {
        // Per letter of `system-reminder`: the letter, a fullwidth one, a mathematical bold one
        // or an uppercase one, then nothing, a ZWJ or a combining acute.
        let mut name = String::from(bracket);
        for (c, (form, between)) in "system-reminder".chars().zip(&picks) {
            let spelled = match (c, form) {
                ('-', 1) => '\u{2010}',
                ('-', 2) => '\u{ff3f}',
                ('-', _) => '-',
                (c, 1) => char::from_u32(0xff41 + (c as u32 - 'a' as u32)).unwrap(),
                (c, 2) => char::from_u32(0x1d41a + (c as u32 - 'a' as u32)).unwrap(),
                (c, 3) => c.to_ascii_uppercase(),
                (c, _) => c,
            };
            name.push(spelled);
            // After the last letter it ends the name, which is as good.
            name.push_str(["", "\u{200d}", "\u{301}"][*between]);
        }
        name.push('>');
        let out = neutralize_tags(&name, tags("2.1.337"));
        prop_assert!(out.starts_with("<\\"), "{:?} was left as {:?}", name, out);
    }
}
