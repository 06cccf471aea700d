//! Timers: a run that sleeps until a time. The store holds the sleeping run (its status
//! `sleeping` and its wake time), not a process: whichever process drives runs when the time
//! comes wakes it (`warrant serve`, `warrant worker`, `warrant resume --all`).
//!
//! A decider asks with a `wait` decision, a spec's step with `wait:` before it begins; both
//! take a duration (`for: 90s`) or a time (`until: 2026-12-08T09:00:00Z`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest one wait may last: a year and a day.
pub const WAIT_MAX_MS: u64 = 366 * DAY_MS;

const SECOND_MS: u64 = 1_000;
const MINUTE_MS: u64 = 60 * SECOND_MS;
const HOUR_MS: u64 = 60 * MINUTE_MS;
const DAY_MS: u64 = 24 * HOUR_MS;

/// How long to wait: for a duration, or until a time. Written `for: 90s` (`ms`, `s`, `m`, `h`,
/// `d`) or `until: 2026-12-08T09:00:00Z` (RFC 3339, with `Z` or an offset); kept, and recorded,
/// as milliseconds (`for_ms`, `until_ms`, which are accepted too).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(try_from = "WaitText")]
pub struct Wait {
    /// For this many milliseconds from when the wait is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_ms: Option<u64>,
    /// Until this time (ms since the epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until_ms: Option<u64>,
}

/// A wait as written.
#[derive(Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct WaitText {
    /// A duration: `500ms`, `90s`, `15m`, `2h`, `1d`.
    #[serde(default, rename = "for")]
    for_text: Option<String>,
    /// A time, RFC 3339: `2026-12-08T09:00:00Z`.
    #[serde(default)]
    until: Option<String>,
    /// A duration in milliseconds.
    #[serde(default)]
    for_ms: Option<u64>,
    /// A time in milliseconds since the epoch.
    #[serde(default)]
    until_ms: Option<u64>,
}

impl TryFrom<WaitText> for Wait {
    type Error = String;

    fn try_from(t: WaitText) -> Result<Wait, String> {
        let given = [
            t.for_text.is_some(),
            t.until.is_some(),
            t.for_ms.is_some(),
            t.until_ms.is_some(),
        ];
        if given.iter().filter(|g| **g).count() != 1 {
            return Err("a wait is exactly one of `for` (a duration) or `until` (a time)".into());
        }
        let for_ms = match (t.for_text, t.for_ms) {
            (Some(text), _) => Some(parse_duration(&text)?),
            (None, ms) => ms,
        };
        let until_ms = match (t.until, t.until_ms) {
            (Some(text), _) => Some(parse_rfc3339(&text)?),
            (None, ms) => ms,
        };
        let wait = Wait { for_ms, until_ms };
        wait.check()?;
        Ok(wait)
    }
}

impl Wait {
    /// A wait of `ms` milliseconds.
    pub fn lasting(ms: u64) -> Wait {
        Wait {
            for_ms: Some(ms),
            until_ms: None,
        }
    }

    /// What is wrong with it: both or neither given, or a duration past [`WAIT_MAX_MS`].
    pub fn check(&self) -> Result<(), String> {
        match (self.for_ms, self.until_ms) {
            (Some(ms), None) if ms > WAIT_MAX_MS => Err(format!(
                "a wait of {ms} ms is longer than the most, {WAIT_MAX_MS} ms (366 days)"
            )),
            (Some(_), None) | (None, Some(_)) => Ok(()),
            _ => Err("a wait is exactly one of `for` (a duration) or `until` (a time)".into()),
        }
    }

