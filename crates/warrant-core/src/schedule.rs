//! Schedules: runs of a catalog spec started at the ticks of a cron expression in a time zone.
//! This module is the pure part — the expression ([`Cron`]), a schedule as the store keeps it
//! ([`Schedule`]) and what a due tick does ([`Overlap`], [`CatchUp`], [`due_ticks`]); the
//! time zones and the starting of runs are `warrant_app::schedule`'s.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// A five-field cron expression: minute, hour, day of the month, month, day of the week
/// (`0`–`7`, both `0` and `7` Sunday; month and day names `JAN`, `MON` accepted), each `*`, a
/// value, a range `a-b`, a step `*/n` or `a-b/n`, or a list of these. As in Vixie cron, when
/// both days are restricted a day that matches either is a day to run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cron {
    text: String,
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    days_restricted: bool,
    weekdays_restricted: bool,
}

const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];
const WEEKDAYS: [&str; 7] = ["SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT"];

impl Cron {
    /// Whether a local time (month 1–12, day 1–31, weekday 0–6 from Sunday) is a tick.
    pub fn matches(&self, minute: u8, hour: u8, day: u8, month: u8, weekday: u8) -> bool {
        bit64(self.minutes, minute)
            && bit32(self.hours, hour)
            && bit16(self.months, month)
            && self.day_matches(day, weekday)
    }

    /// Whether a day (1–31, weekday 0–6) is one to run on.
    pub fn day_matches(&self, day: u8, weekday: u8) -> bool {
        let by_day = bit32(self.days, day);
        let by_weekday = weekday < 8 && (self.weekdays >> weekday) & 1 == 1;
        match (self.days_restricted, self.weekdays_restricted) {
            (true, true) => by_day || by_weekday,
            (true, false) => by_day,
            (false, true) => by_weekday,
            (false, false) => true,
        }
    }

    /// Whether the month (1–12) is one to run in.
    pub fn month_matches(&self, month: u8) -> bool {
        bit16(self.months, month)
    }

    /// Whether the hour (0–23) is one to run in.
    pub fn hour_matches(&self, hour: u8) -> bool {
        bit32(self.hours, hour)
    }

    /// Whether the minute (0–59) is one to run at.
    pub fn minute_matches(&self, minute: u8) -> bool {
        bit64(self.minutes, minute)
    }
}

fn bit64(set: u64, i: u8) -> bool {
    i < 64 && (set >> i) & 1 == 1
}

fn bit32(set: u32, i: u8) -> bool {
    i < 32 && (set >> i) & 1 == 1
}

fn bit16(set: u16, i: u8) -> bool {
    i < 16 && (set >> i) & 1 == 1
}

/// The values one field names, as a bit set (bit `v` for value `v`), and whether it is
/// restricted (not `*`).
fn field(
    text: &str,
    name: &str,
    min: u32,
    max: u32,
    names: &[&str],
) -> Result<(u64, bool), String> {
    let value = |s: &str| -> Result<u32, String> {
        if let Some(i) = names.iter().position(|n| n.eq_ignore_ascii_case(s)) {
            return Ok(u32::try_from(i).unwrap_or(0) + min);
        }
        let v: u32 = s
            .parse()
            .map_err(|_| format!("{name}: `{s}` is not a number"))?;
        if v < min || v > max {
            return Err(format!("{name}: {v} is outside {min}-{max}"));
        }
        Ok(v)
    };
    let mut set = 0u64;
    for part in text.split(',') {
        if part.is_empty() {
            return Err(format!("{name}: an empty item in `{text}`"));
        }
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => {
                let step: u32 = s
                    .parse()
                    .map_err(|_| format!("{name}: step `{s}` is not a number"))?;
                if step == 0 {
                    return Err(format!("{name}: a step of 0"));
                }
                (r, step)
            }
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" => (min, max),
            r => match r.split_once('-') {
                Some((a, b)) => (value(a)?, value(b)?),
                None if step > 1 => (value(r)?, max),
                None => {
                    let v = value(r)?;
                    (v, v)
                }
            },
        };
        if from > to {
            return Err(format!("{name}: the range {from}-{to} runs backwards"));
        }
        let mut v = from;
        while v <= to {
            set |= 1u64 << v;
            v += step;
        }
    }
    Ok((set, text != "*"))
}

