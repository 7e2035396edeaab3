//! Tests of `wirebench_report::study_page`.

use wirebench_model::study::{FigureName, StudyPoint};
use wirebench_model::study::{Placement, QdiscState, Testbed, TestbedEnd};
use wirebench_report::study_page::*;

fn end(qdiscs: &[(&str, Option<u64>)]) -> TestbedEnd {
    TestbedEnd {
        namespace: "wbs-c".into(),
        ifname: "wbs0".into(),
        mtu_bytes: 1500,
        offloads: Vec::new(),
        qdiscs: qdiscs
            .iter()
            .map(|(k, r)| QdiscState {
                kind: (*k).into(),
                rate_bps: *r,
            })
            .collect(),
        congestion_default: "cubic".into(),
        route_congestion: Some("cubic".into()),
        sysctls: Vec::new(),
        rps_cpus: None,
        xps_cpus: None,
    }
}

fn point(test: &str, client_rate: Option<u64>, server_rate: Option<u64>) -> StudyPoint {
    let mut result = crate::result_for(
        crate::stream_spec(wirebench_model::spec::Direction::Forward, 1),
        Vec::new(),
    );
    result.testbed = Some(Box::new(Testbed {
        lab: "wbs".into(),
        levels: Vec::new(),
        placement: Placement::Unpinned,
        client: Some(end(&[("tbf", client_rate), ("noqueue", None)])),
        server: Some(end(&[("tbf", server_rate)])),
        emulator: None,
    }));
    StudyPoint {
        schema_version: 1,
        cell: 0,
        round: 1,
        test: test.into(),
        levels: Vec::new(),
        settings: Vec::new(),
        figures: Vec::new(),
        result,
    }
}

#[test]
fn the_link_rate_is_drawn_only_when_every_point_shares_it() {
    let m = 1_000_000;
    // The slowest shaper of either end is the link's rate.
    let same = [
        point("stream", Some(100 * m), None),
        point("stream", Some(100 * m), Some(400 * m)),
        point("other", None, None),
    ];
    assert_eq!(shared_link_rate_bps(&same, "stream"), Some(100 * m));
    // Points of another test, or an unshaped point among them: no single rate.
    assert_eq!(shared_link_rate_bps(&same, "other"), None);
    let mixed = [
        point("stream", Some(100 * m), None),
        point("stream", Some(200 * m), None),
    ];
    assert_eq!(shared_link_rate_bps(&mixed, "stream"), None);
    let partly = [
        point("stream", Some(100 * m), None),
        point("stream", None, None),
    ];
    assert_eq!(shared_link_rate_bps(&partly, "stream"), None);
}

/// A ladder rung measured in three rounds gets an error bar (min–max of its points); a
/// rung whose points all agree gets none.
#[test]
fn a_repeated_rung_has_an_error_bar() {
    use wirebench_model::study::{CellRecord, FigureValue, StudyManifest, StudyStatus};
    let cell = |index: u32, label: &str| CellRecord {
        index,
        round: 1,
        label: Some(label.into()),
        levels: Vec::new(),
        status: StudyStatus::Completed,
        build_ms: None,
        teardown_ms: None,
        measured_ms: None,
        wall_ms: None,
        testbed: None,
        tests: Vec::new(),
        error: None,
    };
    let m = StudyManifest {
        schema_version: 1,
        kind: "study".into(),
        software: "wirebench".into(),
        title: "ladder".into(),
        seed: None,
        file: "ladder.toml".into(),
        file_text: String::new(),
        command: Vec::new(),
        repeat: 3,
        host: None,
        started_unix_ms: 0,
        started_utc: "2026-11-30T00:00:00Z".into(),
        ended_unix_ms: 0,
        status: StudyStatus::Completed,
        error: None,
        cells: vec![cell(0, "base"), cell(1, "+ window")],
        expectations: Vec::new(),
    };
    let at = |cell: u32, round: u32, bps: f64| StudyPoint {
        cell,
        round,
        figures: vec![FigureValue {
            figure: FigureName::ThroughputBps,
            value: bps,
        }],
        ..point("stream", None, None)
    };
    let points = [
        at(0, 1, 10e9),
        at(0, 2, 12e9),
        at(0, 3, 11e9),
        at(1, 1, 20e9),
        at(1, 2, 20e9),
        at(1, 3, 20e9),
    ];
    let figs = ladder_figures(&m, &points, &[("stream".into(), FigureName::ThroughputBps)]);
    assert_eq!(figs.len(), 1);
    let svg = figs[0].svg.as_ref().expect("rendered").as_str().to_string();
    assert_eq!(svg.matches("class=\"error-bar\"").count(), 1, "{svg}");
    assert!(figs[0].caption.contains("min–max"), "{}", figs[0].caption);
}
