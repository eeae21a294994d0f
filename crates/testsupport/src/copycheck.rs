//! Finds text shared between files of this repository and the installed Claude Code binary: every
//! run of at least [`MIN_RUN`] characters that occurs in both. Mneme may reproduce Claude Code's
//! facts (paths, limits, header strings, formats) but not its prose or code, and a 200-character
//! run is long enough that sharing one is copying, not coincidence.
//!
//! Both sides are normalized first so that re-wrapping or re-quoting a copied sentence does not
//! hide it: a backslash escape `\n`, `\t`, `\r` counts as whitespace, any other backslash is
//! dropped (string-literal escaping), and every run of whitespace becomes one space. The binary's
//! text is its maximal runs of printable bytes (UTF-8 included); JavaScript sources sit there
//! as plain text.
//!
//! The method is a Rabin–Karp rolling hash over 200-byte windows: every window of every
//! repository file goes into a table (a few million entries), then every window of the binary
//! (a few hundred million) is looked up, first in a small bit filter that rejects almost all of
//! them without touching the table. Candidate hits are compared byte for byte.

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};

/// The shortest shared run that counts as copied text.
pub const MIN_RUN: usize = 200;

const BASE: u64 = 0x100_0000_01b3; // odd, so multiplication by it is invertible mod 2^64

/// The hashes are already uniform; hashing them again would only cost time.
#[derive(Default)]
struct Identity(u64);
impl Hasher for Identity {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, _: &[u8]) {
        unreachable!("only u64 keys are hashed")
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = n;
    }
}
type Fast = BuildHasherDefault<Identity>;

/// Normalizes one stretch of text (see the module comment). `pos` maps each output byte back
/// to its offset in the input, for reporting line numbers.
pub fn normalize(input: &[u8]) -> (Vec<u8>, Vec<u32>) {
    let mut out = Vec::with_capacity(input.len());
    let mut pos = Vec::with_capacity(input.len());
    let mut i = 0;
    let mut pending_space: Option<usize> = None;
    while i < input.len() {
        let b = input[i];
        let (is_space, keep, step) = match b {
            b'\\' if i + 1 < input.len() => match input[i + 1] {
                b'n' | b't' | b'r' => (true, None, 2),
                _ => (false, None, 1), // drop the backslash, keep what follows
            },
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => (true, None, 1),
            _ => (false, Some(b), 1),
        };
        if is_space {
            pending_space.get_or_insert(i);
        } else if let Some(k) = keep {
            if let Some(at) = pending_space.take() {
                if !out.is_empty() {
                    out.push(b' ');
                    pos.push(at as u32);
                }
            }
            out.push(k);
            pos.push(i as u32);
        }
        i += step;
    }
    (out, pos)
}

/// The binary's text: maximal runs of printable bytes (tab, newline, carriage return, 0x20–0x7e,
/// and any byte of a UTF-8 sequence), each at least `MIN_RUN` long.
pub fn text_runs(binary: &[u8]) -> impl Iterator<Item = &[u8]> {
    binary
        .split(|&b| !(b == b'\t' || b == b'\n' || b == b'\r' || (0x20..0x7f).contains(&b) || b >= 0x80))
        .filter(|run| run.len() >= MIN_RUN)
}

fn pow_base() -> u64 {
    (0..MIN_RUN).fold(1u64, |acc, _| acc.wrapping_mul(BASE))
}

/// Calls `f(start, hash)` for every window of `MIN_RUN` bytes in `text`.
fn windows(text: &[u8], mut f: impl FnMut(usize, u64)) {
    if text.len() < MIN_RUN {
        return;
    }
    let top = pow_base();
    let mut h = 0u64;
    for (i, &b) in text.iter().enumerate() {
        h = h.wrapping_mul(BASE).wrapping_add(b as u64 + 1);
        if i >= MIN_RUN {
            h = h.wrapping_sub((text[i - MIN_RUN] as u64 + 1).wrapping_mul(top));
        }
        if i + 1 >= MIN_RUN {
            f(i + 1 - MIN_RUN, h);
        }
    }
}

