use super::*;

/// Unix ms of an RFC 3339 instant.
fn at(text: &str) -> i64 {
    parse_instant(text).unwrap()
}

const DAY: Duration = Duration::from_secs(24 * 3600);
/// A floor a daily job passes even on a 23-hour DST day.
const HOUR: Duration = Duration::from_secs(3600);

#[test]
fn instants_need_an_offset_and_keep_it() {
    assert_eq!(at("2026-12-01T09:00:00+01:00"), at("2026-12-01T08:00:00Z"));
    assert_eq!(
        at("2026-12-01T09:00:00+01:00[Europe/Paris]"),
        at("2026-12-01T08:00:00Z")
    );
    for bad in [
        "2026-12-01T09:00:00",
        "tomorrow at 9",
        "",
        "2026-13-01T09:00:00Z",
    ] {
        assert!(
            matches!(parse_instant(bad), Err(WhenError::Instant(_))),
            "{bad}"
        );
    }
}

#[test]
fn unknown_zones_and_bad_patterns_are_refused_with_a_reason() {
    assert!(matches!(zone("Mars/Olympus"), Err(WhenError::Zone(_))));
    // A system without tzdata (a bare container): the error says what to install.
    let none = TimeZoneDatabase::none();
    let err = zone_in(&none, "Europe/Paris").unwrap_err();
    assert!(matches!(err, WhenError::NoDatabase(_)), "{err}");
    assert!(err.to_string().contains("install tzdata"), "{err}");
    assert!(zone_in(jiff::tz::db(), "Europe/Paris").is_ok());
    let err = Recurrence::parse("61 * * * *", "UTC", Duration::ZERO).unwrap_err();
    assert!(matches!(err, WhenError::Cron { .. }), "{err}");
    let err = Recurrence::parse("0 0 30 2 *", "UTC", Duration::ZERO).unwrap_err();
    assert!(
        matches!(err, WhenError::Never(_) | WhenError::Cron { .. }),
        "{err}"
    );
    assert!(
        Recurrence::parse("*/1 * * * *", "UTC", Duration::from_secs(300)).is_err(),
        "every minute is under a five-minute floor"
    );
    assert!(
        Recurrence::parse("*/1 9 * * *", "UTC", Duration::from_secs(300)).is_err(),
        "a burst inside one hour is caught too"
    );
    Recurrence::parse("*/5 * * * *", "UTC", Duration::from_secs(300)).unwrap();
    assert!(
        Recurrence::parse("0 9 * * * *", "UTC", Duration::ZERO).is_err(),
        "seconds are not a field"
    );
}

#[test]
fn a_pattern_runs_in_its_zone() {
    let r = Recurrence::parse("0 9 * * *", "Asia/Tokyo", DAY).unwrap();
    let next = r.next_after(at("2026-06-01T00:30:00Z")).unwrap();
    assert_eq!(
        next,
        at("2026-06-02T00:00:00Z"),
        "09:00 in Tokyo is 00:00 UTC"
    );
    assert_eq!(local(next, "Asia/Tokyo"), "2026-06-02 09:00 JST");
}

#[test]
fn a_daily_0230_job_runs_at_0300_on_the_spring_forward_day() {
    // Europe/Berlin, 2026-03-29: 02:00 CET jumps to 03:00 CEST; 02:30 does not exist.
    let r = Recurrence::parse("30 2 * * *", "Europe/Berlin", HOUR).unwrap();
    let day_before = r.next_after(at("2026-03-28T00:00:00+01:00")).unwrap();
    assert_eq!(day_before, at("2026-03-28T02:30:00+01:00"));
    let change_day = r.next_after(day_before).unwrap();
    assert_eq!(
        change_day,
        at("2026-03-29T03:00:00+02:00"),
        "once, at the first valid time after the gap"
    );
    let day_after = r.next_after(change_day).unwrap();
    assert_eq!(day_after, at("2026-03-30T02:30:00+02:00"));
}

#[test]
fn a_daily_0230_job_runs_once_on_the_fall_back_day() {
    // Europe/Berlin, 2026-10-25: 03:00 CEST falls back to 02:00 CET; 02:30 happens twice.
    let r = Recurrence::parse("30 2 * * *", "Europe/Berlin", HOUR).unwrap();
    let first = r.next_after(at("2026-10-25T00:00:00+02:00")).unwrap();
    assert_eq!(
        first,
        at("2026-10-25T02:30:00+02:00"),
        "the first (summer) 02:30"
    );
    let next = r.next_after(first).unwrap();
    assert_eq!(
        next,
        at("2026-10-26T02:30:00+01:00"),
        "not again at the second 02:30"
    );
}

#[test]
fn an_interval_job_runs_through_both_copies_of_a_repeated_hour() {
    let r = Recurrence::parse("0 * * * *", "Europe/Berlin", Duration::ZERO).unwrap();
    let mut t = at("2026-10-25T01:30:00+02:00");
    let mut runs = Vec::new();
    for _ in 0..4 {
        t = r.next_after(t).unwrap();
        runs.push(t);
    }
    let hour = 3_600_000;
    assert_eq!(runs[0], at("2026-10-25T02:00:00+02:00"));
    assert!(
        runs.windows(2).all(|w| w[1] - w[0] == hour),
        "hourly in real time across the change"
    );
}
