//! A mesh as one HTML page: heatmaps of the receivers' throughput and of the round-trip
//! median per ordered pair (client rows, server columns; each cell the median over that
//! pair's completed tests, [`wirebench_analysis::mesh`]), then every test with its span,
//! figure and, for those that did not complete, the reason.

use wirebench_analysis::mesh::{matrix, Matrix};
use wirebench_model::compare::Figure;
use wirebench_model::mesh::MeshResult;
use wirebench_model::result::RunStatus;
use wirebench_plot::html::{Block, Column, DataTable, KeyValueTable, Report, Section};
use wirebench_plot::{Axis, Heading, HeatmapFigure, Render, Unit};

use crate::print::mesh::{short_hosts, test_figure};
use crate::print::text::error_text;

/// What a pair without a figure says: the first failed test's error kind, or nothing
/// (not in the plan, or a test without this figure).
fn missing(m: &MeshResult, names: usize) -> Vec<Vec<String>> {
    let mut out = vec![vec![String::new(); names]; names];
    let index = |h: &str| m.hosts.iter().position(|x| x == h);
    for t in m
        .tests
        .iter()
        .filter(|t| t.result.status != RunStatus::Completed)
    {
        if let (Some(c), Some(s)) = (index(&t.client), index(&t.server)) {
            if out[c][s].is_empty() {
                out[c][s] = t
                    .result
                    .error
                    .as_ref()
                    .map_or("failed", |e| e.kind.as_str())
                    .to_string();
            }
        }
    }
    out
}

fn heatmap(m: &MeshResult, mx: &Matrix, title: &str, value: Axis, lower: bool) -> HeatmapFigure {
    let names = short_hosts(m);
    HeatmapFigure {
        heading: Heading::new(
            title,
            format!(
                "{} hosts · {} · median over each pair's completed tests",
                m.hosts.len(),
                m.topology
            ),
        ),
        rows: names.clone(),
        columns: names,
        row_label: "client".into(),
        column_label: "server".into(),
        value,
        values: mx
            .cells
            .iter()
            .map(|r| r.iter().map(|c| c.map(|(v, _)| v)).collect())
            .collect(),
        missing: missing(m, m.hosts.len()),
        lower_is_better: lower,
    }
}

/// The page.
pub fn page(m: &MeshResult) -> String {
    let mut report = Report::new(
        "wirebench mesh",
        format!(
            "{} hosts, {}, {} test(s), {}",
            m.hosts.len(),
            m.topology,
            m.tests.len(),
            m.software
        ),
    );
    let mut plan = Section::new("Plan");
    plan.push(Block::KeyValue(KeyValueTable {
        caption: String::new(),
        columns: vec![],
        rows: vec![
            ("hosts".into(), vec![m.hosts.join(", ")]),
            ("topology".into(), vec![m.topology.clone()]),
            ("tests".into(), vec![m.test_lines.join(" · ")]),
            (
                "status".into(),
                vec![format!("{:?}", m.status).to_lowercase()],
            ),
        ],
    }));
    plan.push(Block::Code {
        caption: "command".into(),
        code: m.command.join(" "),
    });
    report.sections.push(plan);
    let mut figs = Section::new("Per pair");
    let thr = matrix(m, Figure::Throughput);
    let rtt = matrix(m, Figure::RttP50);
    let drawn = [
        (thr, "Receiver throughput per pair", Axis::linear("receiver throughput", Unit::BitsPerSecond), false,
         "Receiver throughput (bit/s, all directions summed) of each client → server test over its measurement window; rows are clients, columns servers; the colour runs from the smallest value measured (dark) to the largest (light). Grey: no completed test, with the reason."),
        (rtt, "Round trip p50 per pair", Axis::linear("RTT p50", Unit::Nanoseconds), true,
         "Median round trip of each rr/crr test, measured at the client; rows are clients, columns servers; the colour runs from the largest (dark) to the smallest (light), so lighter is better on both maps."),
    ];
    for (mx, title, axis, lower, caption) in drawn {
        if mx.is_empty() {
            continue;
        }
        match heatmap(m, &mx, title, axis, lower).render_svg() {
            Ok(svg) => {
                figs.push(Block::Figure {
                    svg,
                    caption: caption.into(),
                });
            }
            Err(e) => {
                figs.push(Block::Paragraph(format!("{title}: cannot be drawn: {e}")));
            }
        }
    }
    if figs.blocks.is_empty() {
        figs.push(Block::Paragraph(
            "No test completed: there is no figure to draw.".into(),
        ));
    }
    report.sections.push(figs);
    let mut tests = Section::new("Tests");
    let t0 = m.started_unix_ms;
    tests.push(Block::Table(DataTable {
        caption: "Every test in the order it ended; times from the mesh's start on the coordinator's clock".into(),
        columns: vec![
            Column::text("client"),
            Column::text("server"),
            Column::text("test"),
            Column::num("start", "s"),
            Column::num("end", "s"),
            Column::text("result"),
        ],
        rows: m
            .tests
            .iter()
            .map(|t| {
                let result = match (&t.result.status, &t.result.error) {
                    (RunStatus::Completed, _) => test_figure(t),
                    (_, Some(e)) => error_text(e),
                    (s, None) => format!("{s:?}").to_lowercase(),
                };
                vec![
                    t.client.clone(),
                    t.server.clone(),
                    m.test_lines.get(t.test as usize).cloned().unwrap_or_default(),
                    format!("{:.3}", t.started_unix_ms.saturating_sub(t0) as f64 / 1e3),
                    format!("{:.3}", t.ended_unix_ms.saturating_sub(t0) as f64 / 1e3),
                    result,
                ]
            })
            .collect(),
    }));
    report.sections.push(tests);
    report.to_html()
}
