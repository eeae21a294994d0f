//! A model dream that removes a memory and leaves MEMORY.md alone (it ran `rm` and never wrote
//! the index): the apply takes the memory's index line with it, and the dream's record holds
//! that index edit, so its undo gives the folder back byte for byte even after the user
//! emptied the trash the memory went to.

mod common;

use common::*;
use mneme_dream::{CachedFlags, DreamMode, DreamStatus, Engine, Enablement, RunOptions, Trigger};
use mneme_model::{AnthropicProvider, Cancel};
use mneme_stub_model::{StubModel, Turn};
use serde_json::json;

#[tokio::test]
async fn undoing_a_model_dream_that_removed_a_memory_gives_its_index_line_back_with_the_trash_emptied() {
    let w = World::new();
    w.dreams.set_mode(&w.mem, DreamMode::Review).unwrap();
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("tabs_copy.md", &topic("Tabs again", "tabs", "feedback", "Use tabs."));
    w.write("MEMORY.md", "# Memory\n\n- [Tabs](tabs.md) — tabs\n- [Tabs again](tabs_copy.md) — tabs, said twice\n- [Deploy](deploy.md) — a line of its own\n\nA closing note.\n");
    let before = w.snapshot();

    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Bash", json!({"command": format!("rm {}", w.mem.join("tabs_copy.md").display())})));
    stub.push(Turn::text("Removed the duplicate tabs memory."));
    let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: false, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();
    assert_eq!(rec.status, DreamStatus::Pending);
    assert_eq!(rec.changeset.changes.len(), 1, "the premise: only the removal, no index written: {:#?}", rec.changeset.changes);

    let rec = w.dreams.approve(&w.mem, &rec.id).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert!(!w.mem.join("tabs_copy.md").exists());
    assert_eq!(w.read("MEMORY.md"), "# Memory\n\n- [Tabs](tabs.md) — tabs\n- [Deploy](deploy.md) — a line of its own\n\nA closing note.\n", "the line went with the memory");
    let index = rec.changeset.changes.iter().find(|c| c.path == w.mem.join("MEMORY.md")).expect("the index edit is in the record");
    assert_eq!(index.before.as_deref().map(str::as_bytes), before.get("MEMORY.md").map(Vec::as_slice));

    assert_eq!(w.dreams.memdir(&w.mem).empty_trash().unwrap().removed, 1);
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "the folder as it was before the dream");
}
