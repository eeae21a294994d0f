//! A MEMORY.md or team/MEMORY.md that is not UTF-8 (saved as Windows-1252 by an editor): a
//! dream, offline or model-driven, refuses to run, naming the file and how to convert it,
//! and leaves the folder byte for byte as it was. Read as text, the bytes it cannot decode
//! would be replaced for good by whatever it wrote back, and the safety net would weigh
//! replacement characters instead of the user's words.

mod common;

use common::*;
use mneme_dream::{CachedFlags, DreamError, DreamStatus, Engine, Enablement, RunOptions, Trigger};
use mneme_model::{AnthropicProvider, Cancel};
use mneme_stub_model::{StubModel, Turn};
use serde_json::json;

/// `Café` and an em dash as Windows-1252 writes them.
const INDEX_1252: &[u8] = b"# Memory\n\n- [Caf\xe9](cafe.md) \x97 espresso only\n- [Tabs](tabs.md) \x97 tabs\n- [Tabs again](tabs_copy.md) \x97 tabs\n";

/// A folder with a duplicate the offline dream would merge, and `index` at `rel`.
fn folder(rel: &str, index: &[u8]) -> World {
    let w = World::new();
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("tabs_copy.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("cafe.md", &topic("Café", "espresso only", "user", "Espresso only."));
    if rel != "MEMORY.md" {
        w.write("MEMORY.md", "- [Tabs](tabs.md) — tabs\n");
    }
    let p = w.write(rel, "");
    std::fs::write(p, index).unwrap();
    w
}

fn refused(w: &World, rel: &str, r: Result<mneme_dream::DreamRecord, DreamError>, before: &std::collections::BTreeMap<String, Vec<u8>>) {
    let e = r.expect_err("the dream is refused");
    let said = e.to_string();
    assert_eq!(e.code(), "not-utf8", "{said}");
    assert!(said.contains(&w.mem.join(rel).display().to_string()), "names the file: {said}");
    assert!(said.contains("byte 0xE9 on line 3") && said.contains("iconv -f WINDOWS-1252 -t UTF-8"), "says what to do: {said}");
    assert!(said.ends_with("and run the dream again"), "{said}");
    assert_eq!(&w.snapshot(), before, "nothing written");
    let (records, _) = w.dreams.list(&w.mem).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].status, records[0].error.as_deref()), (DreamStatus::Failed, Some(said.as_str())), "recorded as failed, saying why");
    assert!(records[0].changeset.is_empty());
}

#[test]
fn an_offline_dream_refuses_an_index_that_is_not_utf8() {
    for rel in ["MEMORY.md", "team/MEMORY.md"] {
        let w = folder(rel, INDEX_1252);
        let before = w.snapshot();
        refused(&w, rel, w.offline(true), &before);
    }
}

#[tokio::test]
async fn a_model_dream_refuses_an_index_that_is_not_utf8() {
    for rel in ["MEMORY.md", "team/MEMORY.md"] {
        let w = folder(rel, INDEX_1252);
        let before = w.snapshot();
        let index = w.mem.join(rel).display().to_string();
        let stub = StubModel::start().await;
        // What a model would do: read the index and edit one of its lines.
        stub.push(Turn::tool_use("Read", json!({"file_path": index})));
        stub.push(Turn::tool_use("Edit", json!({"file_path": index, "old_string": "espresso only", "new_string": "espresso, no milk"})));
        stub.push(Turn::text("Tidied the index."));
        let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
        let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: true, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
        refused(&w, rel, w.dreams.run(&w.target(), &opts).await, &before);
        assert!(stub.requests().is_empty(), "the model was never asked");
    }
}
