//! One self-contained HTML page for a result (`wirebench report`): the headline figures with
//! the verdict beside them, every figure that applies, warnings, what was run and how to run
//! it again, the environment of both ends, and last the result as the human printer writes
//! it; likewise a sweep's page and the page of a
//! `wirebench limits` document. The page is `wirebench-plot`'s report: inline
//! SVG and CSS, no script, font or network access.

use wirebench_model::limits::LimitsResult;
use wirebench_model::result::RunResult;
use wirebench_model::side::SideReport;
use wirebench_model::sweep::{PointFigure, PointRole, SweepResult};
use wirebench_model::text::{escape, shell_line};
use wirebench_plot::html::{
    Block, Column, DataTable, KeyValueTable, Outcome, Report, Section, Verdict,
};

use crate::figures::{limits_figures, run_figures, sweep_figures, Named};
use crate::print::{self, sweep as show, text};

/// The figures of `named` as blocks; a figure that cannot be drawn becomes a warning.
fn figure_blocks(named: Vec<Named>) -> Vec<Block> {
    named
        .into_iter()
        .map(|n| match n.svg() {
            Ok(svg) => Block::Figure {
                svg,
                caption: n.caption,
            },
            Err(e) => Block::Warnings(vec![format!(
                "the {} figure could not be drawn: {e}",
                n.kind.name()
            )]),
        })
        .collect()
}

/// Both ends' environments as one table (rows that differ are marked by the page).
fn environment(client: Option<&SideReport>, server: Option<&SideReport>) -> KeyValueTable {
    let ends = [client, server];
    let cell = |f: &dyn Fn(&SideReport) -> Option<String>| -> Vec<String> {
        ends.iter()
            .map(|e| e.and_then(f).map_or_else(|| "—".into(), |v| escape(&v)))
            .collect()
    };
    let rows: Vec<(String, Vec<String>)> = vec![
        ("host name".into(), cell(&|s| s.env.hostname.clone())),
        ("kernel".into(), cell(&|s| s.env.kernel_release.clone())),
        ("CPU model".into(), cell(&|s| s.env.cpu_model.clone())),
        (
            "CPUs online".into(),
            cell(&|s| s.env.cpus_online.map(|c| c.to_string())),
        ),
        (
            "default congestion control".into(),
            cell(&|s| s.env.default_congestion.clone()),
        ),
        (
            "interface, MTU".into(),
            cell(&|s| {
                s.env.interface.as_ref().map(|i| {
                    format!(
                        "{} {}",
                        i.name,
                        i.mtu_bytes.map_or_else(String::new, |m| format!("{m} B"))
                    )
                })
            }),
        ),
        ("software".into(), cell(&|s| Some(s.env.software.clone()))),
    ];
    KeyValueTable {
        caption: "Environment of both ends, as each end read it".into(),
        columns: vec!["client".into(), "server".into()],
        rows,
    }
}

/// The page of a test result.
pub fn run_page(r: &RunResult) -> Report {
    let test = r.spec.as_ref().map_or("test", |s| s.kind().as_str());
    let mut report = Report::new(
        format!("wirebench {test}: {}", print::status_name(r.status)),
        format!(
            "{} · server {} · started {}",
            r.tool,
            r.server_address
                .as_deref()
                .map_or_else(|| "none".into(), escape),
            r.started_utc
        ),
    );
    let mut beside = Vec::new();
    if let Some(e) = &r.error {
        beside.push(Block::Verdict(Verdict {
            outcome: Outcome::DoesNotHold,
            headline: "the test did not complete".into(),
            detail: print::error_text(e),
        }));
    }
    if let Some(v) = r
        .runs
        .last()
        .and_then(|run| run.summary.as_ref())
        .and_then(|s| s.verdict.as_ref())
    {
        let lines = print::verdict::lines(v);
        beside.push(Block::Verdict(Verdict {
            outcome: match v.limiter {
                wirebench_model::verdict::Limiter::Undetermined => Outcome::Inconclusive,
                _ => Outcome::Finding,
            },
            headline: format!("limited by {}", print::verdict::limiter_text(&v.limiter)),
            detail: lines
                .iter()
                .skip(1)
                .map(|(h, t)| format!("{h}{t}"))
                .collect::<Vec<_>>()
                .join("\n"),
        }));
    }
    // The page opens with the figures that answer "how fast, at what cost" and the charts;
    // the verdict beside them; the printer's text comes last.
    let mut head = Section::new("Result");
    head.push(Block::Headline {
        stats: crate::headline::run_stats(r),
        beside,
    });
    head.blocks.extend(figure_blocks(run_figures(r)));
    report.sections.push(head);
    let mut warnings: Vec<String> = r.warnings.iter().map(text::noted).collect();
    for run in &r.runs {
        if let Some(s) = &run.summary {
            warnings.extend(s.warnings.iter().map(text::noted));
        }
    }
    if !warnings.is_empty() {
        let mut s = Section::new("Warnings");
        s.push(Block::Warnings(warnings));
        report.sections.push(s);
    }
    let mut s = Section::new("Test and environment");
    if !r.command.is_empty() {
        s.push(Block::Code {
            caption: "reproduce".into(),
            code: shell_line(&r.command),
        });
    }
    if let Some(spec) = &r.spec {
        s.push(Block::Code {
            caption: "the test spec both ends ran (JSON)".into(),
            code: serde_json::to_string_pretty(spec).unwrap_or_default(),
        });
    }
    if let Some(run) = r.runs.first() {
        s.push(Block::KeyValue(environment(
            run.client.as_ref(),
            run.server.as_ref(),
        )));
    }
    report.sections.push(s);
    let mut s = Section::new("Terminal output");
    s.push(Block::Code {
        caption: "as `wirebench` printed it".into(),
        code: print::human(r),
    });
    report.sections.push(s);
    report
}

