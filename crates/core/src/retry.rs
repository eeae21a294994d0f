//! Claude Code's retry backoff (`getRetryDelay` in `withRetry.ts`), the one schedule both the
//! model providers and team sync wait by: before retry `n` (1-based) wait
//! `min(500 ms · 2^(n−1), 32 s)` plus up to a quarter of that as jitter.

use std::time::Duration;

/// The first retry's base delay.
pub const BASE_DELAY: Duration = Duration::from_millis(500);
/// No base delay grows past this.
pub const MAX_DELAY: Duration = Duration::from_secs(32);

/// The wait before retry `attempt` (1-based) with Claude Code's base and cap. `jitter` is a
/// draw in `[0, 1)` (Math.random) and adds up to a quarter of the backoff.
pub fn retry_delay(attempt: u32, jitter: f64) -> Duration {
    backoff(BASE_DELAY, MAX_DELAY, attempt, jitter)
}

/// [`retry_delay`] with another base and cap (a provider's configured policy).
pub fn backoff(base: Duration, max: Duration, attempt: u32, jitter: f64) -> Duration {
    // 2^30 already passes any cap; the shift must not overflow for absurd attempt numbers.
    let exponent = attempt.saturating_sub(1).min(30);
    let backoff = base.saturating_mul(1u32 << exponent).min(max);
    backoff + backoff.mul_f64(0.25 * jitter.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_from_half_a_second_and_caps_at_32_seconds() {
        let ms = |n, j| retry_delay(n, j).as_secs_f64() * 1000.0;
        assert_eq!(ms(1, 0.0), 500.0);
        assert_eq!(ms(2, 0.0), 1000.0);
        assert_eq!(ms(3, 0.0), 2000.0);
        assert_eq!(ms(7, 0.0), 32_000.0);
        assert_eq!(ms(40, 0.0), 32_000.0);
        assert_eq!(ms(u32::MAX, 0.0), 32_000.0);
        assert_eq!(ms(1, 1.0), 625.0);
        assert_eq!(ms(7, 0.5), 36_000.0);
        assert_eq!(ms(1, -3.0), 500.0, "jitter outside [0, 1] is clamped");
    }
}
