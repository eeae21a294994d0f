//! Waiting in a test for something that happens in the background (a watcher's batch, a loop's
//! pass, a server that is up, a drive that answers again): a bounded poll on the thing itself.
//! A fixed sleep followed by an assertion is flaky when the machine is loaded (CI runs the tests
//! on two cores beside other builds) and slow when it is not; a poll ends as soon as the thing
//! holds, and its deadline is generous because reaching it is the failure, not a measurement.
//!
//! Each wait names what it waited for, so a failure says what never happened; the `result` ones
//! also show what the last look saw instead (the list still marked, the error still answered), so
//! the failure says how far the thing got. A sleep that is
//! itself the thing under test (a debounce that must not fire before its time, a timeout, an
//! mtime tick) stays a sleep in the test, with a comment saying why.

use std::fmt::Debug;
use std::future::Future;
use std::time::{Duration, Instant};

/// How long a wait lasts before it fails, unless the caller gives its own: far longer than any
/// background step takes on a loaded machine, so reaching it means the thing never happens.
pub const PATIENCE: Duration = Duration::from_secs(30);

/// How often a poll looks again: short beside what tests wait for (hundreds of milliseconds),
/// long enough not to spin a core the background work needs.
const EVERY: Duration = Duration::from_millis(20);

/// Waits until `ok` holds, looking every 20 ms for at most [`PATIENCE`]; fails saying `what`
/// was not seen.
#[track_caller]
pub fn until(what: &str, ok: impl FnMut() -> bool) {
    until_within(PATIENCE, what, ok);
}

/// As [`until`], for at most `patience`.
#[track_caller]
pub fn until_within(patience: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    value_within(patience, what, || ok().then_some(()));
}

/// Asks `f` every 20 ms until it answers something, for at most [`PATIENCE`], and answers that;
/// fails saying `what` was not seen.
#[track_caller]
pub fn value<T>(what: &str, f: impl FnMut() -> Option<T>) -> T {
    value_within(PATIENCE, what, f)
}

/// As [`value`], for at most `patience`.
#[track_caller]
pub fn value_within<T>(patience: Duration, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited {patience:?} in vain for {what}");
        std::thread::sleep(EVERY);
    }
}

/// Asks `f` every 20 ms until it answers `Ok`, for at most [`PATIENCE`], and answers what it
/// holds; `Err` carries what this look saw instead, and a failure shows the last one beside
/// `what` (a bare [`value`] could only say that nothing came).
#[track_caller]
pub fn result<T, S: Debug>(what: &str, f: impl FnMut() -> Result<T, S>) -> T {
    result_within(PATIENCE, what, f)
}

/// As [`result`], for at most `patience`.
#[track_caller]
pub fn result_within<T, S: Debug>(patience: Duration, what: &str, mut f: impl FnMut() -> Result<T, S>) -> T {
    let deadline = Instant::now() + patience;
    loop {
        match f() {
            Ok(v) => return v,
            Err(seen) => assert!(Instant::now() < deadline, "{}", in_vain(patience, what, &seen)),
        }
        std::thread::sleep(EVERY);
    }
}

/// The failure of a `result` wait: what was waited for and what the last look saw.
fn in_vain(patience: Duration, what: &str, seen: &dyn Debug) -> String {
    format!("waited {patience:?} in vain for {what}; the last look saw: {seen:#?}")
}

/// As [`until`], in an async test: the poll sleeps on the runtime, not on its thread.
pub async fn until_async<F: Future<Output = bool>>(what: &str, mut ok: impl FnMut() -> F) {
    value_async_within(PATIENCE, what, || {
        let f = ok();
        async move { f.await.then_some(()) }
    })
    .await;
}

/// As [`until_async`], for at most `patience`.
pub async fn until_async_within<F: Future<Output = bool>>(patience: Duration, what: &str, mut ok: impl FnMut() -> F) {
    value_async_within(patience, what, || {
        let f = ok();
        async move { f.await.then_some(()) }
    })
    .await;
}

/// As [`value`], in an async test.
pub async fn value_async<T, F: Future<Output = Option<T>>>(what: &str, f: impl FnMut() -> F) -> T {
    value_async_within(PATIENCE, what, f).await
}

/// As [`value_within`], in an async test.
pub async fn value_async_within<T, F: Future<Output = Option<T>>>(patience: Duration, what: &str, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + patience;
    loop {
        if let Some(v) = f().await {
            return v;
        }
        assert!(Instant::now() < deadline, "waited {patience:?} in vain for {what}");
        tokio::time::sleep(EVERY).await;
    }
}

/// As [`result`], in an async test.
pub async fn result_async<T, S: Debug, F: Future<Output = Result<T, S>>>(what: &str, f: impl FnMut() -> F) -> T {
    result_async_within(PATIENCE, what, f).await
}

