//! A study as figures and as one HTML page: each table of the study drawn the way the
//! seeds drew it (a line per variant against a numeric factor such as the MTU or the
//! message size; grouped bars against a named one), a ladder of explicit cells as
//! horizontal bars, the expectations with their measured figures, the cells and the file.
//! Every value drawn is a median of the study's points ([`wirebench_analysis::study`]); a line's
//! point measured more than once (`repeat = N`) carries an error bar from the smallest to the
//! largest.

use wirebench_model::study::{
    FigureName, StudyFactor, StudyManifest, StudyPoint, StudyStatus, TestbedFactor, Verdict,
};
use wirebench_model::sweep::FactorValue;
use wirebench_model::text::escape;
use wirebench_plot::html::{Block, Column, DataTable, Expectation, Outcome, Report, Section};
use wirebench_plot::{
    Annotation, Axis, BarFigure, Figure, Heading, Orientation, Point, Render, Series, SeriesKind,
    Svg, Unit,
};

use crate::print::study::{expectation_text, factor_key, levels_text, status_text, value_text};
use wirebench_analysis::study::{cell_spread, evaluate, pivot};

/// A table of a study: the figure `y` against factor `x` among test `test`'s points.
#[derive(Debug, Clone, PartialEq)]
pub struct StudyTable {
    /// Title (the seed's figure).
    pub title: String,
    /// The test's label.
    pub test: String,
    /// Rows / x axis.
    pub x: StudyFactor,
    /// The figure.
    pub y: FigureName,
}

/// A drawn figure and its caption.
pub struct StudyFigure {
    /// The SVG, or why it could not be drawn.
    pub svg: Result<Svg, wirebench_plot::PlotError>,
    /// What it shows.
    pub caption: String,
}

fn y_axis(f: FigureName) -> Axis {
    let label = crate::print::study::figure_title(f);
    match f {
        FigureName::ThroughputBps => Axis::linear(label, Unit::BitsPerSecond),
        FigureName::TransactionsPerS => Axis::linear(label, Unit::PerSecond),
        FigureName::RttP50Ns | FigureName::RttP99Ns => Axis::linear(label, Unit::Nanoseconds),
        FigureName::LossPct
        | FigureName::ClientCpuPct
        | FigureName::ServerCpuPct
        | FigureName::SystemBusyPct
        | FigureName::ClientCopyPct
        | FigureName::ServerCopyPct
        | FigureName::ClientChecksumPct
        | FigureName::ServerChecksumPct
        | FigureName::ClientCopyBusyPct
        | FigureName::ServerCopyBusyPct
        | FigureName::ServerMappedPct
        | FigureName::ServerMemoryBusyPct
        | FigureName::ServerInterruptsBusyPct => Axis::linear(label, Unit::Percent),
        FigureName::ClientDemandUsPerKb | FigureName::ServerDemandUsPerKb => {
            Axis::linear(label, Unit::Other("µs/KB".into()))
        }
    }
}

fn x_axis(f: StudyFactor) -> Axis {
    let label = factor_key(f).replace('_', " ");
    match f {
        StudyFactor::Testbed(TestbedFactor::Mtu) => Axis::log2("MTU", Unit::Bytes),
        StudyFactor::Testbed(TestbedFactor::Rate) => Axis::log10(label, Unit::BitsPerSecond),
        StudyFactor::Testbed(TestbedFactor::Delay | TestbedFactor::Jitter) => {
            Axis::log10(label, Unit::Nanoseconds)
        }
        StudyFactor::Testbed(_) => Axis::linear(label, Unit::None),
        StudyFactor::Test(t) => crate::figures::factor_axis(t),
    }
}

/// The value as a number on an axis, if it is one.
fn x_of(v: &FactorValue) -> Option<f64> {
    match v {
        FactorValue::Number(n) => Some(*n as f64),
        FactorValue::Name(s) => s.trim().parse().ok(),
    }
}

/// The slowest rate limit (tbf/htb, as read back from the kernel) of a point's testbed, either
/// end, bits/s.
fn link_rate_bps(p: &StudyPoint) -> Option<u64> {
    let tb = p.result.testbed.as_ref()?;
    [&tb.client, &tb.server]
        .into_iter()
        .flatten()
        .flat_map(|e| e.qdiscs.iter().filter_map(|q| q.rate_bps))
        .min()
}

