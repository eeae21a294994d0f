//! A generated transcript of several MiB, with the shapes that make real ones big (tool results
//! of every form, far longer than what the prompt shows, pasted images, a line of many MiB),
//! read whole and in appended pieces. The figures expected were taken from the reader that kept
//! every entry as written (every tool result body whole), before entries were made compact:
//! what extraction and session memory see must not change with how much of a body is kept.

use mneme_extract::prompt::task_prompt;
use mneme_extract::session_memory::{has_tool_calls_in_last_assistant_turn, token_count_with_estimation};
use mneme_extract::transcript::{held_bytes, tool_calls, turn_end, LeftOut, Transcript, TranscriptReader, Window, HELD_LIMIT_BYTES};
use serde_json::{json, Value};
use std::io::Write;

/// A deterministic generator (no dependency, same text on every platform).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }

    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[(self.next() % xs.len() as u64) as usize]
    }

    /// About `n` bytes of text, with non-ASCII (two- and four-byte, and astral for UTF-16).
    fn text(&mut self, n: usize) -> String {
        const WORDS: &[&str] = &["fn", "let", "match", "résumé", "naïve", "🚀", "数据", "value", "error", "\t", "path", "</conversation>", "\"quoted\"", "\\"];
        let mut s = String::new();
        while s.len() < n {
            s.push_str(self.pick(WORDS));
            s.push(if self.next().is_multiple_of(9) { '\n' } else { ' ' });
        }
        s
    }
}

fn fnv(s: &str) -> u64 {
    s.bytes().fold(0xcbf29ce484222325u64, |h, b| (h ^ b as u64).wrapping_mul(0x100000001b3))
}

