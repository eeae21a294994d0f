//! The clock is injected so that ages, manifests and trash timestamps are testable.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Where "now" comes from. Engine code never calls `SystemTime::now()` itself.
pub trait Clock: Send + Sync {
    fn now(&self) -> SystemTime;

    /// Milliseconds since the Unix epoch, as JavaScript's `Date.now()` reports it.
    fn now_ms(&self) -> u128 {
        self.now().duration_since(UNIX_EPOCH).unwrap_or(Duration::ZERO).as_millis()
    }
}

/// The real wall clock; only front ends construct it.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock frozen at one instant, for tests.
#[derive(Debug, Clone, Copy)]
pub struct FixedClock(pub SystemTime);

impl FixedClock {
    pub fn at_unix_secs(secs: u64) -> Self {
        FixedClock(UNIX_EPOCH + Duration::from_secs(secs))
    }
}

impl Clock for FixedClock {
    fn now(&self) -> SystemTime {
        self.0
    }
}

/// A clock a test sets to any time, backwards included: how a clock stepped back (NTP, a
/// clock set by hand) or forward (a laptop waking after a week) is played without waiting.
#[derive(Debug)]
pub struct SetClock(std::sync::Mutex<SystemTime>);

impl SetClock {
    pub fn at(t: SystemTime) -> Self {
        SetClock(std::sync::Mutex::new(t))
    }

    pub fn at_unix_secs(secs: u64) -> Self {
        SetClock::at(UNIX_EPOCH + Duration::from_secs(secs))
    }

    pub fn set(&self, t: SystemTime) {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = t;
    }
}

impl Clock for SetClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
