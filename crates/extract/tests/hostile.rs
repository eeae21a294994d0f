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
