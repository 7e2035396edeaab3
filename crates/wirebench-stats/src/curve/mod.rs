//! Analyses of sweep curves (NetPIPE-grade), all pure: numbers in, numbers out.
//!
//! - [`throughput`]: throughput vs message size: peak, saturation, knee, n½, the
//!   latency-dominated regime ([`analyze_throughput`]).
//! - [`dips`]: sharp dips inside a throughput curve and their confirmation by re-measurement
//!   ([`dip_candidates`], [`confirm_dips`]).
//! - [`hockney`]: the Hockney model `t(n) = t0 + n / r_inf` fitted to latency vs size
//!   ([`hockney_fit`]).
//! - [`load`]: latency and loss under offered load, and the load knee ([`load_knee`]).
//!
//! Conventions shared by every analysis here:
//! - Throughputs are in bits per second (`_bps`), sizes in bytes (`_bytes`), times in
//!   nanoseconds (`_ns`), rates per second (`_per_s`), percentages in percent (`_pct`,
//!   100 = all).
//! - Inputs are validated, never repaired: a non-finite or negative figure, a zero message
//!   size or two points at one size is a [`CurveError`] naming the point, not something
//!   silently dropped. Points may come in any order; they are analysed sorted by size (by
//!   offered rate for load sweeps).
//! - "Median" is the middle value of the sorted values, or the mean of the two middle ones
//!   for an even count. "CV" (coefficient of variation) is the sample standard deviation
//!   (divisor `n − 1`, 0 for a single value) over the mean, in percent; 0 when the mean is 0.

pub mod dips;
pub mod hockney;
pub mod load;
pub mod throughput;

pub use dips::{
    confirm_dips, dip_candidates, ConfirmedDip, Dip, DipCandidates, DipConfirmation,
    UnconfirmedDip, UnconfirmedReason, DEFAULT_DIP_THRESHOLD_PCT,
};
pub use hockney::{hockney_fit, HockneyFit, LatencyPoint, Weighting};
pub use load::{
    load_knee, BoundSource, LoadConfig, LoadKnee, LoadPoint, Violation, ViolationCause,
};
pub use throughput::{analyze_throughput, LatencyRegime, ThroughputAnalysis, ThroughputConfig};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One measured point of a throughput-vs-message-size curve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ThroughputPoint {
    /// Message size (bytes per send/receive call), at least 1.
    pub size_bytes: u64,
    /// The point's throughput (e.g. the mean over its iterations), bits per second.
    pub throughput_bps: f64,
    /// Standard deviation of the throughput across iterations, bits per second, if known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev_bps: Option<f64>,
    /// The throughput of each iteration, bits per second (empty if not kept). Used for the
    /// noise figure of a dip when `stddev_bps` is absent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub iterations_bps: Vec<f64>,
}

impl ThroughputPoint {
    /// A point with no spread information.
    pub fn new(size_bytes: u64, throughput_bps: f64) -> Self {
        ThroughputPoint {
            size_bytes,
            throughput_bps,
            stddev_bps: None,
            iterations_bps: Vec::new(),
        }
    }
}

/// What is wrong with one input point.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Error)]
pub enum PointProblem {
    /// A figure is NaN or infinite.
    #[error("{field} is not finite")]
    NonFinite {
        /// The field's name.
        field: &'static str,
    },
    /// A figure is negative.
    #[error("{field} is negative")]
    Negative {
        /// The field's name.
        field: &'static str,
    },
    /// A figure is zero where it must be positive.
    #[error("{field} is zero")]
    Zero {
        /// The field's name.
        field: &'static str,
    },
    /// A fraction is above 1.
    #[error("{field} is above 1")]
    AboveOne {
        /// The field's name.
        field: &'static str,
    },
}

