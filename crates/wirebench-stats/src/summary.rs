//! Summaries of a set of values: min/median/mean/max and Jain's fairness index.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Minimum, median, mean and maximum of a set of values.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Spread {
    /// Number of values.
    pub n: u32,
    /// Smallest value.
    pub min: f64,
    /// Middle value (the mean of the two middle values when `n` is even).
    pub median: f64,
    /// Arithmetic mean.
    pub mean: f64,
    /// Largest value.
    pub max: f64,
}

/// [`Spread`] of `values`.
///
/// `None` if `values` is empty, has more than `u32::MAX` entries, or any value is not
/// finite.
pub fn spread(values: &[f64]) -> Option<Spread> {
    let n = u32::try_from(values.len()).ok()?;
    if n == 0 || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let len = sorted.len();
    let mid = len / 2;
    let median = if len % 2 == 1 {
        *sorted.get(mid)?
    } else {
        let a = *sorted.get(mid - 1)?;
        let b = *sorted.get(mid)?;
        midpoint(a, b)
    };
    let min = *sorted.first()?;
    let max = *sorted.last()?;
    let nf = len as f64;
    let sum: f64 = values.iter().sum();
    let mean = if sum.is_finite() {
        sum / nf
    } else {
        // The sum overflowed; dividing first keeps every partial sum within range.
        values.iter().map(|&x| x / nf).sum()
    };
    // Rounding may push the mean a hair outside [min, max].
    let mean = mean.clamp(min, max);
    Some(Spread {
        n,
        min,
        median,
        mean,
        max,
    })
}

/// Mean of two finite values without overflowing.
fn midpoint(a: f64, b: f64) -> f64 {
    let s = a + b;
    if s.is_finite() {
        s / 2.0
    } else {
        a / 2.0 + b / 2.0
    }
}

/// Jain's fairness index of `values` (e.g. per-stream throughputs):
///
/// ```text
/// J = (Σ xᵢ)² / (n · Σ xᵢ²)
/// ```
///
/// 1 when all values are equal, `1/n` when one value takes everything. Values are meant to
/// be non-negative; for any input the result lies in [0, 1].
///
/// `None` if `values` is empty, all zero, or any value is not finite.
pub fn jain_index(values: &[f64]) -> Option<f64> {
    if values.is_empty() || values.iter().any(|x| !x.is_finite()) {
        return None;
    }
    // Scale by the largest magnitude so the squares cannot overflow or underflow to 0.
    let scale = values.iter().fold(0.0f64, |m, x| m.max(x.abs()));
    if scale == 0.0 {
        return None;
    }
    let n = values.len() as f64;
    let (sum, sum_sq) = values.iter().fold((0.0f64, 0.0f64), |(s, q), &x| {
        let y = x / scale;
        (s + y, q + y * y)
    });
    let j = sum * sum / (n * sum_sq);
    j.is_finite().then(|| j.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn spread_odd_and_even() {
        let s = spread(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!(
            s,
            Spread {
                n: 3,
                min: 1.0,
                median: 2.0,
                mean: 2.0,
                max: 3.0
            }
        );
        let s = spread(&[4.0, 1.0, 3.0, 10.0]).unwrap();
        assert_eq!(s.n, 4);
        assert_eq!(s.min, 1.0);
        assert_eq!(s.median, 3.5);
        assert_eq!(s.mean, 4.5);
        assert_eq!(s.max, 10.0);
        let s = spread(&[42.0]).unwrap();
        assert_eq!((s.min, s.median, s.mean, s.max), (42.0, 42.0, 42.0, 42.0));
    }

    #[test]
    fn spread_rejects_bad_input() {
        assert_eq!(spread(&[]), None);
        assert_eq!(spread(&[1.0, f64::NAN]), None);
        assert_eq!(spread(&[f64::NEG_INFINITY, 1.0]), None);
    }

    #[test]
    fn spread_huge_values_do_not_overflow() {
        let s = spread(&[f64::MAX, f64::MAX]).unwrap();
        assert_eq!(s.median, f64::MAX);
        assert_eq!(s.mean, f64::MAX);
    }

    #[test]
    fn jain_known_values() {
        assert_eq!(jain_index(&[5.0, 5.0, 5.0, 5.0]), Some(1.0));
        assert_eq!(jain_index(&[1.0, 0.0, 0.0, 0.0]), Some(0.25));
        assert_eq!(jain_index(&[7.0]), Some(1.0));
        // (1+3)² / (2·(1+9)) = 16/20.
        assert!((jain_index(&[1.0, 3.0]).unwrap() - 0.8).abs() < 1e-12);
        assert_eq!(jain_index(&[1e300, 1e300]), Some(1.0));
        assert_eq!(jain_index(&[1e-300, 1e-300]), Some(1.0));
    }

    #[test]
    fn jain_rejects_bad_input() {
        assert_eq!(jain_index(&[]), None);
        assert_eq!(jain_index(&[0.0, 0.0]), None);
        assert_eq!(jain_index(&[1.0, f64::NAN]), None);
        assert_eq!(jain_index(&[1.0, f64::INFINITY]), None);
    }

    proptest! {
        #[test]
        fn spread_is_ordered(values in prop::collection::vec(-1e15f64..1e15, 1..64)) {
            let s = spread(&values).unwrap();
            prop_assert!(s.min <= s.median && s.median <= s.max);
            prop_assert!(s.min <= s.mean && s.mean <= s.max);
            prop_assert_eq!(s.n as usize, values.len());
        }

        #[test]
        fn jain_between_one_over_n_and_one(values in prop::collection::vec(0.0f64..1e9, 1..64)) {
            if let Some(j) = jain_index(&values) {
                let n = values.len() as f64;
                prop_assert!(j <= 1.0);
                prop_assert!(j >= 1.0 / n - 1e-12);
            } else {
                prop_assert!(values.iter().all(|&x| x == 0.0));
            }
        }

        #[test]
        fn summaries_never_panic(values in prop::collection::vec(any::<f64>(), 0..16)) {
            let _ = spread(&values);
            if let Some(j) = jain_index(&values) {
                prop_assert!((0.0..=1.0).contains(&j));
            }
        }
    }
}
