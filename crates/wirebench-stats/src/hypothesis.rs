//! Two-sample tests for "is B different from A?": Welch's t test on means (with Student's
//! t distribution for fractional degrees of freedom), the Mann–Whitney U test (normal
//! approximation with tie and continuity corrections), and confidence intervals for the
//! relative change from A to B.
//!
//! - [`welch`]: Welch's t on two sets of values (e.g. one figure per run). The relative
//!   change `B/A − 1` gets its interval from the delta method on `ln(B̄/Ā)`:
//!   `ln(B̄/Ā) ± t(df) · √(s²_A/(n_A Ā²) + s²_B/(n_B B̄²))`, exponentiated, so the interval
//!   counts the uncertainty of both means and never crosses −100 %.
//! - [`mann_whitney`]: the rank-sum test for samples that are not normal or few runs with
//!   many interval samples; the change is the Hodges–Lehmann shift (median of all pairwise
//!   differences `b − a`) over A's median, with the distribution-free interval from the
//!   ordered pairwise differences.
//!
//! The distribution functions ([`student_t_cdf`], [`normal_cdf`] and their quantiles) are
//! computed from the regularized incomplete beta function (continued fraction, Numerical
//! Recipes §6.4) and the complementary error function (W. J. Cody's rational
//! approximations are not needed at this precision: Numerical Recipes' `erfcc`, relative
//! error below 1.2e-7).

/// Natural logarithm of the gamma function (Lanczos approximation, g = 7, 9 terms;
/// relative error below 1e-14 for x > 0).
pub fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x)Γ(1−x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// The regularized incomplete beta function `I_x(a, b)` for `a, b > 0`, `0 ≤ x ≤ 1`.
pub fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    // The continued fraction converges fast for x < (a+1)/(a+b+2); use the symmetry
    // I_x(a,b) = 1 − I_{1−x}(b,a) otherwise.
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_cf(x, a, b) / a
    } else {
        1.0 - front * beta_cf(1.0 - x, b, a) / b
    }
}

/// The continued fraction of the incomplete beta function (modified Lentz).
fn beta_cf(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let (qab, qap, qam) = (a + b, a + 1.0, a - 1.0);
    let mut c = 1.0;
    let mut d = 1.0 - qab * x / qap;
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = f64::from(m);
        let m2 = 2.0 * m;
        let aa = m * (b - m) * x / ((qam + m2) * (a + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        h *= d * c;
        let aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2));
        d = 1.0 + aa * d;
        if d.abs() < TINY {
            d = TINY;
        }
        c = 1.0 + aa / c;
        if c.abs() < TINY {
            c = TINY;
        }
        d = 1.0 / d;
        let del = d * c;
        h *= del;
        if (del - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// `P(T ≤ t)` for Student's t distribution with `df > 0` degrees of freedom (fractional
/// allowed, as Welch's test needs).
pub fn student_t_cdf(t: f64, df: f64) -> f64 {
    if t.is_nan() || df.is_nan() || df <= 0.0 {
        return f64::NAN;
    }
    let x = df / (df + t * t);
    let tail = 0.5 * incomplete_beta(x, df / 2.0, 0.5);
    if t > 0.0 {
        1.0 - tail
    } else {
        tail
    }
}

/// The `p` quantile of Student's t with `df` degrees of freedom (bisection on the CDF to
/// 1e-12; `p` in (0, 1)).
pub fn student_t_quantile(p: f64, df: f64) -> f64 {
    invert(|t| student_t_cdf(t, df), p)
}

/// `P(Z ≤ z)` for the standard normal distribution.
pub fn normal_cdf(z: f64) -> f64 {
    0.5 * erfc(-z / std::f64::consts::SQRT_2)
}

/// The `p` quantile of the standard normal distribution (`p` in (0, 1)).
pub fn normal_quantile(p: f64) -> f64 {
    invert(normal_cdf, p)
}

/// Complementary error function (Numerical Recipes' Chebyshev fit, relative error
/// below 1.2e-7 everywhere).
fn erfc(x: f64) -> f64 {
    let z = x.abs();
    let t = 1.0 / (1.0 + 0.5 * z);
    let poly = -z * z - 1.265_512_23
        + t * (1.000_023_68
            + t * (0.374_091_96
                + t * (0.096_784_18
                    + t * (-0.186_288_06
                        + t * (0.278_868_07
                            + t * (-1.135_203_98
                                + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77))))))));
    let r = t * poly.exp();
    if x >= 0.0 {
        r
    } else {
        2.0 - r
    }
}

