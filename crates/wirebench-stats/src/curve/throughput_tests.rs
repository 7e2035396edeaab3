//! Tests of the throughput-curve analysis on synthetic curves with known answers.

use super::*;
use crate::curve::testkit::{hockney_bps, hockney_curve, Rng, N_HALF_BYTES, R_BPS, T0_S};
use crate::curve::PointProblem;
use crate::sweep::{geometric, perturb};
use proptest::prelude::*;

fn analyze(points: &[ThroughputPoint]) -> ThroughputAnalysis {
    analyze_throughput(points, &ThroughputConfig::default()).unwrap()
}

#[test]
fn hockney_curve_saturation_n_half_knee_and_latency_regime() {
    let sizes = geometric(1, 64 << 20, 4).unwrap();
    let a = analyze(&hockney_curve(&sizes));
    eprintln!(
        "hockney 20 µs + n / 10 Gbit/s: saturation {:.4e} bps, n½ {:.0} B, knee {} B ({:.0} B), \
         latency regime {}..{} B at {:.0} calls/s",
        a.saturation_bps,
        a.n_half.size_bytes(),
        a.knee_size_bytes,
        a.knee.size_bytes(),
        a.latency_regime.from_bytes,
        a.latency_regime.to_bytes,
        a.latency_regime.calls_median_per_s
    );
    assert_eq!(a.points as usize, sizes.len());
    // The curve rises monotonically: the peak is the last point.
    assert_eq!(a.peak_size_bytes, 64 << 20);
    let sat_err = (a.saturation_bps / R_BPS - 1.0).abs();
    assert!(
        sat_err < 0.02,
        "saturation {} ({sat_err})",
        a.saturation_bps
    );
    assert!(a.saturation_bps <= R_BPS);
    assert!(a.saturated);
    let n_half = a.n_half.size_bytes();
    let n_half_err = (n_half / N_HALF_BYTES - 1.0).abs();
    assert!(n_half_err < 0.05, "n½ {n_half} vs {N_HALF_BYTES}");
    let Crossing::Between {
        below_bytes,
        above_bytes,
        ..
    } = a.n_half
    else {
        panic!("n½ should lie between two sizes: {:?}", a.n_half);
    };
    assert!((below_bytes as f64) < n_half && (above_bytes as f64) >= n_half);
    // The knee by its definition, evaluated on the model: the first size at ≥ 90 % of S.
    let knee = *sizes
        .iter()
        .find(|&&n| hockney_bps(n, T0_S, R_BPS) >= 0.9 * a.saturation_bps)
        .unwrap();
    assert_eq!(a.knee_size_bytes, knee);
    // T(n) = r · n / (n + n½) = q · r at n = n½ · q / (1 − q), here with q = 0.9 S / r.
    let q = 0.9 * a.saturation_bps / R_BPS;
    let knee_model = N_HALF_BYTES * q / (1.0 - q);
    assert!(
        (a.knee.size_bytes() / knee_model - 1.0).abs() < 0.01,
        "{knee_model}"
    );
    assert!(a.dips.dips.is_empty());

    // Call rate 1 / (t0 + 8n/r) stays within 20 % of its value at 1 B while
    // t0 + 8n/r ≤ 1.2 (t0 + 8/r), i.e. n ≤ 0.2 n½ + 1.2 B ≈ 5001 B.
    let r = &a.latency_regime;
    let limit = 0.2 * N_HALF_BYTES + 1.2;
    let to = *sizes.iter().filter(|&&n| n as f64 <= limit).max().unwrap();
    assert_eq!((r.from_bytes, r.to_bytes), (1, to));
    assert!(r.latency_dominated);
    let calls = 1.0 / T0_S;
    assert!((r.calls_median_per_s / calls - 1.0).abs() < 0.05, "{r:?}");
    assert!(r.calls_cv_pct < 10.0, "{r:?}");
}

/// Brown's shape: constant 50 000 calls/s until 94.1 Gbit/s, flat after, with two dips.
fn sharp_curve(sizes: &[u64]) -> Vec<ThroughputPoint> {
    sizes
        .iter()
        .map(|&n| {
            let mut t = (8.0 * n as f64 * SHARP_CALLS_PER_S).min(SHARP_SAT_BPS);
            if n == 1 << 20 {
                t *= 0.82;
            }
            if n == 4 << 20 {
                t *= 0.89;
            }
            ThroughputPoint::new(n, t)
        })
        .collect()
}
const SHARP_SAT_BPS: f64 = 94.1e9;
const SHARP_CALLS_PER_S: f64 = 50_000.0;

