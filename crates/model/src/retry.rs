//! Timeouts, retries and cancellation shared by the HTTP providers, with Claude Code's policy
//! (`withRetry` / `getRetryDelay` in 2.1.197): up to 10 retries; the n-th waits
//! `min(500 ms × 2^(n−1), 32 s)` plus up to 25 % jitter, or the server's `retry-after` seconds
//! when that is longer; 408, 409, 429, 5xx and network failures (timeouts included) are retried,
//! other statuses are not, and `x-should-retry: true|false` overrides the status.

use crate::{Cancel, ModelError};
use futures_util::future::BoxFuture;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

/// Waits between retries. Injected so tests can record the delays instead of sleeping.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()>;
}

/// The real clock's sleep.
#[derive(Debug, Clone, Copy, Default)]
pub struct TokioSleeper;

impl Sleeper for TokioSleeper {
    fn sleep(&self, duration: Duration) -> BoxFuture<'static, ()> {
        Box::pin(tokio::time::sleep(duration))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt (Claude Code's default `CLAUDE_CODE_MAX_RETRIES` is 10).
    pub max_retries: u32,
    pub base_delay: Duration,
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy { max_retries: 10, base_delay: mneme_core::retry::BASE_DELAY, max_delay: mneme_core::retry::MAX_DELAY }
    }
}

impl RetryPolicy {
    /// The wait before retry number `attempt` (1-based). `jitter` is in `[0, 1)` and adds up to a
    /// quarter of the backoff; a `retry_after` longer than the result wins.
    pub fn delay(&self, attempt: u32, retry_after: Option<Duration>, jitter: f64) -> Duration {
        let with_jitter = mneme_core::retry::backoff(self.base_delay, self.max_delay, attempt, jitter);
        match retry_after {
            Some(server) if server > with_jitter => server,
            _ => with_jitter,
        }
    }
}

/// Per-request settings every HTTP provider shares.
#[derive(Clone)]
pub struct HttpOptions {
    /// One attempt's limit, from sending to the last byte of the answer (Claude Code's
    /// `API_TIMEOUT_MS` defaults to 600 s).
    pub timeout: Duration,
    pub retry: RetryPolicy,
    pub sleeper: Arc<dyn Sleeper>,
}

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions { timeout: Duration::from_secs(600), retry: RetryPolicy::default(), sleeper: Arc::new(TokioSleeper) }
    }
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpOptions").field("timeout", &self.timeout).field("retry", &self.retry).finish_non_exhaustive()
    }
}

/// How one attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another attempt, after at least `retry_after` if the server said so.
    Retry { error: ModelError, retry_after: Option<Duration> },
    Fatal(ModelError),
}

/// Runs `attempt` until it succeeds, fails for good, the retries run out, or `cancel` fires.
pub(crate) async fn with_retries<T, F, Fut>(options: &HttpOptions, cancel: &Cancel, mut attempt: F) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, Failure>>,
{
    let timeout_secs = options.timeout.as_secs();
    let mut retries = 0;
    loop {
        if cancel.is_cancelled() {
            return Err(ModelError::Cancelled);
        }
        let outcome = tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
            outcome = tokio::time::timeout(options.timeout, attempt()) => outcome,
        };
        let (error, retry_after) = match outcome {
            Ok(Ok(value)) => return Ok(value),
            Ok(Err(Failure::Fatal(error))) => return Err(error),
            Ok(Err(Failure::Retry { error, retry_after })) => (error, retry_after),
            Err(_elapsed) => (ModelError::Timeout(timeout_secs), None),
        };
        if retries >= options.retry.max_retries {
            return Err(error);
        }
        // A server that asks for a longer wait than a person would sit through (a misbehaving
        // one said 99,999,999 s) gets an answer now, not a call that never ends.
        if let Some(asked) = retry_after.filter(|w| *w > MAX_SERVER_WAIT) {
            return Err(error.noting(&format!(
                "the server asks to wait {} s before trying again, longer than Mneme waits ({} s); try again after that",
                asked.as_secs(),
                MAX_SERVER_WAIT.as_secs()
            )));
        }
        retries += 1;
        let wait = options.retry.delay(retries, retry_after, jitter());
        tokio::select! {
            biased;
            () = cancel.cancelled() => return Err(ModelError::Cancelled),
            () = options.sleeper.sleep(wait) => {}
        }
    }
}

/// A uniform number in `[0, 1)` from the OS; no jitter at all if the OS has no randomness to give.
fn jitter() -> f64 {
    getrandom::u32().map_or(0.0, |n| f64::from(n) / (f64::from(u32::MAX) + 1.0))
}

