//! The background runs the api lists from the run log every build on the machine shares: a
//! run a newer Mneme recorded with an outcome this build does not know is listed, with that
//! outcome's name, rather than left out.

use mneme_api::{FixedClock, JobName, Mneme, RunOutcome};
use mneme_testsupport::TestHome;
use std::sync::Arc;

#[test]
fn a_run_with_a_newer_mneme_s_outcome_is_listed_with_its_name() {
    let t = TestHome::new();
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_778_068_800)));
    let log = mneme_scheduler::RunLog::in_data_dir(&t.env.data_dir());
    let done = mneme_scheduler::RunRecord {
        id: "a".into(),
        job: mneme_scheduler::JobKind::Dream.into(),
        target: "/m".into(),
        started_ms: 1,
        finished_ms: 2,
        outcome: mneme_scheduler::Outcome::Done { summary: "Improved 2 memories".into() },
    };
    log.append(&done).unwrap();
    let newer = r#"{"id":"b","job":"dream","target":"/m","startedMs":3,"finishedMs":4,"outcome":{"status":"deferred","until":9}}"#;
    let text = std::fs::read_to_string(log.path()).unwrap();
    std::fs::write(log.path(), format!("{text}{newer}\n")).unwrap();

    let all = m.background_runs(10, None).unwrap();
    assert_eq!(all.iter().map(|r| r.id.as_str()).collect::<Vec<_>>(), vec!["b", "a"]);
    assert_eq!((all[0].job, all[0].outcome, all[0].newer_outcome.as_deref()), (Some(JobName::Dream), RunOutcome::Newer, Some("deferred")));
    assert!(all[0].summary.contains("newer Mneme") && all[0].summary.contains("update Mneme"), "{}", all[0].summary);
    assert_eq!((all[1].outcome, all[1].newer_outcome.as_deref()), (RunOutcome::Done, None));
    // A listing of the run's job has it too, and the answer names the outcome for a front end.
    let dreams = m.background_runs(10, Some(JobName::Dream)).unwrap();
    assert_eq!(dreams.len(), 2);
    let json = serde_json::to_value(&dreams[0]).unwrap();
    assert_eq!((json["outcome"].as_str(), json["newerOutcome"].as_str()), (Some("newer"), Some("deferred")));
}