/// The page of a sweep.
pub fn sweep_page(sw: &SweepResult) -> Report {
    let mut report = Report::new(
        format!("wirebench sweep of {}", sw.test.as_str()),
        format!("{} · started {}", sw.software, sw.started_utc),
    );
    let mut head = Section::new("Result");
    head.blocks.extend(figure_blocks(sweep_figures(sw)));
    head.push(Block::Code {
        caption: "summary and analysis".into(),
        code: show::summary(sw),
    });
    report.sections.push(head);
    let mut columns: Vec<Column> = sw
        .factors
        .iter()
        .map(|f| Column::text(f.name.flag()))
        .collect();
    columns.extend([
        Column::text("role"),
        Column::text("figure"),
        Column::num("time", "s"),
    ]);
    let rows = sw
        .points
        .iter()
        .map(|p| {
            let mut row: Vec<String> = p
                .settings
                .iter()
                .map(|x| show::value_text(sw.test, x.factor, &x.value))
                .collect();
            row.push(match p.role {
                PointRole::Grid => "grid".into(),
                PointRole::Remeasure => "re-measured".into(),
            });
            row.push(p.figure.as_ref().map_or_else(
                || {
                    p.result
                        .error
                        .as_ref()
                        .map_or_else(|| "no figure".into(), |e| escape(&e.message))
                },
                |f: &PointFigure| show::figure_text(f),
            ));
            row.push(format!("{:.1}", p.duration_ms as f64 / 1000.0));
            row
        })
        .collect();
    let mut pts = Section::new("Points");
    pts.push(Block::Table(DataTable {
        caption: "Every point, in measuring order (each is a complete test result in the JSON)"
            .into(),
        columns,
        rows,
    }));
    report.sections.push(pts);
    let mut s = Section::new("Sweep and environment");
    s.push(Block::Code {
        caption: "reproduce".into(),
        code: shell_line(&sw.command),
    });
    if let Some(run) = sw.points.iter().find_map(|p| p.result.runs.first()) {
        s.push(Block::KeyValue(environment(
            run.client.as_ref(),
            run.server.as_ref(),
        )));
    }
    report.sections.push(s);
    report
}

/// The page of a `wirebench limits` document read from `path`: the figure, the limits as
/// the command prints them, and the machine.
pub fn limits_page(l: &LimitsResult, path: &str) -> Report {
    let host = l
        .hostname
        .as_deref()
        .map_or_else(|| "this machine".into(), escape);
    let mut report = Report::new(
        format!("wirebench limits of {host}"),
        format!("{} · measured {}", l.tool, l.started_utc),
    );
    let mut head = Section::new("Result");
    head.blocks.extend(figure_blocks(limits_figures(l)));
    report.sections.push(head);
    let opt = |v: Option<&String>| v.map_or_else(|| "—".into(), |s| escape(s));
    let mut s = Section::new("Machine");
    s.push(Block::KeyValue(KeyValueTable {
        caption: "Where the limits were measured".into(),
        columns: vec!["value".into()],
        rows: vec![
            ("host name".into(), vec![host]),
            ("kernel".into(), vec![opt(l.kernel.as_ref())]),
            ("CPU model".into(), vec![opt(l.cpu_model.as_ref())]),
            ("CPUs online".into(), vec![l.cpus.to_string()]),
            (
                "CPUs used".into(),
                vec![l
                    .cpus_used
                    .iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")],
            ),
            ("boot id".into(), vec![opt(l.boot_id.as_ref())]),
        ],
    }));
    report.sections.push(s);
    let mut head = Section::new("Terminal output");
    head.push(Block::Code {
        caption: "as `wirebench limits` prints them".into(),
        code: print::limits::human(
            l,
            &print::limits::Provenance::File {
                path: path.to_string(),
            },
        ),
    });
    report.sections.push(head);
    report
}
