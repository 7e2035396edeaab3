//! Tests of `wirebench_report::print::sweep`.

use crate::{stream_point, sweep};
use wirebench_analysis::sweep::analyze;
use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::{FactorValue, PointFigure, PointRole, SweepStatus};
use wirebench_report::print::sweep::*;

/// An interrupted sweep's summary says its analysis is partial, withholds the
/// saturation and marks a peak that nothing corroborates.
#[test]
fn a_partial_sweep_is_labelled_and_its_lone_peak_unconfirmed() {
    let sizes = [1024u64, 2048, 4096, 8192, 16384, 32768];
    let pts = [1.0e9, 2.0e9, 3.0e9, 3.701e9, 3.0e9]
        .iter()
        .enumerate()
        .map(|(i, &b)| stream_point(i as u32, sizes[i], b, PointRole::Grid))
        .collect();
    let mut s = sweep(pts, WorkloadKind::Stream);
    s.factors[0].values = sizes.iter().map(|&n| FactorValue::Number(n)).collect();
    s.status = SweepStatus::Interrupted;
    s.analysis = analyze(&s);
    let t = summary(&s);
    assert!(
        t.contains("analysis of a partial sweep (5 of 6 planned grid points measured)"),
        "{t}"
    );
    assert!(
        t.contains("partial (5 of 6 points measured): peak 3.701 Gbit/s at 8"),
        "{t}"
    );
    assert!(t.contains("(unconfirmed: one measurement"), "{t}");
    assert!(t.contains("not judged on a partial curve"), "{t}");
    assert!(!t.contains("saturates"), "{t}");
    // Completed, with the peak's neighbour within 5 %: no label, no mark.
    s.points[4].figure = Some(PointFigure::Throughput {
        throughput_bps: 3.6e9,
        stddev_bps: None,
    });
    s.points
        .push(stream_point(5, 32768, 3.6e9, PointRole::Grid));
    s.status = SweepStatus::Completed;
    s.analysis = analyze(&s);
    let t = summary(&s);
    assert!(!t.contains("partial") && !t.contains("unconfirmed"), "{t}");
}
