//! The comparison's error rates on synthetic data with a known truth: normal run values
//! (a seeded generator, so a failure reproduces) with a 2 % coefficient of variation.
//! What a test can find depends on that spread: at n = 5 a side and the default 99 % level,
//! Welch's test finds a change of about 6 coefficients of variation with 80 % power (the
//! `detectable_pct` it reports), so a 10 % change is found reliably when runs vary by 2 %
//! and is reported as "too small to detect" when they vary by 5 %.

use super::*;

/// SplitMix64 with Box–Muller: deterministic normal samples without a dependency.
struct Gen(u64);

impl Gen {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn uniform(&mut self) -> f64 {
        ((self.next_u64() >> 11) as f64 + 0.5) / (1u64 << 53) as f64
    }
    fn normal(&mut self, mean: f64, sd: f64) -> f64 {
        let (u1, u2) = (self.uniform(), self.uniform());
        mean + sd * (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
    }
    fn runs(&mut self, n: usize, mean: f64, cv: f64) -> Values {
        Values {
            runs: (0..n).map(|_| self.normal(mean, mean * cv)).collect(),
            intervals: Vec::new(),
            unit: Some(FigureUnit::Bps),
        }
    }
}

/// The runs' coefficient of variation.
const CV: f64 = 0.02;

fn judged(g: &mut Gen, change: f64, n: usize, level: ConfidenceLevel) -> FigureComparison {
    let a = g.runs(n, 10e9, CV);
    let b = g.runs(n, 10e9 * (1.0 + change), CV);
    compare_values(Figure::Throughput, &a, &b, level).unwrap()
}

#[test]
fn ten_percent_slower_at_n5_is_flagged() {
    // At n = 5 and 2 % spread, a 10 % drop is t ≈ 0.1 / (0.02·√(2/5)) ≈ 7.9 standard
    // errors against a critical 3.36 (df 8, 99 %): found in (nearly) every trial; required
    // in at least 95 of 100.
    let mut g = Gen(1);
    let found = (0..100)
        .filter(|_| judged(&mut g, -0.10, 5, ConfidenceLevel::P99).outcome == Outcome::Worse)
        .count();
    assert!(found >= 95, "found {found} of 100");
    let mut g = Gen(2);
    let found = (0..100)
        .filter(|_| judged(&mut g, 0.10, 5, ConfidenceLevel::P99).outcome == Outcome::Better)
        .count();
    assert!(found >= 95, "found {found} of 100");
}

#[test]
fn no_change_is_not_flagged_in_95_of_100() {
    let mut g = Gen(3);
    let flagged = (0..100)
        .filter(|_| judged(&mut g, 0.0, 5, ConfidenceLevel::P99).significant)
        .count();
    assert!(flagged <= 5, "{flagged} false alarms in 100");
}

#[test]
fn false_positive_rate_matches_the_level() {
    // The p-values are calibrated: over 4000 trials without a change, the share flagged is
    // the nominal 5 % (binomial sd 0.34 %: 3.6–6.4 % is ±4 sd) or 1 %.
    for (level, nominal) in [(ConfidenceLevel::P95, 0.05), (ConfidenceLevel::P99, 0.01)] {
        let mut g = Gen(4);
        let flagged = (0..4000)
            .filter(|_| judged(&mut g, 0.0, 5, level).significant)
            .count() as f64
            / 4000.0;
        let sd = (nominal * (1.0 - nominal) / 4000.0f64).sqrt();
        assert!(
            (flagged - nominal).abs() < 4.0 * sd,
            "level {level:?}: {flagged}"
        );
    }
}

#[test]
fn intervals_cover_the_true_change() {
    // The 95 % interval of a true −7 % change contains −7 % in about 95 % of trials.
    let mut g = Gen(5);
    let covered = (0..2000)
        .filter(|_| {
            let f = judged(&mut g, -0.07, 5, ConfidenceLevel::P95);
            f.ci_low_pct.unwrap() <= -7.0 && -7.0 <= f.ci_high_pct.unwrap()
        })
        .count() as f64
        / 2000.0;
    assert!((covered - 0.95).abs() < 0.025, "coverage {covered}");
}

#[test]
fn few_runs_fall_back_to_intervals_and_too_few_says_so() {
    let mut g = Gen(6);
    let mut a = g.runs(1, 10e9, 0.03);
    let mut b = g.runs(1, 9e9, 0.03);
    a.intervals = (0..20).map(|_| g.normal(10e9, 3e8)).collect();
    b.intervals = (0..20).map(|_| g.normal(9e9, 3e8)).collect();
    let f = compare_values(Figure::Throughput, &a, &b, ConfidenceLevel::P95).unwrap();
    assert_eq!(f.test, Some(TestKind::MannWhitney));
    assert_eq!(f.outcome, Outcome::Worse);
    assert_eq!(f.a_n, 20);
    a.intervals.truncate(3);
    let f = compare_values(Figure::Throughput, &a, &b, ConfidenceLevel::P95).unwrap();
    assert_eq!(f.outcome, Outcome::TooFew);
    assert_eq!(f.test, None);
}

#[test]
fn lower_is_better_for_latency() {
    let mut g = Gen(7);
    let a = g.runs(5, 50_000.0, 0.03);
    let b = g.runs(5, 60_000.0, 0.03);
    let f = compare_values(Figure::RttP99, &a, &b, ConfidenceLevel::P95).unwrap();
    assert_eq!(f.outcome, Outcome::Worse);
    assert!(f.change_pct.unwrap() > 0.0);
}
