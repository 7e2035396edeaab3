//! The Hockney model of latency against message size, fitted by least squares.
//!
//! ```text
//! t(n) = t0 + n / r_inf
//! ```
//!
//! `t0` is the zero-size latency (the fixed cost of a message), `r_inf` the asymptotic
//! bandwidth, and `n½ = t0 · r_inf` the message size at which half of `r_inf` is reached
//! (there the size-dependent time `n / r_inf` equals `t0`, so the effective bandwidth
//! `n / t(n)` is `r_inf / 2`).
//!
//! [`hockney_fit`] fits a straight line `t = t0 + β · n` (β = `1 / r_inf`, in ns per byte) to
//! the points `(nᵢ, tᵢ)` by weighted least squares, minimizing `Σ wᵢ (tᵢ − t0 − β nᵢ)²`:
//!
//! - [`Weighting::Equal`]: `wᵢ = 1`, ordinary least squares. Right when the noise has the
//!   same size in nanoseconds at every message size (e.g. scheduling jitter). Under noise
//!   proportional to the time, the large messages' big absolute errors dominate the sum
//!   and blur `t0`.
//! - [`Weighting::Relative`]: `wᵢ = 1 / tᵢ²`, i.e. least squares on the relative residuals
//!   `(tᵢ − fit) / tᵢ`. Right when the noise is a share of the time (typical of
//!   bandwidth-bound sizes); every point must then have a positive latency.
//!
//! The goodness of fit is reported the same way for both weightings, on the plain
//! (unweighted) residuals: their RMS in ns, the RMS of the relative residuals in percent,
//! and `R² = 1 − Σ residual² / Σ (tᵢ − mean t)²` (1 when every `tᵢ` is equal, since the
//! line then fits exactly).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{check_figure, CurveError, PointProblem};

/// One point of a latency-vs-message-size curve.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LatencyPoint {
    /// Message size, bytes (0 allowed: it measures `t0` directly).
    pub size_bytes: u64,
    /// The time for one message of that size (e.g. one-way time or half a round trip), ns.
    pub latency_ns: f64,
}

/// How the points are weighted in the least-squares fit (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Weighting {
    /// Ordinary least squares: every point weighs 1.
    Equal,
    /// Least squares on relative residuals: weight `1 / latency²`.
    Relative,
}

/// The result of [`hockney_fit`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HockneyFit {
    /// The weighting used.
    pub weighting: Weighting,
    /// Points fitted.
    pub points: u32,
    /// Fitted zero-size latency `t0`, ns (may come out negative on noisy data).
    pub t0_ns: f64,
    /// Fitted time per byte `1 / r_inf`, ns per byte (may come out ≤ 0 on data that does
    /// not grow with the size).
    pub slope_ns_per_byte: f64,
    /// Asymptotic bandwidth `r_inf = 1e9 / slope`, bytes per second; `None` unless the
    /// slope is positive.
    pub r_inf_bytes_per_s: Option<f64>,
    /// The same in bits per second (`8 · r_inf_bytes_per_s`).
    pub r_inf_bps: Option<f64>,
    /// `n½ = t0 · r_inf = t0_ns / slope_ns_per_byte`, bytes; `None` unless both `t0` and the
    /// slope are positive.
    pub n_half_bytes: Option<f64>,
    /// RMS of the residuals `tᵢ − fit(nᵢ)`, ns.
    pub rms_residual_ns: f64,
    /// RMS of the relative residuals `(tᵢ − fit(nᵢ)) / tᵢ`, percent; `None` if some
    /// latency is 0.
    pub rms_residual_pct: Option<f64>,
    /// Coefficient of determination of the plain residuals (see the module docs).
    pub r_squared: f64,
}

