//! Known answers: closed forms, textbook tables (Student's t, normal) and worked examples
//! whose sums are written out in the comments.

use super::*;

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a - b).abs() <= tol
}

#[test]
fn ln_gamma_known_values() {
    // Γ(5) = 4! = 24; Γ(1/2) = √π; Γ(1) = 1.
    assert!(close(ln_gamma(5.0), 24f64.ln(), 1e-12));
    assert!(close(
        ln_gamma(0.5),
        std::f64::consts::PI.sqrt().ln(),
        1e-12
    ));
    assert!(close(ln_gamma(1.0), 0.0, 1e-12));
    assert!(close(ln_gamma(10.5), 1_133_278.388_7_f64.ln(), 1e-9));
}

#[test]
fn t_cdf_closed_forms() {
    // df = 1 is Cauchy: F(t) = 1/2 + atan(t)/π. df = 2: F(t) = 1/2 + t / (2 √(2 + t²)).
    for t in [-3.0, -1.0, -0.2, 0.0, 0.7, 1.0, 4.0] {
        let cauchy = 0.5 + f64::atan(t) / std::f64::consts::PI;
        assert!(close(student_t_cdf(t, 1.0), cauchy, 1e-10), "df=1 t={t}");
        let two = 0.5 + t / (2.0 * (2.0 + t * t).sqrt());
        assert!(close(student_t_cdf(t, 2.0), two, 1e-10), "df=2 t={t}");
    }
}

#[test]
fn t_quantiles_match_the_table() {
    // Two-sided critical values from the standard t table.
    assert!(close(student_t_quantile(0.975, 4.0), 2.776_445, 1e-5));
    assert!(close(student_t_quantile(0.975, 10.0), 2.228_139, 1e-5));
    assert!(close(student_t_quantile(0.995, 8.0), 3.355_387, 1e-5));
    assert!(close(student_t_quantile(0.975, 1e6), 1.959_966, 1e-4));
    assert!(student_t_quantile(1.0, 3.0).is_nan());
}

#[test]
fn normal_known_values() {
    assert!(close(normal_cdf(0.0), 0.5, 1e-7));
    assert!(close(normal_cdf(1.959_964), 0.975, 1e-6));
    assert!(close(normal_cdf(-2.575_829), 0.005, 1e-6));
    assert!(close(normal_quantile(0.975), 1.959_964, 1e-5));
}

#[test]
fn welch_equal_variances_worked_example() {
    // A = 1..5, B = 3..7: means 3 and 5, variances 2.5 each, SE² = 0.5 + 0.5 = 1, t = 2,
    // df = 1 / (0.25/4 + 0.25/4) = 8; two-sided p = 2·(1 − F₈(2)) = 0.080516 (t table).
    let w = welch(&[1., 2., 3., 4., 5.], &[3., 4., 5., 6., 7.], 0.95).unwrap();
    assert!(close(w.statistic, 2.0, 1e-12));
    assert!(close(w.df.unwrap(), 8.0, 1e-12));
    assert!(close(w.p_value, 0.080_516, 1e-5), "{}", w.p_value);
    assert!(close(w.change_pct, 200.0 / 3.0, 1e-9));
    assert!(w.ci_low_pct < w.change_pct && w.change_pct < w.ci_high_pct);
    // A 95 % interval contains 0 exactly when p > 0.05 (here it does).
    assert!(w.ci_low_pct < 0.0);
}

#[test]
fn welch_unequal_variances_df() {
    // A = 1,2,3 (mean 2, s² 1), B = 2,4,6,8,10 (mean 6, s² 10): SE² = 1/3 + 2 = 7/3,
    // t = 4/√(7/3) = 2.618615, df = (7/3)² / ((1/3)²/2 + 2²/4) = 5.444/1.0556 = 5.157895.
    let w = welch(&[1., 2., 3.], &[2., 4., 6., 8., 10.], 0.95).unwrap();
    assert!(close(w.statistic, 2.618_615, 1e-6));
    assert!(close(w.df.unwrap(), 5.157_895, 1e-6));
    // Between the table's two-sided 0.05 (df 5: 2.571) and 0.02 (df 5: 3.365) columns.
    assert!(w.p_value < 0.05 && w.p_value > 0.02, "{}", w.p_value);
}

#[test]
fn welch_refuses_what_it_cannot_test() {
    assert!(welch(&[1.0], &[1.0, 2.0], 0.95).is_none());
    assert!(welch(&[2.0, 2.0], &[3.0, 3.0], 0.95).is_none());
    assert!(welch(&[0.0, 0.0, 0.0], &[1.0, 2.0], 0.95).is_none());
}

#[test]
fn mann_whitney_separated_samples() {
    // A = 1,2,3, B = 4,5,6: U_B = 9, E[U] = 4.5, Var = 3·3·7/12 = 5.25,
    // z = (4.5 − 0.5)/√5.25 = 1.745743, p = 0.080856 (R: wilcox.test(exact=FALSE)).
    let m = mann_whitney(&[1., 2., 3.], &[4., 5., 6.], 0.95).unwrap();
    assert!(close(m.statistic, 1.745_743, 1e-6));
    assert!(close(m.p_value, 0.080_856, 2e-6), "{}", m.p_value);
    // Pairwise differences 1,2,2,3,3,3,4,4,5: Hodges–Lehmann shift 3 over A's median 2.
    assert!(close(m.change_pct, 150.0, 1e-9));
}

#[test]
fn mann_whitney_with_ties() {
    // A = 1,2,2,3, B = 2,3,3,4. Mid-ranks: 1 → 1; the 2s → 3; the 3s → 6; 4 → 8.
    // Rank sum of B = 3+6+6+8 = 23, U_B = 23 − 10 = 13, E[U] = 8, tie term
    // Σ(t³−t) = 24+24 = 48, Var = 16/12 · (9 − 48/56) = 10.857143,
    // z = (5 − 0.5)/3.295018 = 1.365699, p = 0.172027 (R: W = 13, p-value = 0.172).
    let m = mann_whitney(&[1., 2., 2., 3.], &[2., 3., 3., 4.], 0.95).unwrap();
    assert!(close(m.statistic, 1.365_699, 1e-5));
    assert!(close(m.p_value, 0.172_027, 1e-5), "{}", m.p_value);
}

#[test]
fn mann_whitney_identical_samples_are_not_different() {
    let v = [5.0, 5.0, 5.0];
    assert!(
        mann_whitney(&v, &v, 0.95).is_none(),
        "all tied: no variance"
    );
    let a = [1.0, 2.0, 3.0, 4.0];
    let m = mann_whitney(&a, &a, 0.95).unwrap();
    assert!(close(m.p_value, 1.0, 1e-12));
    assert!(close(m.change_pct, 0.0, 1e-12));
}

#[test]
fn median_even_and_odd() {
    assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
    assert_eq!(median(&[4.0, 1.0, 2.0, 3.0]), 2.5);
    assert!(median(&[]).is_nan());
}
