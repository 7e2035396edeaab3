//! Dips: single message sizes whose throughput falls sharply below both neighbours, and
//! their confirmation by re-measurement.
//!
//! Definitions (points sorted by size; the neighbours of point `i` are the adjacent measured
//! sizes `l < i < r`; `T` is the throughput, `n` the size):
//!
//! - The **expected level** `E(i)` is the neighbours' throughput interpolated at `n_i` on
//!   log-log axes (straight line between `(ln n_l, ln T(l))` and `(ln n_r, ln T(r))`):
//!   `E(i) = T(l)^(1−φ) · T(r)^φ` with `φ = ln(n_i / n_l) / ln(n_r / n_l)`; 0 when a
//!   neighbour is 0. Both regimes of a bandwidth curve are straight on log-log axes
//!   (`T ∝ n` while latency-dominated, `T` constant when saturated), so the undipped
//!   throughput is recovered there; between them the curve is concave on log-log axes and
//!   `E` errs low (conservative).
//! - The **depth** of point `i` is `100 · (1 − T(i) / E(i))` percent (0 when `E(i)` is 0).
//! - Point `i` is a **dip candidate** at threshold `θ` % when it is a local minimum (strictly
//!   below *both* neighbours: `T(i) < min(T(l), T(r))`) and its depth is strictly more than
//!   `θ`. On a flat stretch this is "more than `θ` below both neighbours"; on a slope the
//!   depth is measured against the interpolated level, so a dip at `4093 B` between `3447 B`
//!   and `4096 B` of a curve still rising is as deep as the throughput it lost, not only as
//!   deep as it lies below `3447 B` (which is also reported, `below_lower_neighbour_pct`).
//!   Since `E(i) ≥ min(T(l), T(r))`, every point more than `θ` below both neighbours is a
//!   candidate. The smallest and the largest size have one neighbour only and are never
//!   candidates.
//! - Limitation (three points cannot tell a dip from a step): on a slope steeper than the
//!   dip, the dipped point is not below its smaller neighbour and is not reported. With 4
//!   points per octave in the latency-dominated regime (`T ∝ n`) the smaller neighbour is
//!   16 % lower, so dips shallower than that are not seen there; inside saturation, where
//!   dips usually live, the neighbours are level and any dip deeper than `θ` is seen.
//! - A candidate is **confirmed** when its re-measurement is again a candidate by the same
//!   rule at the same threshold: the re-measured throughput at its size, against the
//!   neighbours' re-measured throughputs where the caller re-measured them too, else their
//!   original ones.
//!
//! The protocol: [`dip_candidates`] on the sweep, re-measure each candidate (ideally with its
//! neighbours), [`confirm_dips`]. Only confirmed dips are structure; the rest were noise.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_param, validate_throughput, CurveError, ThroughputPoint, Valid};

/// Dip threshold unless the caller says otherwise: 10 % below the expected level.
pub const DEFAULT_DIP_THRESHOLD_PCT: f64 = 10.0;

/// A point below both neighbours and more than the threshold below its expected level.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dip {
    /// The dip's message size, bytes.
    pub size_bytes: u64,
    /// Its throughput, bits per second.
    pub throughput_bps: f64,
    /// The next smaller measured size, bytes.
    pub left_size_bytes: u64,
    /// Throughput there, bits per second.
    pub left_bps: f64,
    /// The next larger measured size, bytes.
    pub right_size_bytes: u64,
    /// Throughput there, bits per second.
    pub right_bps: f64,
    /// The expected level: the neighbours' throughput interpolated at this size on log-log
    /// axes, bits per second.
    pub expected_bps: f64,
    /// Depth below the expected level: `100 · (1 − throughput / expected)`, percent.
    pub depth_pct: f64,
    /// How far below the lower neighbour: `100 · (1 − throughput / min(left, right))`,
    /// percent (0 when that neighbour is 0).
    pub below_lower_neighbour_pct: f64,
    /// Measurement noise around the dip: the largest relative standard deviation
    /// (`100 · stddev / throughput`) among the dip and its two neighbours, percent; `None`
    /// when none of the three carries a standard deviation (or per-iteration values).
    pub noise_pct: Option<f64>,
}

/// The dip candidates of a curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DipCandidates {
    /// The threshold used, percent below both neighbours.
    pub threshold_pct: f64,
    /// The candidates, by increasing size.
    pub dips: Vec<Dip>,
}

