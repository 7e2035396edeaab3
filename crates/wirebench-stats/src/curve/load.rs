//! Latency under offered load: where a system stops keeping up.
//!
//! A load sweep measures, at increasing offered rates, the 99th-percentile latency and the
//! loss. Definitions, with the points sorted by offered rate (ties kept in input order):
//!
//! - The **baseline** is the point at the lowest offered rate.
//! - The **p99 bound** is the caller's, or else `factor ×` the baseline's p99 (default
//!   factor 2).
//! - A point **violates** when its p99 is above the bound (strictly), or its loss fraction is
//!   above the allowed loss (strictly; default 0, i.e. any loss violates).
//! - The **knee** is the highest offered rate at which the system still keeps up: the last
//!   point before the first violating one (all points when none violates). `None` when the
//!   baseline itself violates.
//! - The **first violation** is that first violating point, with its cause (latency, loss or
//!   both). Points above it that satisfy both conditions again are counted
//!   (`ok_after_violation`): a non-zero count says the curve is not monotone (noise, or a
//!   sweep too short per point), and the knee should be read with care.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_figure, check_param, CurveError, PointProblem};

/// One point of a load sweep.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadPoint {
    /// Offered rate (requests, messages or packets per second, as the sweep defines).
    pub offered_per_s: f64,
    /// 99th-percentile latency at that rate, ns.
    pub p99_ns: f64,
    /// Share of the offered work lost (not answered, dropped), in [0, 1].
    pub loss_fraction: f64,
}

/// Parameters of [`load_knee`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadConfig {
    /// The p99 bound, ns; `None` for `baseline_factor ×` the baseline's p99.
    pub p99_bound_ns: Option<f64>,
    /// Multiple of the baseline p99 used when no bound is given (≥ 1); default 2.
    pub baseline_factor: f64,
    /// Largest loss fraction that does not violate, in [0, 1); default 0.
    pub max_loss_fraction: f64,
}

impl Default for LoadConfig {
    fn default() -> Self {
        LoadConfig {
            p99_bound_ns: None,
            baseline_factor: 2.0,
            max_loss_fraction: 0.0,
        }
    }
}

/// Where the p99 bound came from.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum BoundSource {
    /// Given by the caller.
    Given,
    /// `factor ×` the baseline's p99.
    BaselineMultiple {
        /// The factor.
        factor: f64,
    },
}

/// Why a point violates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ViolationCause {
    /// p99 above the bound, no loss above the allowed.
    Latency,
    /// Loss above the allowed, p99 within the bound.
    Loss,
    /// Both.
    LatencyAndLoss,
}

/// The first violating point.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Violation {
    /// The point.
    pub point: LoadPoint,
    /// What it violates.
    pub cause: ViolationCause,
}

/// The result of [`load_knee`] (see the module docs for the definitions).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LoadKnee {
    /// Points analysed.
    pub points: u32,
    /// The point at the lowest offered rate.
    pub baseline: LoadPoint,
    /// The p99 bound applied, ns.
    pub p99_bound_ns: f64,
    /// Where the bound came from.
    pub bound: BoundSource,
    /// The loss fraction allowed.
    pub max_loss_fraction: f64,
    /// The last point before the first violation; `None` when the baseline violates.
    pub knee: Option<LoadPoint>,
    /// The first violating point; `None` when no point violates.
    pub first_violation: Option<Violation>,
    /// Points above the first violation that satisfy both conditions again.
    pub ok_after_violation: u32,
}

/// Validates a load point.
fn check_point(index: usize, p: &LoadPoint) -> Result<(), CurveError> {
    check_figure(index, "offered_per_s", p.offered_per_s)?;
    check_figure(index, "p99_ns", p.p99_ns)?;
    check_figure(index, "loss_fraction", p.loss_fraction)?;
    if p.loss_fraction > 1.0 {
        let problem = PointProblem::AboveOne {
            field: "loss_fraction",
        };
        return Err(CurveError::InvalidPoint { index, problem });
    }
    Ok(())
}

