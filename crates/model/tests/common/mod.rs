//! Shared by the provider tests: a sleeper that records instead of sleeping.

#![allow(dead_code)]

use futures_util::future::BoxFuture;
use mneme_model::{HttpOptions, RetryPolicy, Sleeper};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Records each requested wait and returns at once, so backoff is asserted without waiting.
#[derive(Default)]
pub struct RecordingSleeper(pub Mutex<Vec<Duration>>);

impl Sleeper for RecordingSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        self.0.lock().unwrap().push(duration);
        Box::pin(async {})
    }
}

impl RecordingSleeper {
    pub fn waits(&self) -> Vec<Duration> {
        self.0.lock().unwrap().clone()
    }
}

/// Never wakes: a request waiting out its backoff can only end by cancellation.
pub struct ForeverSleeper;

impl Sleeper for ForeverSleeper {
    fn sleep(&self, _duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(std::future::pending())
    }
}

pub fn options(max_retries: u32, timeout: Duration, sleeper: Arc<dyn Sleeper>) -> HttpOptions {
    HttpOptions { timeout, retry: RetryPolicy { max_retries, ..RetryPolicy::default() }, sleeper }
}

/// A loopback URL nothing answers at, held for as long as the port lives (a port picked free
/// and released could be taken by another process before the test connects).
pub fn refused_url() -> (mneme_testsupport::RefusedPort, String) {
    let port = mneme_testsupport::refused_port();
    let url = format!("http://{}", port.addr);
    (port, url)
}
