//! Figures of a sweep: one series per variant, and the analysis' own figures marked (n½ at
//! the analysis' crossing, the saturation line at its level, confirmed dips where they are).

use wirebench_model::spec::WorkloadKind;
use wirebench_model::sweep::{
    Factor, FactorName, FactorValue, PointFigure, PointRole, Setting, SweepPoint, SweepResult,
    SweepStatus,
};
use wirebench_plot::Annotation;

use super::result_for;
use wirebench_analysis::sweep::analyze;
use wirebench_report::figures::{sweep_figures, FigureKind};

fn point(index: u32, size: u64, flows: u64, bps: f64) -> SweepPoint {
    SweepPoint {
        index,
        role: PointRole::Grid,
        settings: vec![
            Setting {
                factor: FactorName::Flows,
                value: FactorValue::Number(flows),
            },
            Setting {
                factor: FactorName::MsgSize,
                value: FactorValue::Number(size),
            },
        ],
        duration_ms: 500,
        figure: Some(PointFigure::Throughput {
            throughput_bps: bps,
            stddev_bps: None,
        }),
        result: result_for(
            super::stream_spec(wirebench_model::spec::Direction::Forward, 1),
            vec![],
        ),
    }
}

#[test]
fn a_sweep_curve_has_a_line_per_variant_and_the_analysis_marked() {
    let sizes: Vec<u64> = (6..22).map(|k| 1u64 << k).collect();
    let t = |n: u64| 8.0 * n as f64 / (20e-6 + n as f64 * 8.0 / 10e9);
    let mut points = Vec::new();
    for flows in [1u64, 2] {
        for &n in &sizes {
            let i = points.len() as u32;
            points.push(point(i, n, flows, t(n) * flows as f64));
        }
    }
    let mut s = SweepResult {
        schema_version: 1,
        kind: "sweep".into(),
        software: "wirebench test".into(),
        test: WorkloadKind::Stream,
        command: vec![],
        factors: vec![
            Factor {
                name: FactorName::Flows,
                values: vec![FactorValue::Number(1), FactorValue::Number(2)],
                given: "1,2".into(),
            },
            Factor {
                name: FactorName::MsgSize,
                values: sizes.iter().map(|&n| FactorValue::Number(n)).collect(),
                given: "64..2M".into(),
            },
        ],
        started_unix_ms: 0,
        started_utc: "2026-11-24T00:00:00.000Z".into(),
        ended_unix_ms: 0,
        status: SweepStatus::Completed,
        error: None,
        points,
        analysis: vec![],
    };
    s.analysis = analyze(&s);
    assert_eq!(s.analysis.len(), 2);
    let figs = sweep_figures(&s);
    assert_eq!(figs.len(), 1, "a stream sweep has its curve only");
    let f = &figs[0];
    assert_eq!(f.kind, FigureKind::Curve);
    assert_eq!(f.xy().expect("an x–y figure").series.len(), 2);
    assert_eq!(f.xy().expect("an x–y figure").series[0].name, "--flows 1");
    assert_eq!(
        f.xy().expect("an x–y figure").series[0].points.len(),
        sizes.len()
    );
    for (c, tag) in s.analysis.iter().zip(["--flows 1", "--flows 2"]) {
        let a = c.throughput.as_ref().unwrap();
        let n_half = f
            .xy()
            .expect("an x–y figure")
            .annotations
            .iter()
            .find_map(|x| match x {
                Annotation::VLine { x, label } if label.contains(tag) => Some(*x),
                _ => None,
            });
        assert_eq!(n_half, Some(a.n_half.size_bytes()), "{tag}");
        if a.saturated {
            let sat = f
                .xy()
                .expect("an x–y figure")
                .annotations
                .iter()
                .find_map(|x| match x {
                    Annotation::HLine { y, label, .. } if label.contains(tag) => Some(*y),
                    _ => None,
                });
            assert_eq!(sat, Some(a.saturation_bps), "{tag}");
        }
    }
    let svg = f.svg().expect("drawn");
    assert!(svg.as_str().contains("TCP stream throughput vs --msg-size"));
    // Without physical contexts, no limit is drawn.
    assert!(f.xy().expect("x–y").overlays.is_empty());

    // With one on every point of --flows 1: the copy bandwidth over the copies per byte,
    // one overlay for that variant only.
    for p in s
        .points
        .iter_mut()
        .filter(|p| p.settings[0].value == FactorValue::Number(1))
    {
        let size = p.settings[1].value.number().unwrap();
        p.result.physical = Some(wirebench_model::limits::PhysicalContext {
            limits_started_unix_ms: 0,
            limits_started_utc: String::new(),
            boot_id: "b".into(),
            msg_bytes: size,
            buffer_bytes: size,
            copy_threads: 1,
            copy_bytes_per_s: 10e9 + size as f64,
            payload_bytes_per_s: 1e9,
            copies_per_byte: 2.0,
            copied_bytes_per_s: 2e9,
            copy_bandwidth_pct: 20.0,
        });
    }
    let figs = sweep_figures(&s);
    let o = &figs[0].xy().expect("x–y").overlays;
    assert_eq!(o.len(), 1, "{o:?}");
    assert!(
        o[0].name.starts_with("copy-bandwidth limit"),
        "{}",
        o[0].name
    );
    assert_eq!(o[0].points.len(), sizes.len());
    for &(x, y) in &o[0].points {
        assert_eq!(y, (10e9 + x) * 8.0 / 2.0);
    }
    assert!(figs[0].caption.contains("physical limit"));
}
