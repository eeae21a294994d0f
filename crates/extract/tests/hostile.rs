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
    for m in &batch.malformed {
        prop_assert!(!m.error.is_empty());
        prop_assert!((m.offset as usize) < consumed);
    }
    let messages = conversation(&batch.entries);
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
    prop_assert_eq!(first.entries.len() + second.entries.len(), batch.entries.len());
    prop_assert_eq!(first.malformed.len() + second.malformed.len(), batch.malformed.len());
    Ok(())
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn damaged_real_transcripts(bytes in mutated(seeds())) {
        check(&bytes)?;
    }

    #[test]
    fn arbitrary_bytes(bytes in bytes()) {
        check(&bytes)?;
    }

    #[test]
    fn deeply_nested_lines(line in deep()) {
        let mut bytes = line.into_bytes();
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
    use mneme_extract::transcript::{TranscriptReader, MAX_CHUNK};
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
    let batch = reader.read_new(&vast).unwrap();
    assert!(batch.entries.is_empty());
    assert_eq!(batch.malformed.len(), 1);
    assert!(batch.malformed[0].error.contains(&format!("longer than {} MiB", MAX_CHUNK >> 20)), "{:?}", batch.malformed);
    assert_eq!(reader.offset(), 1 << 40);
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().append(true).open(&vast).unwrap();
    f.write_all(b"\n{\"type\":\"user\",\"uuid\":\"u1\",\"message\":{\"role\":\"user\",\"content\":\"hi\"}}\n").unwrap();
    let batch = reader.read_new(&vast).unwrap();
    assert_eq!(batch.entries.len(), 1, "{:?}", batch.malformed);

    // Lines spread over more than one chunk are all read in one call.
    let long = dir.path().join("long.jsonl");
    let line = format!("{{\"type\":\"user\",\"pad\":\"{}\"}}\n", "x".repeat(40 << 20));
    std::fs::write(&long, line.repeat(4)).unwrap();
    let t = Transcript::load(&long).unwrap();
    assert_eq!((t.entries.len(), t.malformed.len(), t.offset), (4, 0, (line.len() * 4) as u64));
}