/// One repository file, normalized.
pub struct Source {
    pub name: String,
    pub raw: Vec<u8>,
    norm: Vec<u8>,
    pos: Vec<u32>,
}

impl Source {
    pub fn new(name: String, raw: Vec<u8>) -> Source {
        let (norm, pos) = normalize(&raw);
        Source { name, raw, norm, pos }
    }
}

/// A run of a repository file that also occurs in the binary.
#[derive(Debug, Clone)]
pub struct SharedRun {
    pub file: String,
    /// 1-based line of the run's first character in the file.
    pub line: usize,
    /// The run, normalized (escapes resolved, whitespace collapsed).
    pub text: String,
}

/// Every maximal run of at least `MIN_RUN` normalized bytes that occurs both in one of
/// `sources` and somewhere in `binary`.
pub fn shared_runs(sources: &[Source], binary: &[u8]) -> Vec<SharedRun> {
    // 1. Every window of every source, by hash (first occurrence kept for verification).
    let mut table: HashMap<u64, (u32, u32), Fast> = HashMap::default();
    const FILTER_BITS: u32 = 27;
    let mut filter = vec![0u64; 1 << (FILTER_BITS - 6)];
    for (f, src) in sources.iter().enumerate() {
        windows(&src.norm, |start, h| {
            table.entry(h).or_insert((f as u32, start as u32));
            let bit = (h >> (64 - FILTER_BITS)) as usize;
            filter[bit >> 6] |= 1 << (bit & 63);
        });
    }
    // 2. Every window of the binary's text; keep the hashes whose text really matches.
    let mut found: HashSet<u64, Fast> = HashSet::default();
    for run in text_runs(binary) {
        let (norm, _) = normalize(run);
        windows(&norm, |start, h| {
            let bit = (h >> (64 - FILTER_BITS)) as usize;
            if filter[bit >> 6] & (1 << (bit & 63)) == 0 {
                return;
            }
            if let Some(&(f, s)) = table.get(&h) {
                let src = &sources[f as usize].norm[s as usize..s as usize + MIN_RUN];
                if src == &norm[start..start + MIN_RUN] {
                    found.insert(h);
                }
            }
        });
    }
    // 3. Mark the matching windows in each source and merge overlapping ones into runs.
    let mut out = Vec::new();
    for src in sources {
        let mut runs: Vec<(usize, usize)> = Vec::new();
        windows(&src.norm, |start, h| {
            if found.contains(&h) {
                let end = start + MIN_RUN;
                match runs.last_mut() {
                    Some(last) if start <= last.1 => last.1 = end,
                    _ => runs.push((start, end)),
                }
            }
        });
        for (start, end) in runs {
            let offset = src.pos[start] as usize;
            let line = 1 + src.raw[..offset].iter().filter(|&&b| b == b'\n').count();
            out.push(SharedRun {
                file: src.name.clone(),
                line,
                text: String::from_utf8_lossy(&src.norm[start..end]).into_owned(),
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_wrapping_do_not_hide_a_copy() {
        let sentence = "word ".repeat(30) + "and then some more distinct words to pass two hundred characters easily, \
                        because the window is long: alpha beta gamma delta epsilon zeta eta theta iota kappa";
        let binary = format!("\0\0junk\0const p=\"{}\";\0", sentence.replace(' ', "\\n"));
        let wrapped = sentence.replace("alpha", "\n    alpha");
        let src = Source::new("a.txt".into(), format!("intro\n{wrapped}\n").into_bytes());
        let runs = shared_runs(&[src], binary.as_bytes());
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0].line, 2);
        assert!(runs[0].text.starts_with("word word"));
    }

    #[test]
    fn short_shared_text_is_fine() {
        let binary = b"\0MEMORY.md is 215 lines (limit: 200).\0".repeat(3);
        let src = Source::new("a.txt".into(), b"MEMORY.md is 215 lines (limit: 200).".to_vec());
        assert!(shared_runs(&[src], &binary).is_empty());
    }
}