/// Why a curve cannot be analysed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum CurveError {
    /// No points at all.
    #[error("no points")]
    Empty,
    /// Fewer points than the analysis needs.
    #[error("{have} point(s), at least {need} needed")]
    TooFewPoints {
        /// Points given.
        have: usize,
        /// Points needed.
        need: usize,
    },
    /// One point is invalid.
    #[error("point {index} (in the order given): {problem}")]
    InvalidPoint {
        /// Its index in the caller's slice.
        index: usize,
        /// What is wrong with it.
        problem: PointProblem,
    },
    /// Two points share a message size.
    #[error("two points at message size {size_bytes} B")]
    DuplicateSize {
        /// The size.
        size_bytes: u64,
    },
    /// Every throughput is zero: there is no curve.
    #[error("every throughput is zero")]
    AllZero,
    /// A fit needs at least two distinct sizes.
    #[error("every point has message size {size_bytes} B: no slope can be fitted")]
    SingleSize {
        /// The one size.
        size_bytes: u64,
    },
    /// A fit's result does not fit in an `f64` (inputs spanning ~300 orders of magnitude).
    #[error("the fit overflowed f64")]
    Overflow,
    /// A configuration value is out of its range.
    #[error("{name} = {value} is out of range: expected {expected}")]
    InvalidParameter {
        /// The parameter's name.
        name: &'static str,
        /// The value given.
        value: f64,
        /// The accepted range.
        expected: &'static str,
    },
}

/// Where a curve first reaches a level, between two measured sizes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Crossing {
    /// The curve is below the level at `below_bytes` and at or above it at `above_bytes`
    /// (the next measured size); `size_bytes` interpolates between them, linearly in
    /// throughput against the logarithm of the size:
    /// `size = below · (above / below)^φ` with `φ = (level − T(below)) / (T(above) − T(below))`.
    Between {
        /// The interpolated size, bytes (not an integer in general).
        size_bytes: f64,
        /// The measured size just below the level, bytes.
        below_bytes: u64,
        /// The first measured size at or above the level, bytes.
        above_bytes: u64,
    },
    /// The smallest measured size is already at or above the level: the crossing lies at or
    /// below it, the sweep does not say where.
    AtOrBelowSmallest {
        /// The smallest measured size, bytes.
        smallest_bytes: u64,
    },
}

impl Crossing {
    /// The crossing size for display: the interpolated size, or the smallest size (an upper
    /// bound) when the crossing lies at or below it.
    pub fn size_bytes(&self) -> f64 {
        match *self {
            Crossing::Between { size_bytes, .. } => size_bytes,
            Crossing::AtOrBelowSmallest { smallest_bytes } => smallest_bytes as f64,
        }
    }
}

/// A validated throughput point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Valid {
    pub(crate) size_bytes: u64,
    pub(crate) bps: f64,
    /// Standard deviation of the throughput, bits per second, if known.
    pub(crate) stddev_bps: Option<f64>,
}

/// Checks one figure: finite and not negative.
pub(crate) fn check_figure(
    index: usize,
    field: &'static str,
    value: f64,
) -> Result<(), CurveError> {
    let problem = if !value.is_finite() {
        PointProblem::NonFinite { field }
    } else if value < 0.0 {
        PointProblem::Negative { field }
    } else {
        return Ok(());
    };
    Err(CurveError::InvalidPoint { index, problem })
}

/// Validates throughput points and sorts them by size; rejects duplicates. May be empty.
pub(crate) fn validate_throughput(points: &[ThroughputPoint]) -> Result<Vec<Valid>, CurveError> {
    let mut out = Vec::with_capacity(points.len());
    for (index, p) in points.iter().enumerate() {
        if p.size_bytes == 0 {
            let problem = PointProblem::Zero {
                field: "size_bytes",
            };
            return Err(CurveError::InvalidPoint { index, problem });
        }
        check_figure(index, "throughput_bps", p.throughput_bps)?;
        if let Some(s) = p.stddev_bps {
            check_figure(index, "stddev_bps", s)?;
        }
        for &v in &p.iterations_bps {
            check_figure(index, "iterations_bps", v)?;
        }
        let stddev_bps = p.stddev_bps.or_else(|| sample_stddev(&p.iterations_bps));
        out.push(Valid {
            size_bytes: p.size_bytes,
            bps: p.throughput_bps,
            stddev_bps,
        });
    }
    out.sort_by_key(|v| v.size_bytes);
    if let Some(w) = out.windows(2).find(|w| w[0].size_bytes == w[1].size_bytes) {
        return Err(CurveError::DuplicateSize {
            size_bytes: w[0].size_bytes,
        });
    }
    Ok(out)
}

/// Median of finite values (`None` if empty).
pub(crate) fn median(values: &[f64]) -> Option<f64> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let len = sorted.len();
    if len == 0 {
        return None;
    }
    let mid = len / 2;
    if len % 2 == 1 {
        sorted.get(mid).copied()
    } else {
        let a = *sorted.get(mid - 1)?;
        let b = *sorted.get(mid)?;
        Some(a / 2.0 + b / 2.0)
    }
}

