//! Tests of the Hockney fit on exact and noisy synthetic latency curves.

use super::*;
use crate::curve::testkit::{Rng, N_HALF_BYTES, R_BPS, T0_S};
use crate::sweep::geometric;
use proptest::prelude::*;

const T0_NS: f64 = T0_S * 1e9;
/// 1 / r_inf in ns per byte: 8 bits / 10 Gbit/s = 0.8 ns.
const SLOPE_NS_PER_BYTE: f64 = 8.0 * 1e9 / R_BPS;

fn exact_points() -> Vec<LatencyPoint> {
    geometric(1, 4 << 20, 4)
        .unwrap()
        .into_iter()
        .map(|n| LatencyPoint {
            size_bytes: n,
            latency_ns: T0_NS + SLOPE_NS_PER_BYTE * n as f64,
        })
        .collect()
}

fn rel_err(got: f64, want: f64) -> f64 {
    (got / want - 1.0).abs()
}

#[test]
fn exact_data_recovers_t0_and_r_inf() {
    for w in [Weighting::Equal, Weighting::Relative] {
        let f = hockney_fit(&exact_points(), w).unwrap();
        assert!(rel_err(f.t0_ns, T0_NS) < 1e-3, "{w:?}: {f:?}");
        assert!(rel_err(f.r_inf_bps.unwrap(), R_BPS) < 1e-3, "{w:?}: {f:?}");
        assert!(rel_err(f.r_inf_bytes_per_s.unwrap(), R_BPS / 8.0) < 1e-3);
        assert!(
            rel_err(f.n_half_bytes.unwrap(), N_HALF_BYTES) < 1e-3,
            "{f:?}"
        );
        assert!(f.rms_residual_ns < 1e-6, "{f:?}");
        assert!(f.rms_residual_pct.unwrap() < 1e-9);
        assert!((f.r_squared - 1.0).abs() < 1e-12);
        assert_eq!(f.weighting, w);
    }
}

#[test]
fn additive_noise_ordinary_least_squares() {
    // 500 ns of gaussian jitter (2.5 % of t0) at every size.
    let mut worst = (0.0f64, 0.0f64);
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let pts: Vec<LatencyPoint> = exact_points()
            .into_iter()
            .map(|p| LatencyPoint {
                latency_ns: p.latency_ns + 500.0 * rng.gauss(),
                ..p
            })
            .collect();
        let f = hockney_fit(&pts, Weighting::Equal).unwrap();
        let (e_t0, e_r) = (
            rel_err(f.t0_ns, T0_NS),
            rel_err(f.r_inf_bps.unwrap(), R_BPS),
        );
        assert!(e_t0 < 0.03 && e_r < 0.01, "seed {seed}: {f:?}");
        // The residual RMS estimates the jitter.
        assert!(
            (f.rms_residual_ns / 500.0 - 1.0).abs() < 0.3,
            "seed {seed}: {f:?}"
        );
        worst = (worst.0.max(e_t0), worst.1.max(e_r));
    }
    eprintln!(
        "additive noise, worst t0 err {:.3} %, r_inf {:.3} %",
        100.0 * worst.0,
        100.0 * worst.1
    );
}

