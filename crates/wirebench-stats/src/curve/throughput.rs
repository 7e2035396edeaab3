//! Throughput vs message size: peak, saturation, knee, n½ and the latency-dominated regime.
//!
//! A bulk-transfer curve (netperf/NetPIPE, bandwidth against message size) typically has a
//! latency-dominated regime at small sizes, where each call costs about the same time, so
//! calls per second stay constant and throughput grows linearly with the size; a saturation
//! regime at large sizes, where throughput stops growing; and sharp structure (dips) inside.
//! [`analyze_throughput`] measures each part. Definitions, with `T(n)` the throughput at
//! message size `n` and the points sorted by size:
//!
//! - **Peak**: the largest `T`, and the smallest size where it occurs.
//! - **Saturation** `S` and **knee** (with the knee fraction `k`, default 90 %): the knee is
//!   the smallest measured size whose throughput is at least `k · S`, and `S` is the median
//!   throughput of the points from the knee on (the *plateau*, dips included: the median
//!   ignores them). The two are found together by a fixed-point iteration: start from
//!   `S = peak`, take the knee for that `S`, set `S` to the plateau's median, repeat until
//!   the knee stops moving (at most 64 rounds; `S` is always the median of the plateau from
//!   the reported knee). Because the median of a plateau that
//!   still rises is below its top, on a smoothly rising curve `S` underestimates the
//!   asymptote unless the sweep extends well past the knee (for the reference curve of
//!   20 µs + n / 10 Gbit/s measured to 64 MiB it is 0.65 % low); for the asymptote of such a
//!   curve fit the Hockney model ([`crate::curve::hockney`]).
//! - **Saturated**: whether the plateau holds at least `min_plateau_points` points (default
//!   3). A curve still rising at the end of the sweep has a plateau of one or two points
//!   and is reported as not saturated.
//! - **n½**: the smallest size at which the curve reaches half the saturation `S/2`,
//!   interpolated between the last size below and the first at or above that level,
//!   linearly in throughput against log-size (see [`Crossing`]). The knee is also given
//!   interpolated the same way.
//! - **Latency-dominated regime**: with the call rate `R(n) = T(n) / (8 n)` (calls per
//!   second), the longest run of points starting at the smallest size within which
//!   `max R ≤ (1 + band) · min R` (band default 20 %). It is *latency-dominated* when the
//!   run holds at least `latency_min_points` points (default 3) and spans at least a factor 2
//!   in size (an octave over which throughput grew nearly in proportion to the size).
//! - **Dips**: see [`crate::curve::dips`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::dips::{check_threshold, find_dips, DipCandidates, DEFAULT_DIP_THRESHOLD_PCT};
use super::{
    check_param, crossing, cv_pct, first_at_or_above, median, validate_throughput, Crossing,
    CurveError, ThroughputPoint, Valid,
};

/// Parameters of [`analyze_throughput`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThroughputConfig {
    /// The knee is where the curve first reaches this share of the saturation, percent in
    /// (0, 100]; default 90.
    pub knee_pct: f64,
    /// Fewest plateau points for the curve to count as saturated; default 3.
    pub min_plateau_points: u32,
    /// Width of the latency-dominated regime: the largest call rate in it is at most
    /// `1 + band/100` times the smallest; percent, > 0; default 20.
    pub latency_band_pct: f64,
    /// Fewest points for a latency-dominated regime; default 3.
    pub latency_min_points: u32,
    /// Dip threshold, percent below both neighbours, in (0, 100]; default 10.
    pub dip_threshold_pct: f64,
}

impl Default for ThroughputConfig {
    fn default() -> Self {
        ThroughputConfig {
            knee_pct: 90.0,
            min_plateau_points: 3,
            latency_band_pct: 20.0,
            latency_min_points: 3,
            dip_threshold_pct: DEFAULT_DIP_THRESHOLD_PCT,
        }
    }
}

