//! Student-t confidence intervals for the mean of repeated runs (like netperf `-I`).
//!
//! For `n` samples with mean `x̄` and sample standard deviation `s` (divisor `n − 1`), the
//! two-sided interval at level `L` is
//!
//! ```text
//! x̄ ± t(L, n − 1) · s / √n
//! ```
//!
//! where `t(L, df)` is the two-sided critical value of Student's t distribution with `df`
//! degrees of freedom (the `1 − (1 − L)/2` quantile). The interval's *width* follows
//! netperf's convention: `-I 99,5` asks for a 99 % interval whose **full** width
//! (`high − low`) is at most 5 % of the mean, see [`Interval::width_pct`].

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Confidence level of an interval.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConfidenceLevel {
    /// 95 %.
    #[serde(rename = "95")]
    P95,
    /// 99 % (netperf's default).
    #[serde(rename = "99")]
    P99,
}

impl ConfidenceLevel {
    /// The level in percent: 95 or 99.
    pub fn pct(self) -> u32 {
        match self {
            ConfidenceLevel::P95 => 95,
            ConfidenceLevel::P99 => 99,
        }
    }

    /// The level for 95 or 99 percent; `None` for anything else.
    pub fn from_pct(pct: u32) -> Option<Self> {
        match pct {
            95 => Some(ConfidenceLevel::P95),
            99 => Some(ConfidenceLevel::P99),
            _ => None,
        }
    }

    /// The standard normal two-sided critical value (the limit of [`t_critical`] as
    /// `df` → ∞): 1.959964 for 95 %, 2.575829 for 99 %.
    pub fn z(self) -> f64 {
        match self {
            ConfidenceLevel::P95 => 1.959_963_984_540_054,
            ConfidenceLevel::P99 => 2.575_829_303_548_900_4,
        }
    }
}

/// A confidence interval for the mean of a set of samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Interval {
    /// Number of samples.
    pub n: u32,
    /// Confidence level in percent (95 or 99).
    pub level_pct: u32,
    /// Sample mean.
    pub mean: f64,
    /// Sample standard deviation (divisor `n − 1`).
    pub stddev: f64,
    /// `t(level, n − 1) · stddev / √n`.
    pub half_width: f64,
    /// `mean − half_width`.
    pub low: f64,
    /// `mean + half_width`.
    pub high: f64,
    /// Full width as a percentage of the mean, `(high − low) / |mean| · 100` (netperf's
    /// convention: `-I 99,5` is met when this is ≤ 5). `f64::INFINITY` when the mean is 0.
    pub width_pct: f64,
}

impl Interval {
    /// Whether the interval is at most `max_width_pct` percent of the mean wide (the
    /// stopping rule of netperf `-I level,width`).
    pub fn within(&self, max_width_pct: f64) -> bool {
        self.width_pct <= max_width_pct
    }
}

/// Two-sided 95 % critical values of Student's t for df = 1..=30.
const T95: [f64; 30] = [
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, //
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, //
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
];

/// Two-sided 99 % critical values of Student's t for df = 1..=30.
const T99: [f64; 30] = [
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169, //
    3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845, //
    2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750,
];

/// Two-sided critical value of Student's t distribution with `df` degrees of freedom.
///
/// df 1..=30 come from the standard table (3 decimals). Larger df use the Cornish-Fisher
/// expansion of the t quantile around the normal quantile `z` (terms up to `1/df⁴`), which
/// is within 1e-6 of the exact value for df > 30 and tends to 1.960 (95 %) / 2.576 (99 %).
/// `df` = 0 (a single sample) has no finite value: `f64::INFINITY`.
pub fn t_critical(level: ConfidenceLevel, df: u32) -> f64 {
    let table = match level {
        ConfidenceLevel::P95 => &T95,
        ConfidenceLevel::P99 => &T99,
    };
    if df == 0 {
        return f64::INFINITY;
    }
    let idx = usize::try_from(df - 1).unwrap_or(usize::MAX);
    if let Some(&t) = table.get(idx) {
        return t;
    }
    let z = level.z();
    let v = f64::from(df);
    let z2 = z * z;
    let z3 = z2 * z;
    let z5 = z3 * z2;
    let z7 = z5 * z2;
    let z9 = z7 * z2;
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
        + (79.0 * z9 + 776.0 * z7 + 1482.0 * z5 - 1920.0 * z3 - 945.0 * z)
            / (92160.0 * v * v * v * v)
}

