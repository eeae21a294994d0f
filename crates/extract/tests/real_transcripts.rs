//! The parser, turn-end detection and extraction rules on transcripts written by the real
//! Claude Code 2.1.197 (testdata/transcripts, see its README).

use mneme_extract::rules::{has_memory_writes_since, ExtractionState, SkipReason, TurnDecision};
use mneme_extract::transcript::{tool_calls, turn_end, Entry, EntryType, Transcript, TranscriptReader, Window, HELD_LIMIT_BYTES};
use mneme_store::paths::{AutoMemDir, AutoMemSource};
use std::path::{Path, PathBuf};

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/transcripts").join(name)
}

fn memdir() -> AutoMemDir {
    AutoMemDir {
        dir: PathBuf::from("/tmp/mneme-tx/home/.claude/projects/-tmp-mneme-tx-project/memory"),
        source: AutoMemSource::Default,
    }
}

fn owned(t: &Transcript) -> Vec<mneme_extract::transcript::Conversation> {
    t.conversation().into_iter().cloned().collect()
}

#[test]
fn every_line_parses_and_metadata_is_recognised() {
    for name in ["plain.jsonl", "tools.jsonl", "memory-write.jsonl", "subagent.jsonl", "subagent/agent-ad5226062515e7602.jsonl"] {
        let t = Transcript::load(&data(name)).unwrap();
        assert!(t.malformed.is_empty(), "{name}: {:?}", t.malformed);
        assert_eq!(t.offset, std::fs::metadata(data(name)).unwrap().len(), "{name}");
        for e in &t.entries {
            assert!(!matches!(e, Entry::Unknown { .. }), "{name}: {e:?}");
        }
    }
    let t = Transcript::load(&data("tools.jsonl")).unwrap();
    let kinds: Vec<&str> = t
        .entries
        .iter()
        .filter_map(|e| match e {
            Entry::Metadata { kind, .. } => Some(kind.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["queue-operation", "queue-operation", "last-prompt", "queue-operation", "queue-operation", "last-prompt", "mode"]);
    assert_eq!(t.session_id(), Some("0a23833b-7439-4af7-b274-46564fd6c262"));
    assert_eq!(t.cwd(), Some("/tmp/mneme-tx/project"));
}

#[test]
fn parallel_tool_calls_pair_with_their_results() {
    let t = Transcript::load(&data("tools.jsonl")).unwrap();
    let conv = t.conversation();
    let kinds: Vec<EntryType> = conv.iter().map(|c| c.entry_type).collect();
    use EntryType::*;
    assert_eq!(
        kinds,
        [User, Attachment, Attachment, Assistant, Assistant, Assistant, User, User, Assistant, User, Assistant],
        "both parallel results are in the conversation although only one is on the parent chain"
    );
    let calls = tool_calls(&conv);
    let names: Vec<(&str, bool)> = calls.iter().map(|c| (c.tool_use.name, c.result.is_some())).collect();
    assert_eq!(names, [("Read", true), ("Bash", true)]);
    assert_eq!(calls[0].tool_use.file_path(), Some("/tmp/mneme-tx/project/notes.txt"));
    // The three entries of the split response share one message id.
    let ids: std::collections::HashSet<_> =
        conv[3..6].iter().map(|c| c.message.as_ref().unwrap().id.clone().unwrap()).collect();
    assert_eq!(ids.len(), 1);
}

#[test]
fn turn_ends_are_found_after_each_query_loop_only() {
    let t = Transcript::load(&data("tools.jsonl")).unwrap();
    let conv = t.conversation();
    assert_eq!(turn_end(&conv).as_deref(), Some(conv.last().unwrap().uuid.as_str()));
    // Cut after the tool calls, after one result, after both results: not an end.
    for cut in [4, 6, 7, 8] {
        assert_eq!(turn_end(&conv[..cut]), None, "cut at {cut}");
    }
    // The first loop's final answer is an end.
    assert!(turn_end(&conv[..9]).is_some());

    // A sub-agent's transcript is never the main thread.
    let sub = Transcript::load(&data("subagent/agent-ad5226062515e7602.jsonl")).unwrap();
    assert!(sub.entries.iter().filter_map(Entry::as_conversation).all(|c| c.is_sidechain && c.agent_id.is_some()));
    assert!(sub.conversation().is_empty());
    assert!(turn_end(&sub.conversation()).is_none());
    let main = Transcript::load(&data("subagent.jsonl")).unwrap();
    assert!(turn_end(&main.conversation()).is_some());
}

#[test]
fn appending_byte_by_byte_yields_each_entry_once_and_whole() {
    let full = std::fs::read(data("tools.jsonl")).unwrap();
    let whole = Transcript::load(&data("tools.jsonl")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("live.jsonl");
    let mut reader = TranscriptReader::new();
    let mut window = Window::new(HELD_LIMIT_BYTES);
    let mut written = 0;
    // Odd-sized appends cut lines (and multi-byte characters) at every kind of place.
    while written < full.len() {
        let next = (written + 997).min(full.len());
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&p).unwrap();
        std::io::Write::write_all(&mut f, &full[written..next]).unwrap();
        written = next;
        reader.read_into(&p, &mut window).unwrap();
        assert_eq!(window.malformed_lines(), 0);
    }
    assert_eq!(window.entries(), whole.entries);
}

#[test]
fn the_main_agents_own_memory_write_skips_extraction() {
    let t = Transcript::load(&data("memory-write.jsonl")).unwrap();
    let conv = owned(&t);
    assert!(has_memory_writes_since(&conv, None, &memdir()));
    let mut s = ExtractionState::new(memdir(), 1);
    assert_eq!(s.turn_ended(conv.clone()), TurnDecision::Skip(SkipReason::DirectWrite));
    assert_eq!(s.cursor(), Some(conv.last().unwrap().uuid.as_str()));

    // A different memory folder: the same writes are ordinary file writes.
    let other = AutoMemDir { dir: PathBuf::from("/elsewhere/memory"), source: AutoMemSource::Default };
    let mut s = ExtractionState::new(other, 1);
    assert!(matches!(s.turn_ended(conv), TurnDecision::Run(_)));
}

#[test]
fn two_loops_of_a_resumed_session_run_twice_from_the_cursor() {
    let t = Transcript::load(&data("tools.jsonl")).unwrap();
    let conv = owned(&t);
    let mut s = ExtractionState::new(memdir(), 1);
    let first: Vec<_> = conv[..9].to_vec();
    let TurnDecision::Run(plan) = s.turn_ended(first) else { panic!() };
    assert_eq!(plan.new_message_count, 7, "user, 3 assistant entries, 2 results, answer");
    assert!(s.run_finished(&plan, true).is_none());
    let TurnDecision::Run(plan) = s.turn_ended(conv.clone()) else { panic!() };
    assert_eq!(plan.new_message_count, 2);
    assert_eq!(plan.advance_to.as_deref(), Some(conv.last().unwrap().uuid.as_str()));
    // The plain session's "hello" is not prose: skipped.
    let plain = owned(&Transcript::load(&data("plain.jsonl")).unwrap());
    let mut s = ExtractionState::new(memdir(), 1);
    assert_eq!(s.turn_ended(plain), TurnDecision::Skip(SkipReason::NoProse));
}