/// The latency-dominated regime at the small-size end of a curve (see the module docs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyRegime {
    /// Smallest size of the run (the smallest measured size), bytes.
    pub from_bytes: u64,
    /// Largest size of the run, bytes.
    pub to_bytes: u64,
    /// Points in the run.
    pub points: u32,
    /// Median call rate over the run, calls (messages) per second: `T / (8 · size)`.
    pub calls_median_per_s: f64,
    /// Coefficient of variation of the call rate over the run, percent.
    pub calls_cv_pct: f64,
    /// The band used, percent.
    pub band_pct: f64,
    /// Whether the run is a latency-dominated regime: at least the configured number of
    /// points and `to_bytes ≥ 2 · from_bytes`.
    pub latency_dominated: bool,
}

/// The analysis of a throughput-vs-size curve (see the module docs for every definition).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThroughputAnalysis {
    /// Points analysed.
    pub points: u32,
    /// Smallest measured size, bytes.
    pub min_size_bytes: u64,
    /// Largest measured size, bytes.
    pub max_size_bytes: u64,
    /// Highest throughput, bits per second.
    pub peak_bps: f64,
    /// The (smallest) size where the peak occurs, bytes.
    pub peak_size_bytes: u64,
    /// Saturation throughput `S`: the median of the plateau, bits per second.
    pub saturation_bps: f64,
    /// Whether the plateau holds at least `min_plateau_points` points.
    pub saturated: bool,
    /// Points on the plateau (from the knee to the largest size).
    pub plateau_points: u32,
    /// Coefficient of variation of the plateau's throughputs, percent.
    pub plateau_cv_pct: f64,
    /// The knee fraction used, percent of `S`.
    pub knee_pct: f64,
    /// The knee: the smallest measured size with throughput ≥ `knee_pct`% of `S`, bytes.
    pub knee_size_bytes: u64,
    /// The knee interpolated on log-size between its measured neighbours.
    pub knee: Crossing,
    /// n½: where the curve first reaches `S / 2`, interpolated on log-size.
    pub n_half: Crossing,
    /// The latency-dominated regime at the small sizes.
    pub latency_regime: LatencyRegime,
    /// Dip candidates at the configured threshold.
    pub dips: DipCandidates,
}

impl ThroughputConfig {
    /// Checks every parameter's range.
    fn check(&self) -> Result<(), CurveError> {
        check_param(
            "knee_pct",
            self.knee_pct,
            0.0,
            false,
            100.0,
            "a percentage in (0, 100]",
        )?;
        check_param(
            "latency_band_pct",
            self.latency_band_pct,
            0.0,
            false,
            f64::MAX,
            "a finite percentage above 0",
        )?;
        check_threshold(self.dip_threshold_pct)
    }
}

/// Analyses a throughput-vs-size curve: peak, saturation, knee, n½, latency-dominated
/// regime and dip candidates, as defined in the [module docs](self).
///
/// Errors: [`CurveError::Empty`] / [`CurveError::TooFewPoints`] for fewer than 2 points,
/// [`CurveError::InvalidPoint`] for a zero size or a non-finite or negative figure,
/// [`CurveError::DuplicateSize`], [`CurveError::AllZero`] when every throughput is 0,
/// [`CurveError::InvalidParameter`] for a configuration value out of range.
pub fn analyze_throughput(
    points: &[ThroughputPoint],
    config: &ThroughputConfig,
) -> Result<ThroughputAnalysis, CurveError> {
    config.check()?;
    if points.is_empty() {
        return Err(CurveError::Empty);
    }
    let valid = validate_throughput(points)?;
    if valid.len() < 2 {
        return Err(CurveError::TooFewPoints {
            have: valid.len(),
            need: 2,
        });
    }
    let (first, last) = match (valid.first(), valid.last()) {
        (Some(f), Some(l)) => (*f, *l),
        _ => return Err(CurveError::Empty),
    };
    // The first maximum (`max_by` would keep the last of equal ones).
    let peak = valid
        .iter()
        .copied()
        .reduce(|best, p| if p.bps > best.bps { p } else { best })
        .unwrap_or(first);
    if peak.bps == 0.0 {
        return Err(CurveError::AllZero);
    }
    let k = config.knee_pct / 100.0;
    let (knee_i, saturation_bps) = saturation(&valid, k, peak.bps);
    let plateau: Vec<f64> = valid
        .get(knee_i..)
        .unwrap_or(&[])
        .iter()
        .map(|p| p.bps)
        .collect();
    let knee_point = valid.get(knee_i).copied().unwrap_or(peak);
    let smallest = Crossing::AtOrBelowSmallest {
        smallest_bytes: first.size_bytes,
    };
    let plateau_points = u32::try_from(plateau.len()).unwrap_or(u32::MAX);
    Ok(ThroughputAnalysis {
        points: u32::try_from(valid.len()).unwrap_or(u32::MAX),
        min_size_bytes: first.size_bytes,
        max_size_bytes: last.size_bytes,
        peak_bps: peak.bps,
        peak_size_bytes: peak.size_bytes,
        saturation_bps,
        saturated: plateau_points >= config.min_plateau_points,
        plateau_points,
        plateau_cv_pct: cv_pct(&plateau),
        knee_pct: config.knee_pct,
        knee_size_bytes: knee_point.size_bytes,
        knee: crossing(&valid, k * saturation_bps).unwrap_or(smallest),
        n_half: crossing(&valid, 0.5 * saturation_bps).unwrap_or(smallest),
        latency_regime: latency_regime(&valid, config),
        dips: DipCandidates {
            threshold_pct: config.dip_threshold_pct,
            dips: find_dips(&valid, config.dip_threshold_pct),
        },
    })
}

