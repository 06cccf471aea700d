//! A latency histogram that many threads record into without a lock, read as Prometheus'
//! cumulative buckets (`/metrics`), and counters by label values.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in microseconds (a last, unbounded one follows).
pub const BOUNDS_US: [u64; 14] = [
    100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000,
];

/// Upper bounds for waits on people (approvals), in microseconds: a second to a day.
pub const WAIT_BOUNDS_US: [u64; 11] = [
    1_000_000,
    5_000_000,
    15_000_000,
    30_000_000,
    60_000_000,
    300_000_000,
    900_000_000,
    1_800_000_000,
    3_600_000_000,
    14_400_000_000,
    86_400_000_000,
];

/// Counts of durations by bucket, their sum and their number.
#[derive(Debug)]
pub struct Histogram {
    bounds: &'static [u64],
    buckets: Box<[AtomicU64]>,
    sum_us: AtomicU64,
    count: AtomicU64,
}

impl Default for Histogram {
    /// Over [`BOUNDS_US`]: a step's, a call's or a decision's time.
    fn default() -> Histogram {
        Histogram::over(&BOUNDS_US)
    }
}

/// What a [`Histogram`] held when read.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HistogramSnapshot {
    /// `(upper bound in µs, observations at or under it)`, cumulative; the last bound is
    /// `None` (+Inf) and its count is `count`.
    pub cumulative: Vec<(Option<u64>, u64)>,
    /// The sum of every observation, in microseconds.
    pub sum_us: u64,
    /// How many observations.
    pub count: u64,
}

impl Histogram {
    /// A histogram whose buckets end at `bounds` (ascending, in µs) and one unbounded one.
    pub fn over(bounds: &'static [u64]) -> Histogram {
        Histogram {
            bounds,
            buckets: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_us: AtomicU64::new(0),
            count: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub fn record(&self, d: Duration) {
        let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX);
        let i = self.bounds.partition_point(|b| *b < us);
        if let Some(bucket) = self.buckets.get(i) {
            bucket.fetch_add(1, Ordering::Relaxed);
        }
        self.sum_us.fetch_add(us, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now. Read while others record, a bucket may be one ahead of the count: the
    /// total is taken from the buckets, so the snapshot is always consistent in itself.
    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0u64;
        let mut cumulative = Vec::with_capacity(self.buckets.len());
        for (i, b) in self.buckets.iter().enumerate() {
            running = running.saturating_add(b.load(Ordering::Relaxed));
            cumulative.push((self.bounds.get(i).copied(), running));
        }
        HistogramSnapshot {
            cumulative,
            sum_us: self.sum_us.load(Ordering::Relaxed),
            count: running,
        }
    }
}

/// A counter by label values: one count for each combination of its `N` labels' values.
#[derive(Debug)]
pub struct Counts<const N: usize>(Mutex<BTreeMap<[String; N], u64>>);

impl<const N: usize> Default for Counts<N> {
    fn default() -> Counts<N> {
        Counts(Mutex::new(BTreeMap::new()))
    }
}

impl<const N: usize> Counts<N> {
    /// Adds `n` to the count of `labels`.
    pub fn add(&self, labels: [&str; N], n: u64) {
        if let Ok(mut m) = self.0.lock() {
            let count = m.entry(labels.map(str::to_owned)).or_default();
            *count = count.saturating_add(n);
        }
    }

    /// Every count, in label order.
    pub fn rows(&self) -> Vec<([String; N], u64)> {
        self.0.lock().map_or_else(
            |_| Vec::new(),
            |m| m.iter().map(|(k, n)| (k.clone(), *n)).collect(),
        )
    }
}

/// A measurement started: how long something took, for metrics only (what a run decides
/// reads time through the `Clock` port).
#[derive(Clone, Copy, Debug)]
pub struct Stopwatch(std::time::Instant);

impl Stopwatch {
    /// Starts measuring now.
    #[expect(
        clippy::disallowed_methods,
        reason = "metrics time what happened; no run's decision reads this clock"
    )]
    pub fn start() -> Stopwatch {
        Stopwatch(std::time::Instant::now())
    }

    /// Time since the start.
    pub fn elapsed(&self) -> Duration {
        self.0.elapsed()
    }
}

/// `us` microseconds as seconds, in decimal (`1500` is `0.0015`).
pub fn seconds(us: u64) -> String {
    let text = format!("{}.{:06}", us / 1_000_000, us % 1_000_000);
    text.trim_end_matches('0').trim_end_matches('.').to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_land_in_the_first_bucket_that_holds_them() {
        let h = Histogram::default();
        h.record(Duration::from_micros(100));
        h.record(Duration::from_micros(101));
        h.record(Duration::from_millis(3));
        h.record(Duration::from_secs(10));
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.sum_us, 100 + 101 + 3_000 + 10_000_000);
        assert_eq!(s.cumulative.first(), Some(&(Some(100), 1)));
        assert_eq!(s.cumulative.get(1), Some(&(Some(250), 2)));
        assert_eq!(s.cumulative.get(4), Some(&(Some(2_500), 2)));
        assert_eq!(s.cumulative.get(5), Some(&(Some(5_000), 3)));
        assert_eq!(s.cumulative.last(), Some(&(None, 4)));
    }

    #[test]
    fn seconds_are_written_in_decimal() {
        assert_eq!(seconds(1_500), "0.0015");
        assert_eq!(seconds(2_500_000), "2.5");
        assert_eq!(seconds(1_000_000), "1");
        assert_eq!(seconds(100), "0.0001");
    }
}