/// Mean of finite values, without overflow (`None` if empty).
pub(crate) fn mean(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    Some(if sum.is_finite() {
        sum / n
    } else {
        values.iter().map(|v| v / n).sum()
    })
}

/// Sample standard deviation (divisor n − 1); `None` for fewer than 2 values or overflow.
pub(crate) fn sample_stddev(values: &[f64]) -> Option<f64> {
    if values.len() < 2 {
        return None;
    }
    let m = mean(values)?;
    // Scaled by the largest magnitude so the squares cannot overflow.
    let scale = values.iter().fold(0.0f64, |a, v| a.max((v - m).abs()));
    if scale == 0.0 {
        return Some(0.0);
    }
    let ss: f64 = values.iter().map(|v| ((v - m) / scale).powi(2)).sum();
    let sd = scale * (ss / (values.len() - 1) as f64).sqrt();
    sd.is_finite().then_some(sd)
}

/// Coefficient of variation in percent: sample stddev / mean × 100; 0 for a single value
/// or a zero mean; `f64::INFINITY` if the stddev overflows.
pub(crate) fn cv_pct(values: &[f64]) -> f64 {
    let Some(m) = mean(values) else {
        return 0.0;
    };
    if m == 0.0 || values.len() < 2 {
        return 0.0;
    }
    match sample_stddev(values) {
        Some(sd) => 100.0 * sd / m.abs(),
        None => f64::INFINITY,
    }
}

/// Index of the first point with throughput at or above `level`.
pub(crate) fn first_at_or_above(points: &[Valid], level: f64) -> Option<usize> {
    points.iter().position(|p| p.bps >= level)
}

/// Where `points` (sorted by size, sizes ≥ 1) first reach `level`; `None` if never.
pub(crate) fn crossing(points: &[Valid], level: f64) -> Option<Crossing> {
    let i = first_at_or_above(points, level)?;
    if i == 0 {
        return Some(Crossing::AtOrBelowSmallest {
            smallest_bytes: points.first()?.size_bytes,
        });
    }
    let a = points.get(i - 1)?;
    let b = points.get(i)?;
    // a.bps < level ≤ b.bps, so the denominator is positive.
    let phi = ((level - a.bps) / (b.bps - a.bps)).clamp(0.0, 1.0);
    let (la, lb) = ((a.size_bytes as f64).ln(), (b.size_bytes as f64).ln());
    let size = (la + phi * (lb - la))
        .exp()
        .clamp(a.size_bytes as f64, b.size_bytes as f64);
    Some(Crossing::Between {
        size_bytes: size,
        below_bytes: a.size_bytes,
        above_bytes: b.size_bytes,
    })
}

/// Checks that a percentage parameter is finite and within `(lo, hi]` (or `[lo, hi]` when
/// `lo_inclusive`).
pub(crate) fn check_param(
    name: &'static str,
    value: f64,
    lo: f64,
    lo_inclusive: bool,
    hi: f64,
    expected: &'static str,
) -> Result<(), CurveError> {
    let above_lo = if lo_inclusive {
        value >= lo
    } else {
        value > lo
    };
    if value.is_finite() && above_lo && value <= hi {
        Ok(())
    } else {
        Err(CurveError::InvalidParameter {
            name,
            value,
            expected,
        })
    }
}

#[cfg(test)]
pub(crate) mod testkit;

#[cfg(test)]
mod tests {
    use super::*;

    fn v(size_bytes: u64, bps: f64) -> Valid {
        Valid {
            size_bytes,
            bps,
            stddev_bps: None,
        }
    }

    #[test]
    fn crossing_interpolates_on_log_size() {
        let pts = [v(100, 10.0), v(400, 30.0)];
        // Halfway in throughput = halfway in log size = the geometric mean, 200.
        let Some(Crossing::Between {
            size_bytes,
            below_bytes,
            above_bytes,
        }) = crossing(&pts, 20.0)
        else {
            panic!("expected a crossing between points");
        };
        assert!((size_bytes - 200.0).abs() < 1e-9, "{size_bytes}");
        assert_eq!((below_bytes, above_bytes), (100, 400));
        assert_eq!(
            crossing(&pts, 5.0),
            Some(Crossing::AtOrBelowSmallest {
                smallest_bytes: 100
            })
        );
        assert_eq!(crossing(&pts, 31.0), None);
    }