/// The longest `retry-after` Mneme waits out before one more attempt.
pub const MAX_SERVER_WAIT: Duration = Duration::from_secs(60);

/// `retry-after` read the way Claude Code reads it: `parseInt` of the header, in seconds.
pub(crate) fn retry_after(headers: &reqwest::header::HeaderMap) -> Option<Duration> {
    let value = headers.get(reqwest::header::RETRY_AFTER)?.to_str().ok()?.trim();
    let digits: String = value.chars().take_while(char::is_ascii_digit).collect();
    digits.parse::<u64>().ok().map(Duration::from_secs)
}

/// Whether a failed HTTP status is worth retrying, `x-should-retry` first.
pub(crate) fn status_is_retryable(status: u16, headers: &reqwest::header::HeaderMap) -> bool {
    match headers.get("x-should-retry").and_then(|v| v.to_str().ok()) {
        Some("true") => true,
        Some("false") => false,
        _ => matches!(status, 408 | 409 | 429) || status >= 500,
    }
}

/// A transport failure (no answer, a broken connection, a body that stopped arriving).
pub(crate) fn transport_failure(error: &reqwest::Error, timeout: Duration, url: &str) -> Failure {
    if error.is_timeout() {
        return Failure::Retry { error: ModelError::Timeout(timeout.as_secs()), retry_after: None };
    }
    let mut detail = error.to_string();
    let mut source = std::error::Error::source(error);
    while let Some(inner) = source {
        detail = format!("{detail}: {inner}");
        source = inner.source();
    }
    // A request that could not even be built (a key that is not a valid header value, an
    // address reqwest cannot use) fails the same way every time: waiting minutes of retries
    // and then blaming the network would send the user to the wrong place.
    // An untrusted certificate stays untrusted however often it is asked for.
    if detail.contains("invalid peer certificate") {
        return Failure::Fatal(ModelError::NotConfigured(format!(
            "{url} presented a certificate Mneme does not trust ({detail}): if your company's certificate authority or a TLS-inspecting proxy signs it, set NODE_EXTRA_CA_CERTS to that authority's PEM file, as for Claude Code"
        )));
    }
    if error.is_builder() {
        return Failure::Fatal(ModelError::NotConfigured(format!(
            "the request to {url} could not be made ({detail}): check the base URL in Settings → Model provider, and store the API key again if it may hold stray characters"
        )));
    }
    Failure::Retry { error: ModelError::Network(format!("{url} ({detail})")), retry_after: None }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_from_half_a_second_and_caps_at_32_seconds() {
        let p = RetryPolicy::default();
        let ms = |n| p.delay(n, None, 0.0).as_millis();
        assert_eq!([ms(1), ms(2), ms(3), ms(4), ms(7), ms(8), ms(20)], [500, 1000, 2000, 4000, 32_000, 32_000, 32_000]);
        assert_eq!(p.delay(1, None, 0.999_999).as_millis(), 624);
        assert_eq!(p.delay(7, None, 0.5).as_millis(), 36_000);
    }

    #[test]
    fn retry_after_wins_only_when_longer() {
        let p = RetryPolicy::default();
        assert_eq!(p.delay(1, Some(Duration::from_secs(7)), 0.0), Duration::from_secs(7));
        assert_eq!(p.delay(7, Some(Duration::from_secs(1)), 0.0), Duration::from_secs(32));
    }

    #[test]
    fn retry_after_is_parsed_like_parse_int() {
        let mut h = reqwest::header::HeaderMap::new();
        for (raw, want) in [("7", Some(7)), (" 12 ", Some(12)), ("3.9", Some(3)), ("soon", None)] {
            h.insert(reqwest::header::RETRY_AFTER, raw.parse().unwrap());
            assert_eq!(retry_after(&h), want.map(Duration::from_secs), "{raw}");
        }
    }

    #[test]
    fn retryable_statuses_and_the_override_header() {
        let none = reqwest::header::HeaderMap::new();
        let retryable: Vec<u16> =
            [400, 401, 403, 404, 408, 409, 413, 429, 500, 503, 529].into_iter().filter(|s| status_is_retryable(*s, &none)).collect();
        assert_eq!(retryable, [408, 409, 429, 500, 503, 529]);
        let mut h = reqwest::header::HeaderMap::new();
        h.insert("x-should-retry", "false".parse().unwrap());
        assert!(!status_is_retryable(500, &h));
        h.insert("x-should-retry", "true".parse().unwrap());
        assert!(status_is_retryable(400, &h));
    }

    #[test]
    fn jitter_stays_in_range() {
        for _ in 0..100 {
            let j = jitter();
            assert!((0.0..1.0).contains(&j));
        }
    }
}
