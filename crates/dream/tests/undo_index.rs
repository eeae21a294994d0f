//! A model dream that removes a memory and leaves MEMORY.md alone (it ran `rm` and never wrote
//! the index): the apply takes the memory's index line with it, and the dream's record holds
//! that index edit, so its undo gives the folder back byte for byte even after the user
//! emptied the trash the memory went to.

mod common;

use common::*;
use mneme_dream::{CachedFlags, DreamMode, DreamStatus, Engine, Enablement, RunOptions, Trigger};
use mneme_model::{AnthropicProvider, Cancel};
use mneme_stub_model::{StubModel, Turn};
use proptest::prelude::*;
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

/// A generated folder: memories (private or team, each with zero to two index lines, in its own
/// index or the other one), an index with or without a byte-order mark and CRLF endings.
#[derive(Debug, Clone)]
struct Removals {
    /// Per memory: in team/, its index lines (true: in its own index), removed by the dream.
    memories: Vec<(bool, Vec<bool>, bool)>,
    bom: bool,
    crlf: bool,
    /// The dream also rewrites MEMORY.md (to its lines without the first one).
    writes_index: bool,
    empty_trash: bool,
}

fn removals() -> impl Strategy<Value = Removals> {
    (
        proptest::collection::vec((any::<bool>(), proptest::collection::vec(any::<bool>(), 0..3), any::<bool>()), 1..6),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(memories, bom, crlf, writes_index, empty_trash)| Removals { memories, bom, crlf, writes_index, empty_trash })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Whatever memories a dream removes without writing their index (or while writing
    /// MEMORY.md itself), undoing it gives the folder back byte for byte, trash emptied or not.
    #[test]
    fn undoing_removals_gives_any_generated_folder_back(f in removals()) {
        let w = World::new();
        let eol = if f.crlf { "\r\n" } else { "\n" };
        let (mut private, mut team) = (if f.bom { "\u{FEFF}".to_string() } else { String::new() }, String::new());
        let mut changes = Vec::new();
        for (i, (in_team, lines, removed)) in f.memories.iter().enumerate() {
            let rel = if *in_team { format!("team/m{i}.md") } else { format!("m{i}.md") };
            let text = topic(&format!("M{i}"), &format!("memory {i}"), "project", &format!("Fact {i}."));
            w.write(&rel, &text);
            for (k, own) in lines.iter().enumerate() {
                // Its own index, or the other one, linking as that index's folder sees it.
                match (*in_team, *own) {
                    (false, true) | (true, false) => private.push_str(&format!("- [M{i} {k}]({rel}) — memory {i}{eol}")),
                    (false, false) => team.push_str(&format!("- [M{i} {k}](../m{i}.md) — memory {i}{eol}")),
                    (true, true) => team.push_str(&format!("- [M{i} {k}](m{i}.md) — memory {i}{eol}")),
                }
            }
            if *removed {
                changes.push(mneme_dream::FileChange { path: w.mem.join(&rel), before: Some(text), after: None, reason: format!("{rel}: removed"), extra: Default::default() });
            }
        }
        private.push_str("A closing note.");
        w.write("MEMORY.md", &private);
        if !team.is_empty() {
            w.write("team/MEMORY.md", &team);
        }
        if f.writes_index {
            let rewritten: String = private.split_inclusive('\n').skip(1).collect();
            changes.push(mneme_dream::FileChange { path: w.mem.join("MEMORY.md"), before: Some(private.clone()), after: Some(rewritten), reason: "MEMORY.md: rewritten".into(), extra: Default::default() });
        }
        prop_assume!(!changes.is_empty());
        let before = w.snapshot();

        let history = w.dreams.history(&w.mem);
        let gate = w.dreams.status(&w.target(), &Enablement::On, &CachedFlags::default());
        let id = history.reserve_id(NOW as i64 * 1000).unwrap();
        let mut rec = mneme_dream::DreamRecord::started(id.clone(), &w.mem, NOW as i64 * 1000, Trigger::Manual, ("anthropic".into(), Some("claude-test-model".into())), gate);
        rec.status = DreamStatus::Pending;
        rec.changeset = mneme_dream::Changeset { root: w.mem.clone(), changes, extra: Default::default() };
        history.save(&rec).unwrap();
        w.dreams.approve(&w.mem, &id).unwrap();
        if f.empty_trash {
            w.dreams.memdir(&w.mem).empty_trash().unwrap();
        }
        w.dreams.undo(&w.mem, Some(&id), false).unwrap();
        prop_assert_eq!(w.snapshot(), before);
    }
}