    #[test]
    fn validation_rejects_and_names_bad_points() {
        let ok = ThroughputPoint::new(10, 1.0);
        let nan = ThroughputPoint::new(20, f64::NAN);
        assert_eq!(
            validate_throughput(&[ok.clone(), nan]).unwrap_err(),
            CurveError::InvalidPoint {
                index: 1,
                problem: PointProblem::NonFinite {
                    field: "throughput_bps"
                }
            }
        );
        let zero = ThroughputPoint::new(0, 1.0);
        assert!(matches!(
            validate_throughput(&[zero]),
            Err(CurveError::InvalidPoint { index: 0, .. })
        ));
        assert_eq!(
            validate_throughput(&[ok.clone(), ok]).unwrap_err(),
            CurveError::DuplicateSize { size_bytes: 10 }
        );
        let mut it = ThroughputPoint::new(10, 1.0);
        it.iterations_bps = vec![1.0, -1.0];
        assert!(validate_throughput(&[it]).is_err());
    }

    /// Equal JSON values, numbers to 1e-12 relative (serde_json's default float parsing
    /// may differ from the printed value in the last bit).
    fn assert_json_close(a: &serde_json::Value, b: &serde_json::Value) {
        use serde_json::Value;
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                assert!((x - y).abs() <= 1e-12 * x.abs().max(y.abs()), "{x} vs {y}");
            }
            (Value::Array(x), Value::Array(y)) => {
                assert_eq!(x.len(), y.len());
                x.iter().zip(y).for_each(|(x, y)| assert_json_close(x, y));
            }
            (Value::Object(x), Value::Object(y)) => {
                assert_eq!(x.keys().collect::<Vec<_>>(), y.keys().collect::<Vec<_>>());
                x.values()
                    .zip(y.values())
                    .for_each(|(x, y)| assert_json_close(x, y));
            }
            _ => assert_eq!(a, b),
        }
    }

    #[test]
    fn reports_round_trip_through_json_and_have_schemas() {
        use crate::curve::testkit::hockney_curve;
        let sizes = crate::sweep::geometric(1, 1 << 24, 4).unwrap();
        let mut pts = hockney_curve(&sizes);
        pts[60].throughput_bps *= 0.8;
        let a = analyze_throughput(&pts, &ThroughputConfig::default()).unwrap();
        assert_eq!(a.dips.dips.len(), 1);
        let json = serde_json::to_string(&a).unwrap();
        assert!(json.contains("\"n_half\":{\"kind\":\"between\""), "{json}");
        let back: ThroughputAnalysis = serde_json::from_str(&json).unwrap();
        assert_json_close(
            &serde_json::to_value(&back).unwrap(),
            &serde_json::to_value(&a).unwrap(),
        );
        let conf = confirm_dips(&a.dips, &[]);
        let json = serde_json::to_string(&conf).unwrap();
        assert!(json.contains("\"kind\":\"not_remeasured\""), "{json}");
        let back: DipConfirmation = serde_json::from_str(&json).unwrap();
        assert_json_close(
            &serde_json::to_value(&back).unwrap(),
            &serde_json::to_value(&conf).unwrap(),
        );

        let schema = serde_json::to_string(&schemars::schema_for!(ThroughputAnalysis)).unwrap();
        for field in [
            "saturation_bps",
            "knee_size_bytes",
            "calls_median_per_s",
            "depth_pct",
        ] {
            assert!(schema.contains(field), "{field} missing from the schema");
        }
        for schema in [
            schemars::schema_for!(DipConfirmation),
            schemars::schema_for!(HockneyFit),
            schemars::schema_for!(LoadKnee),
            schemars::schema_for!(ThroughputPoint),
            schemars::schema_for!(LatencyPoint),
            schemars::schema_for!(LoadPoint),
            schemars::schema_for!(LoadConfig),
            schemars::schema_for!(ThroughputConfig),
        ] {
            assert!(serde_json::to_string(&schema).unwrap().len() > 100);
        }
    }

    #[test]
    fn stddev_from_iterations() {
        let mut p = ThroughputPoint::new(10, 3.0);
        p.iterations_bps = vec![2.0, 4.0];
        let valid = validate_throughput(&[p]).unwrap();
        assert!((valid[0].stddev_bps.unwrap() - 2f64.sqrt()).abs() < 1e-12);
        assert_eq!(cv_pct(&[5.0]), 0.0);
        assert!((cv_pct(&[2.0, 4.0]) - 100.0 * 2f64.sqrt() / 3.0).abs() < 1e-9);
        assert_eq!(median(&[3.0, 1.0, 2.0, 10.0]), Some(2.5));
    }
}