/// Confidence interval for the mean of `samples` at `level`.
///
/// `None` if there are fewer than 2 samples (no spread to estimate), more than `u32::MAX`,
/// any sample is not finite, or the statistics overflow `f64`.
pub fn interval(samples: &[f64], level: ConfidenceLevel) -> Option<Interval> {
    let n = u32::try_from(samples.len()).ok()?;
    if n < 2 || samples.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let nf = f64::from(n);
    let mean = mean_of(samples)?;
    // Two passes: the sum of squared deviations from the mean is numerically stable.
    let ss: f64 = samples.iter().map(|&x| (x - mean) * (x - mean)).sum();
    let stddev = (ss / (nf - 1.0)).sqrt();
    let half_width = t_critical(level, n - 1) * stddev / nf.sqrt();
    let low = mean - half_width;
    let high = mean + half_width;
    if ![stddev, half_width, low, high]
        .iter()
        .all(|x| x.is_finite())
    {
        return None;
    }
    let width_pct = if mean == 0.0 {
        f64::INFINITY
    } else {
        (high - low) / mean.abs() * 100.0
    };
    Some(Interval {
        n,
        level_pct: level.pct(),
        mean,
        stddev,
        half_width,
        low,
        high,
        width_pct,
    })
}

/// Mean of finite values without overflowing when their sum would.
fn mean_of(values: &[f64]) -> Option<f64> {
    if values.is_empty() {
        return None;
    }
    let n = values.len() as f64;
    let sum: f64 = values.iter().sum();
    let mean = if sum.is_finite() {
        sum / n
    } else {
        values.iter().map(|&x| x / n).sum()
    };
    mean.is_finite().then_some(mean)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn level_conversions() {
        assert_eq!(ConfidenceLevel::P95.pct(), 95);
        assert_eq!(ConfidenceLevel::P99.pct(), 99);
        assert_eq!(ConfidenceLevel::from_pct(95), Some(ConfidenceLevel::P95));
        assert_eq!(ConfidenceLevel::from_pct(99), Some(ConfidenceLevel::P99));
        assert_eq!(ConfidenceLevel::from_pct(90), None);
        assert_eq!(ConfidenceLevel::from_pct(0), None);
    }

    #[test]
    fn level_serde_names_are_percentages() {
        // Via the serde data model without serde_json: the variant name is "95"/"99".
        use serde::de::value::{Error, StrDeserializer};
        use serde::de::IntoDeserializer;
        let de: StrDeserializer<'_, Error> = "99".into_deserializer();
        assert_eq!(
            ConfidenceLevel::deserialize(de).unwrap(),
            ConfidenceLevel::P99
        );
        let de: StrDeserializer<'_, Error> = "95".into_deserializer();
        assert_eq!(
            ConfidenceLevel::deserialize(de).unwrap(),
            ConfidenceLevel::P95
        );
        let de: StrDeserializer<'_, Error> = "P99".into_deserializer();
        assert!(ConfidenceLevel::deserialize(de).is_err());
    }

    #[test]
    fn t_table_known_values() {
        use ConfidenceLevel::*;
        assert_eq!(t_critical(P95, 1), 12.706);
        assert_eq!(t_critical(P99, 1), 63.657);
        assert_eq!(t_critical(P95, 9), 2.262);
        assert_eq!(t_critical(P99, 9), 3.250);
        assert_eq!(t_critical(P95, 30), 2.042);
        assert_eq!(t_critical(P99, 30), 2.750);
        assert_eq!(t_critical(P95, 0), f64::INFINITY);
    }

    #[test]
    fn t_large_df_matches_reference_values() {
        use ConfidenceLevel::*;
        // Reference quantiles (exact values rounded to 6 decimals).
        let refs = [
            (31, 2.039513, 2.744042),
            (40, 2.021075, 2.704459),
            (60, 2.000298, 2.660283),
            (120, 1.979930, 2.617421),
            (1000, 1.962339, 2.580755),
        ];
        for (df, t95, t99) in refs {
            assert!(close(t_critical(P95, df), t95, 1e-5), "df {df}");
            assert!(close(t_critical(P99, df), t99, 1e-5), "df {df}");
        }
        assert!(close(t_critical(P95, u32::MAX), 1.960, 1e-3));
        assert!(close(t_critical(P99, u32::MAX), 2.576, 1e-3));
    }

    #[test]
    fn t_is_decreasing_in_df() {
        for level in [ConfidenceLevel::P95, ConfidenceLevel::P99] {
            let mut prev = t_critical(level, 1);
            for df in 2..=500 {
                let t = t_critical(level, df);
                assert!(t < prev, "{level:?} df {df}: {t} !< {prev}");
                assert!(t > level.z());
                prev = t;
            }
        }
    }

    #[test]
    fn interval_hand_computed() {
        // Samples 1..=10: mean 5.5, s² = 82.5/9, s = 3.0276504, s/√10 = 0.9574271.
        let samples: Vec<f64> = (1..=10).map(f64::from).collect();
        let iv = interval(&samples, ConfidenceLevel::P95).unwrap();
        assert_eq!(iv.n, 10);
        assert_eq!(iv.level_pct, 95);
        assert!(close(iv.mean, 5.5, 1e-12));
        assert!(close(iv.stddev, 3.027_650_354_097_491, 1e-12));
        let hw = 2.262 * 0.957_427_107_756_338;
        assert!(close(iv.half_width, hw, 1e-12));
        assert!(close(iv.low, 5.5 - hw, 1e-12));
        assert!(close(iv.high, 5.5 + hw, 1e-12));
        assert!(close(iv.width_pct, 2.0 * hw / 5.5 * 100.0, 1e-9));
        assert!(!iv.within(5.0));
        assert!(iv.within(100.0));

        let iv99 = interval(&samples, ConfidenceLevel::P99).unwrap();
        assert!(close(iv99.half_width, 3.250 * 0.957_427_107_756_338, 1e-12));
        assert!(iv99.half_width > iv.half_width);
    }

    #[test]
    fn interval_two_samples() {
        // [9, 11]: mean 10, s = √2, half width = 12.706·√2/√2 = 12.706.
        let iv = interval(&[9.0, 11.0], ConfidenceLevel::P95).unwrap();
        assert!(close(iv.half_width, 12.706, 1e-12));
        assert!(close(iv.width_pct, 2.0 * 12.706 / 10.0 * 100.0, 1e-9));
    }

    #[test]
    fn identical_samples_have_zero_width() {
        let iv = interval(&[7.5; 5], ConfidenceLevel::P99).unwrap();
        assert_eq!(iv.stddev, 0.0);
        assert_eq!(iv.half_width, 0.0);
        assert_eq!((iv.low, iv.high), (7.5, 7.5));
        assert_eq!(iv.width_pct, 0.0);
        assert!(iv.within(5.0));
    }

    #[test]
    fn interval_edge_cases() {
        assert_eq!(interval(&[], ConfidenceLevel::P95), None);
        assert_eq!(interval(&[1.0], ConfidenceLevel::P95), None);
        assert_eq!(interval(&[1.0, f64::NAN], ConfidenceLevel::P95), None);
        assert_eq!(interval(&[1.0, f64::INFINITY], ConfidenceLevel::P95), None);
        let iv = interval(&[-1.0, 1.0], ConfidenceLevel::P95).unwrap();
        assert_eq!(iv.mean, 0.0);
        assert_eq!(iv.width_pct, f64::INFINITY);
        assert!(!iv.within(5.0));
        // Negative mean: width is relative to |mean|.
        let iv = interval(&[-9.0, -11.0], ConfidenceLevel::P95).unwrap();
        assert!(iv.width_pct > 0.0);
        // Huge values: the sum overflows but the mean does not.
        let iv = interval(&[f64::MAX, f64::MAX], ConfidenceLevel::P95).unwrap();
        assert_eq!(iv.mean, f64::MAX);
        assert_eq!(iv.stddev, 0.0);
        // Spread too large to represent.
        assert_eq!(interval(&[f64::MAX, -f64::MAX], ConfidenceLevel::P95), None);
    }

    proptest! {
        #[test]
        fn interval_contains_the_mean(
            samples in prop::collection::vec(-1e12f64..1e12, 2..64),
            p99 in any::<bool>(),
        ) {
            let level = if p99 { ConfidenceLevel::P99 } else { ConfidenceLevel::P95 };
            let iv = interval(&samples, level).unwrap();
            prop_assert!(iv.low <= iv.mean && iv.mean <= iv.high);
            prop_assert!(iv.half_width >= 0.0 && iv.stddev >= 0.0);
            let min = samples.iter().cloned().fold(f64::INFINITY, f64::min);
            let max = samples.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let slack = 1e-9 * (min.abs().max(max.abs())).max(1.0);
            prop_assert!(iv.mean >= min - slack && iv.mean <= max + slack);
            prop_assert!(iv.width_pct >= 0.0);
            prop_assert_eq!(iv.n as usize, samples.len());
        }

        #[test]
        fn interval_never_panics(samples in prop::collection::vec(any::<f64>(), 0..16)) {
            if let Some(iv) = interval(&samples, ConfidenceLevel::P99) {
                prop_assert!(iv.low <= iv.mean && iv.mean <= iv.high);
            }
        }
    }
}
