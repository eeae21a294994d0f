//! Claude Code's pull retry schedule (`withRetry.ts` `getRetryDelay`): before attempt n+1 wait
//! `min(500 · 2^(n−1), 32 000) ms` plus up to 25 % of that as jitter; four attempts in all.
//! The wait goes through a [`Sleeper`] so tests see the delays without waiting them out.

use std::time::Duration;

/// The first retry's base delay.
pub const BASE_DELAY_MS: u64 = 500;
/// No base delay grows past this.
pub const MAX_DELAY_MS: u64 = 32_000;

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

/// The delay before attempt `attempt + 1`, given the attempt that just failed (1-based) and
/// a jitter draw in `[0, 1)`.
pub fn retry_delay(attempt: u32, jitter: f64) -> Duration {
    let base = BASE_DELAY_MS.saturating_mul(1u64 << attempt.saturating_sub(1).min(20)).min(MAX_DELAY_MS) as f64;
    Duration::from_secs_f64((base + jitter.clamp(0.0, 1.0) * 0.25 * base) / 1000.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_doubles_and_caps() {
        let ms = |n, j| retry_delay(n, j).as_secs_f64() * 1000.0;
        assert_eq!(ms(1, 0.0), 500.0);
        assert_eq!(ms(2, 0.0), 1000.0);
        assert_eq!(ms(3, 0.0), 2000.0);
        assert_eq!(ms(7, 0.0), 32_000.0);
        assert_eq!(ms(40, 0.0), 32_000.0);
        assert_eq!(ms(1, 1.0), 625.0);
        assert_eq!(ms(7, 0.5), 36_000.0);
    }

    #[test]
    fn real_jitter_stays_in_range() {
        for _ in 0..100 {
            let j = ThreadSleeper.jitter();
            assert!((0.0..1.0).contains(&j), "{j}");
        }
    }
}