/// The link rate every point of `test` ran under, when they share one (a throughput figure
/// draws it as the model's ceiling).
pub fn shared_link_rate_bps(points: &[StudyPoint], test: &str) -> Option<u64> {
    let mut rates = points.iter().filter(|p| p.test == test).map(link_rate_bps);
    let first = rates.next()??;
    rates.all(|r| r == Some(first)).then_some(first)
}

/// The figure of one table.
pub fn table_figure(
    m: &StudyManifest,
    points: &[StudyPoint],
    t: &StudyTable,
) -> Option<StudyFigure> {
    let p = pivot(points, &t.test, t.x, t.y);
    if p.rows.is_empty() {
        return None;
    }
    let sub = format!(
        "{} · {} · {}",
        escape(&t.test),
        escape(&m.title),
        m.started_utc
    );
    let heading = Heading::new(
        format!(
            "{}: {}",
            escape(&t.title),
            crate::print::study::figure_title(t.y)
        ),
        sub,
    );
    let names = crate::print::study::pivot_columns(&p);
    let numeric = p.rows.iter().all(|r| x_of(r).is_some_and(|x| x > 0.0));
    let caption = format!(
        "Each point is the median of the study's points at that level ({} testbed cell \
         build(s){}); measured where the figure's name says.",
        m.cells.len(),
        if m.repeat > 1 {
            format!(
                ", each cell measured in {} interleaved rounds; error bars: min–max",
                m.repeat
            )
        } else {
            String::new()
        }
    );
    let svg = if numeric {
        let series = names
            .iter()
            .enumerate()
            .map(|(ci, name)| Series {
                name: name.clone(),
                kind: SeriesKind::LineWithPoints,
                points: p
                    .rows
                    .iter()
                    .zip(&p.cells)
                    .filter_map(|(r, cells)| {
                        let s = cells[ci]?;
                        let x = x_of(r)?;
                        Some(if s.count > 1 && s.min < s.max {
                            Point::with_err(x, s.median, s.min, s.max)
                        } else {
                            Point::new(x, s.median)
                        })
                    })
                    .collect(),
                axis: wirebench_plot::YAxis::Y,
                style: Some(ci),
            })
            .collect();
        // Payload throughput under a shaped link: the shaper's rate (it counts the headers
        // too, so payload stays a few percent below it).
        let annotations = shared_link_rate_bps(points, &t.test)
            .filter(|_| t.y == FigureName::ThroughputBps)
            .map(|r| Annotation::HLine {
                y: r as f64,
                label: format!(
                    "link rate {} (qdisc, read back)",
                    crate::print::units::RateUnit::AutoBits.rate(r as f64)
                ),
                axis: wirebench_plot::YAxis::Y,
            })
            .into_iter()
            .collect();
        // An MTU axis is ticked at the MTUs measured (1500, 9000, 65520), not at powers of two.
        let mut x = x_axis(t.x);
        if t.x == StudyFactor::Testbed(TestbedFactor::Mtu) {
            x = x.with_ticks_at(
                p.rows
                    .iter()
                    .filter_map(|r| Some((x_of(r)?, crate::print::study::value_text(t.x, r))))
                    .collect(),
            );
        }
        Figure {
            heading,
            x,
            y: y_axis(t.y),
            series,
            annotations,
            ..Figure::default()
        }
        .render_svg()
    } else {
        BarFigure {
            heading,
            categories: p.rows.iter().map(|r| value_text(t.x, r)).collect(),
            category_label: factor_key(t.x),
            groups: names,
            stacks: vec![String::new()],
            values: p
                .cells
                .iter()
                .map(|row| {
                    row.iter()
                        .map(|c| vec![c.map_or(f64::NAN, |s| s.median)])
                        .collect()
                })
                .collect(),
            value_axis: y_axis(t.y),
            orientation: Orientation::Vertical,
            show_totals: false,
            errors: p
                .cells
                .iter()
                .map(|row| row.iter().map(|c| c.as_ref().and_then(range)).collect())
                .collect(),
        }
        .render_svg()
    };
    Some(StudyFigure { svg, caption })
}

/// The min–max of a spread with more than one point that are not all equal (an error bar).
fn range(s: &wirebench_model::study::Spread) -> Option<(f64, f64)> {
    (s.count > 1 && s.min < s.max && s.min.is_finite() && s.max.is_finite())
        .then_some((s.min, s.max))
}