/// Why a candidate was not confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum UnconfirmedReason {
    /// No re-measurement at the dip's size was given.
    NotRemeasured,
    /// Every re-measurement at the dip's size (or at a neighbour's) was invalid (not finite
    /// or negative).
    InvalidRemeasurement,
    /// The re-measurement is not a dip: not below both neighbours, or its depth is at most
    /// the threshold.
    Normal {
        /// Depth of the re-measured point, percent (may be negative: above a neighbour).
        remeasured_depth_pct: f64,
    },
}

/// A candidate whose re-measurement is again a dip.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConfirmedDip {
    /// The candidate as first found.
    pub original: Dip,
    /// The dip as re-measured (re-measured throughputs where given, original neighbours
    /// otherwise; depth and noise recomputed).
    pub remeasured: Dip,
}

/// A candidate that did not survive re-measurement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct UnconfirmedDip {
    /// The candidate as first found.
    pub original: Dip,
    /// Why it is not confirmed.
    pub reason: UnconfirmedReason,
}

/// The outcome of [`confirm_dips`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DipConfirmation {
    /// The threshold used (the candidates'), percent.
    pub threshold_pct: f64,
    /// Dips found again, by increasing size.
    pub confirmed: Vec<ConfirmedDip>,
    /// Dips not found again, by increasing size.
    pub unconfirmed: Vec<UnconfirmedDip>,
}

/// The dip candidates of `points` at `threshold_pct` (see the module docs for the
/// definitions; [`DEFAULT_DIP_THRESHOLD_PCT`] is the usual threshold).
///
/// Fewer than three points give no candidates (not an error). Errors: an invalid point, two
/// points at one size, or a threshold outside (0, 100].
pub fn dip_candidates(
    points: &[ThroughputPoint],
    threshold_pct: f64,
) -> Result<DipCandidates, CurveError> {
    check_threshold(threshold_pct)?;
    let valid = validate_throughput(points)?;
    Ok(DipCandidates {
        threshold_pct,
        dips: find_dips(&valid, threshold_pct),
    })
}

/// Checks a dip threshold: finite, in (0, 100].
pub(crate) fn check_threshold(threshold_pct: f64) -> Result<(), CurveError> {
    check_param(
        "dip threshold_pct",
        threshold_pct,
        0.0,
        false,
        100.0,
        "a percentage in (0, 100]",
    )
}

/// Dip candidates of validated, size-sorted points.
pub(crate) fn find_dips(valid: &[Valid], threshold_pct: f64) -> Vec<Dip> {
    valid
        .windows(3)
        .filter_map(|w| {
            let dip = make_dip(w[0], w[1], w[2]);
            is_dip(&dip, threshold_pct).then_some(dip)
        })
        .collect()
}

/// The candidate rule of the module docs.
fn is_dip(dip: &Dip, threshold_pct: f64) -> bool {
    dip.throughput_bps < dip.left_bps.min(dip.right_bps) && dip.depth_pct > threshold_pct
}

/// `100 · (1 − value / level)`, 0 when the level is not positive.
fn below_pct(value: f64, level: f64) -> f64 {
    if level > 0.0 {
        100.0 * (1.0 - value / level)
    } else {
        0.0
    }
}

/// Builds the dip record of `mid` between `left` and `right` (sizes strictly increasing).
fn make_dip(left: Valid, mid: Valid, right: Valid) -> Dip {
    let (ln_l, ln_m, ln_r) = (
        (left.size_bytes as f64).ln(),
        (mid.size_bytes as f64).ln(),
        (right.size_bytes as f64).ln(),
    );
    let phi = if ln_r > ln_l {
        ((ln_m - ln_l) / (ln_r - ln_l)).clamp(0.0, 1.0)
    } else {
        0.5
    };
    // A weighted geometric mean: stays within [left, right] and cannot overflow.
    let expected_bps = if left.bps > 0.0 && right.bps > 0.0 {
        ((1.0 - phi) * left.bps.ln() + phi * right.bps.ln())
            .exp()
            .clamp(left.bps.min(right.bps), left.bps.max(right.bps))
    } else {
        0.0
    };
    let noise_pct = [left, mid, right]
        .iter()
        .filter_map(|p| {
            let sd = p.stddev_bps?;
            (p.bps > 0.0).then(|| 100.0 * sd / p.bps)
        })
        .filter(|x| x.is_finite())
        .reduce(f64::max);
    Dip {
        size_bytes: mid.size_bytes,
        throughput_bps: mid.bps,
        left_size_bytes: left.size_bytes,
        left_bps: left.bps,
        right_size_bytes: right.size_bytes,
        right_bps: right.bps,
        expected_bps,
        depth_pct: below_pct(mid.bps, expected_bps),
        below_lower_neighbour_pct: below_pct(mid.bps, left.bps.min(right.bps)),
        noise_pct,
    }
}