#[test]
fn sharp_saturation_is_exact_and_dips_do_not_move_it() {
    let sizes = perturb(&geometric(64, 16 << 20, 4).unwrap(), 3, 1, 16 << 20).unwrap();
    let a = analyze(&sharp_curve(&sizes));
    // Saturation size: 94.1e9 / (8 · 50 000) = 235 250 B.
    let n_sat = SHARP_SAT_BPS / (8.0 * SHARP_CALLS_PER_S);
    assert_eq!(a.saturation_bps, SHARP_SAT_BPS);
    assert_eq!(a.peak_bps, SHARP_SAT_BPS);
    assert!(a.saturated);
    assert!(a.plateau_cv_pct < 5.0, "{}", a.plateau_cv_pct);
    let knee = *sizes
        .iter()
        .find(|&&n| 8.0 * n as f64 * SHARP_CALLS_PER_S >= 0.9 * SHARP_SAT_BPS)
        .unwrap();
    assert_eq!(a.knee_size_bytes, knee);
    // Linear below saturation: S/2 at n_sat / 2, log-interpolation errs < 1 %.
    let n_half = a.n_half.size_bytes();
    assert!((n_half / (n_sat / 2.0) - 1.0).abs() < 0.01, "{n_half}");
    // Exactly constant call rate up to n_sat, then within 20 % up to 1.2 n_sat.
    let r = &a.latency_regime;
    let to = *sizes
        .iter()
        .filter(|&&n| n as f64 <= 1.2 * n_sat)
        .max()
        .unwrap();
    assert_eq!((r.from_bytes, r.to_bytes), (61, to));
    assert_eq!(r.calls_median_per_s, SHARP_CALLS_PER_S);
    assert!(r.latency_dominated);
    let dips: Vec<(u64, f64)> = a
        .dips
        .dips
        .iter()
        .map(|d| (d.size_bytes, d.depth_pct))
        .collect();
    assert_eq!(dips.len(), 2, "{dips:?}");
    assert_eq!(dips[0].0, 1 << 20);
    assert_eq!(dips[1].0, 4 << 20);
    assert!((dips[0].1 - 18.0).abs() < 1e-9 && (dips[1].1 - 11.0).abs() < 1e-9);
}

#[test]
fn noisy_hockney_curve_stays_close() {
    let sizes = geometric(1, 64 << 20, 4).unwrap();
    for seed in 0..10 {
        let mut rng = Rng::new(seed);
        let pts: Vec<ThroughputPoint> = hockney_curve(&sizes)
            .into_iter()
            .map(|p| ThroughputPoint::new(p.size_bytes, rng.jitter(p.throughput_bps, 0.02)))
            .collect();
        let a = analyze(&pts);
        let sat_err = (a.saturation_bps / R_BPS - 1.0).abs();
        assert!(
            sat_err < 0.03,
            "seed {seed}: saturation {}",
            a.saturation_bps
        );
        let n_half_err = (a.n_half.size_bytes() / N_HALF_BYTES - 1.0).abs();
        assert!(n_half_err < 0.08, "seed {seed}: n½ {:?}", a.n_half);
        assert!(a.dips.dips.is_empty(), "seed {seed}: {:?}", a.dips);
        assert!(a.latency_regime.latency_dominated, "seed {seed}");
    }
}

#[test]
fn curve_still_rising_is_not_saturated() {
    let sizes = geometric(1, 1 << 12, 4).unwrap();
    // Pure latency regime: constant calls per second.
    let pts: Vec<ThroughputPoint> = sizes
        .iter()
        .map(|&n| ThroughputPoint::new(n, 8.0 * n as f64 * 1e5))
        .collect();
    let a = analyze(&pts);
    assert!(!a.saturated, "{a:?}");
    assert_eq!(a.plateau_points, 1);
    assert_eq!(a.knee_size_bytes, 1 << 12);
    assert_eq!(a.latency_regime.points as usize, sizes.len());
    assert_eq!(a.latency_regime.calls_median_per_s, 1e5);
}