/// Finds the load knee of a sweep (see the module docs).
///
/// Errors: no points ([`CurveError::Empty`]); a figure not finite or negative, or a loss
/// fraction above 1 ([`CurveError::InvalidPoint`]); a bound not finite or negative, a factor
/// below 1 or not finite, an allowed loss outside [0, 1) ([`CurveError::InvalidParameter`]).
pub fn load_knee(points: &[LoadPoint], config: &LoadConfig) -> Result<LoadKnee, CurveError> {
    if let Some(b) = config.p99_bound_ns {
        check_param(
            "p99_bound_ns",
            b,
            0.0,
            true,
            f64::MAX,
            "a finite ns value ≥ 0",
        )?;
    }
    check_param(
        "baseline_factor",
        config.baseline_factor,
        1.0,
        true,
        f64::MAX,
        "a finite factor ≥ 1",
    )?;
    let max_loss = config.max_loss_fraction;
    if !(0.0..1.0).contains(&max_loss) {
        return Err(CurveError::InvalidParameter {
            name: "max_loss_fraction",
            value: max_loss,
            expected: "a fraction in [0, 1)",
        });
    }
    for (index, p) in points.iter().enumerate() {
        check_point(index, p)?;
    }
    let mut sorted = points.to_vec();
    sorted.sort_by(|a, b| a.offered_per_s.total_cmp(&b.offered_per_s));
    let baseline = *sorted.first().ok_or(CurveError::Empty)?;
    let (p99_bound_ns, bound) = match config.p99_bound_ns {
        Some(b) => (b, BoundSource::Given),
        None => (
            // Finite inputs, factor finite: the product may still overflow to ∞, which
            // simply bounds nothing.
            baseline.p99_ns * config.baseline_factor,
            BoundSource::BaselineMultiple {
                factor: config.baseline_factor,
            },
        ),
    };
    let cause = |p: &LoadPoint| match (p.p99_ns > p99_bound_ns, p.loss_fraction > max_loss) {
        (false, false) => None,
        (true, false) => Some(ViolationCause::Latency),
        (false, true) => Some(ViolationCause::Loss),
        (true, true) => Some(ViolationCause::LatencyAndLoss),
    };
    let first_bad = sorted.iter().position(|p| cause(p).is_some());
    let (knee, first_violation, ok_after_violation) = match first_bad {
        None => (sorted.last().copied(), None, 0),
        Some(i) => {
            let knee = i.checked_sub(1).and_then(|k| sorted.get(k)).copied();
            let violation = sorted.get(i).and_then(|p| {
                Some(Violation {
                    point: *p,
                    cause: cause(p)?,
                })
            });
            let ok_after = sorted
                .get(i + 1..)
                .unwrap_or(&[])
                .iter()
                .filter(|p| cause(p).is_none())
                .count();
            (knee, violation, u32::try_from(ok_after).unwrap_or(u32::MAX))
        }
    };
    Ok(LoadKnee {
        points: u32::try_from(sorted.len()).unwrap_or(u32::MAX),
        baseline,
        p99_bound_ns,
        bound,
        max_loss_fraction: max_loss,
        knee,
        first_violation,
        ok_after_violation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// A hockey stick: p99 flat at 50 µs up to 80 000/s, then growing 4 µs per 1000/s;
    /// loss from 120 000/s on.
    fn hockey_stick() -> Vec<LoadPoint> {
        (1..=15)
            .map(|i| {
                let rate = f64::from(i) * 10_000.0;
                let p99_ns = 50_000.0 + (rate - 80_000.0).max(0.0) * 4.0;
                let loss_fraction = if rate >= 120_000.0 { 0.01 } else { 0.0 };
                LoadPoint {
                    offered_per_s: rate,
                    p99_ns,
                    loss_fraction,
                }
            })
            .collect()
    }

    #[test]
    fn hockey_stick_knee_by_latency() {
        // Default bound 100 µs: exceeded once 50 µs + 4 ns · (r − 80 000) > 100 µs, i.e.
        // r > 92 500/s: 100 000/s is the first violation, 90 000/s (90 µs) the knee.
        let k = load_knee(&hockey_stick(), &LoadConfig::default()).unwrap();
        assert_eq!(k.p99_bound_ns, 100_000.0);
        assert_eq!(k.bound, BoundSource::BaselineMultiple { factor: 2.0 });
        assert_eq!(k.baseline.offered_per_s, 10_000.0);
        assert_eq!(k.knee.unwrap().offered_per_s, 90_000.0);
        let v = k.first_violation.unwrap();
        assert_eq!(v.point.offered_per_s, 100_000.0);
        assert_eq!(v.point.p99_ns, 130_000.0);
        assert_eq!(v.cause, ViolationCause::Latency);
        assert_eq!(k.ok_after_violation, 0);
    }

    #[test]
    fn hockey_stick_knee_by_loss_and_both() {
        // A loose bound (1 ms): loss decides, from 120 000/s.
        let loose = LoadConfig {
            p99_bound_ns: Some(1e6),
            ..LoadConfig::default()
        };
        let k = load_knee(&hockey_stick(), &loose).unwrap();
        assert_eq!(k.bound, BoundSource::Given);
        assert_eq!(k.knee.unwrap().offered_per_s, 110_000.0);
        assert_eq!(k.first_violation.unwrap().cause, ViolationCause::Loss);
        // 1 % loss tolerated: no violation at all; the knee is the last point.
        let tolerant = LoadConfig {
            max_loss_fraction: 0.01,
            ..loose
        };
        let k = load_knee(&hockey_stick(), &tolerant).unwrap();
        assert_eq!(k.knee.unwrap().offered_per_s, 150_000.0);
        assert_eq!(k.first_violation, None);
        // A bound of 200 µs: p99 passes it after 117 500/s, loss starts at 120 000/s.
        let both = LoadConfig {
            p99_bound_ns: Some(200_000.0),
            ..LoadConfig::default()
        };
        let k = load_knee(&hockey_stick(), &both).unwrap();
        assert_eq!(k.knee.unwrap().offered_per_s, 110_000.0);
        let v = k.first_violation.unwrap();
        assert_eq!(
            (v.point.offered_per_s, v.cause),
            (120_000.0, ViolationCause::LatencyAndLoss)
        );
    }

    #[test]
    fn baseline_violation_and_recovery_and_order() {
        let mut pts = hockey_stick();
        pts[0].loss_fraction = 0.5;
        let k = load_knee(&pts, &LoadConfig::default()).unwrap();
        assert_eq!(k.knee, None);
        assert_eq!(k.first_violation.unwrap().cause, ViolationCause::Loss);
        assert_eq!(k.ok_after_violation, 8, "10 000 .. 90 000/s less the first");

        // A single spike: the knee stops before it, the recovery is counted.
        let mut pts = hockey_stick();
        pts[3].p99_ns = 1e6;
        pts.reverse(); // order does not matter
        let k = load_knee(&pts, &LoadConfig::default()).unwrap();
        assert_eq!(k.knee.unwrap().offered_per_s, 30_000.0);
        assert_eq!(k.ok_after_violation, 5);
    }

    #[test]
    fn invalid_inputs_are_typed() {
        let c = LoadConfig::default();
        assert_eq!(load_knee(&[], &c), Err(CurveError::Empty));
        let mut p = hockey_stick();
        p[2].loss_fraction = 1.5;
        assert_eq!(
            load_knee(&p, &c),
            Err(CurveError::InvalidPoint {
                index: 2,
                problem: PointProblem::AboveOne {
                    field: "loss_fraction"
                }
            })
        );
        p[2].loss_fraction = f64::NAN;
        assert!(matches!(
            load_knee(&p, &c),
            Err(CurveError::InvalidPoint { index: 2, .. })
        ));
        for bad in [
            LoadConfig {
                p99_bound_ns: Some(f64::NAN),
                ..c.clone()
            },
            LoadConfig {
                baseline_factor: 0.5,
                ..c.clone()
            },
            LoadConfig {
                max_loss_fraction: 1.0,
                ..c.clone()
            },
        ] {
            assert!(matches!(
                load_knee(&hockey_stick(), &bad),
                Err(CurveError::InvalidParameter { .. })
            ));
        }
    }

    proptest! {
        #[test]
        fn load_knee_never_panics(
            raw in prop::collection::vec((any::<f64>(), any::<f64>(), any::<f64>()), 0..20),
            bound in prop::option::of(any::<f64>()),
            factor in any::<f64>(),
            loss in any::<f64>(),
        ) {
            let pts: Vec<LoadPoint> = raw.iter().map(|&(offered_per_s, p99_ns, loss_fraction)| LoadPoint { offered_per_s, p99_ns, loss_fraction }).collect();
            let c = LoadConfig { p99_bound_ns: bound, baseline_factor: factor, max_loss_fraction: loss };
            let _ = load_knee(&pts, &c);
            let _ = load_knee(&pts, &LoadConfig::default());
        }

        #[test]
        fn knee_is_below_the_first_violation(
            raw in prop::collection::vec((0.0f64..1e6, 0.0f64..1e6, prop_oneof![Just(0.0), 0.0f64..1.0]), 1..20),
        ) {
            let pts: Vec<LoadPoint> = raw.iter().map(|&(offered_per_s, p99_ns, loss_fraction)| LoadPoint { offered_per_s, p99_ns, loss_fraction }).collect();
            let k = load_knee(&pts, &LoadConfig::default()).unwrap();
            if let (Some(knee), Some(v)) = (k.knee, k.first_violation) {
                prop_assert!(knee.offered_per_s <= v.point.offered_per_s);
            }
            prop_assert!(k.knee.is_some() || k.first_violation.is_some());
            // Every point at or below the knee satisfies both conditions.
            if let Some(knee) = k.knee {
                let ok = pts.iter().filter(|p| p.offered_per_s < knee.offered_per_s)
                    .all(|p| p.p99_ns <= k.p99_bound_ns && p.loss_fraction == 0.0);
                prop_assert!(ok);
            }
        }
    }
}
