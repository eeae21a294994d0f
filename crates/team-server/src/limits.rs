//! Limits on sign-in, so that guessing passwords or flooding the sign-in endpoints costs the
//! attacker more than the server: attempts per client address, per user and per user code in
//! a sliding window (counted on the server's clock, so tests can move it), and a cap on how
//! many password hashes run at once (argon2 takes ~19 MiB and tens of milliseconds each).
//!
//! The counters live in each server process: with several replicas behind a load balancer an
//! attacker gets each limit once per replica, which the argon2 cap still bounds per process.

use std::collections::{HashMap, VecDeque};
use std::hash::Hash;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::Duration;

/// How many events of one kind one key may cause within `window`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    pub max: u32,
    pub window: Duration,
}

/// Every sign-in limit; [`SignInLimits::default`] suits a team server on the internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignInLimits {
    /// Requests for a device code from one client address.
    pub codes_per_ip: Window,
    /// Requests for a device code from one network (an IPv4 /24, an IPv6 /48), so that an
    /// attacker holding many addresses cannot fill the server-wide cap of waiting codes from
    /// one network.
    pub codes_per_network: Window,
    /// Wrong passwords from one client address (on the device page).
    pub failures_per_ip: Window,
    /// Wrong passwords for one user from one client address: what stops one attacker guessing,
    /// without letting that attacker lock the user out everywhere else.
    pub failures_per_user_address: Window,
    /// Wrong passwords for one user, from anywhere: a cap on guessing spread over many
    /// addresses. Reaching it locks the user out, except on the networks they signed in from
    /// within `trusted_for`, so that a guesser cannot lock them out of their own.
    pub failures_per_user: Window,
    pub trusted_for: Duration,
    /// Wrong passwords entered against one user code before the code is denied.
    pub failures_per_code: u32,
    /// Device codes waiting for approval at once, server-wide.
    pub max_live_codes: i64,
    /// Password hashes computed at once; more wait (up to `hash_wait`) for a turn.
    pub max_concurrent_hashes: usize,
    pub hash_wait: Duration,
}

impl Default for SignInLimits {
    fn default() -> SignInLimits {
        SignInLimits {
            codes_per_ip: Window { max: 20, window: Duration::from_secs(15 * 60) },
            codes_per_network: Window { max: 100, window: Duration::from_secs(15 * 60) },
            failures_per_ip: Window { max: 20, window: Duration::from_secs(15 * 60) },
            failures_per_user_address: Window { max: 10, window: Duration::from_secs(15 * 60) },
            failures_per_user: Window { max: 50, window: Duration::from_secs(15 * 60) },
            trusted_for: Duration::from_secs(30 * 24 * 3600),
            failures_per_code: 5,
            max_live_codes: 1000,
            max_concurrent_hashes: 2,
            hash_wait: Duration::from_secs(10),
        }
    }
}

/// Keys tracked at most; past this, new keys are not counted (the other limits still hold)
/// rather than letting an attacker with many addresses grow the map without bound.
const MAX_KEYS: usize = 100_000;

/// A sliding-window counter per key.
pub struct Counter<K> {
    limit: Window,
    events: Mutex<HashMap<K, VecDeque<i64>>>,
}

impl<K: Hash + Eq + Clone> Counter<K> {
    pub fn new(limit: Window) -> Counter<K> {
        Counter { limit, events: Mutex::new(HashMap::new()) }
    }

    fn window_ms(&self) -> i64 {
        i64::try_from(self.limit.window.as_millis()).unwrap_or(i64::MAX)
    }

    /// `Some(seconds until the oldest counted event leaves the window)` once `key` is at its
    /// limit at `now_ms`; `None` while it may still act.
    pub fn blocked(&self, key: &K, now_ms: i64) -> Option<u64> {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        let window = self.window_ms();
        let q = events.get_mut(key)?;
        while q.front().is_some_and(|t| now_ms - *t >= window) {
            q.pop_front();
        }
        if q.len() < self.limit.max as usize {
            return None;
        }
        let oldest = *q.front()?;
        let wait_ms = (oldest + window - now_ms).max(1000);
        Some(u64::try_from((wait_ms + 999) / 1000).unwrap_or(1))
    }

    /// Counts one event for `key` at `now_ms`.
    pub fn record(&self, key: &K, now_ms: i64) {
        let mut events = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if !events.contains_key(key) && events.len() >= MAX_KEYS {
            let window = self.window_ms();
            events.retain(|_, q| q.back().is_some_and(|t| now_ms - *t < window));
            if events.len() >= MAX_KEYS {
                tracing::warn!("sign-in limiter is full; a new client address is not counted");
                return;
            }
        }
        let q = events.entry(key.clone()).or_default();
        q.push_back(now_ms);
        // Only the newest `max` matter for the decision.
        while q.len() > self.limit.max as usize {
            q.pop_front();
        }
    }

    /// Forgets `key` (after a successful sign-in).
    pub fn clear(&self, key: &K) {
        self.events.lock().unwrap_or_else(|e| e.into_inner()).remove(key);
    }
}

