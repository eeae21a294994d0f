//! Local time as Claude Code has it: its JavaScript runtime asks the system's time zone for
//! each instant, so "today" and a daily log's date follow a daylight-saving change, or a move
//! to another zone, while it runs. A facade that lives for days (the desktop app, `mneme
//! serve`) must do the same: an offset read once at start dates everything after such a change
//! an hour (or a zone) off until a restart.

use std::time::SystemTime;

/// Where a facade's local offset comes from.
#[derive(Debug, Clone)]
pub enum LocalZone {
    /// One offset for every instant, in seconds east of UTC (tests, and a facade told nothing).
    Fixed(i32),
    /// One time zone's rules (from the tz database), asked for each instant.
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

    /// The offset from UTC, in seconds east, that this zone has at `at`.
    pub fn offset_at(&self, at: SystemTime) -> i32 {
        let zone = match self {
            LocalZone::Fixed(secs) => return *secs,
            LocalZone::Zone(z) => z,
            // An unknown zone is UTC, as a program whose zone cannot be found dates in UTC.
            LocalZone::System => &jiff::tz::TimeZone::system(),
        };
        // An instant jiff cannot represent (past year 9999) is dated as UTC rather than failing.
        jiff::Timestamp::try_from(at).map(|t| zone.to_offset(t).seconds()).unwrap_or(0)
    }
}

impl Default for LocalZone {
    fn default() -> Self {
        LocalZone::Fixed(0)
    }
}
