//! Backoff after failed runs, so a broken provider or an unreachable server is retried less and
//! less often instead of being hammered every turn.

use std::time::Duration;

#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    failures: u32,
}

impl Backoff {
    pub fn new(base: Duration, cap: Duration) -> Backoff {
        Backoff { base, cap, failures: 0 }
    }

    /// Records a failure and returns how long to wait before the next attempt: base × 2^(n−1), capped.
    pub fn failed(&mut self) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let factor = 1u32.checked_shl(self.failures - 1).unwrap_or(u32::MAX);
        self.base.saturating_mul(factor).min(self.cap)
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
    }

    pub fn failures(&self) -> u32 {
        self.failures
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_up_to_the_cap_and_resets_on_success() {
        let mut b = Backoff::new(Duration::from_secs(30), Duration::from_secs(600));
        let waits: Vec<u64> = (0..7).map(|_| b.failed().as_secs()).collect();
        assert_eq!(waits, vec![30, 60, 120, 240, 480, 600, 600]);
        b.succeeded();
        assert_eq!(b.failed().as_secs(), 30);
        for _ in 0..100 {
            b.failed();
        }
        assert_eq!(b.failed().as_secs(), 600);
    }
}