/// What the re-measurements say at one size.
enum Remeasured {
    /// None given.
    Missing,
    /// Given, none valid.
    Invalid,
    /// The mean of the valid ones.
    Value(Valid),
}

/// The re-measurements at `size_bytes`: the mean throughput of the valid ones (and their
/// mean standard deviation, when every one carries one).
fn remeasured_at(remeasured: &[ThroughputPoint], size_bytes: u64) -> Remeasured {
    let at: Vec<&ThroughputPoint> = remeasured
        .iter()
        .filter(|p| p.size_bytes == size_bytes)
        .collect();
    if at.is_empty() {
        return Remeasured::Missing;
    }
    let ok: Vec<Valid> = at
        .iter()
        .filter_map(|&p| {
            let v = validate_throughput(std::slice::from_ref(p)).ok()?;
            v.first().copied()
        })
        .collect();
    let bps: Vec<f64> = ok.iter().map(|v| v.bps).collect();
    let Some(mean_bps) = super::mean(&bps) else {
        return Remeasured::Invalid;
    };
    let sds: Option<Vec<f64>> = ok.iter().map(|v| v.stddev_bps).collect();
    Remeasured::Value(Valid {
        size_bytes,
        bps: mean_bps,
        stddev_bps: sds.and_then(|s| super::mean(&s)),
    })
}

/// Confirms or rejects each candidate with re-measurements (see the module docs).
///
/// `remeasured` holds re-measured points at the candidates' sizes and, optionally, at their
/// neighbours' sizes; several points at one size are averaged; invalid ones (not finite,
/// negative, size 0) are ignored. Points at other sizes are ignored. A candidate with no
/// re-measurement at its own size is unconfirmed ([`UnconfirmedReason::NotRemeasured`]).
/// Never fails.
pub fn confirm_dips(candidates: &DipCandidates, remeasured: &[ThroughputPoint]) -> DipConfirmation {
    let threshold_pct = candidates.threshold_pct;
    let mut confirmed = Vec::new();
    let mut unconfirmed = Vec::new();
    for dip in &candidates.dips {
        let original = |size_bytes, bps| Valid {
            size_bytes,
            bps,
            stddev_bps: None,
        };
        let mid = remeasured_at(remeasured, dip.size_bytes);
        let left = remeasured_at(remeasured, dip.left_size_bytes);
        let right = remeasured_at(remeasured, dip.right_size_bytes);
        let pick = |r: Remeasured, fallback: Valid| match r {
            Remeasured::Missing => Some(fallback),
            Remeasured::Invalid => None,
            Remeasured::Value(v) => Some(v),
        };
        let mid = match mid {
            Remeasured::Missing => {
                unconfirmed.push(UnconfirmedDip {
                    original: dip.clone(),
                    reason: UnconfirmedReason::NotRemeasured,
                });
                continue;
            }
            other => pick(other, original(dip.size_bytes, dip.throughput_bps)),
        };
        let left = pick(left, original(dip.left_size_bytes, dip.left_bps));
        let right = pick(right, original(dip.right_size_bytes, dip.right_bps));
        let (Some(left), Some(mid), Some(right)) = (left, mid, right) else {
            unconfirmed.push(UnconfirmedDip {
                original: dip.clone(),
                reason: UnconfirmedReason::InvalidRemeasurement,
            });
            continue;
        };
        let again = make_dip(left, mid, right);
        if is_dip(&again, threshold_pct) {
            confirmed.push(ConfirmedDip {
                original: dip.clone(),
                remeasured: again,
            });
        } else {
            unconfirmed.push(UnconfirmedDip {
                original: dip.clone(),
                reason: UnconfirmedReason::Normal {
                    remeasured_depth_pct: again.depth_pct,
                },
            });
        }
    }
    DipConfirmation {
        threshold_pct,
        confirmed,
        unconfirmed,
    }
}

#[cfg(test)]
#[path = "dips_tests.rs"]
mod tests;
