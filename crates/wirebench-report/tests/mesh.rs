//! A mesh's text and page: the throughput matrix (median per ordered pair), a down host's
//! tests with their reason, host names escaped.

use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::mesh::{MeshResult, MeshStatus, MeshTest};
use wirebench_model::result::RunStatus;

use super::{one_flow, stream_result};

fn sample() -> MeshResult {
    let hosts: Vec<String> = ["10.0.0.1:5301", "10.0.0.2:5301", "10.0.0.3:5301"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let test = |c: usize, s: usize, bps: Option<f64>, at: u64| {
        let result = match bps {
            Some(b) => stream_result(one_flow(), b),
            None => {
                let mut r = stream_result(one_flow(), 1.0);
                r.status = RunStatus::Failed;
                r.runs.clear();
                r.error = Some(ErrorInfo::new(
                    ErrorKind::Connect,
                    "cannot connect to 10.0.0.3:5301: connection refused \u{1b}[31m",
                ));
                r
            }
        };
        MeshTest {
            client: hosts[c].clone(),
            server: hosts[s].clone(),
            test: 0,
            repetition: 0,
            round: 0,
            started_unix_ms: at,
            ended_unix_ms: at + 300,
            result,
        }
    };
    MeshResult {
        schema_version: 1,
        kind: "mesh".into(),
        software: "wirebench test".into(),
        command: vec!["wirebench".into(), "mesh".into()],
        hosts: hosts.clone(),
        topology: "full-mesh".into(),
        test_lines: vec!["stream -t 0.3".into()],
        started_unix_ms: 1_000,
        ended_unix_ms: 2_000,
        status: MeshStatus::Completed,
        tests: vec![
            test(0, 1, Some(9.0e9), 1_000),
            test(1, 0, Some(4.0e9), 1_300),
            test(0, 2, None, 1_600),
            test(2, 0, None, 1_600),
        ],
    }
}

#[test]
fn the_summary_has_the_matrix_and_the_reasons() {
    let text = wirebench_report::print::mesh::summary(&sample());
    assert!(text.contains("Receiver throughput per pair"), "{text}");
    assert!(text.contains("9.000") || text.contains("9.00"), "{text}");
    assert!(text.contains("4 test(s), 2 completed, 2 not"), "{text}");
    assert!(text.contains("connection refused"), "{text}");
    assert!(
        !text.contains('\u{1b}'),
        "a peer's escape reached the terminal: {text:?}"
    );
    // Ports are dropped when every host has the same one.
    assert!(
        text.contains("10.0.0.1 ") && !text.contains("10.0.0.1:5301 "),
        "{text}"
    );
}

#[test]
fn the_page_draws_a_cell_per_pair_and_names_the_missing_ones() {
    let page = wirebench_report::mesh_page::page(&sample());
    assert_eq!(page.matches("class=\"cell\"").count(), 9, "3 × 3 cells");
    assert!(page.contains("Receiver throughput per pair"));
    assert!(
        !page.contains("Round trip p50 per pair"),
        "no rr test, no latency map"
    );
    assert!(page.contains(">connect<"), "the down pair says why");
    assert!(
        page.contains("9 Gbit/s") || page.contains("9.0 Gbit/s"),
        "values in the cells"
    );
    if let Ok(dir) = std::env::var("WIREBENCH_MESH_PAGE") {
        std::fs::write(format!("{dir}/mesh-sample.html"), &page).unwrap();
    }
}
