//! A compact latency histogram for results: a [`LatencyHistogram`]'s exact counts regrouped
//! into log-spaced buckets ([`BUCKETS_PER_OCTAVE`] per doubling, so at most
//! [`MAX_BUCKETS`] over 1 ns .. 100 s), small enough to keep in every request/response
//! result and to draw as a histogram or a CDF.
//!
//! What is exact and what is not:
//! - Counts are exact: every recorded value is in exactly one bucket, so the counts sum to
//!   the histogram's `count`.
//! - Placement follows the HdrHistogram buckets (3 significant digits): a value is counted in
//!   the log bucket that holds the lowest value HdrHistogram treats as equal to it, so a
//!   value within 0.1 % above a bucket edge may be counted in the bucket below the edge.
//! - [`LatencyBuckets::quantile_bucket`] names the bucket that holds a nearest-rank quantile:
//!   the reported percentile of the same values lies in `[lo_ns, hi_ns · 1.001]` of it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::latency::LatencyHistogram;

/// Buckets per doubling of the latency: each bucket's upper edge is its lower edge × 2^(1/8)
/// (9 % wider), up to the rounding of edges to whole nanoseconds.
pub const BUCKETS_PER_OCTAVE: u32 = 8;

/// Most buckets a [`LatencyBuckets`] holds: 1 ns .. 100 s is 36.6 octaves.
pub const MAX_BUCKETS: usize = 37 * BUCKETS_PER_OCTAVE as usize;

/// One bucket `[lo_ns, hi_ns)` and the values counted in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatencyBucket {
    /// Lower edge, ns (inclusive).
    pub lo_ns: u64,
    /// Upper edge, ns (exclusive).
    pub hi_ns: u64,
    /// Values counted in the bucket.
    pub count: u64,
}

/// A latency histogram in log-spaced buckets: every bucket from the one holding the smallest
/// value to the one holding the largest, empty ones included, in increasing order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LatencyBuckets {
    /// Buckets per doubling ([`BUCKETS_PER_OCTAVE`]).
    pub buckets_per_octave: u32,
    /// The buckets (at most [`MAX_BUCKETS`]).
    pub buckets: Vec<LatencyBucket>,
}

/// Lower edge of log bucket `i`, ns: `⌈2^(i / BUCKETS_PER_OCTAVE)⌉`.
fn edge(i: u32) -> u64 {
    (f64::from(i) / f64::from(BUCKETS_PER_OCTAVE))
        .exp2()
        .ceil()
        .min(u64::MAX as f64) as u64
}

/// Index of the log bucket holding `v` (≥ 1): the largest `i` with `edge(i) ≤ v`.
fn index(v: u64) -> u32 {
    let v = v.max(1);
    let mut i = ((v as f64).log2() * f64::from(BUCKETS_PER_OCTAVE)).floor() as u32;
    // Correct the float estimate against the integer edges.
    while i > 0 && edge(i) > v {
        i -= 1;
    }
    while edge(i + 1) <= v {
        i += 1;
    }
    i
}

impl LatencyBuckets {
    /// The buckets of `h` (no bucket when it is empty).
    pub fn of(h: &LatencyHistogram) -> LatencyBuckets {
        let counts = h.recorded();
        let mut out = LatencyBuckets {
            buckets_per_octave: BUCKETS_PER_OCTAVE,
            buckets: Vec::new(),
        };
        let (Some(first), Some(last)) = (counts.first(), counts.last()) else {
            return out;
        };
        let (lo, hi) = (index(first.0), index(last.0));
        out.buckets = (lo..=hi)
            .map(|i| LatencyBucket {
                lo_ns: edge(i),
                hi_ns: edge(i + 1),
                count: 0,
            })
            .collect();
        for (v, n) in counts {
            let i = (index(v) - lo) as usize;
            out.buckets[i].count += n;
        }
        out
    }

    /// Values counted, all buckets.
    pub fn total(&self) -> u64 {
        self.buckets.iter().map(|b| b.count).sum()
    }