/// The address a limit is kept for: IPv4 as is, IPv6 by its /64 (one host usually holds a
/// whole /64, so counting single IPv6 addresses would be no limit at all).
pub fn client_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let s = v6.segments();
                IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], s[3], 0, 0, 0, 0))
            }
        },
    }
}

/// The network a client address belongs to, as far as one holder usually has it: an IPv4
/// /24, an IPv6 /48 (what a site is given).
pub fn network_key(ip: IpAddr) -> IpAddr {
    match client_key(ip) {
        IpAddr::V4(v4) => {
            let [a, b, c, _] = v4.octets();
            IpAddr::V4(std::net::Ipv4Addr::new(a, b, c, 0))
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            IpAddr::V6(std::net::Ipv6Addr::new(s[0], s[1], s[2], 0, 0, 0, 0, 0))
        }
    }
}

/// Where users signed in successfully: (user name, [`network_key`]) → when, at most
/// [`MAX_KEYS`] of them (the oldest forgotten first).
pub struct Trusted {
    within: Duration,
    seen: Mutex<HashMap<(String, IpAddr), i64>>,
}

impl Trusted {
    /// Remembers that `user` signed in from `network` at `now_ms`.
    pub fn record(&self, user: &str, network: IpAddr, now_ms: i64) {
        let mut seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        if seen.len() >= MAX_KEYS && !seen.contains_key(&(user.to_string(), network)) {
            if let Some(oldest) = seen.iter().min_by_key(|(_, at)| **at).map(|(k, _)| k.clone()) {
                seen.remove(&oldest);
            }
        }
        seen.insert((user.to_string(), network), now_ms);
    }

    /// Whether `user` signed in from `network` within the trusted period before `now_ms`.
    pub fn contains(&self, user: &str, network: IpAddr, now_ms: i64) -> bool {
        let within = i64::try_from(self.within.as_millis()).unwrap_or(i64::MAX);
        let seen = self.seen.lock().unwrap_or_else(|e| e.into_inner());
        seen.get(&(user.to_string(), network)).is_some_and(|at| now_ms.saturating_sub(*at) < within)
    }
}

/// The server's sign-in limiters.
pub struct SignInGuard {
    pub limits: SignInLimits,
    pub codes_per_ip: Counter<IpAddr>,
    pub codes_per_network: Counter<IpAddr>,
    pub failures_per_ip: Counter<IpAddr>,
    pub failures_per_user_address: Counter<(String, IpAddr)>,
    pub failures_per_user: Counter<String>,
    pub failures_per_code: Counter<String>,
    /// The networks each user last signed in from, and when.
    pub trusted: Trusted,
    pub hashing: tokio::sync::Semaphore,
}

impl SignInGuard {
    pub fn new(limits: SignInLimits) -> SignInGuard {
        SignInGuard {
            codes_per_ip: Counter::new(limits.codes_per_ip),
            codes_per_network: Counter::new(limits.codes_per_network),
            failures_per_ip: Counter::new(limits.failures_per_ip),
            failures_per_user_address: Counter::new(limits.failures_per_user_address),
            failures_per_user: Counter::new(limits.failures_per_user),
            failures_per_code: Counter::new(Window { max: limits.failures_per_code, window: Duration::from_secs(24 * 3600) }),
            trusted: Trusted { within: limits.trusted_for, seen: Mutex::new(HashMap::new()) },
            hashing: tokio::sync::Semaphore::new(limits.max_concurrent_hashes.max(1)),
            limits,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_blocked_at_its_limit_until_the_window_moves_on() {
        let c: Counter<&str> = Counter::new(Window { max: 2, window: Duration::from_secs(60) });
        assert_eq!(c.blocked(&"a", 0), None);
        c.record(&"a", 0);
        c.record(&"a", 10_000);
        assert_eq!(c.blocked(&"a", 10_000), Some(50));
        assert_eq!(c.blocked(&"b", 10_000), None);
        assert_eq!(c.blocked(&"a", 60_000), None);
        c.clear(&"a");
        assert_eq!(c.blocked(&"a", 10_000), None);
    }

    #[test]
    fn ipv6_addresses_count_by_their_64_prefix() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        assert_eq!(client_key(a), client_key(b));
        let mapped: IpAddr = "::ffff:10.0.0.1".parse().unwrap();
        assert_eq!(client_key(mapped), "10.0.0.1".parse::<IpAddr>().unwrap());
    }

    #[test]
    fn networks_are_an_ipv4_24_and_an_ipv6_48() {
        let net = |s: &str| network_key(s.parse().unwrap()).to_string();
        assert_eq!(net("10.1.2.3"), "10.1.2.0");
        assert_eq!(net("::ffff:10.1.2.3"), "10.1.2.0");
        assert_eq!(net("2001:db8:1:2:aaaa::1"), "2001:db8:1::");
        assert_eq!(net("2001:db8:1:ffff::9"), net("2001:db8:1:2::1"));
        assert_ne!(net("2001:db8:2::1"), net("2001:db8:1::1"));
    }
}
