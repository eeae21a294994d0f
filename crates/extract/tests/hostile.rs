//! Hostile session transcripts (`~/.claude/projects/*/*.jsonl`): damaged real transcripts,
//! arbitrary bytes, invalid UTF-8, CRLF, 12,000-deep JSON, `parentUuid` cycles. Every complete
//! line is an entry or a malformed record with a message; the cursor never passes a partial
//! line; reading in two pieces gives what reading at once gives.

use mneme_extract::transcript::{conversation, parse_complete_lines, tool_calls, turn_end, Transcript};
use mneme_testsupport::hostile::{bytes, config, corpus, deep, mutated, testdata};
use proptest::prelude::*;

fn seeds() -> Vec<Vec<u8>> {
    corpus(&testdata().join("transcripts"), &[".jsonl"], 10)
}

fn check(bytes: &[u8]) -> Result<(), TestCaseError> {
    let (batch, consumed) = parse_complete_lines(bytes, 0);
    prop_assert!(consumed <= bytes.len());
    prop_assert!(consumed == 0 || bytes[consumed - 1] == b'\n');
    prop_assert!(!bytes[consumed..].contains(&b'\n'));
    for m in batch.malformed() {
        prop_assert!(!m.error.is_empty());
        prop_assert!((m.offset as usize) < consumed);
    }
    let messages = conversation(batch.entries());
    let _ = tool_calls(&messages);
    let _ = turn_end(&messages);
    for c in &messages {
        if let Some(m) = &c.message {
            let _ = m.text();
        }
        for t in c.tool_uses() {
            let _ = t.file_path();
        }
    }
    // Split anywhere: the two reads see the same lines as one read.
    let cut = bytes.len() / 2;
    let (first, used) = parse_complete_lines(&bytes[..cut], 0);
    let (second, _) = parse_complete_lines(&bytes[used..], used as u64);
    prop_assert_eq!(first.len() + second.len(), batch.len());
    prop_assert_eq!(first.malformed_lines() + second.malformed_lines(), batch.malformed_lines());
    Ok(())
}

// Each input is read both ways: as lines parsed whole (`check`), and each line streamed, as a
// line longer than 8 MiB is read (`streamed_matches_whole`).
proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn damaged_real_transcripts(bytes in mutated(seeds())) {
        check(&bytes)?;
        streamed_matches_whole(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes(bytes in bytes()) {
        check(&bytes)?;
        streamed_matches_whole(&bytes)?;
    }

    #[test]
    fn deeply_nested_lines(line in deep()) {
        let mut bytes = line.into_bytes();
        streamed_matches_whole(&bytes)?;
        bytes.push(b'\n');
        check(&bytes)?;
    }

    /// Entries whose `parentUuid`s form cycles and self-loops: the chain walk ends.
    #[test]
    fn parent_cycles(links in proptest::collection::vec((0u8..6, proptest::option::of(0u8..6)), 1..12)) {
        let mut text = String::new();
        for (id, parent) in links {
            let parent = parent.map_or("null".to_string(), |p| format!("\"u{p}\""));
            text.push_str(&format!(
                "{{\"type\":\"user\",\"uuid\":\"u{id}\",\"parentUuid\":{parent},\"sessionId\":\"s\",\"message\":{{\"role\":\"user\",\"content\":\"hi\"}}}}\n"
            ));
        }
        check(text.as_bytes())?;
    }
}

/// A transcript file read through the public loader: whatever its bytes, a value.
#[test]
fn transcript_files_of_hostile_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.jsonl");
    for content in [&b"\xff\xfe\n"[..], b"{\"type\":\"user\"", b"\0\n\0\n", b"[[[[[[[[\n", b"\r\n\r\n", b""] {
        std::fs::write(&path, content).unwrap();
        let t = Transcript::load(&path).unwrap();
        assert!(t.offset as usize <= content.len());
    }
}

/// What can sit under a transcript's name besides a transcript: each is refused or read in
/// bounded memory, and none waits (a FIFO with no writer would hang a plain `open`).
#[test]
fn transcript_names_holding_a_fifo_a_device_or_a_vast_sparse_file() {
    use mneme_extract::transcript::{TranscriptReader, Window, HELD_LIMIT_BYTES, MAX_CHUNK};
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo.jsonl");
    rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
    let err = Transcript::load(&fifo).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidInput, "{err}");
    let zero = dir.path().join("zero.jsonl");
    std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
    assert_eq!(Transcript::load(&zero).unwrap_err().kind(), std::io::ErrorKind::InvalidInput);

    // A terabyte that says it is a file (sparse: no newline anywhere). One chunk is read, the
    // line is reported and skipped, and what is appended after it is read as usual.
    let vast = dir.path().join("vast.jsonl");
    let f = std::fs::File::create(&vast).unwrap();
    f.set_len(1 << 40).unwrap();
    let mut reader = TranscriptReader::new();
    let mut window = Window::new(HELD_LIMIT_BYTES);
    reader.read_into(&vast, &mut window).unwrap();
    assert!(window.is_empty());
    assert_eq!(window.malformed().len(), 1);
    assert!(window.malformed()[0].error.contains(&format!("longer than {} MiB", MAX_CHUNK >> 20)), "{:?}", window.malformed());
    assert_eq!(reader.offset(), 1 << 40);
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&vast).unwrap();
    f.write_all(b"\n{\"type\":\"user\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n").unwrap();
    reader.read_into(&vast, &mut window).unwrap();
    assert_eq!((window.len(), window.malformed_lines()), (1, 1), "{:?}", window.malformed());

    // Lines spread over more than one chunk are all read in one call.
    let long = dir.path().join("long.jsonl");
    let line = format!("{{\"type\":\"user\",\"pad\":\"{}\"}}\n", "x".repeat(40 << 20));
    std::fs::write(&long, line.repeat(4)).unwrap();
    let t = Transcript::load(&long).unwrap();
    assert_eq!((t.entries.len(), t.malformed.len(), t.offset), (4, 0, (line.len() * 4) as u64));
}

