//! Latency histograms: what request/response workloads record per transaction.
//!
//! A [`LatencyHistogram`] wraps an HdrHistogram of nanoseconds with 3 significant digits over
//! [`LOWEST_NS`] ..= [`HIGHEST_NS`] (1 ns .. 100 s), about 220 KB each. Values outside that
//! range are clamped into it and counted ([`LatencyHistogram::clamped_count`]).
//!
//! What is exact and what is not:
//! - `count`, `min_ns`, `max_ns` are exact (of the clamped values).
//! - `mean_ns` and `stddev_ns` (population standard deviation, divisor `n`) are computed from
//!   the values themselves with Welford's running update (Chan's formula on merge), not from
//!   the buckets, so they are exact up to `f64` rounding.
//! - Percentiles come from the buckets: the percentile `q` is the nearest-rank value — the
//!   smallest recorded value `v` with at least `⌈q·n⌉` values ≤ `v` — reported as the highest
//!   value HdrHistogram treats as equivalent to `v`, capped at the exact maximum. So a reported
//!   percentile `p` satisfies `v ≤ p ≤ v · (1 + 10⁻³)`.

use std::time::Duration;

use hdrhistogram::Histogram;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Smallest value the histogram holds, ns; smaller values are clamped up to it.
pub const LOWEST_NS: u64 = 1;
/// Largest value the histogram holds (100 s), ns; larger values are clamped down to it.
pub const HIGHEST_NS: u64 = 100_000_000_000;
/// Significant decimal digits kept by the buckets.
pub const SIGNIFICANT_DIGITS: u8 = 3;

/// Significant decimal digits of a [`LatencyHistogram::coarse`] histogram (about 32 KB):
/// enough for per-interval percentiles, small enough to keep one per flow.
pub const COARSE_SIGNIFICANT_DIGITS: u8 = 2;

/// The quantiles reported in a [`LatencySummary`], in order.
pub const SUMMARY_QUANTILES: [f64; 5] = [0.5, 0.9, 0.99, 0.999, 0.9999];

/// Distribution summary of a set of latencies, all in nanoseconds.
///
/// Every field is 0 when `count` is 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencySummary {
    /// Number of values recorded.
    pub count: u64,
    /// How many of them lay outside 1 ns .. 100 s and were clamped into that range.
    pub clamped: u64,
    /// Smallest value, ns (exact).
    pub min_ns: u64,
    /// Arithmetic mean, ns (exact up to `f64` rounding).
    pub mean_ns: f64,
    /// Population standard deviation, ns (exact up to `f64` rounding).
    pub stddev_ns: f64,
    /// Median, ns (nearest rank, 3 significant digits).
    pub p50_ns: u64,
    /// 90th percentile, ns.
    pub p90_ns: u64,
    /// 99th percentile, ns.
    pub p99_ns: u64,
    /// 99.9th percentile, ns.
    pub p999_ns: u64,
    /// 99.99th percentile, ns.
    pub p9999_ns: u64,
    /// Largest value, ns (exact).
    pub max_ns: u64,
}

