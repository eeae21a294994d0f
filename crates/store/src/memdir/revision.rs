//! What a reader saw of a file, so a later write can tell whether someone else (usually
//! Claude Code) changed it in between.

use super::MemdirError;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::fs::Metadata;
use std::str::FromStr;
use std::time::UNIX_EPOCH;

/// The state of one file when it was read: whether it existed, its modification time, its
/// size and a hash of its bytes.
///
/// Two revisions [`match`](Revision::matches) when existence, size and content hash agree.
/// The mtime is carried for display and cheap change detection but does not decide
/// conflicts: a `touch` loses nothing, and a same-size rewrite inside one timestamp tick
/// would slip past an mtime check. Serialized as one opaque string so JavaScript front ends
/// never round 64-bit numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "specta", derive(specta::Type), specta(type = String))]
pub struct Revision {
    exists: bool,
    mtime_ns: i64,
    size: u64,
    hash: u64,
}

impl Revision {
    /// The revision of a file that does not exist (yet). Writing with this as the expected
    /// revision succeeds only if nothing has appeared at the path.
    pub const ABSENT: Revision = Revision { exists: false, mtime_ns: 0, size: 0, hash: 0 };

    /// The revision of `bytes` read from a file whose metadata is `meta`.
    pub fn of(bytes: &[u8], meta: &Metadata) -> Revision {
        Revision::from_parts(bytes, mtime_ns(meta))
    }

    /// The revision of `bytes` with an explicit mtime in nanoseconds since the epoch.
    pub fn from_parts(bytes: &[u8], mtime_ns: i64) -> Revision {
        Revision { exists: true, mtime_ns, size: bytes.len() as u64, hash: content_hash(bytes) }
    }

    /// Whether the file existed.
    pub fn exists(&self) -> bool {
        self.exists
    }

    /// Modification time in nanoseconds since the Unix epoch (0 when absent).
    pub fn mtime_ns(&self) -> i64 {
        self.mtime_ns
    }

    /// Size in bytes (0 when absent).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// Whether `other` describes the same content (see the type's documentation).
    pub fn matches(&self, other: &Revision) -> bool {
        self.exists == other.exists && self.size == other.size && self.hash == other.hash
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.exists {
            write!(f, "{}-{}-{:016x}", self.mtime_ns, self.size, self.hash)
        } else {
            f.write_str("absent")
        }
    }
}

impl FromStr for Revision {
    type Err = MemdirError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "absent" {
            return Ok(Revision::ABSENT);
        }
        let bad = || MemdirError::InvalidInput {
            field: "revision",
            reason: format!("\"{s}\" is not a revision Mneme handed out; reload the file to get a fresh one"),
        };
        // The mtime may be negative, so split from the right.
        let mut parts = s.rsplitn(3, '-');
        let hash = parts.next().and_then(|h| u64::from_str_radix(h, 16).ok()).ok_or_else(bad)?;
        let size = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        let mtime_ns = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
        Ok(Revision { exists: true, mtime_ns, size, hash })
    }
}

impl Serialize for Revision {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Revision {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// FNV-1a, 64 bit: fast, dependency-free and stable across runs and Rust versions, which a
/// revision token handed to a front end needs. It only has to catch accidental changes; the
/// size travels alongside.
pub(crate) fn content_hash(bytes: &[u8]) -> u64 {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;
    bytes.iter().fold(OFFSET, |h, &b| (h ^ u64::from(b)).wrapping_mul(PRIME))
}

/// Modification time in nanoseconds since the epoch (negative before 1970, 0 if unknown).
pub(crate) fn mtime_ns(meta: &Metadata) -> i64 {
    match meta.modified() {
        Ok(t) => match t.duration_since(UNIX_EPOCH) {
            Ok(d) => i64::try_from(d.as_nanos()).unwrap_or(i64::MAX),
            Err(e) => -i64::try_from(e.duration().as_nanos()).unwrap_or(i64::MAX),
        },
        Err(_) => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_round_trips() {
        for r in [
            Revision::ABSENT,
            Revision::from_parts(b"hello", 1_764_422_207_123_456_789),
            Revision::from_parts(b"", -5),
        ] {
            let s = r.to_string();
            assert_eq!(s.parse::<Revision>().unwrap(), r, "{s}");
            let json = serde_json::to_string(&r).unwrap();
            assert_eq!(serde_json::from_str::<Revision>(&json).unwrap(), r);
        }
        assert_eq!("nonsense".parse::<Revision>().unwrap_err().code(), "invalid-input");
    }

    #[test]
    fn matching_ignores_mtime_only() {
        let a = Revision::from_parts(b"x", 1);
        assert!(a.matches(&Revision::from_parts(b"x", 2)));
        assert!(!a.matches(&Revision::from_parts(b"y", 1)));
        assert!(!a.matches(&Revision::ABSENT));
        assert!(Revision::ABSENT.matches(&Revision::ABSENT));
    }
}