    /// When a wait recorded at `now_ms` ends; an error for a time more than [`WAIT_MAX_MS`]
    /// from then.
    pub fn wake_at(&self, now_ms: u64) -> Result<u64, String> {
        self.check()?;
        let at = match (self.for_ms, self.until_ms) {
            (Some(ms), _) => now_ms.saturating_add(ms),
            (_, Some(at)) => at,
            (None, None) => now_ms,
        };
        if at.saturating_sub(now_ms) > WAIT_MAX_MS {
            return Err(format!(
                "waiting until {} is further than the most, 366 days, from now",
                rfc3339(at)
            ));
        }
        Ok(at)
    }
}

/// A duration: a whole number and a unit, `ms`, `s`, `m`, `h` or `d` (`90s`, `1h`).
pub fn parse_duration(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let unit_ms = match unit.trim() {
        "ms" => 1,
        "s" => SECOND_MS,
        "m" => MINUTE_MS,
        "h" => HOUR_MS,
        "d" => DAY_MS,
        _ => {
            return Err(format!(
                "`{text}` is not a duration: a whole number and `ms`, `s`, `m`, `h` or `d` (`90s`)"
            ));
        }
    };
    let n: u64 = n
        .parse()
        .map_err(|_| format!("`{text}` is not a duration: it has no whole number (`90s`)"))?;
    n.checked_mul(unit_ms)
        .ok_or_else(|| format!("`{text}` is too long a duration"))
}

/// A time in RFC 3339 (`2026-12-08T09:00:00Z`, `2026-12-08T10:00:00.5+01:00`), as
/// milliseconds since the epoch.
pub fn parse_rfc3339(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "`{text}` is not a time in RFC 3339, as `2026-12-08T09:00:00Z` (with `Z` or an offset)"
        )
    };
    let t = text.trim().as_bytes();
    let num = |from: usize, len: usize| -> Result<i64, String> {
        let digits = t.get(from..from + len).ok_or_else(bad)?;
        if !digits.iter().all(u8::is_ascii_digit) {
            return Err(bad());
        }
        std::str::from_utf8(digits)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)
    };
    let sep = |at: usize, want: &[u8]| t.get(at).is_some_and(|c| want.contains(c));
    if !(sep(4, b"-") && sep(7, b"-") && sep(10, b"Tt ") && sep(13, b":") && sep(16, b":")) {
        return Err(bad());
    }
    let (year, month, day) = (num(0, 4)?, num(5, 2)?, num(8, 2)?);
    let (hour, minute, second) = (num(11, 2)?, num(14, 2)?, num(17, 2)?);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(year, month)
        || hour > 23
        || minute > 59
        || second > 60
    {
        return Err(bad());
    }
    // Fractions of a second: milliseconds kept, the rest dropped.
    let mut at = 19;
    let mut millis = 0;
    if sep(at, b".") {
        at += 1;
        let start = at;
        while t.get(at).is_some_and(u8::is_ascii_digit) {
            at += 1;
        }
        if at == start {
            return Err(bad());
        }
        let digits = (at - start).min(3);
        millis = num(start, digits)? * 10_i64.pow(3 - u32::try_from(digits).unwrap_or(3));
    }
    let offset_min = match t.get(at) {
        Some(b'Z' | b'z') if at + 1 == t.len() => 0,
        Some(sign @ (b'+' | b'-')) if at + 6 == t.len() && sep(at + 3, b":") => {
            let m = num(at + 1, 2)? * 60 + num(at + 4, 2)?;
            if *sign == b'-' { -m } else { m }
        }
        _ => return Err(bad()),
    };
    let days = days_from_civil(year, month, day);
    let secs = days * 86_400 + hour * 3_600 + minute * 60 + second.min(59) - offset_min * 60;
    let ms = secs * 1_000 + millis;
    u64::try_from(ms).map_err(|_| format!("`{text}` is before 1970"))
}

/// `ms` (since the epoch) as a UTC date and time of day: year, month, day, hour, minute and
/// second.
pub fn utc(ms: u64) -> (i64, i64, i64, i64, i64, i64) {
    let secs = i64::try_from(ms / 1_000).unwrap_or(i64::MAX);
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    (y, m, d, rest / 3_600, rest % 3_600 / 60, rest % 60)
}

