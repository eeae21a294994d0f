//! Hostile-input generators for the property tests in each crate's `tests/hostile.rs`.
//!
//! Mneme reads bytes other people and programs wrote: a cloned repository's CLAUDE.md tree, a
//! teammate's memories, Claude Code's transcripts, a model's answer. The generators start from
//! real files (the repository's `testdata/`) and damage them the ways such bytes go wrong:
//! truncation, flipped bytes, NUL, lone CR and CRLF, invalid UTF-8, overlong lines, huge
//! repetition and deep nesting. Sizes are bounded so a property runs in milliseconds.
//!
//! This file depends on `proptest` and `std` only: `mneme-core`, `mneme-store` and
//! `mneme-team-proto` sit below this crate, so their tests include it with `#[path]` instead
//! of linking a second copy of themselves through `mneme-testsupport`.

use proptest::prelude::*;
use proptest::test_runner::Config;
use std::path::{Path, PathBuf};

/// The configuration every hostile property runs with: enough cases to find the usual
/// suspects, few enough for CI's two cores, and no regression files written into the
/// repository (a failure found is turned into a named regression test instead).
///
/// `MNEME_HOSTILE_CASES` raises the count for a long hunt (`MNEME_HOSTILE_CASES=20000 cargo
/// test --test hostile`); proptest's own `PROPTEST_RNG_SEED` fixes the seed, which
/// `npm test` does so the gate gives the same answer for the same commit.
pub fn config(cases: u32) -> Config {
    let cases = std::env::var("MNEME_HOSTILE_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(cases);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// The repository's `testdata/` folder.
pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// Every file under `dir` (recursively, links not followed) whose name ends with one of
/// `suffixes`, read whole, at most `limit` files in path order. Missing folders give nothing.
pub fn corpus(dir: &Path, suffixes: &[&str], limit: usize) -> Vec<Vec<u8>> {
    let mut paths = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(rd) = std::fs::read_dir(&d) else { continue };
        for e in rd.flatten() {
            let Ok(ft) = e.file_type() else { continue };
            let p = e.path();
            if ft.is_dir() {
                stack.push(p);
            } else if ft.is_file() && suffixes.iter().any(|s| p.to_string_lossy().ends_with(s)) {
                paths.push(p);
            }
        }
    }
    paths.sort();
    paths.truncate(limit);
    paths.into_iter().filter_map(|p| std::fs::read(p).ok()).collect()
}

/// Text that makes parsers nest, when repeated: block quotes, list indentation, brackets,
/// braces, comment openers, emphasis, fences, frontmatter fences and include markers.
pub const NESTERS: &[&str] = &[
    "[", "]", ">", "> ", "{", "}", "(", "<", "  - ", "- ", "1. ", "<!--", "-->", "*", "_", "`", "```\n", "~~~\n",
    "\\", "---\n", "@", "@./", "[[", "](", "\"", "'", "#", "    ", "\t", "|", "\n", "\r", ":", "- [a](b.md)\n",
];

/// Single hostile pieces to splice in.
pub const PIECES: &[&[u8]] = &[
    b"\0", b"\r", b"\r\n", b"\n", b"\xEF\xBB\xBF", b"\xFF", b"\xC3", b"\xED\xA0\x80", b"\xF4\x90\x80\x80", b"---\n",
    b"---", b"--- \r\n", b"<!--", b"-->", b"@./self.md", b"@CLAUDE.md", b"@~/x.md", b"@/etc/passwd", b"@../../x.md",
    b"```", b"[[", b"]]", b"](", b"\xE2\x80\xA8", b"\t", b"\\", b"\"", b"{\"a\":", b"}", b"[", b"]", b"name: x\n",
    b"metadata:\n  type: user\n", b"paths: ", b"{a,b}", b"\xF0\x9F\x98\x80", b"\x1B[31m", b"<!-- a -->",
];

/// One way to damage a byte string.
#[derive(Debug, Clone)]
pub enum Mutation {
    /// Cut at this fraction of the length (0..=1000 thousandths).
    Truncate(u16),
    /// XOR the byte at this fraction of the length with a non-zero mask.
    Flip(u16, u8),
    /// Insert a hostile piece at this fraction of the length.
    Splice(u16, usize),
    /// Insert `NESTERS[i]` repeated `n` times at this fraction of the length.
    Nest(u16, usize, usize),
    /// Insert one line of `n` copies of a byte at this fraction of the length.
    LongLine(u16, u8, usize),
    /// Repeat the whole input `n` times (bounded by [`MAX_LEN`]).
    Repeat(usize),
    /// Replace every `\n` with `\r\n`, or with a lone `\r`.
    LineEnds(bool),
}

/// No generated input grows past this: big enough for the overlong-line and deep-nesting
/// cases, small enough that a property over it stays fast.
pub const MAX_LEN: usize = 160_000;

fn at(len: usize, frac: u16) -> usize {
    (len * usize::from(frac.min(1000))) / 1000
}

/// Applies `m` to `bytes`.
pub fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    match *m {
        Mutation::Truncate(f) => bytes.truncate(at(bytes.len(), f)),
        Mutation::Flip(f, mask) => {
            if !bytes.is_empty() {
                let i = at(bytes.len() - 1, f);
                bytes[i] ^= mask.max(1);
            }
        }
        Mutation::Splice(f, i) => {
            let p = at(bytes.len(), f);
            let piece = PIECES[i % PIECES.len()];
            bytes.splice(p..p, piece.iter().copied());
        }
        Mutation::Nest(f, i, n) => {
            let p = at(bytes.len(), f);
            let piece = NESTERS[i % NESTERS.len()].repeat(n);
            bytes.splice(p..p, piece.into_bytes());
        }
        Mutation::LongLine(f, b, n) => {
            let p = at(bytes.len(), f);
            let mut line = vec![b'\n'];
            line.extend(std::iter::repeat_n(b, n));
            line.push(b'\n');
            bytes.splice(p..p, line);
        }
        Mutation::Repeat(n) => {
            let one = bytes.clone();
            for _ in 1..n {
                if bytes.len() + one.len() > MAX_LEN {
                    break;
                }
                bytes.extend_from_slice(&one);
            }
        }
        Mutation::LineEnds(crlf) => {
            let to: &[u8] = if crlf { b"\r\n" } else { b"\r" };
            let mut out = Vec::with_capacity(bytes.len() * 2);
            for &b in bytes.iter() {
                if b == b'\n' {
                    out.extend_from_slice(to);
                } else {
                    out.push(b);
                }
            }
            *bytes = out;
        }
    }
    bytes.truncate(MAX_LEN);
}

