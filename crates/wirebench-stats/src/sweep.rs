//! The points of a sweep: which message sizes (or offered rates) to measure.
//!
//! Three pure builders, all returning strictly increasing, duplicate-free lists of integers:
//!
//! - [`geometric`]: `lo · 2^(k/N)` for `k = 0, 1, 2, …` while the value is at most `hi`
//!   (`N` points per octave, [`DEFAULT_POINTS_PER_OCTAVE`] = 4), each rounded to the nearest
//!   integer (halves away from zero), duplicates removed, and `hi` appended when the
//!   sequence does not land on it: both ends are always included.
//! - [`explicit`]: a caller's list, sorted and deduplicated.
//! - [`perturb`]: NetPIPE's perturbation: every value `v` also at `v − δ` and `v + δ`
//!   ([`DEFAULT_PERTURBATION`] = 3; `δ = 0` turns it off), then clipped to the caller's
//!   `[min, max]` bounds and deduplicated. Perturbed sizes find the sharp structure (dips)
//!   that message sizes near a power of two (page, segment, buffer boundaries) show.
//!
//! No list holds more than [`MAX_SWEEP_POINTS`] values; a range that would is an error, as
//! is an empty one. Every empty case is a distinct [`RangeError`] naming the problem.

use thiserror::Error;

/// Points per octave (per doubling) of a geometric sweep unless the caller says otherwise.
pub const DEFAULT_POINTS_PER_OCTAVE: u32 = 4;

/// NetPIPE's default perturbation δ: each size is also measured at `size − 3` and `size + 3`.
pub const DEFAULT_PERTURBATION: u64 = 3;

/// Most values a sweep may hold (a guard against a typo such as 4 million points per octave).
pub const MAX_SWEEP_POINTS: usize = 100_000;

/// Why a sweep cannot be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum RangeError {
    /// The lower end of a range is above its upper end.
    #[error("empty range: the lower end {lo} is above the upper end {hi}")]
    LoAboveHi {
        /// Lower end given.
        lo: u64,
        /// Upper end given.
        hi: u64,
    },
    /// A geometric range with zero points per octave.
    #[error("empty range: zero points per octave")]
    ZeroPointsPerOctave,
    /// A geometric range starting at 0 (no ratio can grow 0).
    #[error("a geometric range cannot start at 0: the lower end must be at least 1")]
    ZeroLo,
    /// An explicit list (or the list to perturb) is empty.
    #[error("empty list: no value given")]
    EmptyList,
    /// The clipping bounds of a perturbation are inverted.
    #[error("empty bounds: the minimum {min} is above the maximum {max}")]
    BoundsInverted {
        /// Minimum given.
        min: u64,
        /// Maximum given.
        max: u64,
    },
    /// No value (perturbed or not) lies within the clipping bounds.
    #[error("empty range: no value lies within the bounds [{min}, {max}]")]
    NothingWithinBounds {
        /// Minimum given.
        min: u64,
        /// Maximum given.
        max: u64,
    },
    /// The range would hold more than [`MAX_SWEEP_POINTS`] values.
    #[error("the range would hold more than {limit} values")]
    TooManyPoints {
        /// The limit, [`MAX_SWEEP_POINTS`].
        limit: usize,
    },
}

/// The geometric sequence from `lo` to `hi` inclusive with `points_per_octave` points per
/// doubling.
///
/// Definition: the values `round(lo · 2^(k / points_per_octave))` for `k = 0, 1, 2, …`
/// while `lo · 2^(k / points_per_octave) ≤ hi`, rounded to the nearest integer (halves away
/// from zero), deduplicated (at small values several `k` round to the same integer), plus
/// `hi` itself if the last value is below it. The result is strictly increasing, starts with
/// `lo` and ends with `hi`; `lo == hi` gives `[lo]`. Above 2⁵³ the `f64` arithmetic is no
/// longer exact to the integer; values are still increasing and within `[lo, hi]`.
///
/// Errors: `lo > hi` ([`RangeError::LoAboveHi`]), `points_per_octave == 0`
/// ([`RangeError::ZeroPointsPerOctave`]), `lo == 0` ([`RangeError::ZeroLo`]), more than
/// [`MAX_SWEEP_POINTS`] values ([`RangeError::TooManyPoints`]).
pub fn geometric(lo: u64, hi: u64, points_per_octave: u32) -> Result<Vec<u64>, RangeError> {
    if lo > hi {
        return Err(RangeError::LoAboveHi { lo, hi });
    }
    if points_per_octave == 0 {
        return Err(RangeError::ZeroPointsPerOctave);
    }
    if lo == 0 {
        return Err(RangeError::ZeroLo);
    }
    let too_many = RangeError::TooManyPoints {
        limit: MAX_SWEEP_POINTS,
    };
    let per_octave = f64::from(points_per_octave);
    let lo_f = lo as f64;
    let hi_f = hi as f64;
    let mut out = vec![lo];
    let mut prev = lo;
    let mut k: u64 = 0;
    // Each pass either appends a value or is the single back-off step after a skip-ahead
    // guess, so this bound is never reached by a correct range; it only guards the loop.
    let mut passes_left = 4 * MAX_SWEEP_POINTS + 64;
    loop {
        // Skip ahead: the smallest k' with lo · 2^(k'/N) ≥ prev + ½ (the first k' that can
        // round above prev), less one step for floating-point slack.
        let need = ((prev as f64 + 0.5) / lo_f).log2() * per_octave;
        let guess = if need.is_finite() && need > 0.0 {
            (need.ceil() as u64).saturating_sub(1)
        } else {
            0
        };
        k = guess.max(k.saturating_add(1));
        let x = lo_f * (k as f64 / per_octave).exp2();
        if x.is_nan() || x > hi_f {
            break;
        }
        let v = (x.round() as u64).min(hi);
        if v > prev {
            if out.len() >= MAX_SWEEP_POINTS {
                return Err(too_many);
            }
            out.push(v);
            prev = v;
        }
        passes_left -= 1;
        if passes_left == 0 {
            return Err(too_many);
        }
    }
    if prev < hi {
        if out.len() >= MAX_SWEEP_POINTS {
            return Err(too_many);
        }
        out.push(hi);
    }
    Ok(out)
}

