//! Local time as Claude Code has it: its JavaScript runtime asks the time zone for each
//! instant, so "today", a daily log's date and the day a memory was written follow a
//! daylight-saving change, or a move to another zone, while it runs. Anything here that lives
//! across such a change (the desktop app, `mneme serve`, the scheduler, one dream over files
//! written on both sides of it) must do the same: an offset read once dates everything on the
//! other side of the change an hour (or a zone) off.
//!
//! Here, under the store rather than the api, so the engines that date things (dreams, the
//! scheduler) and the facade share one rule; the tz database is read from disk.

use std::time::SystemTime;

/// Where local offsets come from.
#[derive(Debug, Clone)]
pub enum LocalZone {
    /// One offset for every instant, in seconds east of UTC (tests, and a caller told nothing).
    Fixed(i32),
    /// One time zone's rules (from the tz database, or a POSIX `TZ` string), asked for each
    /// instant.
    Zone(jiff::tz::TimeZone),
    /// The system's time zone, asked for each instant: `TZ` when set, else `/etc/localtime`
    /// (jiff looks again every few minutes, so a zone changed while the app runs is followed).
    /// jiff reads the tz database itself rather than through libc's `localtime_r`, which is
    /// why any thread may ask (the `time` crate refuses once a process has threads).
    System,
}

/// A time zone name the tz database does not know.
#[derive(Debug, thiserror::Error)]
#[error("'{name}' is not a time zone this system knows ({source}); name one from the tz database, such as Europe/Berlin, or install the tz database (Debian: apt-get install tzdata)")]
pub struct UnknownZone {
    pub name: String,
    #[source]
    pub source: jiff::Error,
}

impl LocalZone {
    /// The system's time zone, as every other program on the machine sees it.
    pub fn system() -> Self {
        LocalZone::System
    }

    /// The zone the tz database calls `name` (`Europe/Berlin`).
    pub fn named(name: &str) -> Result<Self, UnknownZone> {
        jiff::tz::TimeZone::get(name).map(LocalZone::Zone).map_err(|source| UnknownZone { name: name.to_string(), source })
    }

    /// The zone a program started with `TZ` set to `tz` dates in (`None`: `TZ` unset, the
    /// system's zone). Read as the C library and the JavaScript runtimes Claude Code runs on
    /// read it: a leading `:` dropped, an empty value is UTC, an absolute path is a tz file, a
    /// name is looked up in the tz database, and anything else is a POSIX rule string
    /// (`EST5EDT,M3.2.0,M11.1.0`, `IST-5:30`). A value none of these reads leaves such a
    /// program in UTC, and so it is here.
    pub fn from_tz(tz: Option<&str>) -> Self {
        let Some(tz) = tz else { return LocalZone::System };
        let value = tz.strip_prefix(':').unwrap_or(tz);
        if value.is_empty() {
            return LocalZone::Fixed(0);
        }
        let zone = if value.starts_with('/') {
            std::fs::read(value).ok().and_then(|data| jiff::tz::TimeZone::tzif(value, &data).ok())
        } else {
            jiff::tz::TimeZone::get(value).ok().or_else(|| jiff::tz::TimeZone::posix(value).ok())
        };
        zone.map_or(LocalZone::Fixed(0), LocalZone::Zone)
    }

    /// The offset from UTC, in seconds east, that this zone has at `at`.
    pub fn offset_at(&self, at: SystemTime) -> i32 {
        self.offset_with(jiff::Timestamp::try_from(at).ok())
    }

    /// [`offset_at`](Self::offset_at) for `ns` nanoseconds since the epoch (a file's mtime as
    /// the memory folder's scan gives it).
    pub fn offset_at_unix_ns(&self, ns: i128) -> i32 {
        self.offset_with(jiff::Timestamp::from_nanosecond(ns).ok())
    }

    fn offset_with(&self, t: Option<jiff::Timestamp>) -> i32 {
        let zone = match self {
            LocalZone::Fixed(secs) => return *secs,
            LocalZone::Zone(z) => z,
            // An unknown zone is UTC, as a program whose zone cannot be found dates in UTC.
            LocalZone::System => &jiff::tz::TimeZone::system(),
        };
        // An instant jiff cannot represent (past year 9999) is dated as UTC rather than failing.
        t.map_or(0, |t| zone.to_offset(t).seconds())
    }
}

impl Default for LocalZone {
    fn default() -> Self {
        LocalZone::Fixed(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    /// 31 October 2026, 04:30 UTC: summer time in New York (UTC−4).
    const NY_SUMMER: u64 = 1_793_421_000;
    /// 10 November 2026, 12:00 UTC: winter time in New York (UTC−5).
    const NY_WINTER: u64 = 1_794_312_000;

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    /// Each instant has its own offset, for a `TZ` spelled every way the C library takes it.
    #[test]
    fn a_tz_value_dates_each_instant_with_its_own_offset() {
        let zoneinfo = "/usr/share/zoneinfo/America/New_York";
        let have_tzdata = std::path::Path::new(zoneinfo).exists();
        let mut spellings = vec!["EST5EDT,M3.2.0,M11.1.0"];
        if have_tzdata {
            spellings.extend(["America/New_York", ":America/New_York", zoneinfo]);
        }
        for tz in spellings {
            let zone = LocalZone::from_tz(Some(tz));
            assert_eq!(zone.offset_at(at(NY_SUMMER)), -4 * 3600, "{tz}: summer time");
            assert_eq!(zone.offset_at(at(NY_WINTER)), -5 * 3600, "{tz}: winter time");
            assert_eq!(zone.offset_at_unix_ns(i128::from(NY_SUMMER) * 1_000_000_000), -4 * 3600, "{tz}");
        }
        // POSIX strings: east of UTC is a negative offset there.
        assert_eq!(LocalZone::from_tz(Some("IST-5:30")).offset_at(at(NY_WINTER)), 19_800);
        assert_eq!(LocalZone::from_tz(Some("NST3:30")).offset_at(at(NY_WINTER)), -12_600);
        // What the C library leaves in UTC.
        for tz in ["", ":", "/no/such/zone/file", "Not a zone!"] {
            assert_eq!(LocalZone::from_tz(Some(tz)).offset_at(at(NY_SUMMER)), 0, "{tz:?}");
        }
        assert!(matches!(LocalZone::from_tz(None), LocalZone::System));
        assert_eq!(LocalZone::Fixed(3600).offset_at_unix_ns(i128::MAX), 3600, "one offset for every instant");
        assert_eq!(LocalZone::from_tz(Some("IST-5:30")).offset_at_unix_ns(i128::MAX), 0, "past what can be dated: UTC");
    }
}
