//! Hostile KAIROS daily logs and dates, as another program or a teammate can leave them: a
//! log parses to its bullets (each text of one line), a date is a date or nothing. And the
//! offline dream over a hostile folder: its plan names only files inside it, and applying the
//! plan writes nothing outside.

use mneme_agent::apply_changeset;
use mneme_core::{Clock, FixedClock};
use mneme_dream::dates::parse_iso_date;
use mneme_dream::logs::parse_log;
use mneme_dream::offline::{consolidate, OfflineOptions};
use mneme_store::memdir::Memdir;
use mneme_testsupport::hostile::{config, deep, mutated_text, text};
use proptest::prelude::*;
use std::path::Component;
use std::sync::Arc;
use time::macros::date;

fn logs() -> Vec<Vec<u8>> {
    vec![b"# 2026-05-01\n\n- 09:15 Started the migration\n- Finished it\n  - nested\n* 23:59 late\n".to_vec()]
}

proptest! {
    #![proptest_config(config(192))]

    #[test]
    fn damaged_logs(content in mutated_text(logs())) {
        for e in parse_log(&content, date!(2026 - 05 - 01)) {
            prop_assert!(!e.text.contains('\n'));
            if let Some((h, m)) = e.time {
                prop_assert!(h < 100 && m < 100);
            }
        }
    }

    #[test]
    fn deep_logs(content in deep()) {
        let _ = parse_log(&content, date!(2026 - 05 - 01));
    }

    #[test]
    fn dates(s in text(), y in 0u32..10_000, m in 0u32..20, d in 0u32..40) {
        let _ = parse_iso_date(&s);
        if let Some(parsed) = parse_iso_date(&format!("{y:04}-{m:02}-{d:02}T00:00")) {
            prop_assert_eq!((parsed.year() as u32, parsed.month() as u32, parsed.day() as u32), (y, m, d));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The offline dream over a hostile memory folder: index lines whose targets leave the folder
// (`..`, absolute, percent-encoded, through links planted in it), names no file can have,
// damaged topic files and daily logs. Its plan names only files inside the folder, and
// applying it writes nothing outside, or is refused whole with a message.

const TARGETS: &[&str] = &[
    "a.md", "gone.md", "../escape.md", "../../etc/passwd.md", "/etc/x.md", "%2e%2e/x.md", "..%2Fx.md", "out/new.md", "outfile.md",
    "dangling.md", "team/t.md", "logs/2026/05/2026-05-01.md", "MEMORY.md", "a.md/b.md", "feedback_x%0A.md", "sub/../../x.md",
    "memory-index-overflow.md", ".hidden/x.md", "CON.md", "Gone.md", "user_y.md", "x%00.md",
];

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn offline_dream_of_a_hostile_folder_stays_inside(
        lines in proptest::collection::vec((0..TARGETS.len(), text(), any::<bool>()), 0..12),
        topic in mutated_text(vec![b"---\nname: a\ndescription: alpha\ntype: feedback\n---\nAlpha yesterday.\n".to_vec()]),
        log in mutated_text(logs()),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let mem = root.join("memory");
        let outside = root.join("outside");
        for d in [&mem.join("logs/2026/05"), &mem.join("sub"), &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        std::fs::write(outside.join("new.md"), "outside\n").unwrap();
        std::os::unix::fs::symlink(&outside, mem.join("out")).unwrap();
        std::os::unix::fs::symlink(outside.join("new.md"), mem.join("outfile.md")).unwrap();
        std::os::unix::fs::symlink(outside.join("none.md"), mem.join("dangling.md")).unwrap();
        std::fs::write(mem.join("a.md"), &topic).unwrap();
        std::fs::write(mem.join("logs/2026/05/2026-05-01.md"), &log).unwrap();
        let index: String = lines
            .iter()
            .map(|(t, hook, feedback)| format!("- [{}](<{}>) \u{2014} {}\n", if *feedback { "Prefers tabs" } else { "T" }, TARGETS[*t], hook.replace(['\n', '\r'], " ")))
            .collect();
        std::fs::write(mem.join("MEMORY.md"), &index).unwrap();
        let outside_before = mneme_testsupport::tree_snapshot(&outside);

        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_778_000_000));
        let memdir = Memdir::new(&mem, root.join("trash"), clock.clone());
        let opts = OfflineOptions { zone: mneme_store::local_time::LocalZone::Fixed(0), since: None, now: std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_778_000_000) };
        let plan = match consolidate(&memdir, opts) {
            Ok(plan) => plan,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                return Ok(());
            }
        };
        for c in &plan.changeset.changes {
            let rest = c.path.strip_prefix(&mem);
            prop_assert!(rest.is_ok_and(|r| r.components().all(|c| matches!(c, Component::Normal(_)))), "{} in {:?}", c.path.display(), index);
        }
        let mem_before = mneme_testsupport::tree_snapshot(&mem);
        match apply_changeset(&plan.changeset, &root.join("trash"), clock, &mneme_core::versions::newest()) {
            Ok(applied) => {
                for p in &applied.written {
                    prop_assert!(std::fs::canonicalize(p).unwrap().starts_with(&mem), "{}", p.display());
                }
            }
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                prop_assert_eq!(mneme_testsupport::tree_snapshot(&mem), mem_before, "a refused plan left changes: {}", e);
            }
        }
        prop_assert_eq!(mneme_testsupport::tree_snapshot(&outside), outside_before);
    }
}
