//! Tests of `wirebench_report::print::study`.

use wirebench_model::study::{CellRecord, Level, StudyFactor, StudyStatus, TestbedFactor};
use wirebench_model::sweep::FactorName;
use wirebench_model::sweep::FactorValue;
use wirebench_report::print::study::*;

fn level(f: StudyFactor, v: u64) -> Level {
    Level {
        factor: f,
        value: FactorValue::Number(v),
    }
}

fn cell(index: u32, mtu: u64) -> CellRecord {
    CellRecord {
        index,
        round: 1,
        label: None,
        levels: vec![
            level(StudyFactor::Testbed(TestbedFactor::Mtu), mtu),
            level(StudyFactor::Testbed(TestbedFactor::Rate), 1_000_000_000),
            level(StudyFactor::Test(FactorName::Flows), 4),
        ],
        status: StudyStatus::Completed,
        build_ms: Some(100.0),
        teardown_ms: Some(10.0),
        measured_ms: Some(1000.0),
        wall_ms: Some(1200.0),
        testbed: None,
        tests: Vec::new(),
        error: None,
    }
}

/// The levels every cell shares are said once above the rows; the rows keep what varies.
#[test]
fn constant_levels_are_printed_once_above_the_table() {
    let cells = [cell(0, 1500), cell(1, 9000), cell(2, 65520)];
    let t = cells_text(&cells);
    let lines: Vec<&str> = t.lines().collect();
    assert_eq!(lines[0], "every cell: rate=1.000 Gbit/s flows=4", "{t}");
    for (l, mtu) in lines[1..].iter().zip(["1500", "9000", "65520"]) {
        assert!(l.ends_with(&format!("mtu={mtu}")), "{t}");
        assert!(!l.contains("rate=") && !l.contains("flows="), "{t}");
    }
    let ladder = ladder_text(&cells, &[], &[]);
    assert!(
        ladder.starts_with("every row: rate=1.000 Gbit/s flows=4\n"),
        "{ladder}"
    );
    assert!(ladder.contains("\nmtu=9000"), "{ladder}");
    // One cell: nothing is constant "across" it; its row keeps its levels.
    let one = cells_text(&cells[..1]);
    assert!(
        !one.contains("every cell") && one.contains("rate="),
        "{one}"
    );
}