/// A latency histogram in nanoseconds; one per flow, merged at the end of a run.
///
/// Recording is allocation-free and O(1).
#[derive(Debug, Clone)]
pub struct LatencyHistogram {
    hist: Histogram<u64>,
    count: u64,
    clamped: u64,
    min_ns: u64,
    max_ns: u64,
    /// Running mean (Welford).
    mean_ns: f64,
    /// Running sum of squared deviations from the mean (Welford).
    m2: f64,
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHistogram {
    /// An empty histogram over 1 ns .. 100 s with 3 significant digits.
    pub fn new() -> Self {
        Self::with_digits(SIGNIFICANT_DIGITS)
    }

    /// An empty histogram over 1 ns .. 100 s with [`COARSE_SIGNIFICANT_DIGITS`] (2): its
    /// percentiles `p` of a recorded value `v` satisfy `v ≤ p ≤ v · (1 + 10⁻²)`. Merge it
    /// only with other coarse histograms.
    pub fn coarse() -> Self {
        Self::with_digits(COARSE_SIGNIFICANT_DIGITS)
    }

    fn with_digits(digits: u8) -> Self {
        // The bounds are constants that satisfy HdrHistogram's rules (low ≥ 1,
        // high ≥ 2·low, digits ≤ 5), so creation cannot fail.
        let hist = Histogram::new_with_bounds(LOWEST_NS, HIGHEST_NS, digits)
            .expect("constant histogram bounds are valid");
        LatencyHistogram {
            hist,
            count: 0,
            clamped: 0,
            min_ns: 0,
            max_ns: 0,
            mean_ns: 0.0,
            m2: 0.0,
        }
    }

    /// Record one latency in nanoseconds; values outside [`LOWEST_NS`] ..= [`HIGHEST_NS`] are
    /// clamped into that range and counted as clamped.
    pub fn record(&mut self, ns: u64) {
        let v = ns.clamp(LOWEST_NS, HIGHEST_NS);
        if v != ns {
            self.clamped += 1;
        }
        self.hist.saturating_record(v);
        if self.count == 0 {
            self.min_ns = v;
            self.max_ns = v;
        } else {
            self.min_ns = self.min_ns.min(v);
            self.max_ns = self.max_ns.max(v);
        }
        self.count += 1;
        let x = v as f64;
        let delta = x - self.mean_ns;
        self.mean_ns += delta / self.count as f64;
        self.m2 += delta * (x - self.mean_ns);
    }

    /// Record one latency given as a [`Duration`] (clamped like [`record`](Self::record)).
    pub fn record_duration(&mut self, d: Duration) {
        self.record(u64::try_from(d.as_nanos()).unwrap_or(u64::MAX));
    }

    /// Add every value of `other` to this histogram.
    pub fn merge(&mut self, other: &LatencyHistogram) {
        if other.count == 0 {
            return;
        }
        if self.hist.add(&other.hist).is_err() {
            // Cannot happen with identical bounds; re-record bucket by bucket to be safe.
            for v in other.hist.iter_recorded() {
                self.hist
                    .saturating_record_n(v.value_iterated_to(), v.count_at_value());
            }
        }
        if self.count == 0 {
            self.min_ns = other.min_ns;
            self.max_ns = other.max_ns;
        } else {
            self.min_ns = self.min_ns.min(other.min_ns);
            self.max_ns = self.max_ns.max(other.max_ns);
        }
        let (na, nb) = (self.count as f64, other.count as f64);
        let n = na + nb;
        let delta = other.mean_ns - self.mean_ns;
        self.mean_ns += delta * nb / n;
        self.m2 += other.m2 + delta * delta * na * nb / n;
        self.count += other.count;
        self.clamped += other.clamped;
    }

    /// Forget every value recorded (the memory is kept).
    pub fn reset(&mut self) {
        self.hist.reset();
        self.count = 0;
        self.clamped = 0;
        self.min_ns = 0;
        self.max_ns = 0;
        self.mean_ns = 0.0;
        self.m2 = 0.0;
    }

    /// Number of values recorded.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// True if nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// How many recorded values lay outside 1 ns .. 100 s and were clamped.
    pub fn clamped_count(&self) -> u64 {
        self.clamped
    }

    /// The nearest-rank value at quantile `q` (clamped to [0, 1]), ns, within 3 significant
    /// digits and capped to the exact [min, max]; `None` if empty or `q` is NaN.
    pub fn value_at_quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 || q.is_nan() {
            return None;
        }
        let v = self.hist.value_at_quantile(q.clamp(0.0, 1.0));
        Some(v.clamp(self.min_ns, self.max_ns))
    }

    /// Every HdrHistogram bucket that holds values, in increasing order: (the lowest value
    /// the bucket treats as equal, its count). The counts sum to [`count`](Self::count).
    pub fn recorded(&self) -> Vec<(u64, u64)> {
        self.hist
            .iter_recorded()
            .map(|v| {
                (
                    self.hist.lowest_equivalent(v.value_iterated_to()),
                    v.count_at_value(),
                )
            })
            .collect()
    }

