//! Latency under load: the idle and loaded round trips of a request/response test, client
//! side, and the latency the load induced (loaded − idle, at the median and at the 99th
//! percentile). Each round trip is the first completed run's window latency (the single
//! test's own figure); the load's throughput is the receivers' payload rate summed over its
//! directions. [`latency_box`] reads the percentiles of a box plot from the latency histogram.

use wirebench_model::result::{
    InducedReading, RrSummary, RunResult, RunStatus, UnderLoadSummary, WorkloadSummary,
};
use wirebench_stats::buckets::LatencyBuckets;

/// The request/response summary of the first completed run of `r`.
fn rr(r: &RunResult) -> Option<&RrSummary> {
    r.runs
        .iter()
        .find_map(|run| match run.summary.as_ref().map(|s| &s.workload) {
            Some(WorkloadSummary::Rr(s)) if run.status == RunStatus::Completed => Some(s.as_ref()),
            _ => None,
        })
}

/// The load's receivers' payload rate, all directions, first run (bit/s).
fn load_bps(r: &RunResult) -> Option<f64> {
    r.runs
        .iter()
        .find_map(|run| match run.summary.as_ref().map(|s| &s.workload) {
            Some(WorkloadSummary::Stream(s)) => {
                Some(s.directions.iter().map(|d| d.receiver_throughput_bps).sum())
            }
            _ => None,
        })
}

/// The summary of an under-load test; `None` unless both request/response runs have
/// latencies and the load has a stream summary.
pub fn summary(idle: &RunResult, loaded: &RunResult, load: &RunResult) -> Option<UnderLoadSummary> {
    let (i, l) = (rr(idle)?, rr(loaded)?);
    let (il, ll) = (i.latency.as_ref()?, l.latency.as_ref()?);
    let diff = |a: u64, b: u64| {
        i64::try_from(a).unwrap_or(i64::MAX) - i64::try_from(b).unwrap_or(i64::MAX)
    };
    let induced_p50_ns = diff(ll.p50_ns, il.p50_ns);
    let induced_p99_ns = diff(ll.p99_ns, il.p99_ns);
    // Each percentile's difference read against both runs' sampling noise at it.
    let reading = |q: f64, induced_ns: i64, idle_ns: u64| match (
        &i.latency_histogram,
        &l.latency_histogram,
    ) {
        (Some(ih), Some(lh)) => quantile_half_width_ns(ih, q)
            .zip(quantile_half_width_ns(lh, q))
            .map(|(a, b)| induced_reading(induced_ns, a, b, idle_ns)),
        _ => None,
    };
    Some(UnderLoadSummary {
        induced_reading: reading(0.5, induced_p50_ns, il.p50_ns),
        induced_p99_reading: reading(0.99, induced_p99_ns, il.p99_ns),
        idle_rtt_p50_ns: il.p50_ns,
        idle_rtt_p99_ns: il.p99_ns,
        loaded_rtt_p50_ns: ll.p50_ns,
        loaded_rtt_p99_ns: ll.p99_ns,
        induced_p50_ns,
        induced_p99_ns,
        idle_transactions_per_s: i.transactions_per_s,
        loaded_transactions_per_s: l.transactions_per_s,
        load_throughput_bps: load_bps(load)?,
    })
}

/// The 95 % confidence half-width of a median from its `n` samples, ns (see
/// [`quantile_half_width_ns`]).
pub fn median_half_width_ns(h: &LatencyBuckets) -> Option<f64> {
    quantile_half_width_ns(h, 0.5)
}

/// The 95 % confidence half-width of the `q` quantile from its `n` samples, ns: half the
/// distance between the quantiles at ranks `n·q ± 1.96·√(n·q·(1−q))` (the order statistics
/// that bound the quantile with 95 % confidence, distribution-free), clamped to the
/// samples, read from the histogram; `None` when it is empty. With few samples beyond a
/// high quantile the bound reaches the largest sample: the 99th percentile of 200 round trips
/// is bounded by the 2nd largest and the largest, and its half-width is wide, as it should
/// be.
pub fn quantile_half_width_ns(h: &LatencyBuckets, q: f64) -> Option<f64> {
    let n = h.total() as f64;
    let d = 1.96 * (q * (1.0 - q) / n.max(1.0)).sqrt();
    let (lo, hi) = ((q - d).max(0.0), (q + d).min(1.0));
    Some((h.quantile_ns(hi)? - h.quantile_ns(lo)?) / 2.0)
}

/// The reading of `induced_ns` (loaded − idle, at one percentile) against the noise: the
/// two runs' half-widths at that percentile, `idle_hw_ns` and `loaded_hw_ns`, in
/// quadrature, at least 1 % of the idle figure `idle_ns` (the histograms carry 3
/// significant digits).
pub fn induced_reading(
    induced_ns: i64,
    idle_hw_ns: f64,
    loaded_hw_ns: f64,
    idle_ns: u64,
) -> InducedReading {
    let noise = (idle_hw_ns.powi(2) + loaded_hw_ns.powi(2))
        .sqrt()
        .max(idle_ns as f64 / 100.0)
        .ceil();
    let noise_ns = noise as u64;
    if induced_ns as f64 > noise {
        InducedReading::Raised { noise_ns }
    } else if (induced_ns as f64) < -noise {
        InducedReading::Lowered { noise_ns }
    } else {
        InducedReading::WithinNoise { noise_ns }
    }
}

/// The round trips of a request/response result as a box: its 1st, 25th, 50th, 75th and
/// 99th percentiles read from the client's latency histogram (each within the bucket's
/// width, 9 %) and the exact mean.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyBox {
    /// 1st percentile, ns.
    pub p1_ns: f64,
    /// 25th percentile, ns.
    pub p25_ns: f64,
    /// Median, ns.
    pub p50_ns: f64,
    /// 75th percentile, ns.
    pub p75_ns: f64,
    /// 99th percentile, ns.
    pub p99_ns: f64,
    /// Mean, ns (exact).
    pub mean_ns: f64,
    /// Round trips counted.
    pub count: u64,
}

/// The [`LatencyBox`] of the first completed run of `r`; `None` without a histogram.
pub fn latency_box(r: &RunResult) -> Option<LatencyBox> {
    let s = rr(r)?;
    let h = s.latency_histogram.as_ref()?;
    let q = |x: f64| h.quantile_ns(x);
    Some(LatencyBox {
        p1_ns: q(0.01)?,
        p25_ns: q(0.25)?,
        p50_ns: q(0.5)?,
        p75_ns: q(0.75)?,
        p99_ns: q(0.99)?,
        mean_ns: s.latency.as_ref().map_or(f64::NAN, |l| l.mean_ns),
        count: h.total(),
    })
}