/// A ladder of labelled cells as horizontal bars, one figure per (test, figure).
pub fn ladder_figures(
    m: &StudyManifest,
    points: &[StudyPoint],
    columns: &[(String, FigureName)],
) -> Vec<StudyFigure> {
    let cells: Vec<_> = m
        .cells
        .iter()
        .filter(|c| c.label.is_some() && c.round <= 1)
        .collect();
    if cells.is_empty() {
        return Vec::new();
    }
    columns
        .iter()
        .filter(|(_, f)| {
            matches!(
                f,
                FigureName::ThroughputBps | FigureName::TransactionsPerS | FigureName::RttP50Ns
            )
        })
        .map(|(test, f)| {
            let spreads: Vec<_> = cells
                .iter()
                .map(|c| cell_spread(points, c.index, test, *f))
                .collect();
            let fig = BarFigure {
                heading: Heading::new(
                    format!("Tuning ladder: {}", crate::print::study::figure_title(*f)),
                    format!("{} · {} · each cell one rung", escape(test), m.started_utc),
                ),
                categories: cells
                    .iter()
                    .map(|c| escape(c.label.as_deref().unwrap_or("")))
                    .collect(),
                category_label: String::new(),
                groups: vec![String::new()],
                stacks: vec![crate::print::study::figure_title(*f).to_string()],
                values: spreads
                    .iter()
                    .map(|s| vec![vec![s.as_ref().map_or(f64::NAN, |s| s.median)]])
                    .collect(),
                value_axis: y_axis(*f),
                orientation: Orientation::Horizontal,
                show_totals: true,
                errors: spreads
                    .iter()
                    .map(|s| vec![s.as_ref().and_then(range)])
                    .collect(),
            };
            StudyFigure {
                svg: fig.render_svg(),
                caption: "Each bar is one testbed cell (a rung), the median of its points; \
                          error bars: min–max of its points, where it has more than one."
                    .into(),
            }
        })
        .collect()
}

/// The seed's fig. 5: an end's CPU breakdown at every profiled point of `test`, one
/// stacked bar per point (idle left out), percent of the sampled CPU time.
pub fn breakdown_figure(
    m: &StudyManifest,
    points: &[StudyPoint],
    test: &str,
    host: wirebench_model::side::HostRole,
) -> Option<StudyFigure> {
    use wirebench_model::profile::ProfileCategory;
    let rows = crate::print::study::breakdown_rows(points, test, host);
    if rows.is_empty() {
        return None;
    }
    let cats: Vec<ProfileCategory> = ProfileCategory::ALL
        .into_iter()
        .filter(|c| *c != ProfileCategory::Idle)
        .collect();
    let fig = BarFigure {
        heading: Heading::new(
            format!("{} CPU breakdown", crate::label::host(host)),
            format!(
                "{} · {} · % of the sampled CPU time, idle left out",
                escape(test),
                m.started_utc
            ),
        ),
        categories: rows.iter().map(|r| r.0.clone()).collect(),
        category_label: String::new(),
        groups: vec![String::new()],
        stacks: cats
            .iter()
            .map(|c| crate::print::study::category_label(*c).to_string())
            .collect(),
        values: rows
            .iter()
            .map(|(_, b)| {
                vec![cats
                    .iter()
                    .map(|c| b.iter().find(|x| x.0 == *c).map_or(0.0, |x| x.1))
                    .collect()]
            })
            .collect(),
        value_axis: Axis::linear("share of the sampled CPU time", Unit::Percent),
        orientation: Orientation::Horizontal,
        show_totals: true,
        errors: Vec::new(),
    };
    Some(StudyFigure {
        svg: fig.render_svg(),
        caption: "perf cpu-clock samples of the CPUs the end used, over its measurement window, \
                  classified by docs/PROFILE.md's table; the mean over the point's runs."
            .into(),
    })
}

fn blocks(figs: Vec<StudyFigure>) -> Vec<Block> {
    figs.into_iter()
        .map(|f| match f.svg {
            Ok(svg) => Block::Figure {
                svg,
                caption: f.caption,
            },
            Err(e) => Block::Warnings(vec![format!("a figure could not be drawn: {e}")]),
        })
        .collect()
}