impl FromStr for Cron {
    type Err = String;
    fn from_str(text: &str) -> Result<Cron, String> {
        let parts: Vec<&str> = text.split_whitespace().collect();
        let [m, h, dom, mon, dow] = parts.as_slice() else {
            return Err(format!(
                "`{text}` has {} fields: a cron expression has five (minute hour day month weekday)",
                parts.len()
            ));
        };
        let (minutes, _) = field(m, "minute", 0, 59, &[])?;
        let (hours, _) = field(h, "hour", 0, 23, &[])?;
        let (days, days_restricted) = field(dom, "day of the month", 1, 31, &[])?;
        let (months, _) = field(mon, "month", 1, 12, &MONTHS)?;
        let (weekdays, weekdays_restricted) = field(dow, "day of the week", 0, 7, &WEEKDAYS)?;
        // 7 is Sunday too.
        let weekdays = (weekdays | (weekdays >> 7)) & 0x7f;
        Ok(Cron {
            text: parts.join(" "),
            minutes,
            hours: u32::try_from(hours).unwrap_or(u32::MAX),
            days: u32::try_from(days).unwrap_or(u32::MAX),
            months: u16::try_from(months).unwrap_or(u16::MAX),
            weekdays: u8::try_from(weekdays).unwrap_or(u8::MAX),
            days_restricted,
            weekdays_restricted,
        })
    }
}

impl fmt::Display for Cron {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Serialize for Cron {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.text)
    }
}

impl<'de> Deserialize<'de> for Cron {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Cron, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

/// What a tick does while the schedule's previous run has not ended.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// The tick starts nothing (recorded as skipped).
    #[default]
    Skip,
    /// The tick's run starts when the previous one ends.
    Queue,
    /// The previous run is cancelled and the tick's starts.
    Cancel,
}

/// Which ticks missed while no process looked (the fleet was down) are run once one does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// Only the most recent missed tick.
    #[default]
    Latest,
    /// Every missed tick, oldest first (at most [`CATCH_UP_MAX`]).
    All,
    /// None: the schedule goes on from the next tick.
    None,
}

/// Most missed ticks one look runs with [`CatchUp::All`].
pub const CATCH_UP_MAX: usize = 100;

/// A schedule as the store keeps it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schedule {
    /// Its name, unique in the store.
    pub id: String,
    /// When it ticks.
    pub cron: Cron,
    /// In which time zone (IANA, e.g. `Europe/Berlin`; `UTC`).
    pub time_zone: String,
    /// The catalog spec each tick starts (its newest version then, unless `spec_digest`).
    pub spec_id: String,
    /// Exactly this version of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec_digest: Option<String>,
    /// The inputs each run is started with.
    #[serde(default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub inputs: serde_json::Map<String, serde_json::Value>,
    /// While the previous run goes on.
    #[serde(default)]
    pub overlap: Overlap,
    /// After downtime.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// The tenant the runs act for.
    pub tenant: String,
    /// The user the runs act for (who made the schedule).
    pub user: String,
    /// Paused: no tick starts anything (ticks missed while paused are not caught up).
    #[serde(default)]
    pub paused: bool,
    /// When it was made (ms since the epoch); no tick before it is due.
    pub created_at_ms: u64,
    /// Its ticks are due from this time on (ms since the epoch): when it was made, or last
    /// resumed.
    pub from_ms: u64,
}

/// What became of one tick.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
pub struct Tick {
    /// The schedule.
    pub schedule: String,
    /// The tick's time (ms since the epoch).
    pub at_ms: u64,
    /// The run it started (the id chosen when the tick was claimed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<crate::ids::RunId>,
    /// `started`, `queued` (waiting for the previous run), `skipped` or `failed`.
    pub state: TickState,
    /// Why it was skipped or failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// Where a tick stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TickState {
    /// Its run was started.
    Started,
    /// Its run starts when the previous run ends.
    Queued,
    /// It started nothing (the previous run went on; or missed, not caught up).
    Skipped,
    /// Its run could not be started (the spec is gone, an input refused).
    Failed,
}