/// A line read the way a line longer than the reader's 8 MiB piece is read (from the file,
/// without holding it) gives what parsing it whole gives: the same entry, or malformed both
/// ways. Lines with a key repeated inside one object are left out (the streamed reading keeps
/// the last of an entry's and a block's own fields, but counts both copies in a JSON length).
fn streamed_matches_whole(bytes: &[u8]) -> Result<(), TestCaseError> {
    use mneme_extract::transcript::read_line_streamed;
    for line in bytes.split(|&b| b == b'\n') {
        let (whole, _) = parse_complete_lines(&[line, b"\n"].concat(), 0);
        if has_repeated_key(line) {
            continue;
        }
        let streamed = read_line_streamed(line);
        match (whole.entries().first(), &streamed, whole.malformed().first()) {
            (Some(e), Ok(Some(s)), _) => prop_assert_eq!(s, e),
            (None, Ok(None), None) => {}
            (None, Err(why), Some(_)) => prop_assert!(!why.is_empty()),
            (w, s, m) => prop_assert!(false, "whole {:?} / {:?}, streamed {:?}: {:?}", w, m, s, String::from_utf8_lossy(line)),
        }
    }
    Ok(())
}

/// Whether some object of a JSON line holds a key twice (not JSON: false).
fn has_repeated_key(line: &[u8]) -> bool {
    struct Dups(bool);
    impl<'de> serde::de::DeserializeSeed<'de> for &mut Dups {
        type Value = ();
        fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
            d.deserialize_any(self)
        }
    }
    impl<'de> serde::de::Visitor<'de> for &mut Dups {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
            f.write_str("json")
        }
        fn visit_bool<E>(self, _: bool) -> Result<(), E> { Ok(()) }
        fn visit_i64<E>(self, _: i64) -> Result<(), E> { Ok(()) }
        fn visit_u64<E>(self, _: u64) -> Result<(), E> { Ok(()) }
        fn visit_f64<E>(self, _: f64) -> Result<(), E> { Ok(()) }
        fn visit_str<E>(self, _: &str) -> Result<(), E> { Ok(()) }
        fn visit_unit<E>(self) -> Result<(), E> { Ok(()) }
        fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            while a.next_element_seed(&mut *self)?.is_some() {}
            Ok(())
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
            let mut seen = std::collections::HashSet::new();
            while let Some(k) = a.next_key::<String>()? {
                if !seen.insert(k) {
                    self.0 = true;
                }
                a.next_value_seed(&mut *self)?;
            }
            Ok(())
        }
    }
    // Deeper than the readers nest, both refuse it; the check below would recurse as deep.
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in line {
        match b {
            _ if in_string && escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b'[' | b'{' if !in_string => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' if !in_string => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    if deepest > 256 {
        return false;
    }
    let text = String::from_utf8_lossy(line);
    let mut de = serde_json::Deserializer::from_str(&text);
    de.disable_recursion_limit();
    let mut d = Dups(false);
    let _ = serde::de::DeserializeSeed::deserialize(&mut d, &mut de);
    d.0
}

/// Found by the hunt (seed 3631305890): a block whose `type` is longer than any key (a damaged
/// `tool_use`) keeps that type whole as its kind, streamed as parsed whole.
#[test]
fn a_block_type_longer_than_any_key_reads_the_same_streamed() {
    use mneme_extract::transcript::read_line_streamed;
    let kind = format!("to{}ol_use", "[".repeat(700));
    let line = serde_json::json!({"type": "assistant", "uuid": "a", "message": {"role": "assistant", "content": [{"type": kind, "id": "t", "input": {}}]}}).to_string();
    let (whole, _) = parse_complete_lines(format!("{line}\n").as_bytes(), 0);
    let streamed = read_line_streamed(line.as_bytes()).unwrap().unwrap();
    assert_eq!(&streamed, &whole.entries()[0]);
    let c = streamed.as_conversation().unwrap();
    let mneme_extract::transcript::Content::Blocks(blocks) = &c.message.as_ref().unwrap().content else { panic!() };
    assert!(matches!(&blocks[0], mneme_extract::transcript::Block::Other { kind: k, .. } if *k == kind));
}
