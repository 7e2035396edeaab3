//! Tests of `wirebench_report::print::claims`.

use wirebench_model::study::{
    CompareOp, Expectation, ExpectationCase, FigureName, Level, Spread, StudyFactor, TestbedFactor,
};
use wirebench_model::study::{ExpectationOutcome, Verdict};
use wirebench_model::sweep::FactorValue;
use wirebench_report::print::claims::*;

fn spread(median: f64, min: f64, max: f64) -> Spread {
    Spread {
        median,
        min,
        max,
        count: 3,
    }
}

/// Each claim under its study with its verdict, its bound, and each group's median
/// ratio with the range the spreads allow; the verdicts counted.
#[test]
fn claims_are_listed_per_study_with_their_spread() {
    let e = Expectation {
        name: "jumbo frames help".into(),
        test: None,
        figure: FigureName::ThroughputBps,
        numerator: Vec::new(),
        denominator: Some(Vec::new()),
        conditions: Vec::new(),
        op: CompareOp::Gt,
        value: 1.0,
    };
    let case = ExpectationCase {
        group: vec![Level {
            factor: StudyFactor::Testbed(TestbedFactor::Offload),
            value: FactorValue::Name("tso=off".into()),
        }],
        numerator: 12.0,
        denominator: Some(10.0),
        numerator_spread: spread(12.0, 11.0, 13.0),
        denominator_spread: Some(spread(10.0, 9.0, 12.0)),
        value: 1.2,
        value_min: 11.0 / 12.0,
        value_max: 13.0 / 9.0,
        paired_rounds: None,
        verdict: Verdict::Inconclusive,
    };
    let t = claims_text(&[
        StudyClaims {
            study: "fig2".into(),
            outcomes: vec![ExpectationOutcome {
                expectation: e,
                verdict: Verdict::Inconclusive,
                cases: vec![case],
            }],
            error: None,
        },
        StudyClaims {
            study: "ladder".into(),
            outcomes: Vec::new(),
            error: Some("cell 0 failed".into()),
        },
    ]);
    assert!(
        t.contains("\nfig2\n  inconclusive  jumbo frames help  [ratio of throughput_bps > 1]\n"),
        "{t}"
    );
    assert!(
        t.contains("1.200 (0.917–1.444) inconclusive  offload=tso=off"),
        "{t}"
    );
    assert!(t.contains("\nladder\n  no results: cell 0 failed\n"), "{t}");
    assert!(
        t.ends_with("1 claim(s): 0 hold, 0 do not hold, 1 inconclusive, 0 without data\n"),
        "{t}"
    );
}