/// Fits `t(n) = t0 + n / r_inf` to `points` by least squares with `weighting` (see the
/// module docs).
///
/// Errors: fewer than 2 points ([`CurveError::Empty`], [`CurveError::TooFewPoints`]); a
/// latency that is not finite or negative, or zero under [`Weighting::Relative`]
/// ([`CurveError::InvalidPoint`]); a single distinct size ([`CurveError::SingleSize`]);
/// figures so far apart that the fit leaves `f64` range ([`CurveError::Overflow`]).
pub fn hockney_fit(
    points: &[LatencyPoint],
    weighting: Weighting,
) -> Result<HockneyFit, CurveError> {
    if points.is_empty() {
        return Err(CurveError::Empty);
    }
    if points.len() < 2 {
        return Err(CurveError::TooFewPoints {
            have: points.len(),
            need: 2,
        });
    }
    for (index, p) in points.iter().enumerate() {
        check_figure(index, "latency_ns", p.latency_ns)?;
        if weighting == Weighting::Relative && p.latency_ns == 0.0 {
            let problem = PointProblem::Zero {
                field: "latency_ns",
            };
            return Err(CurveError::InvalidPoint { index, problem });
        }
    }
    let size0 = points.first().map_or(0, |p| p.size_bytes);
    if points.iter().all(|p| p.size_bytes == size0) {
        return Err(CurveError::SingleSize { size_bytes: size0 });
    }
    // Work on x, y scaled into [0, 1] so no sum of squares can overflow.
    let x_scale = points
        .iter()
        .map(|p| p.size_bytes)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let y_max = points.iter().map(|p| p.latency_ns).fold(0.0, f64::max);
    let y_scale = if y_max > 0.0 { y_max } else { 1.0 };
    let y_min = points.iter().map(|p| p.latency_ns).fold(f64::MAX, f64::min);
    let xy: Vec<(f64, f64, f64)> = points
        .iter()
        .map(|p| {
            let y = p.latency_ns / y_scale;
            let w = match weighting {
                Weighting::Equal => 1.0,
                // (y_min / y)² ∝ 1 / y², within [0, 1].
                Weighting::Relative => (y_min / p.latency_ns).powi(2),
            };
            (p.size_bytes as f64 / x_scale, y, w)
        })
        .collect();
    let (a, b) = weighted_line(&xy).ok_or(CurveError::Overflow)?;
    let n = xy.len() as f64;
    let residuals: Vec<f64> = xy.iter().map(|&(x, y, _)| y - (a + b * x)).collect();
    let ss_res: f64 = residuals.iter().map(|e| e * e).sum();
    let y_mean = xy.iter().map(|&(_, y, _)| y).sum::<f64>() / n;
    let ss_tot: f64 = xy.iter().map(|&(_, y, _)| (y - y_mean).powi(2)).sum();
    let r_squared = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let rms_residual_pct = (y_min > 0.0).then(|| {
        let sum: f64 = residuals
            .iter()
            .zip(&xy)
            .map(|(e, &(_, y, _))| (e / y).powi(2))
            .sum();
        100.0 * (sum / n).sqrt()
    });
    let t0_ns = a * y_scale;
    let slope_ns_per_byte = b * y_scale / x_scale;
    let rms_residual_ns = (ss_res / n).sqrt() * y_scale;
    if ![t0_ns, slope_ns_per_byte, rms_residual_ns, r_squared]
        .iter()
        .all(|v| v.is_finite())
    {
        return Err(CurveError::Overflow);
    }
    let finite = |v: f64| v.is_finite().then_some(v);
    let r_inf_bytes_per_s = (slope_ns_per_byte > 0.0)
        .then(|| finite(1e9 / slope_ns_per_byte))
        .flatten();
    Ok(HockneyFit {
        weighting,
        points: u32::try_from(points.len()).unwrap_or(u32::MAX),
        t0_ns,
        slope_ns_per_byte,
        r_inf_bytes_per_s,
        r_inf_bps: r_inf_bytes_per_s.and_then(|r| finite(8.0 * r)),
        n_half_bytes: (t0_ns > 0.0 && slope_ns_per_byte > 0.0)
            .then(|| finite(t0_ns / slope_ns_per_byte))
            .flatten(),
        rms_residual_ns,
        rms_residual_pct: rms_residual_pct.filter(|v| v.is_finite()),
        r_squared,
    })
}

/// Weighted least-squares line `y = a + b x` through `(x, y, w)`; `None` when the weighted
/// spread of x is zero or not finite.
fn weighted_line(xyw: &[(f64, f64, f64)]) -> Option<(f64, f64)> {
    let w_sum: f64 = xyw.iter().map(|&(_, _, w)| w).sum();
    if w_sum.is_nan() || w_sum <= 0.0 {
        return None;
    }
    let x_mean = xyw.iter().map(|&(x, _, w)| w * x).sum::<f64>() / w_sum;
    let y_mean = xyw.iter().map(|&(_, y, w)| w * y).sum::<f64>() / w_sum;
    let sxx: f64 = xyw.iter().map(|&(x, _, w)| w * (x - x_mean).powi(2)).sum();
    let sxy: f64 = xyw
        .iter()
        .map(|&(x, y, w)| w * (x - x_mean) * (y - y_mean))
        .sum();
    if !(sxx > 0.0 && sxx.is_finite() && sxy.is_finite()) {
        return None;
    }
    let b = sxy / sxx;
    Some((y_mean - b * x_mean, b))
}

#[cfg(test)]
#[path = "hockney_tests.rs"]
mod tests;
