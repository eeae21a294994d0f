//! Hostile KAIROS daily logs and dates, as another program or a teammate can leave them: a
//! log parses to its bullets (each text of one line), a date is a date or nothing.

use mneme_dream::dates::parse_iso_date;
use mneme_dream::logs::parse_log;
use mneme_testsupport::hostile::{config, deep, mutated_text, text};
use proptest::prelude::*;
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
