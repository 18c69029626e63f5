//! When a job runs: one absolute instant (RFC 3339 with an offset), or a cron expression read
//! in an IANA time zone. Plain functions of Unix milliseconds, so the scheduler and the tests
//! drive them with any "now" they like.
//!
//! Cron patterns are parsed and walked by `croner` over `jiff` zoned times, with the zone
//! rules of the system's database (`/usr/share/zoneinfo` or `$TZDIR`; the Docker image
//! installs tzdata). Daylight-saving changes follow croner's documented rules (OCPS /
//! Vixie cron):
//! - **gap** (spring forward, e.g. 02:00 → 03:00): a fixed-time job whose time falls in the
//!   missing hour runs once, at the first valid time after the gap (03:00 that day); an
//!   interval job (`*/5 * * * *`) skips the runs inside the gap.
//! - **repeat** (fall back, e.g. 03:00 → 02:00): a fixed-time job runs once, at the first of
//!   the two occurrences (summer time); an interval job runs through both.

use std::time::Duration;

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::Timestamp;
use jiff::tz::{TimeZone, TimeZoneDatabase};

/// How many upcoming runs are inspected to check a pattern's shortest interval.
const INTERVAL_PROBES: usize = 200;

/// Why a time or a pattern was refused; the text is shown to the model or the operator.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WhenError {
    /// Not an IANA time zone name.
    #[error("unknown time zone {0:?} (use an IANA name such as Europe/Paris or UTC)")]
    Zone(String),
    /// No zone database on this system (only UTC is known without one).
    #[error(
        "time zone {0:?} cannot be looked up: this system has no time zone database \
         (install tzdata, or set TZDIR to a zoneinfo directory)"
    )]
    NoDatabase(String),
    /// Not an RFC 3339 instant with an offset.
    #[error(
        "{0:?} is not an RFC 3339 time with an offset, such as 2026-12-01T09:00:00+01:00 or 2026-12-01T08:00:00Z"
    )]
    Instant(String),
    /// Not a cron pattern.
    #[error("{expr:?} is not a cron pattern (minute hour day-of-month month day-of-week): {why}")]
    Cron {
        /// The pattern as given.
        expr: String,
        /// The parser's reason.
        why: String,
    },
    /// A pattern that never runs again.
    #[error("{0:?} never runs")]
    Never(String),
    /// A pattern that runs more often than allowed.
    #[error(
        "{expr:?} runs every {gap_mins} min at times; the shortest interval allowed is {min_mins} min"
    )]
    TooOften {
        /// The pattern as given.
        expr: String,
        /// The shortest gap found, in minutes.
        gap_mins: i64,
        /// The configured minimum, in minutes.
        min_mins: u64,
    },
}

/// The time zone called `name`.
pub fn zone(name: &str) -> Result<TimeZone, WhenError> {
    // UTC (the default zone) without the zone database: its first use lists every directory
    // of /usr/share/zoneinfo, which a start validating the default need not pay for.
    if matches!(name.trim(), "UTC" | "Etc/UTC") {
        return Ok(TimeZone::UTC);
    }
    zone_in(jiff::tz::db(), name)
}

/// The time zone called `name` in `db`.
fn zone_in(db: &TimeZoneDatabase, name: &str) -> Result<TimeZone, WhenError> {
    db.get(name.trim()).map_err(|_| {
        if db.is_definitively_empty() {
            WhenError::NoDatabase(name.to_owned())
        } else {
            WhenError::Zone(name.to_owned())
        }
    })
}

/// Parse an absolute instant: RFC 3339 with `Z` or an offset (a trailing `[Zone]` is
/// allowed). A bare local time is refused: the model resolves the zone, not the gateway.
pub fn parse_instant(text: &str) -> Result<i64, WhenError> {
    let ts: Timestamp = text
        .trim()
        .parse()
        .map_err(|_| WhenError::Instant(text.to_owned()))?;
    Ok(ts.as_millisecond())
}

/// `ms` shown in `zone_name`: `2026-12-01 09:00 CET`.
pub fn local(ms: i64, zone_name: &str) -> String {
    let tz = zone(zone_name).unwrap_or(TimeZone::UTC);
    match Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.to_zoned(tz).strftime("%Y-%m-%d %H:%M %Z").to_string(),
        Err(_) => format!("{ms} ms"),
    }
}

/// `ms` as RFC 3339 with the zone's offset: `2026-12-01T09:00:00+01:00`.
pub fn rfc3339(ms: i64, zone_name: &str) -> String {
    let tz = zone(zone_name).unwrap_or(TimeZone::UTC);
    match Timestamp::from_millisecond(ms) {
        Ok(ts) => ts.to_zoned(tz).strftime("%Y-%m-%dT%H:%M:%S%:z").to_string(),
        Err(_) => format!("{ms} ms"),
    }
}

/// A cron pattern read in a time zone.
#[derive(Debug, Clone)]
pub struct Recurrence {
    cron: Cron,
    zone: TimeZone,
}

impl Recurrence {
    /// Parse `expr` (five fields, minute precision) in `zone_name`, refusing patterns that
    /// never run or that run more often than `min_interval` (checked over the next
    /// [`INTERVAL_PROBES`] runs).
    pub fn parse(expr: &str, zone_name: &str, min_interval: Duration) -> Result<Self, WhenError> {
        let zone = zone(zone_name)?;
        let parser = CronParser::builder().seconds(Seconds::Disallowed).build();
        let cron = parser.parse(expr.trim()).map_err(|e| WhenError::Cron {
            expr: expr.to_owned(),
            why: e.to_string(),
        })?;
        let this = Self { cron, zone };
        this.check_interval(expr, min_interval)?;
        Ok(this)
    }

    fn check_interval(&self, expr: &str, min: Duration) -> Result<(), WhenError> {
        let now = Timestamp::now().as_millisecond();
        let Some(mut prev) = self.next_after(now) else {
            return Err(WhenError::Never(expr.to_owned()));
        };
        if min.is_zero() {
            return Ok(());
        }
        let min_ms = min.as_millis() as i64;
        for _ in 0..INTERVAL_PROBES {
            let Some(next) = self.next_after(prev) else {
                break;
            };
            if next - prev < min_ms {
                return Err(WhenError::TooOften {
                    expr: expr.to_owned(),
                    gap_mins: (next - prev) / 60_000,
                    min_mins: min.as_secs() / 60,
                });
            }
            prev = next;
        }
        Ok(())
    }

    /// The first run strictly after `after_ms`, or `None` when there is none.
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        let start = Timestamp::from_millisecond(after_ms)
            .ok()?
            .to_zoned(self.zone.clone());
        let next = self.cron.find_next_occurrence(&start, false).ok()?;
        Some(next.timestamp().as_millisecond())
    }
}

#[cfg(test)]
mod tests;