/// Most rounds of the knee/saturation iteration (it settles in two or three on real curves).
const MAX_KNEE_ROUNDS: usize = 64;

/// The knee index and the saturation, by the fixed-point iteration of the module docs.
/// `valid` is sorted, non-empty, with a positive peak `peak_bps`.
fn saturation(valid: &[Valid], k: f64, peak_bps: f64) -> (usize, f64) {
    let knee_for = |s: f64| first_at_or_above(valid, k * s).unwrap_or(0);
    let plateau_median = |knee: usize| {
        let values: Vec<f64> = valid
            .get(knee..)
            .unwrap_or(&[])
            .iter()
            .map(|p| p.bps)
            .collect();
        median(&values).unwrap_or(peak_bps)
    };
    let mut knee = knee_for(peak_bps);
    let mut s = plateau_median(knee);
    for _ in 0..MAX_KNEE_ROUNDS {
        let next = knee_for(s);
        if next == knee {
            break;
        }
        knee = next;
        s = plateau_median(knee);
    }
    (knee, s)
}

/// The latency-dominated run at the small-size end (see the module docs).
fn latency_regime(valid: &[Valid], config: &ThroughputConfig) -> LatencyRegime {
    let limit = 1.0 + config.latency_band_pct / 100.0;
    let rates: Vec<f64> = valid
        .iter()
        .map(|p| p.bps / 8.0 / p.size_bytes as f64)
        .collect();
    let mut len = usize::from(!rates.is_empty());
    let (mut lo, mut hi) = match rates.first() {
        Some(&r) => (r, r),
        None => (0.0, 0.0),
    };
    for &r in rates.iter().skip(1) {
        let (nlo, nhi) = (lo.min(r), hi.max(r));
        if !(nlo > 0.0 && nhi <= limit * nlo) {
            break;
        }
        (lo, hi) = (nlo, nhi);
        len += 1;
    }
    let run = rates.get(..len).unwrap_or(&[]);
    let from_bytes = valid.first().map_or(0, |p| p.size_bytes);
    let to_bytes = valid
        .get(len.saturating_sub(1))
        .map_or(from_bytes, |p| p.size_bytes);
    let points = u32::try_from(len).unwrap_or(u32::MAX);
    LatencyRegime {
        from_bytes,
        to_bytes,
        points,
        calls_median_per_s: median(run).unwrap_or(0.0),
        calls_cv_pct: cv_pct(run),
        band_pct: config.latency_band_pct,
        latency_dominated: points >= config.latency_min_points
            && to_bytes / 2 >= from_bytes
            && from_bytes > 0,
    }
}

#[cfg(test)]
#[path = "throughput_tests.rs"]
mod tests;
