//! Tests of `wirebench_report::compare_page`.

use wirebench_analysis::compare::Values;
use wirebench_model::compare::FigureUnit;
use wirebench_report::compare_page::*;

#[test]
fn box_samples_prefer_runs_when_both_sides_have_three() {
    let v = |runs: &[f64], iv: &[f64]| Values {
        runs: runs.to_vec(),
        intervals: iv.to_vec(),
        unit: Some(FigureUnit::Bps),
    };
    let (a, b) = (
        v(&[1.0, 2.0, 3.0], &[9.0; 6]),
        v(&[4.0, 5.0, 6.0], &[8.0; 6]),
    );
    assert_eq!(box_samples(&a, &b).2, "one value per run");
    let (a, b) = (v(&[1.0], &[9.0; 6]), v(&[4.0, 5.0, 6.0], &[8.0; 6]));
    let (x, y, what) = box_samples(&a, &b);
    assert_eq!((x.len(), y.len(), what), (6, 6, "one value per interval"));
}