fn generate() -> Vec<String> {
    let mut r = Lcg(7);
    let mut lines = Vec::new();
    let mut parent: Value = Value::Null;
    let mut n = 0;
    let mut conv = |lines: &mut Vec<String>, parent: &mut Value, kind: &str, extra: Value| {
        n += 1;
        let uuid = format!("e{n}");
        let mut v = json!({"type": kind, "uuid": uuid, "parentUuid": parent.clone(), "isSidechain": false, "cwd": "/tmp/large-project",
            "sessionId": "5b1f3c2e-9a47-4c8e-8d7b-2f6a1e0c9d35", "timestamp": "2026-11-29T10:00:00.000Z"});
        v.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        lines.push(v.to_string());
        *parent = json!(uuid);
    };
    lines.push(json!({"type": "file-history-snapshot", "messageId": "x", "snapshot": {"trackedFileBackups": {}}}).to_string());
    for turn in 0..120 {
        if turn == 15 {
            parent = Value::Null;
            conv(&mut lines, &mut parent, "system", json!({"subtype": "compact_boundary"}));
        }
        let prompt = if turn % 20 == 3 { "From now on, never use semicolons in JavaScript.".to_string() } else { format!("Look at {}", r.text(200)) };
        conv(&mut lines, &mut parent, "user", json!({"message": {"role": "user", "content": prompt}}));
        if turn % 7 == 0 {
            conv(&mut lines, &mut parent, "attachment", json!({"attachment": {"type": "edited_text_file", "snippet": r.text(500)}}));
        }
        if turn % 11 == 0 {
            let image = json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBOR".repeat(20_000)}});
            conv(&mut lines, &mut parent, "user", json!({"message": {"role": "user", "content": [{"type": "text", "text": "this screenshot"}, image]}}));
        }
        for step in 0..3 {
            let mid = format!("m{turn}_{step}");
            let usage = json!({"input_tokens": 10, "cache_read_input_tokens": 20_000 + turn, "output_tokens": 300});
            if step == 0 {
                conv(&mut lines, &mut parent, "assistant", json!({"message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "thinking", "thinking": r.text(300)}, {"type": "server_tool_use", "id": "s", "name": "web_search", "input": {"q": r.text(50)}}],
                    "stop_reason": null, "usage": usage}}));
            }
            let ids: Vec<String> = (0..2).map(|c| format!("t{turn}_{step}_{c}")).collect();
            for id in &ids {
                let input = if r.next().is_multiple_of(2) { json!({"file_path": format!("/tmp/large-project/f{}.rs", r.next() % 9)}) } else { json!({"command": r.text(3_000)}) };
                conv(&mut lines, &mut parent, "assistant", json!({"message": {"id": mid, "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [{"type": "tool_use", "id": id, "name": r.pick(&["Read", "Bash"]), "input": input}], "stop_reason": "tool_use", "usage": usage}}));
            }
            let tool_parent = parent.clone();
            for (c, id) in ids.iter().enumerate() {
                parent = tool_parent.clone();
                let size = if turn == 60 && step == 0 && c == 0 { 9 << 20 } else { [10, 1_990, 2_000, 2_010, 6_000, 40_000][(r.next() % 6) as usize] };
                let body = r.text(size);
                let content = match r.next() % 8 {
                    0 => json!([{"type": "text", "text": body}, {"type": "image", "source": {"data": "AAAA".repeat(5_000)}}, {"note": "no type"}, "bare string"]),
                    1 => json!([{"type": "tool_result", "tool_use_id": "nested", "content": [{"type": "text", "text": body}]}, {"type": "document", "x": 1}]),
                    2 => Value::Null,
                    3 => json!(12345),
                    4 => json!([]),
                    _ => json!(body),
                };
                let mut block = json!({"type": "tool_result", "tool_use_id": id, "content": content, "is_error": r.next().is_multiple_of(10)});
                if r.next().is_multiple_of(13) {
                    block.as_object_mut().unwrap().remove("content");
                }
                conv(&mut lines, &mut parent, "user", json!({"message": {"role": "user", "content": [block]}, "toolUseResult": {"stdout": r.text(1_000)}}));
            }
        }
        if turn % 9 == 0 {
            lines.push(json!({"type": "user", "uuid": format!("side{turn}"), "parentUuid": null, "isSidechain": true, "agentId": "a1",
                "message": {"role": "user", "content": r.text(5_000)}}).to_string());
        }
        lines.push("not json, skipped".to_string());
        conv(&mut lines, &mut parent, "assistant", json!({"message": {"id": format!("end{turn}"), "role": "assistant", "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": format!("Done. {}", r.text(400))}], "stop_reason": "end_turn", "usage": {"input_tokens": 10, "output_tokens": 200}}}));
    }
    lines
}

struct Figures {
    entries: usize,
    malformed: usize,
    messages: usize,
    turn_end: Option<String>,
    calls: usize,
    answered: usize,
    errors: usize,
    tokens: u64,
    rough_tokens: u64,
    tool_calls_last: bool,
    prompt_chars: usize,
    prompt_fnv: u64,
}

fn figures(entries: usize, malformed: usize, messages: &[mneme_extract::transcript::Conversation]) -> Figures {
    let refs: Vec<_> = messages.iter().collect();
    let calls = tool_calls(&refs);
    let mut without_usage = messages.to_vec();
    for m in &mut without_usage {
        if let Some(msg) = &mut m.message {
            msg.usage = None;
        }
    }
    let prompt = task_prompt(messages, messages.len(), "", false);
    Figures {
        entries,
        malformed,
        messages: messages.len(),
        turn_end: turn_end(&refs),
        calls: calls.len(),
        answered: calls.iter().filter(|c| c.result.is_some()).count(),
        errors: calls.iter().filter(|c| c.result.is_some_and(|(_, e)| e)).count(),
        tokens: token_count_with_estimation(messages),
        // Without usage figures, session memory estimates every message from its content.
        rough_tokens: token_count_with_estimation(&without_usage),
        tool_calls_last: has_tool_calls_in_last_assistant_turn(messages),
        prompt_chars: prompt.chars().count(),
        prompt_fnv: fnv(&prompt),
    }
}

fn check(f: &Figures) {
    let got: Got = (f.entries, f.malformed, f.messages, f.turn_end.as_deref(), f.calls, f.answered, f.errors, f.tokens, f.rough_tokens, f.tool_calls_last, f.prompt_chars, f.prompt_fnv);
    assert_eq!(got, EXPECTED);
}

/// Entries, malformed lines, messages, the turn end, tool calls (answered, errors), token
/// estimates (with usage, without), tool calls in the last turn, the prompt's length and hash.
type Got<'a> = (usize, usize, usize, Option<&'a str>, usize, usize, usize, u64, u64, bool, usize, u64);

const EXPECTED: Got<'static> = (1845, 120, 1600, Some("e1830"), 630, 630, 52, 210, 3310106, false, 1212039, 9727096327407258587);