    /// The bucket holding the nearest-rank quantile `q` (clamped to [0, 1]): the first
    /// bucket at which at least `⌈q·n⌉` values (at least one) have been counted; `None`
    /// when empty or `q` is NaN.
    pub fn quantile_bucket(&self, q: f64) -> Option<&LatencyBucket> {
        let n = self.total();
        if n == 0 || q.is_nan() {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        let mut seen = 0;
        self.buckets.iter().find(|b| {
            seen += b.count;
            seen >= rank
        })
    }

    /// The quantile `q` (clamped to [0, 1]) read from the buckets, ns: within the bucket
    /// [`quantile_bucket`](Self::quantile_bucket) names, interpolated on a log scale by the
    /// rank's position among the bucket's values (so it is off by at most the bucket's width,
    /// 9 %); `None` when empty or `q` is NaN.
    pub fn quantile_ns(&self, q: f64) -> Option<f64> {
        let n = self.total();
        if n == 0 || q.is_nan() {
            return None;
        }
        let rank = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).clamp(1, n);
        let mut before = 0;
        for b in &self.buckets {
            if before + b.count >= rank {
                let frac = (rank - before) as f64 / b.count as f64;
                let (lo, hi) = (b.lo_ns.max(1) as f64, b.hi_ns.max(1) as f64);
                return Some(lo * (hi / lo).powf(frac));
            }
            before += b.count;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edges_increase_and_index_inverts_them() {
        for i in 0..MAX_BUCKETS as u32 {
            assert!(edge(i + 1) >= edge(i));
            if edge(i + 1) > edge(i) {
                assert_eq!(index(edge(i)), i, "edge {i}");
                assert_eq!(index(edge(i + 1) - 1), i, "below edge {}", i + 1);
            }
        }
        assert!(index(crate::latency::HIGHEST_NS) < MAX_BUCKETS as u32);
        assert_eq!(edge(8), 2);
        assert_eq!(edge(8 * 10), 1024);
    }

    #[test]
    fn counts_sum_and_quantiles_land_in_their_buckets() {
        // 1..=100000 µs: known nearest-rank percentiles.
        let mut h = LatencyHistogram::new();
        for i in 1..=100_000u64 {
            h.record(i * 1000);
        }
        let b = LatencyBuckets::of(&h);
        assert_eq!(b.total(), 100_000);
        assert!(b.buckets.len() <= MAX_BUCKETS);
        // 1 µs .. 100 ms is 16.6 octaves.
        assert_eq!(
            b.buckets.len(),
            (index(100_000_000) - index(1000) + 1) as usize
        );
        let s = h.summary();
        for (q, p) in [(0.5, s.p50_ns), (0.99, s.p99_ns), (0.999, s.p999_ns)] {
            let k = b.quantile_bucket(q).expect("not empty");
            assert!(
                k.lo_ns <= p && (p as f64) < k.hi_ns as f64 * 1.001,
                "q {q}: {p} not in {k:?}"
            );
        }
        // The interpolated quantile is within a bucket's width of the exact one.
        for (q, p) in [(0.01, 1_000_000u64), (0.25, 25_000_000), (0.75, 75_000_000)] {
            let v = b.quantile_ns(q).expect("not empty");
            assert!((v / p as f64 - 1.0).abs() < 0.09, "q {q}: {v} vs {p}");
        }
        // Contiguous.
        for w in b.buckets.windows(2) {
            assert_eq!(w[0].hi_ns, w[1].lo_ns);
        }
    }

    /// A value just above a bucket edge that HdrHistogram keeps with values below the edge
    /// is counted in the bucket below: the largest recorded value can then lie up to 0.1 %
    /// past the last bucket's upper edge (never more), as the module says.
    #[test]
    fn a_value_just_above_an_edge_is_counted_below_it() {
        // An edge between 2^17 and 2^18 ns, where HdrHistogram's unit at 3 significant
        // digits is 64 ns, that is not a multiple of it.
        let i = (index(140_000)..index(250_000))
            .find(|&i| !edge(i).is_multiple_of(64))
            .expect("an unaligned edge");
        let v = edge(i);
        let mut h = LatencyHistogram::new();
        h.record(v);
        let b = LatencyBuckets::of(&h);
        assert_eq!(b.buckets.len(), 1);
        let only = b.buckets[0];
        assert_eq!(only.hi_ns, v, "{only:?}");
        assert_eq!(h.summary().max_ns, v);
        assert!((v as f64) <= only.hi_ns as f64 * 1.001);
    }

    #[test]
    fn empty_and_single() {
        assert!(LatencyBuckets::of(&LatencyHistogram::new())
            .buckets
            .is_empty());
        let mut h = LatencyHistogram::new();
        h.record(50_000);
        h.record(50_000);
        let b = LatencyBuckets::of(&h);
        assert_eq!(b.buckets.len(), 1);
        assert_eq!(b.buckets[0].count, 2);
        assert!(b.buckets[0].lo_ns <= 50_000 && 50_000 < b.buckets[0].hi_ns);
        assert_eq!(b.quantile_bucket(0.99), b.buckets.first());
    }
}
