//! Claude Code's pull retry schedule (`withRetry.ts` `getRetryDelay`): before attempt n+1 wait
//! `min(500 · 2^(n−1), 32 000) ms` plus up to 25 % of that as jitter; four attempts in all.
//! The wait goes through a [`Sleeper`] so tests see the delays without waiting them out.

use std::time::Duration;

/// The schedule itself is Claude Code's one backoff, shared with the model providers.
pub use mneme_core::retry::retry_delay;
/// The first retry's base delay, in milliseconds.
pub const BASE_DELAY_MS: u64 = mneme_core::retry::BASE_DELAY.as_millis() as u64;
/// No base delay grows past this.
pub const MAX_DELAY_MS: u64 = mneme_core::retry::MAX_DELAY.as_millis() as u64;

/// Waits between attempts.
pub trait Sleeper: Send + Sync {
    fn sleep(&self, d: Duration);
    /// A number in `[0, 1)` that scales the jitter.
    fn jitter(&self) -> f64;
}

/// The real thing: the thread sleeps, the jitter comes from the OS's random source.
#[derive(Debug, Default, Clone, Copy)]
pub struct ThreadSleeper;

impl Sleeper for ThreadSleeper {
    fn sleep(&self, d: Duration) {
        std::thread::sleep(d);
    }

    fn jitter(&self) -> f64 {
        // 53 random bits make a uniform double in [0, 1), as Math.random does.
        getrandom::u64().map(|r| (r >> 11) as f64 / (1u64 << 53) as f64).unwrap_or(0.5)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn real_jitter_stays_in_range() {
        for _ in 0..100 {
            let j = ThreadSleeper.jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }
}
