//! Times on the wire: ISO 8601 in UTC with milliseconds, as JavaScript's `toISOString()`.

use time::macros::format_description;
use time::OffsetDateTime;

pub fn iso_ms(epoch_ms: i64) -> String {
    let t = OffsetDateTime::from_unix_timestamp_nanos(i128::from(epoch_ms) * 1_000_000)
        .unwrap_or(OffsetDateTime::UNIX_EPOCH);
    t.format(format_description!("[year]-[month]-[day]T[hour]:[minute]:[second].[subsecond digits:3]Z"))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #[test]
    fn formats_like_to_iso_string() {
        assert_eq!(super::iso_ms(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(super::iso_ms(1_795_966_933_007), "2026-11-29T15:42:13.007Z");
    }
}