/// `ms` (since the epoch) in RFC 3339, UTC, to the second (or the millisecond when it has one).
pub fn rfc3339(ms: u64) -> String {
    let (y, m, d, h, min, s) = utc(ms);
    match ms % 1_000 {
        0 => format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}Z"),
        frac => format!("{y:04}-{m:02}-{d:02}T{h:02}:{min:02}:{s:02}.{frac:03}Z"),
    }
}

fn is_leap(y: i64) -> bool {
    y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)
}

fn days_in_month(y: i64, m: i64) -> i64 {
    match m {
        2 if is_leap(y) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The date of `days` since 1970-01-01 (the inverse of [`days_from_civil`]).
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests")]

    use super::*;

    #[test]
    fn durations_read_with_their_unit() {
        assert_eq!(parse_duration("500ms"), Ok(500));
        assert_eq!(parse_duration("90s"), Ok(90_000));
        assert_eq!(parse_duration("15m"), Ok(900_000));
        assert_eq!(parse_duration("2h"), Ok(7_200_000));
        assert_eq!(parse_duration("1d"), Ok(86_400_000));
        for bad in ["", "90", "s", "1.5h", "-1s", "3w", "99999999999999999999d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn times_read_in_rfc3339_and_write_back() {
        assert_eq!(parse_rfc3339("1970-01-01T00:00:00Z"), Ok(0));
        assert_eq!(parse_rfc3339("2026-12-08T09:00:00Z"), Ok(1_796_720_400_000));
        assert_eq!(
            parse_rfc3339("2026-12-08T10:00:00.250+01:00"),
            Ok(1_796_720_400_250)
        );
        assert_eq!(parse_rfc3339("2024-02-29T00:00:00Z"), Ok(1_709_164_800_000));
        for bad in [
            "2026-12-08",
            "2026-12-08T09:00:00",
            "2026-02-30T00:00:00Z",
            "2025-02-29T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-12-08T24:00:00Z",
            "1969-12-31T23:59:59Z",
            "2026-12-08T09:00:00+0100",
            "2026-12-08T09:00:00Zjunk",
        ] {
            assert!(parse_rfc3339(bad).is_err(), "{bad}");
        }
        for ms in [0, 1_796_720_400_000, 1_709_164_800_123, 4_102_444_800_000] {
            assert_eq!(parse_rfc3339(&rfc3339(ms)), Ok(ms));
        }
    }

    #[test]
    fn a_wait_is_one_of_for_or_until_and_bounded() {
        let w: Wait = serde_json::from_value(serde_json::json!({"for": "90s"})).unwrap();
        assert_eq!(w, Wait::lasting(90_000));
        assert_eq!(w.wake_at(1_000), Ok(91_000));
        let w: Wait =
            serde_json::from_value(serde_json::json!({"until": "1970-01-01T00:01:00Z"})).unwrap();
        assert_eq!(w.wake_at(0), Ok(60_000));
        // Recorded as milliseconds, and read back so.
        let again: Wait = serde_json::from_value(serde_json::to_value(w).unwrap()).unwrap();
        assert_eq!(again, w);
        for bad in [
            serde_json::json!({}),
            serde_json::json!({"for": "1s", "until": "1970-01-01T00:01:00Z"}),
            serde_json::json!({"for": "400d"}),
            serde_json::json!({"for": "soon"}),
            serde_json::json!({"sleep": "1s"}),
        ] {
            assert!(
                serde_json::from_value::<Wait>(bad.clone()).is_err(),
                "{bad}"
            );
        }
        let far = Wait {
            for_ms: None,
            until_ms: Some(WAIT_MAX_MS + 10),
        };
        assert!(far.wake_at(0).is_err());
        assert_eq!(far.wake_at(20), Ok(WAIT_MAX_MS + 10));
    }
}