#[test]
fn flat_curve_saturates_at_the_smallest_size() {
    let pts: Vec<ThroughputPoint> = (1..=5)
        .map(|i| ThroughputPoint::new(i * 100, 7.0))
        .collect();
    let a = analyze(&pts);
    assert_eq!(a.saturation_bps, 7.0);
    assert_eq!(a.knee_size_bytes, 100);
    assert_eq!(
        a.n_half,
        Crossing::AtOrBelowSmallest {
            smallest_bytes: 100
        }
    );
    // Calls per second fall 5× over the sweep: no latency-dominated regime.
    assert_eq!(a.latency_regime.points, 1);
    assert!(!a.latency_regime.latency_dominated);
}

#[test]
fn degenerate_inputs_are_typed_errors() {
    let c = ThroughputConfig::default();
    assert_eq!(analyze_throughput(&[], &c), Err(CurveError::Empty));
    assert_eq!(
        analyze_throughput(&[ThroughputPoint::new(8, 1.0)], &c),
        Err(CurveError::TooFewPoints { have: 1, need: 2 })
    );
    let zeros = [ThroughputPoint::new(8, 0.0), ThroughputPoint::new(16, 0.0)];
    assert_eq!(analyze_throughput(&zeros, &c), Err(CurveError::AllZero));
    let nan = [
        ThroughputPoint::new(8, 1.0),
        ThroughputPoint::new(16, f64::NAN),
    ];
    assert_eq!(
        analyze_throughput(&nan, &c),
        Err(CurveError::InvalidPoint {
            index: 1,
            problem: PointProblem::NonFinite {
                field: "throughput_bps"
            }
        })
    );
    let ok = [ThroughputPoint::new(8, 1.0), ThroughputPoint::new(16, 2.0)];
    for bad in [
        ThroughputConfig {
            knee_pct: 0.0,
            ..c.clone()
        },
        ThroughputConfig {
            knee_pct: f64::NAN,
            ..c.clone()
        },
        ThroughputConfig {
            latency_band_pct: -1.0,
            ..c.clone()
        },
        ThroughputConfig {
            dip_threshold_pct: 101.0,
            ..c.clone()
        },
    ] {
        assert!(matches!(
            analyze_throughput(&ok, &bad),
            Err(CurveError::InvalidParameter { .. })
        ));
    }
    let msg = analyze_throughput(&nan, &c).unwrap_err().to_string();
    assert!(
        msg.contains("throughput_bps") && msg.contains("point 1"),
        "{msg}"
    );
}

#[test]
fn unordered_input_is_sorted() {
    let sizes = geometric(1, 1 << 20, 4).unwrap();
    let mut pts = hockney_curve(&sizes);
    let sorted = analyze(&pts);
    pts.reverse();
    assert_eq!(analyze(&pts), sorted);
}

fn arb_figure() -> impl Strategy<Value = f64> {
    prop_oneof![4 => 0.0f64..1e12, 1 => any::<f64>(), 1 => Just(0.0), 1 => Just(f64::MAX)]
}

proptest! {
    #[test]
    fn analysis_never_panics(
        raw in prop::collection::vec((1u64..1 << 40, arb_figure()), 0..40),
        knee in prop_oneof![Just(90.0), any::<f64>()],
        band in prop_oneof![Just(20.0), any::<f64>()],
    ) {
        let pts: Vec<ThroughputPoint> =
            raw.iter().map(|&(n, t)| ThroughputPoint::new(n, t)).collect();
        let config = ThroughputConfig { knee_pct: knee, latency_band_pct: band, ..Default::default() };
        if let Ok(a) = analyze_throughput(&pts, &config) {
            prop_assert!(a.saturation_bps.is_finite() && a.saturation_bps > 0.0 || a.saturation_bps == 0.0);
            prop_assert!(a.saturation_bps <= a.peak_bps);
            for c in [a.knee, a.n_half] {
                let s = c.size_bytes();
                prop_assert!(s >= a.min_size_bytes as f64 && s <= a.max_size_bytes as f64);
            }
            prop_assert!(a.knee_size_bytes >= a.min_size_bytes && a.knee_size_bytes <= a.max_size_bytes);
            prop_assert!(a.latency_regime.points >= 1 && a.latency_regime.points <= a.points);
            prop_assert!(a.plateau_points >= 1);
        }
    }
}