/// As [`result_within`], in an async test.
pub async fn result_async_within<T, S: Debug, F: Future<Output = Result<T, S>>>(patience: Duration, what: &str, mut f: impl FnMut() -> F) -> T {
    let deadline = Instant::now() + patience;
    loop {
        match f().await {
            Ok(v) => return v,
            Err(seen) => assert!(Instant::now() < deadline, "{}", in_vain(patience, what, &seen)),
        }
        tokio::time::sleep(EVERY).await;
    }
}

/// Runs `f` on a thread of its own and answers what it returns, or `None` when it has not
/// returned within `patience`: a call that blocks for ever (on a drive that does not answer,
/// say) then fails the test with the caller's words instead of hanging it. The thread is left
/// behind then. A panic on that thread fails the test here too (its message is printed above).
pub fn on_a_thread<T: Send + 'static>(patience: Duration, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(patience) {
        Ok(v) => Some(v),
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => None,
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => panic!("the call on its own thread panicked (its message is above)"),
    }
}

/// Runs `cmd` (started here) to its end and answers its output, or `None` when it has not ended
/// within `patience`: the process is killed then, so the test fails with the caller's words
/// instead of hanging or leaving it behind.
pub fn command_within(patience: Duration, cmd: &mut std::process::Command) -> Option<std::process::Output> {
    let child = cmd.spawn().unwrap_or_else(|e| panic!("{:?} could not start: {e}", cmd.get_program()));
    let pid = child.id();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(patience) {
        Ok(out) => Some(out.unwrap_or_else(|e| panic!("waiting for {:?} failed: {e}", cmd.get_program()))),
        Err(_) => {
            // The waiting thread owns the child, which it has not reaped: the pid is still its.
            let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_wait_ends_as_soon_as_the_thing_holds_and_answers_its_value() {
        let mut n = 0;
        let third = value("the third look", || {
            n += 1;
            (n == 3).then_some(n)
        });
        assert_eq!(third, 3);
        until("a thing already true", || true);
    }

    #[test]
    #[should_panic(expected = "waited 100ms in vain for a thing that never happens")]
    fn a_wait_for_what_never_happens_fails_naming_it() {
        until_within(Duration::from_millis(100), "a thing that never happens", || false);
    }

    #[test]
    fn a_result_wait_answers_the_first_ok() {
        let mut n = 0;
        let got = result("the third look", || {
            n += 1;
            if n == 3 {
                Ok(n)
            } else {
                Err(format!("look {n}"))
            }
        });
        assert_eq!(got, 3);
    }

    #[test]
    #[should_panic(expected = "waited 100ms in vain for a list with nothing marked; the last look saw: [\n    \"marked\",\n]")]
    fn a_result_wait_that_fails_shows_what_the_last_look_saw() {
        result_within(Duration::from_millis(100), "a list with nothing marked", || Err::<(), _>(vec!["marked"]));
    }

    #[test]
    fn an_async_result_wait_shows_what_the_last_look_saw() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let mut n = 0;
        let got = rt.block_on(result_async("the second look", || {
            n += 1;
            let seen = n;
            async move { if seen == 2 { Ok(seen) } else { Err(seen) } }
        }));
        assert_eq!(got, 2);
        let never = std::panic::catch_unwind(|| {
            rt.block_on(result_async_within(Duration::from_millis(50), "an answer", || async { Err::<(), _>("still refused: 503") }))
        });
        let message = never.unwrap_err().downcast::<String>().unwrap();
        assert_eq!(*message, "waited 50ms in vain for an answer; the last look saw: \"still refused: 503\"");
    }

    #[test]
    fn an_async_wait_polls_on_the_runtime() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let seen = Arc::new(AtomicUsize::new(0));
        let s = seen.clone();
        let got = rt.block_on(value_async("the second look", move || {
            let n = s.fetch_add(1, Ordering::SeqCst) + 1;
            async move { (n == 2).then_some(n) }
        }));
        assert_eq!(got, 2);
        let never = std::panic::catch_unwind(|| rt.block_on(value_async_within(Duration::from_millis(50), "nothing", || async { None::<()> })));
        assert!(never.is_err());
    }

    #[test]
    fn a_call_that_blocks_is_given_up_on_and_one_that_ends_answers() {
        assert_eq!(on_a_thread(Duration::from_secs(30), || 7), Some(7));
        assert_eq!(on_a_thread(Duration::from_millis(100), || std::thread::sleep(Duration::from_secs(5))), None);
    }

    #[test]
    fn a_command_past_its_patience_is_killed() {
        let ok = command_within(Duration::from_secs(30), &mut std::process::Command::new("true")).unwrap();
        assert!(ok.status.success());
        let started = Instant::now();
        let mut sleeper = std::process::Command::new("sleep");
        sleeper.arg("30").stdout(std::process::Stdio::piped());
        assert!(command_within(Duration::from_millis(200), &mut sleeper).is_none());
        // Given up on at its patience, not after the 30 s it asked for.
        assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());
    }
}