    /// Summary of everything recorded (all zero if empty).
    pub fn summary(&self) -> LatencySummary {
        if self.count == 0 {
            return LatencySummary::default();
        }
        let mut p = [0u64; SUMMARY_QUANTILES.len()];
        for (slot, v) in p
            .iter_mut()
            .zip(self.hist.value_at_quantiles(SUMMARY_QUANTILES))
        {
            *slot = v.clamp(self.min_ns, self.max_ns);
        }
        let variance = (self.m2 / self.count as f64).max(0.0);
        LatencySummary {
            count: self.count,
            clamped: self.clamped,
            min_ns: self.min_ns,
            mean_ns: self.mean_ns.clamp(self.min_ns as f64, self.max_ns as f64),
            stddev_ns: variance.sqrt(),
            p50_ns: p[0],
            p90_ns: p[1],
            p99_ns: p[2],
            p999_ns: p[3],
            p9999_ns: p[4],
            max_ns: self.max_ns,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Nearest-rank percentile of a sorted, non-empty slice (same rank rule as HdrHistogram).
    fn nearest_rank(sorted: &[u64], q: f64) -> u64 {
        let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        sorted[rank - 1]
    }

    fn mean_std(values: &[u64]) -> (f64, f64) {
        let n = values.len() as f64;
        let mean = values.iter().map(|&v| v as f64).sum::<f64>() / n;
        let var = values
            .iter()
            .map(|&v| (v as f64 - mean).powi(2))
            .sum::<f64>()
            / n;
        (mean, var.sqrt())
    }

    fn close(a: f64, b: f64, rel: f64) -> bool {
        (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0)
    }

    /// Check a summary against a sorted-vector reference of the same (in-range) values.
    fn check_against_reference(values: &[u64], s: &LatencySummary) {
        let mut sorted = values.to_vec();
        sorted.sort_unstable();
        assert_eq!(s.count, sorted.len() as u64);
        assert_eq!(s.min_ns, sorted[0]);
        assert_eq!(s.max_ns, *sorted.last().unwrap());
        let (mean, std) = mean_std(&sorted);
        assert!(close(s.mean_ns, mean, 1e-9), "mean {} vs {mean}", s.mean_ns);
        assert!(
            close(s.stddev_ns, std, 1e-6),
            "std {} vs {std}",
            s.stddev_ns
        );
        let got = [s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns];
        for (q, got) in SUMMARY_QUANTILES.iter().zip(got) {
            let want = nearest_rank(&sorted, *q);
            // Reported value is the top of the bucket holding `want`: never below it, at most
            // one part in 10^3 above it.
            assert!(
                got >= want && (got - want) as f64 <= want as f64 * 1e-3,
                "q={q}: got {got}, reference {want}"
            );
        }
    }

    /// Deterministic xorshift so the stats crate needs no RNG dependency.
    fn xorshift(state: &mut u64) -> u64 {
        *state ^= *state << 13;
        *state ^= *state >> 7;
        *state ^= *state << 17;
        *state
    }

    #[test]
    fn empty_summary_is_zero() {
        let h = LatencyHistogram::new();
        assert!(h.is_empty());
        assert_eq!(h.summary(), LatencySummary::default());
        assert_eq!(h.value_at_quantile(0.5), None);
    }

    #[test]
    fn single_value_is_exact_everywhere() {
        let mut h = LatencyHistogram::new();
        h.record(123_456);
        let s = h.summary();
        assert_eq!(s.count, 1);
        for v in [
            s.min_ns, s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns, s.max_ns,
        ] {
            assert_eq!(v, 123_456);
        }
        assert_eq!(s.mean_ns, 123_456.0);
        assert_eq!(s.stddev_ns, 0.0);
    }

    #[test]
    fn one_to_hundred_thousand() {
        // 1..=100000 µs in ns: the reference percentiles are known in closed form.
        let values: Vec<u64> = (1..=100_000u64).map(|i| i * 1000).collect();
        let mut h = LatencyHistogram::new();
        for &v in &values {
            h.record(v);
        }
        let s = h.summary();
        check_against_reference(&values, &s);
        assert!(s.p50_ns >= 50_000_000 && s.p50_ns <= 50_050_000);
        assert!(s.p99_ns >= 99_000_000 && s.p99_ns <= 99_100_000);
    }

    #[test]
    fn log_uniform_random_values_match_sorted_reference() {
        let mut st = 0x9E37_79B9_7F4A_7C15u64;
        let values: Vec<u64> = (0..200_000)
            .map(|_| {
                let r = xorshift(&mut st);
                // 1 ns .. ~1.3e11 ns spread over many decades, clamped to the range.
                let decade = (r % 11) as u32;
                let mant = (r >> 8) % 1000 + 1;
                (mant * 10u64.pow(decade) / 10).clamp(LOWEST_NS, HIGHEST_NS)
            })
            .collect();
        let mut h = LatencyHistogram::new();
        for &v in &values {
            h.record(v);
        }
        assert_eq!(h.clamped_count(), 0);
        check_against_reference(&values, &h.summary());
    }

    #[test]
    fn merge_equals_recording_everything_in_one() {
        let mut st = 42u64;
        let values: Vec<u64> = (0..50_000)
            .map(|_| 10_000 + xorshift(&mut st) % 5_000_000)
            .collect();
        let (a_vals, b_vals) = values.split_at(12_345);
        let (mut a, mut b, mut all) = (
            LatencyHistogram::new(),
            LatencyHistogram::new(),
            LatencyHistogram::new(),
        );
        a_vals.iter().for_each(|&v| a.record(v));
        b_vals.iter().for_each(|&v| b.record(v));
        values.iter().for_each(|&v| all.record(v));
        a.merge(&b);
        let (m, s) = (a.summary(), all.summary());
        assert_eq!(m.count, s.count);
        assert_eq!(
            (m.min_ns, m.p50_ns, m.p90_ns, m.p99_ns, m.p999_ns, m.p9999_ns, m.max_ns),
            (s.min_ns, s.p50_ns, s.p90_ns, s.p99_ns, s.p999_ns, s.p9999_ns, s.max_ns)
        );
        assert!(close(m.mean_ns, s.mean_ns, 1e-12));
        assert!(close(m.stddev_ns, s.stddev_ns, 1e-9));
        check_against_reference(&values, &m);
        // Merging into an empty histogram and merging an empty one are identities.
        let mut e = LatencyHistogram::new();
        e.merge(&all);
        assert_eq!(e.summary(), all.summary());
        e.merge(&LatencyHistogram::new());
        assert_eq!(e.summary(), all.summary());
    }

    #[test]
    fn coarse_histograms_keep_two_digits_and_reset() {
        let mut values: Vec<u64> = Vec::new();
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut h = LatencyHistogram::coarse();
        let mut other = LatencyHistogram::coarse();
        for i in 0..5_000 {
            // Log-uniform over 1 µs .. 10 ms.
            let v = (1_000.0 * 10f64.powf((xorshift(&mut state) % 10_000) as f64 / 2_500.0)) as u64;
            values.push(v);
            if i % 2 == 0 {
                h.record(v);
            } else {
                other.record(v);
            }
        }
        h.merge(&other);
        values.sort_unstable();
        for q in [0.5, 0.99] {
            let v = nearest_rank(&values, q);
            let p = h.value_at_quantile(q).unwrap();
            assert!(
                v <= p && p as f64 <= v as f64 * 1.01,
                "q {q}: {p} against {v}"
            );
        }
        assert_eq!(h.count(), 5_000);
        h.reset();
        assert!(h.is_empty());
        assert_eq!(h.value_at_quantile(0.5), None);
        assert_eq!(h.summary(), LatencySummary::default());
        h.record(1_234);
        assert_eq!(h.summary().min_ns, 1_234);
        assert_eq!(h.summary().count, 1);
    }

    #[test]
    fn out_of_range_values_are_clamped_and_counted() {
        let mut h = LatencyHistogram::new();
        h.record(0);
        h.record(500);
        h.record(u64::MAX);
        h.record_duration(Duration::from_secs(200));
        let s = h.summary();
        assert_eq!(s.count, 4);
        assert_eq!(s.clamped, 3);
        assert_eq!(s.min_ns, LOWEST_NS);
        assert_eq!(s.max_ns, HIGHEST_NS);
        assert_eq!(s.p9999_ns, HIGHEST_NS);
        let mut other = LatencyHistogram::new();
        other.record(HIGHEST_NS + 1);
        h.merge(&other);
        assert_eq!(h.clamped_count(), 4);
    }

    proptest! {
        #[test]
        fn summary_matches_sorted_reference(values in prop::collection::vec(1u64..=HIGHEST_NS, 1..400)) {
            let mut h = LatencyHistogram::new();
            for &v in &values {
                h.record(v);
            }
            check_against_reference(&values, &h.summary());
        }
    }
}