#[test]
fn proportional_noise_relative_weighting() {
    // 2 % multiplicative jitter: relative weighting recovers t0 where equal weighting cannot.
    let mut worst = (0.0f64, 0.0f64);
    let mut worst_equal_t0 = 0.0f64;
    for seed in 0..20 {
        let mut rng = Rng::new(seed);
        let pts: Vec<LatencyPoint> = exact_points()
            .into_iter()
            .map(|p| LatencyPoint {
                latency_ns: rng.jitter(p.latency_ns, 0.02),
                ..p
            })
            .collect();
        let f = hockney_fit(&pts, Weighting::Relative).unwrap();
        let (e_t0, e_r) = (
            rel_err(f.t0_ns, T0_NS),
            rel_err(f.r_inf_bps.unwrap(), R_BPS),
        );
        assert!(e_t0 < 0.03 && e_r < 0.03, "seed {seed}: {f:?}");
        assert!(
            (f.rms_residual_pct.unwrap() / 2.0 - 1.0).abs() < 0.3,
            "{f:?}"
        );
        assert!(
            rel_err(f.n_half_bytes.unwrap(), N_HALF_BYTES) < 0.05,
            "{f:?}"
        );
        worst = (worst.0.max(e_t0), worst.1.max(e_r));
        let e = hockney_fit(&pts, Weighting::Equal).unwrap();
        worst_equal_t0 = worst_equal_t0.max(rel_err(e.t0_ns, T0_NS));
    }
    eprintln!(
        "proportional noise, relative weighting: worst t0 err {:.3} %, r_inf {:.3} %; \
         equal weighting t0 err up to {:.1} %",
        100.0 * worst.0,
        100.0 * worst.1,
        100.0 * worst_equal_t0
    );
    assert!(worst_equal_t0 > worst.0);
}

#[test]
fn degenerate_inputs_are_typed() {
    let p = |size_bytes, latency_ns| LatencyPoint {
        size_bytes,
        latency_ns,
    };
    assert_eq!(hockney_fit(&[], Weighting::Equal), Err(CurveError::Empty));
    assert_eq!(
        hockney_fit(&[p(1, 1.0)], Weighting::Equal),
        Err(CurveError::TooFewPoints { have: 1, need: 2 })
    );
    assert_eq!(
        hockney_fit(&[p(8, 1.0), p(8, 2.0)], Weighting::Equal),
        Err(CurveError::SingleSize { size_bytes: 8 })
    );
    assert!(matches!(
        hockney_fit(&[p(1, 1.0), p(2, f64::INFINITY)], Weighting::Equal),
        Err(CurveError::InvalidPoint { index: 1, .. })
    ));
    assert_eq!(
        hockney_fit(&[p(0, 0.0), p(2, 5.0)], Weighting::Relative),
        Err(CurveError::InvalidPoint {
            index: 0,
            problem: PointProblem::Zero {
                field: "latency_ns"
            }
        })
    );
    // Zero latency is fine unweighted: t(0) = 0 is t0 = 0, and n½ is then undefined.
    let f = hockney_fit(&[p(0, 0.0), p(2, 5.0)], Weighting::Equal).unwrap();
    assert_eq!((f.t0_ns, f.slope_ns_per_byte), (0.0, 2.5));
    assert_eq!(f.n_half_bytes, None);
    assert_eq!(f.rms_residual_pct, None);
    // Latency falling with the size: no bandwidth.
    let f = hockney_fit(&[p(1, 10.0), p(2, 5.0)], Weighting::Equal).unwrap();
    assert!(f.slope_ns_per_byte < 0.0);
    assert_eq!((f.r_inf_bps, f.n_half_bytes), (None, None));
    // Flat: slope 0, exact fit.
    let f = hockney_fit(&[p(1, 7.0), p(2, 7.0), p(3, 7.0)], Weighting::Relative).unwrap();
    assert_eq!(f.r_squared, 1.0);
    assert_eq!(f.r_inf_bps, None);
}

proptest! {
    #[test]
    fn fit_never_panics(
        raw in prop::collection::vec(
            (any::<u64>(), prop_oneof![3 => 0.0f64..1e12, 1 => any::<f64>(), 1 => Just(f64::MAX), 1 => Just(f64::MIN_POSITIVE)]),
            0..20),
        relative in any::<bool>(),
    ) {
        let pts: Vec<LatencyPoint> = raw.iter().map(|&(size_bytes, latency_ns)| LatencyPoint { size_bytes, latency_ns }).collect();
        let w = if relative { Weighting::Relative } else { Weighting::Equal };
        if let Ok(f) = hockney_fit(&pts, w) {
            prop_assert!(f.t0_ns.is_finite() && f.slope_ns_per_byte.is_finite());
            prop_assert!(f.rms_residual_ns.is_finite() && f.rms_residual_ns >= 0.0);
            prop_assert!(f.r_squared <= 1.0 + 1e-9);
        }
    }
}