/// The `x` with `cdf(x) = p` for an increasing CDF, by bisection over [-1e6, 1e6].
fn invert(cdf: impl Fn(f64) -> f64, p: f64) -> f64 {
    if !(p > 0.0 && p < 1.0) {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (-1e6_f64, 1e6_f64);
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if cdf(mid) < p {
            lo = mid;
        } else {
            hi = mid;
        }
        if hi - lo < 1e-12 * mid.abs().max(1.0) {
            break;
        }
    }
    0.5 * (lo + hi)
}

/// Mean and sample variance (divisor n − 1).
fn mean_var(v: &[f64]) -> (f64, f64) {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// The outcome of a two-sample test of B against A, with the relative change from A to B.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TestOutcome {
    /// The test statistic (Welch: t; Mann–Whitney: the normal score z of U_B).
    pub statistic: f64,
    /// Degrees of freedom (Welch–Satterthwaite); `None` for Mann–Whitney.
    pub df: Option<f64>,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Estimated change from A to B, percent of A (B/A − 1; Mann–Whitney: Hodges–Lehmann
    /// shift over A's median).
    pub change_pct: f64,
    /// Lower end of the change's confidence interval, percent.
    pub ci_low_pct: f64,
    /// Upper end of the change's confidence interval, percent.
    pub ci_high_pct: f64,
    /// The smallest change (percent, either way) this test would find significant with
    /// 80 % power at these sample sizes and this spread.
    pub detectable_pct: f64,
}

/// Welch's unequal-variance t test of B against A at confidence `level` (e.g. 0.95), with
/// the relative change's interval from the delta method on the log ratio of the means.
/// `None` with fewer than 2 values on a side, a mean that is not positive, or both sides
/// without any spread (then there is nothing to test: the values are exact).
pub fn welch(a: &[f64], b: &[f64], level: f64) -> Option<TestOutcome> {
    if a.len() < 2 || b.len() < 2 || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let (ma, va) = mean_var(a);
    let (mb, vb) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    if ma <= 0.0 || mb <= 0.0 || (va == 0.0 && vb == 0.0) {
        return None;
    }
    let (sa, sb) = (va / na, vb / nb);
    let se = (sa + sb).sqrt();
    let df = (sa + sb).powi(2) / (sa * sa / (na - 1.0) + sb * sb / (nb - 1.0));
    let t = (mb - ma) / se;
    let p = 2.0 * student_t_cdf(-t.abs(), df);
    // Relative terms for the log ratio; their own Satterthwaite df.
    let (ra, rb) = (sa / (ma * ma), sb / (mb * mb));
    let df_rel = (ra + rb).powi(2) / (ra * ra / (na - 1.0) + rb * rb / (nb - 1.0));
    let tq = student_t_quantile(0.5 + level / 2.0, df_rel);
    let ln_r = (mb / ma).ln();
    let half = tq * (ra + rb).sqrt();
    let t_power = student_t_quantile(0.8, df);
    Some(TestOutcome {
        statistic: t,
        df: Some(df),
        p_value: p.clamp(0.0, 1.0),
        change_pct: (mb / ma - 1.0) * 100.0,
        ci_low_pct: ((ln_r - half).exp() - 1.0) * 100.0,
        ci_high_pct: ((ln_r + half).exp() - 1.0) * 100.0,
        detectable_pct: (student_t_quantile(0.5 + level / 2.0, df) + t_power) * se / ma * 100.0,
    })
}

/// The Mann–Whitney U test of B against A at confidence `level`: U of B from mid-ranks,
/// normal approximation with the tie correction of the variance and a continuity
/// correction. The change is the Hodges–Lehmann shift over A's median, its interval from
/// the ordered pairwise differences (normal approximation of the critical rank). `None`
/// with fewer than 2 values on a side, a non-positive median of A, or at most
/// [`MAX_PAIRS`] pairs exceeded.
pub fn mann_whitney(a: &[f64], b: &[f64], level: f64) -> Option<TestOutcome> {
    let (na, nb) = (a.len(), b.len());
    if na < 2 || nb < 2 || na * nb > MAX_PAIRS || a.iter().chain(b).any(|x| !x.is_finite()) {
        return None;
    }
    let med_a = median(a);
    if med_a <= 0.0 {
        return None;
    }
    // Mid-ranks over the pooled sample, and the tie term Σ(t³ − t).
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, false))
        .chain(b.iter().map(|&x| (x, true)))
        .collect();
    pooled.sort_by(|x, y| x.0.total_cmp(&y.0));
    let (mut rank_sum_b, mut ties) = (0.0, 0.0);
    let mut i = 0;
    while i < pooled.len() {
        let mut j = i;
        while j + 1 < pooled.len() && pooled[j + 1].0 == pooled[i].0 {
            j += 1;
        }
        let mid_rank = (i + j) as f64 / 2.0 + 1.0;
        let t = (j - i + 1) as f64;
        ties += t * t * t - t;
        rank_sum_b += mid_rank * pooled[i..=j].iter().filter(|p| p.1).count() as f64;
        i = j + 1;
    }
    let (fa, fb) = (na as f64, nb as f64);
    let n = fa + fb;
    let u_b = rank_sum_b - fb * (fb + 1.0) / 2.0;
    let mean_u = fa * fb / 2.0;
    let var_u = fa * fb / 12.0 * ((n + 1.0) - ties / (n * (n - 1.0)));
    if var_u <= 0.0 {
        return None;
    }
    let diff = u_b - mean_u;
    let z = (diff.abs() - 0.5).max(0.0) * diff.signum() / var_u.sqrt();
    let p = 2.0 * normal_cdf(-z.abs());
    // Hodges–Lehmann: the pairwise differences, their median and order-statistic interval.
    let mut d: Vec<f64> = a
        .iter()
        .flat_map(|&x| b.iter().map(move |&y| y - x))
        .collect();
    d.sort_by(f64::total_cmp);
    let m = d.len();
    let zq = normal_quantile(0.5 + level / 2.0);
    let k = ((fa * fb / 2.0) - zq * (fa * fb * (n + 1.0) / 12.0).sqrt())
        .floor()
        .max(0.0) as usize;
    let (lo, hi) = (d[k.min(m - 1)], d[(m - 1).saturating_sub(k)]);
    let shift = median_sorted(&d);
    // Detectable shift: z_(level) + z_(0.8) standard errors of a location shift, with the
    // asymptotic relative efficiency 3/π of the rank test against the t test.
    let (_, va) = mean_var(a);
    let (_, vb) = mean_var(b);
    let se = (va / fa + vb / fb).sqrt() / (3.0 / std::f64::consts::PI).sqrt();
    Some(TestOutcome {
        statistic: z,
        df: None,
        p_value: p.clamp(0.0, 1.0),
        change_pct: shift / med_a * 100.0,
        ci_low_pct: lo / med_a * 100.0,
        ci_high_pct: hi / med_a * 100.0,
        detectable_pct: (zq + normal_quantile(0.8)) * se / med_a * 100.0,
    })
}

/// Most pairs `n_A × n_B` [`mann_whitney`] takes (its Hodges–Lehmann interval sorts them
/// all: 1e6 pairs is 8 MB and well under a second).
pub const MAX_PAIRS: usize = 1_000_000;

/// The median of a set of values (mean of the middle two for an even count); NaN if empty.
pub fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    median_sorted(&s)
}

fn median_sorted(s: &[f64]) -> f64 {
    match s.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => s[n / 2],
        n => 0.5 * (s[n / 2 - 1] + s[n / 2]),
    }
}

#[cfg(test)]
#[path = "hypothesis_tests.rs"]
mod tests;