/// The page of a study. `summary` is the study as `study show` prints it.
pub fn study_page(
    m: &StudyManifest,
    points: &[StudyPoint],
    tables: &[StudyTable],
    ladder: &[(String, FigureName)],
    summary: &str,
) -> Report {
    let mut report = Report::new(
        format!("wirebench study: {}", escape(&m.title)),
        format!(
            "{}{} · started {}",
            m.seed
                .as_deref()
                .map(|s| format!("mirrors {} · ", escape(s)))
                .unwrap_or_default(),
            escape(&m.software),
            m.started_utc
        ),
    );
    let mut head = Section::new("Figures");
    head.blocks
        .extend(blocks(ladder_figures(m, points, ladder)));
    head.blocks.extend(blocks(
        tables
            .iter()
            .filter_map(|t| table_figure(m, points, t))
            .collect(),
    ));
    report.sections.push(head);
    let outcomes: Vec<Expectation> = m
        .expectations
        .iter()
        .map(|o| {
            let o = evaluate(&o.expectation, points);
            let text = expectation_text(&o);
            let (first, rest) = text.split_once('\n').unwrap_or((&text, ""));
            Expectation {
                statement: first.split_once(": ").map_or(first, |x| x.1).to_string(),
                outcome: match o.verdict {
                    Verdict::Holds => Outcome::Holds,
                    Verdict::DoesNotHold => Outcome::DoesNotHold,
                    Verdict::Inconclusive | Verdict::NoData => Outcome::Inconclusive,
                },
                evidence: rest
                    .lines()
                    .map(str::trim)
                    .filter(|l| !l.is_empty())
                    .collect::<Vec<_>>()
                    .join("; "),
            }
        })
        .collect();
    if !outcomes.is_empty() {
        let mut s = Section::new("Expectations");
        s.push(Block::Expectations(outcomes));
        report.sections.push(s);
    }
    let mut res = Section::new("Tables");
    for t in tables {
        let p = pivot(points, &t.test, t.x, t.y);
        if p.rows.is_empty() {
            continue;
        }
        let mut columns = vec![Column::text(factor_key(t.x))];
        columns.extend(
            crate::print::study::pivot_columns(&p)
                .into_iter()
                .map(Column::text),
        );
        let rows = crate::print::study::pivot_rows(&p);
        res.push(Block::Table(DataTable {
            caption: format!(
                "{}: {} (median of the points at each level)",
                escape(&t.title),
                crate::print::study::figure_title(t.y)
            ),
            columns,
            rows,
        }));
    }
    res.push(Block::Code {
        caption: "wirebench study show".into(),
        code: summary.to_string(),
    });
    report.sections.push(res);
    report.sections.push(cells_section(m));
    let mut s = Section::new("Study file and command");
    s.push(Block::Code {
        caption: "command".into(),
        code: wirebench_model::text::shell_line(&m.command),
    });
    s.push(Block::Code {
        caption: escape(&m.file),
        code: m
            .file_text
            .lines()
            .map(escape)
            .collect::<Vec<_>>()
            .join("\n"),
    });
    report.sections.push(s);
    report
}

/// Every testbed cell with its status and times.
fn cells_section(m: &StudyManifest) -> Section {
    let ms = |v: Option<f64>| v.map_or(String::new(), |v| format!("{v:.0}"));
    let rows = m
        .cells
        .iter()
        .map(|c| {
            vec![
                if c.round > 1 {
                    format!("{} (round {})", c.index, c.round)
                } else {
                    c.index.to_string()
                },
                c.label.as_deref().map(escape).unwrap_or_default(),
                levels_text(&c.levels),
                status_text(c.status).to_string(),
                ms(c.build_ms),
                ms(c.teardown_ms),
                ms(c.measured_ms),
                ms(c.wall_ms),
                c.error.as_deref().map(escape).unwrap_or_default(),
            ]
        })
        .collect();
    let mut cells = Section::new("Testbed cells");
    cells.push(Block::Table(DataTable {
        caption: format!(
            "{} of {} cells completed; each testbed built, read back from the kernel and torn down",
            m.cells
                .iter()
                .filter(|c| c.status == StudyStatus::Completed)
                .count(),
            m.cells.len()
        ),
        columns: vec![
            Column::text("cell"),
            Column::text("label"),
            Column::text("testbed"),
            Column::text("status"),
            Column::num("build", "ms"),
            Column::num("teardown", "ms"),
            Column::num("measured", "ms"),
            Column::num("wall", "ms"),
            Column::text("error"),
        ],
        rows,
    }));
    cells
}