/// A random mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        1 => (0u16..=1000).prop_map(Mutation::Truncate),
        1 => (0u16..=1000, 1u8..=255).prop_map(|(f, m)| Mutation::Flip(f, m)),
        3 => (0u16..=1000, 0..PIECES.len()).prop_map(|(f, i)| Mutation::Splice(f, i)),
        2 => (0u16..=1000, 0..NESTERS.len(), prop_oneof![1usize..64, 1000usize..12_000])
            .prop_map(|(f, i, n)| Mutation::Nest(f, i, n)),
        1 => (0u16..=1000, any::<u8>(), 1000usize..120_000).prop_map(|(f, b, n)| Mutation::LongLine(f, b, n)),
        1 => (2usize..50).prop_map(Mutation::Repeat),
        1 => any::<bool>().prop_map(Mutation::LineEnds),
    ]
}

/// A seed from `seeds` (or, with none, a short arbitrary one) damaged by up to four mutations.
pub fn mutated(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = Vec<u8>> {
    let seed = if seeds.is_empty() {
        proptest::collection::vec(any::<u8>(), 0..256).boxed()
    } else {
        proptest::sample::select(seeds).boxed()
    };
    (seed, proptest::collection::vec(mutation(), 0..4)).prop_map(|(mut bytes, ms)| {
        for m in &ms {
            apply(&mut bytes, m);
        }
        bytes
    })
}

/// Like [`mutated`], as text the way a reader that decodes lossily would see it.
pub fn mutated_text(seeds: Vec<Vec<u8>>) -> impl Strategy<Value = String> {
    mutated(seeds).prop_map(|b| String::from_utf8_lossy(&b).into_owned())
}

/// Arbitrary bytes, mostly short, sometimes long.
pub fn bytes() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        3 => proptest::collection::vec(any::<u8>(), 0..200),
        1 => proptest::collection::vec(any::<u8>(), 0..8_000),
    ]
}

/// Arbitrary strings drawn mostly from characters parsers care about, plus any character.
pub fn text() -> impl Strategy<Value = String> {
    let ch = prop_oneof![
        4 => proptest::sample::select(
            "-[]()<>{}!@#*_`~:;,.|/\\\"' \t\r\n\0abcxyz0123456789=$&?".chars().collect::<Vec<_>>()
        ),
        1 => any::<char>(),
    ];
    proptest::collection::vec(ch, 0..400).prop_map(|v| v.into_iter().collect())
}

/// A nesting piece repeated up to 12,000 times, around an optional tail.
pub fn deep() -> impl Strategy<Value = String> {
    (proptest::sample::select(NESTERS.to_vec()), 1usize..12_000, text()).prop_map(|(p, n, tail)| p.repeat(n) + &tail)
}
