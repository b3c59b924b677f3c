//! Times as Queen spells them everywhere: UTC, microseconds, `Z`.

/// A time as the API spells it: UTC, microseconds, `Z`.
pub fn iso_time(us: i64) -> String {
    chrono::DateTime::from_timestamp_micros(us).unwrap_or_default().to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// An RFC 3339 time as microseconds since the epoch.
pub fn parse_iso_time(text: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(text).ok().map(|t| t.timestamp_micros())
}