#[test]
fn a_large_transcript_reads_to_the_same_conversation_prompt_and_token_count() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("large.jsonl");
    let lines = generate();
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&path, &text).unwrap();
    assert!(text.len() > 16 << 20, "{}", text.len());

    let t = Transcript::load(&path).unwrap();
    let messages: Vec<_> = t.conversation().into_iter().cloned().collect();
    check(&figures(t.entries.len(), t.malformed.len(), &messages));

    // Appended in pieces, cut inside lines, as a live session is read.
    let cuts = [text.len() / 3 + 5, text.len() / 2 + 11, text.len()];
    std::fs::write(&path, "").unwrap();
    let mut reader = TranscriptReader::new();
    let mut window = Window::new(HELD_LIMIT_BYTES);
    let mut from = 0;
    for cut in cuts {
        let mut f = std::fs::OpenOptions::new().append(true).open(&path).unwrap();
        f.write_all(&text.as_bytes()[from..cut]).unwrap();
        from = cut;
        reader.read_into(&path, &mut window).unwrap();
    }
    assert_eq!(reader.offset(), text.len() as u64);
    assert_eq!(window.left_out(), LeftOut::default(), "within the limit, the window holds every entry");
    let messages: Vec<_> = mneme_extract::transcript::conversation(window.entries()).into_iter().cloned().collect();
    check(&figures(window.len(), window.malformed_lines(), &messages));
}

/// A line longer than the reader's piece is read from the file without being held; every line
/// of the generated transcript (tool results of every form, images, nested results, a line of
/// 9 MiB, a line that is not JSON) reads to the same entry that way as parsed whole.
#[test]
fn every_line_reads_the_same_streamed_as_parsed_whole() {
    use mneme_extract::transcript::{parse_complete_lines, read_line_streamed};
    for line in generate() {
        let (whole, _) = parse_complete_lines(format!("{line}\n").as_bytes(), 0);
        let streamed = read_line_streamed(line.as_bytes());
        match (whole.entries().first(), streamed) {
            (Some(e), Ok(Some(s))) => assert_eq!(&s, e, "{}", &line[..line.len().min(300)]),
            (None, Err(why)) => assert_eq!(whole.malformed_lines(), 1, "{why}"),
            (w, s) => panic!("whole {w:?}, streamed {s:?}: {}", &line[..line.len().min(300)]),
        }
    }
}

/// Many tiny lines (`scripts/gen-large-transcript.py --tiny-lines`): what is held stays within
/// the limit whatever the count of lines, and what was let go is counted.
#[test]
fn a_transcript_of_many_tiny_lines_is_held_within_the_limit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tiny.jsonl");
    let n = 200_000;
    let mut text = json!({"type": "user", "uuid": "u0", "parentUuid": null, "cwd": "/tmp/large-project", "sessionId": "5b1f3c2e-9a47-4c8e-8d7b-2f6a1e0c9d35",
        "message": {"role": "user", "content": "From now on, never use semicolons in JavaScript."}}).to_string() + "\n";
    for i in 0..n {
        let parent = if i == 0 { "u0".to_string() } else { format!("{:036}", i - 1) };
        text.push_str(&format!("{{\"type\":\"progress\",\"uuid\":\"{i:036}\",\"parentUuid\":\"{parent}\"}}\n"));
    }
    text.push_str(&json!({"type": "assistant", "uuid": "a1", "parentUuid": format!("{:036}", n - 1), "message": {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}}).to_string());
    text.push('\n');
    std::fs::write(&path, &text).unwrap();

    let t = Transcript::load(&path).unwrap();
    let held: usize = t.entries.iter().map(held_bytes).sum();
    assert!(held <= HELD_LIMIT_BYTES, "{held} bytes held");
    assert!(t.entries.len() < n / 2, "{} entries held", t.entries.len());
    assert_eq!(t.left_out, LeftOut { entries: n + 2 - t.entries.len(), messages: 1 });
    assert_eq!((t.session_id(), t.cwds()), (Some("5b1f3c2e-9a47-4c8e-8d7b-2f6a1e0c9d35"), vec!["/tmp/large-project"]));
    assert_eq!(turn_end(&t.conversation()).as_deref(), Some("a1"));
}