impl TickState {
    /// The name a store keeps.
    pub fn name(self) -> &'static str {
        match self {
            TickState::Started => "started",
            TickState::Queued => "queued",
            TickState::Skipped => "skipped",
            TickState::Failed => "failed",
        }
    }
}

impl FromStr for TickState {
    type Err = String;
    fn from_str(s: &str) -> Result<TickState, String> {
        [
            TickState::Started,
            TickState::Queued,
            TickState::Skipped,
            TickState::Failed,
        ]
        .into_iter()
        .find(|t| t.name() == s)
        .ok_or_else(|| format!("no tick state `{s}`"))
    }
}

/// The ticks of a schedule that are due at `now_ms` and not yet claimed, given every tick
/// from `from_ms` to `now_ms` (`ticks`, oldest first, as the time zone makes them) and the
/// last tick claimed (`last`): each to claim, and whether it is run or recorded as missed.
/// A tick is missed when a later one is also due (the fleet was down at its time), and then
/// run or not by `catch_up`.
pub fn due_ticks(ticks: &[u64], last: Option<u64>, catch_up: CatchUp) -> Vec<(u64, bool)> {
    let fresh: Vec<u64> = ticks
        .iter()
        .copied()
        .filter(|t| last.is_none_or(|l| *t > l))
        .collect();
    let n = fresh.len();
    fresh
        .into_iter()
        .enumerate()
        .map(|(i, t)| {
            let newest = i + 1 == n;
            let run = match catch_up {
                CatchUp::All => i + CATCH_UP_MAX >= n,
                CatchUp::Latest => newest,
                CatchUp::None => newest && n == 1,
            };
            (t, run)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn fields_take_values_ranges_steps_lists_and_names() {
        let c: Cron = "*/15 9-17 * JAN,jul MON-FRI".parse().unwrap();
        assert!(c.matches(0, 9, 3, 1, 1));
        assert!(c.matches(45, 17, 3, 7, 5));
        assert!(!c.matches(50, 9, 3, 1, 1));
        assert!(!c.matches(0, 8, 3, 1, 1));
        assert!(!c.matches(0, 9, 3, 2, 1));
        assert!(!c.matches(0, 9, 3, 1, 0));
        let sunday: Cron = "0 0 * * 7".parse().unwrap();
        assert!(sunday.matches(0, 0, 1, 1, 0));
        // Both days restricted: either matches.
        let either: Cron = "0 0 1 * MON".parse().unwrap();
        assert!(either.matches(0, 0, 1, 3, 3));
        assert!(either.matches(0, 0, 9, 3, 1));
        assert!(!either.matches(0, 0, 9, 3, 2));
        assert_eq!(c.to_string(), "*/15 9-17 * JAN,jul MON-FRI");
    }

    #[test]
    fn a_bad_expression_says_which_field_and_why() {
        for (bad, says) in [
            ("* * * *", "has 4 fields"),
            ("60 * * * *", "minute: 60 is outside 0-59"),
            ("* 5-3 * * *", "hour: the range 5-3 runs backwards"),
            ("*/0 * * * *", "minute: a step of 0"),
            ("* * * FOO *", "month: `FOO` is not a number"),
            ("* * 0 * *", "day of the month: 0 is outside 1-31"),
            ("1,,2 * * * *", "minute: an empty item"),
        ] {
            let err = bad.parse::<Cron>().unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn missed_ticks_are_caught_up_as_the_schedule_says() {
        let ticks = [10, 20, 30, 40];
        assert_eq!(
            due_ticks(&ticks, Some(20), CatchUp::Latest),
            vec![(30, false), (40, true)]
        );
        assert_eq!(
            due_ticks(&ticks, Some(20), CatchUp::All),
            vec![(30, true), (40, true)]
        );
        assert_eq!(
            due_ticks(&ticks, Some(20), CatchUp::None),
            vec![(30, false), (40, false)]
        );
        // On time: one due tick runs whatever the catch-up.
        assert_eq!(due_ticks(&ticks, Some(30), CatchUp::None), vec![(40, true)]);
        assert!(due_ticks(&ticks, Some(40), CatchUp::All).is_empty());
    }
}