/// An explicit list of values, sorted and deduplicated.
///
/// Errors: an empty list ([`RangeError::EmptyList`]); more than [`MAX_SWEEP_POINTS`]
/// distinct values ([`RangeError::TooManyPoints`]).
pub fn explicit(values: &[u64]) -> Result<Vec<u64>, RangeError> {
    if values.is_empty() {
        return Err(RangeError::EmptyList);
    }
    let mut out = values.to_vec();
    out.sort_unstable();
    out.dedup();
    if out.len() > MAX_SWEEP_POINTS {
        return Err(RangeError::TooManyPoints {
            limit: MAX_SWEEP_POINTS,
        });
    }
    Ok(out)
}

/// NetPIPE's perturbation of `values`: each `v` contributes `v − delta`, `v` and
/// `v + delta` (only `v` when `delta == 0`).
///
/// Clipping: a contributed value outside `[min, max]` (including `v` itself, and `v − delta`
/// when `delta > v`) is left out, not moved onto the bound, so every value of the result is
/// some `v` or `v ± delta`. The result is sorted and deduplicated.
///
/// Errors: an empty `values` ([`RangeError::EmptyList`]), `min > max`
/// ([`RangeError::BoundsInverted`]), nothing left within the bounds
/// ([`RangeError::NothingWithinBounds`]), more than [`MAX_SWEEP_POINTS`] values
/// ([`RangeError::TooManyPoints`]).
pub fn perturb(values: &[u64], delta: u64, min: u64, max: u64) -> Result<Vec<u64>, RangeError> {
    if values.is_empty() {
        return Err(RangeError::EmptyList);
    }
    if min > max {
        return Err(RangeError::BoundsInverted { min, max });
    }
    let mut out: Vec<u64> = values
        .iter()
        .flat_map(|&v| {
            let around = if delta == 0 {
                [None, Some(v), None]
            } else {
                [v.checked_sub(delta), Some(v), v.checked_add(delta)]
            };
            around.into_iter().flatten()
        })
        .filter(|v| (min..=max).contains(v))
        .collect();
    out.sort_unstable();
    out.dedup();
    if out.is_empty() {
        return Err(RangeError::NothingWithinBounds { min, max });
    }
    if out.len() > MAX_SWEEP_POINTS {
        return Err(RangeError::TooManyPoints {
            limit: MAX_SWEEP_POINTS,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The definition, evaluated for every k with no skipping: the oracle for [`geometric`].
    fn geometric_naive(lo: u64, hi: u64, n: u32) -> Vec<u64> {
        let mut out: Vec<u64> = (0u64..)
            .map(|k| lo as f64 * 2f64.powf(k as f64 / f64::from(n)))
            .take_while(|&x| x <= hi as f64)
            .map(|x| x.round() as u64)
            .collect();
        out.dedup();
        if out.last() != Some(&hi) {
            out.push(hi);
        }
        out
    }

    #[test]
    fn geometric_small_case_by_hand() {
        // 2^(k/4) for k = 0..=16: 1, 1.19, 1.41, 1.68, 2, 2.38, 2.83, 3.36, 4, 4.76, 5.66,
        // 6.73, 8, 9.51, 11.31, 13.45, 16.
        assert_eq!(
            geometric(1, 16, 4).unwrap(),
            vec![1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 13, 16]
        );
        assert_eq!(geometric(1, 16, 1).unwrap(), vec![1, 2, 4, 8, 16]);
        // hi is not on the sequence: appended.
        assert_eq!(geometric(1, 20, 1).unwrap(), vec![1, 2, 4, 8, 16, 20]);
        assert_eq!(geometric(7, 7, 4).unwrap(), vec![7]);
    }

    #[test]
    fn geometric_powers_of_two_are_hit_exactly() {
        let sizes = geometric(64, 1 << 20, DEFAULT_POINTS_PER_OCTAVE).unwrap();
        for p in 6..=20 {
            assert!(sizes.contains(&(1u64 << p)), "2^{p} missing");
        }
        // 14 octaves × 4 points + the start.
        assert_eq!(sizes.len(), 14 * 4 + 1);
    }

    #[test]
    fn geometric_matches_the_naive_definition() {
        for (lo, hi, n) in [
            (1, 1 << 20, 4),
            (1, 1000, 16),
            (3, 100_000, 7),
            (1, 300, 200),
            (1000, 1001, 1000),
            (64, 65_536, 1),
            (1, 1 << 40, 3),
        ] {
            assert_eq!(
                geometric(lo, hi, n).unwrap(),
                geometric_naive(lo, hi, n),
                "lo {lo} hi {hi} n {n}"
            );
        }
    }

    #[test]
    fn geometric_errors_name_the_problem() {
        assert_eq!(
            geometric(10, 9, 4),
            Err(RangeError::LoAboveHi { lo: 10, hi: 9 })
        );
        assert_eq!(geometric(1, 9, 0), Err(RangeError::ZeroPointsPerOctave));
        assert_eq!(geometric(0, 9, 4), Err(RangeError::ZeroLo));
        assert_eq!(
            geometric(1, u64::MAX, u32::MAX),
            Err(RangeError::TooManyPoints {
                limit: MAX_SWEEP_POINTS
            })
        );
        let msg = RangeError::LoAboveHi { lo: 10, hi: 9 }.to_string();
        assert!(msg.contains("10") && msg.contains('9'), "{msg}");
    }

    #[test]
    fn geometric_whole_u64_range() {
        let s = geometric(1, u64::MAX, 4).unwrap();
        assert_eq!(s.first(), Some(&1));
        assert_eq!(s.last(), Some(&u64::MAX));
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert!(s.len() <= 64 * 4 + 2);
    }

    #[test]
    fn explicit_sorts_and_dedups() {
        assert_eq!(explicit(&[5, 1, 5, 3]).unwrap(), vec![1, 3, 5]);
        assert_eq!(explicit(&[]), Err(RangeError::EmptyList));
    }

    #[test]
    fn perturb_netpipe_style() {
        assert_eq!(
            perturb(&[1, 4096, 8192], DEFAULT_PERTURBATION, 1, 8192).unwrap(),
            // 1 − 3 underflows and 1 + 3 = 4 stays; 8192 + 3 is above the maximum.
            vec![1, 4, 4093, 4096, 4099, 8189, 8192]
        );
        assert_eq!(perturb(&[8, 4], 0, 0, 100).unwrap(), vec![4, 8]);
        // Perturbations that collide are merged.
        assert_eq!(
            perturb(&[10, 16], 3, 0, 100).unwrap(),
            vec![7, 10, 13, 16, 19]
        );
        // A value outside the bounds is dropped, its in-bounds neighbour kept.
        assert_eq!(perturb(&[100], 3, 101, 200).unwrap(), vec![103]);
    }

    #[test]
    fn perturb_errors_name_the_problem() {
        assert_eq!(perturb(&[], 3, 0, 10), Err(RangeError::EmptyList));
        assert_eq!(
            perturb(&[5], 3, 10, 1),
            Err(RangeError::BoundsInverted { min: 10, max: 1 })
        );
        assert_eq!(
            perturb(&[50], 3, 1, 10),
            Err(RangeError::NothingWithinBounds { min: 1, max: 10 })
        );
    }

    proptest! {
        #[test]
        fn geometric_is_strictly_increasing_and_bounded(
            lo in any::<u64>(), hi in any::<u64>(), n in any::<u32>()
        ) {
            if let Ok(s) = geometric(lo, hi, n) {
                prop_assert_eq!(s.first().copied(), Some(lo));
                prop_assert_eq!(s.last().copied(), Some(hi));
                prop_assert!(s.windows(2).all(|w| w[0] < w[1]));
                prop_assert!(s.len() <= MAX_SWEEP_POINTS);
            } else {
                prop_assert!(lo > hi || n == 0 || lo == 0 || hi - lo >= MAX_SWEEP_POINTS as u64 - 1);
            }
        }

        #[test]
        fn geometric_small_ranges_match_naive(lo in 1u64..5000, span in 0u64..100_000, n in 1u32..40) {
            let hi = lo + span;
            prop_assert_eq!(geometric(lo, hi, n).unwrap(), geometric_naive(lo, hi, n));
        }

        #[test]
        fn perturb_keeps_only_v_or_v_plus_minus_delta(
            values in prop::collection::vec(any::<u64>(), 0..32),
            delta in any::<u64>(), min in any::<u64>(), max in any::<u64>()
        ) {
            if let Ok(s) = perturb(&values, delta, min, max) {
                prop_assert!(s.windows(2).all(|w| w[0] < w[1]));
                for x in &s {
                    prop_assert!((min..=max).contains(x));
                    let from_some_v = values.iter().any(|&v| {
                        v == *x || v.checked_sub(delta) == Some(*x) || v.checked_add(delta) == Some(*x)
                    });
                    prop_assert!(from_some_v);
                }
                for &v in &values {
                    if (min..=max).contains(&v) {
                        prop_assert!(s.contains(&v));
                    }
                }
            }
        }
    }
}
