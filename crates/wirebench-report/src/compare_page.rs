//! The page of a comparison (`wirebench report --compare A B`): the judgement of every
//! figure both sides have (the same [`Comparison`] `wirebench compare` prints), then both
//! sides drawn together: each figure's interval samples against time, A's runs and B's
//! overlaid, and the distribution of each side's values as boxes side by side.
//!
//! Nothing here computes a figure: the values are [`wirebench_analysis::compare`]'s (run values
//! and interval samples outside the warm-up), the boxes Tukey's five numbers of them.

use wirebench_model::compare::{Comparison, Figure, FigureComparison, FigureUnit, Outcome};
use wirebench_model::result::{RunResult, RunStatus};
use wirebench_model::text::shell_line;
use wirebench_plot::html::{
    Block, Column, DataTable, Outcome as Callout, Report, Section, Verdict,
};
use wirebench_plot::{
    Axis, BoxFigure, BoxSeries, BoxStats, Figure as XyFigure, Heading, Render, Series, SeriesKind,
    Svg, Unit,
};

use crate::print::compare::{label, value, verdict};
use wirebench_analysis::compare::{interval_series, values, Values};

/// Most runs drawn as lines per side in one time series; the rest are counted in the
/// caption.
pub const MAX_RUN_SERIES: usize = 8;

/// Style slots of the two sides (the palette's first two colours).
const STYLE_A: usize = 0;
const STYLE_B: usize = 1;

/// The page of comparison `c` of results `a` (baseline) and `b` (candidate).
pub fn compare_page(c: &Comparison, a: &[RunResult], b: &[RunResult]) -> Report {
    let mut report = Report::new(
        "wirebench comparison: A (baseline) and B",
        format!(
            "A: {} · B: {} · {} % confidence",
            c.a.selector, c.b.selector, c.level_pct
        ),
    );
    let mut head = Section::new("Comparison");
    head.push(Block::Verdict(headline(c)));
    head.push(Block::Table(figure_table(c)));
    if c.a.workloads != c.b.workloads {
        head.push(Block::Warnings(vec![format!(
            "A ran {} and B ran {}: only the figures both have are compared",
            list_or_none(&c.a.workloads),
            list_or_none(&c.b.workloads)
        )]));
    }
    report.sections.push(head);
    let mut figs = Section::new("Both sides drawn");
    let (va, vb) = (values(a), values(b));
    for f in &c.figures {
        for (svg, caption) in time_series(f, a, b).into_iter().chain(boxes(f, &va, &vb)) {
            figs.push(match svg {
                Ok(svg) => Block::Figure { svg, caption },
                Err(e) => Block::Warnings(vec![format!(
                    "a figure of {} could not be drawn: {e}",
                    label(f.name)
                )]),
            });
        }
    }
    if !figs.blocks.is_empty() {
        report.sections.push(figs);
    }
    let mut src = Section::new("The results compared");
    for (name, side) in [("A", a), ("B", b)] {
        src.push(Block::Heading(format!("{name}: {} result(s)", side.len())));
        src.push(Block::Table(results_table(side)));
    }
    report.sections.push(src);
    report
}

fn list_or_none(v: &[String]) -> String {
    if v.is_empty() {
        "no known workload".into()
    } else {
        v.join(", ")
    }
}

/// The callout: which figures differ significantly, or that none does.
fn headline(c: &Comparison) -> Verdict {
    let differ: Vec<&FigureComparison> = c
        .figures
        .iter()
        .filter(|f| matches!(f.outcome, Outcome::Better | Outcome::Worse))
        .collect();
    let tested = c.figures.iter().any(|f| f.test.is_some());
    let detail = c
        .figures
        .iter()
        .map(|f| format!("{}: {}", label(f.name), verdict(f, c.level_pct)))
        .collect::<Vec<_>>()
        .join("\n");
    if !differ.is_empty() {
        let words: Vec<String> = differ
            .iter()
            .map(|f| {
                format!(
                    "{} {:+.1} % ({})",
                    label(f.name),
                    f.change_pct.unwrap_or(f64::NAN),
                    if f.outcome == Outcome::Better {
                        "better"
                    } else {
                        "worse"
                    }
                )
            })
            .collect();
        Verdict {
            outcome: if differ.iter().any(|f| f.outcome == Outcome::Worse) {
                Callout::DoesNotHold
            } else {
                Callout::Holds
            },
            headline: format!("B differs significantly: {}", words.join(", ")),
            detail,
        }
    } else if tested {
        Verdict {
            outcome: Callout::Inconclusive,
            headline: "no significant difference in any figure tested".into(),
            detail,
        }
    } else {
        Verdict {
            outcome: Callout::Inconclusive,
            headline: "nothing could be tested: too few runs or interval samples".into(),
            detail,
        }
    }
}

/// One row per figure: both medians, the change and its interval, the test, the verdict.
fn figure_table(c: &Comparison) -> DataTable {
    let pct = |x: Option<f64>| x.map_or_else(|| "—".into(), |v| format!("{v:+.1}"));
    DataTable {
        caption: format!(
            "Every figure both sides have (medians; change from A to B with its {} % \
             confidence interval)",
            c.level_pct
        ),
        columns: vec![
            Column::text("figure"),
            Column::num("A median", ""),
            Column::num("B median", ""),
            Column::num("change", "%"),
            Column::num("CI", "%"),
            Column::text("test, n A / B"),
            Column::num("p", ""),
            Column::text("outcome"),
        ],
        rows: c
            .figures
            .iter()
            .map(|f| {
                vec![
                    label(f.name).to_string(),
                    value(f.a_median, f.unit),
                    value(f.b_median, f.unit),
                    pct(f.change_pct),
                    match (f.ci_low_pct, f.ci_high_pct) {
                        (Some(lo), Some(hi)) => format!("{lo:+.1} to {hi:+.1}"),
                        _ => "—".into(),
                    },
                    match f.test {
                        Some(t) => format!(
                            "{} {} / {}",
                            match t {
                                wirebench_model::compare::TestKind::Welch => "Welch's t",
                                wirebench_model::compare::TestKind::MannWhitney => "Mann-Whitney",
                            },
                            f.a_n,
                            f.b_n
                        ),
                        None => format!("not tested {} / {}", f.a_n, f.b_n),
                    },
                    f.p_value.map_or_else(|| "—".into(), |p| format!("{p:.4}")),
                    outcome_word(f.outcome).into(),
                ]
            })
            .collect(),
    }
}

fn outcome_word(o: Outcome) -> &'static str {
    match o {
        Outcome::Better => "better",
        Outcome::Worse => "worse",
        Outcome::NoDifference => "no significant difference",
        Outcome::Identical => "identical",
        Outcome::TooFew => "too few values",
    }
}

/// The plot unit of a figure's unit.
fn plot_unit(u: FigureUnit) -> Unit {
    match u {
        FigureUnit::Bps => Unit::BitsPerSecond,
        FigureUnit::PerS => Unit::PerSecond,
        FigureUnit::Ns => Unit::Nanoseconds,
        FigureUnit::UsPerKb => Unit::Other("µs/KB".into()),
        FigureUnit::UsPerTx => Unit::Other("µs/tx".into()),
        FigureUnit::Pct => Unit::Percent,
        FigureUnit::Count => Unit::None,
    }
}

/// The completed runs' interval series of one figure, each named by its side, result and
/// run.
fn run_series(side: &str, results: &[RunResult], fig: Figure) -> Vec<(String, Vec<(f64, f64)>)> {
    let mut out = Vec::new();
    for (i, r) in results.iter().enumerate() {
        for run in r
            .runs
            .iter()
            .filter(|run| run.status == RunStatus::Completed)
        {
            let Some(s) = &run.summary else { continue };
            let pts = interval_series(s, fig);
            if !pts.is_empty() {
                out.push((
                    format!("{side} result {} run {}", i + 1, run.index + 1),
                    pts,
                ));
            }
        }
    }
    out
}

/// A figure's interval samples against time, A's runs and B's overlaid; none when a side
/// has no interval samples of it.
fn time_series(
    f: &FigureComparison,
    a: &[RunResult],
    b: &[RunResult],
) -> Option<(Result<Svg, wirebench_plot::PlotError>, String)> {
    let (sa, sb) = (run_series("A", a, f.name), run_series("B", b, f.name));
    if sa.is_empty() || sb.is_empty() {
        return None;
    }
    let total = (sa.len(), sb.len());
    let mut series = Vec::new();
    for (runs, style) in [(sa, STYLE_A), (sb, STYLE_B)] {
        for (name, pts) in runs.into_iter().take(MAX_RUN_SERIES) {
            series.push(Series::new(name, SeriesKind::Line, &pts).with_style(style));
        }
    }
    let end_s = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.x))
        .fold(0.0_f64, f64::max);
    let fig = XyFigure {
        heading: Heading {
            title: format!("{} per interval, A and B", label(f.name)),
            subtitle: format!(
                "A in the first colour, B in the second; {} samples",
                unit_words(f.unit)
            ),
        },
        x: Axis::linear("time since the test's start", Unit::Seconds).with_range(0.0, end_s),
        y: Axis::linear(label(f.name), plot_unit(f.unit)),
        series,
        ..XyFigure::default()
    };
    let more = |n: usize| n.saturating_sub(MAX_RUN_SERIES);
    let caption = format!(
        "{}: one line per run, each point an interval's value at its end (warm-up left out); \
         A has {} run(s), B {}{}",
        label(f.name),
        total.0,
        total.1,
        if more(total.0) + more(total.1) > 0 {
            format!(
                "; the first {MAX_RUN_SERIES} of each side are drawn ({} and {} not drawn)",
                more(total.0),
                more(total.1)
            )
        } else {
            String::new()
        }
    );
    Some((fig.render_svg(), caption))
}

fn unit_words(u: FigureUnit) -> &'static str {
    match u {
        FigureUnit::Bps => "receiver throughput",
        FigureUnit::PerS => "rate",
        FigureUnit::Ns => "round-trip",
        _ => "interval",
    }
}

/// Which values a figure's boxes show: run values when both sides have at least three
/// runs (what Welch's t judges), else the interval samples (what Mann–Whitney judges).
pub fn box_samples<'v>(x: &'v Values, y: &'v Values) -> (&'v [f64], &'v [f64], &'static str) {
    if x.runs.len() >= 3 && y.runs.len() >= 3 {
        (&x.runs, &y.runs, "one value per run")
    } else if !x.intervals.is_empty() && !y.intervals.is_empty() {
        (&x.intervals, &y.intervals, "one value per interval")
    } else {
        (&x.runs, &y.runs, "one value per run")
    }
}

/// Both sides' values of a figure as boxes side by side.
fn boxes(
    f: &FigureComparison,
    va: &[(Figure, Values)],
    vb: &[(Figure, Values)],
) -> Option<(Result<Svg, wirebench_plot::PlotError>, String)> {
    let find =
        |v: &'_ [(Figure, Values)]| v.iter().find(|(g, _)| *g == f.name).map(|(_, x)| x.clone());
    let (x, y) = (find(va)?, find(vb)?);
    let (sx, sy, what) = box_samples(&x, &y);
    let (bx, by) = (BoxStats::from_samples(sx)?, BoxStats::from_samples(sy)?);
    let fig = BoxFigure {
        heading: Heading {
            title: format!("{}: A and B", label(f.name)),
            subtitle: format!("{what}; {} vs {} values", sx.len(), sy.len()),
        },
        categories: vec![label(f.name).to_string()],
        category_label: String::new(),
        y: Axis::linear(label(f.name), plot_unit(f.unit)),
        series: vec![
            BoxSeries {
                name: "A (baseline)".into(),
                boxes: vec![Some(bx)],
            },
            BoxSeries {
                name: "B".into(),
                boxes: vec![Some(by)],
            },
        ],
        whisker_labels: Some((
            "lowest within 1.5 IQR".into(),
            "highest within 1.5 IQR".into(),
        )),
    };
    let caption = format!(
        "{}: the box spans the quartiles with the median inside, the whiskers reach the most \
         extreme values within 1.5 interquartile ranges, points beyond are drawn alone; {what}",
        label(f.name)
    );
    Some((fig.render_svg(), caption))
}

/// The results of one side: when each started, how it ended, and how to run it again.
fn results_table(results: &[RunResult]) -> DataTable {
    DataTable {
        caption: String::new(),
        columns: vec![
            Column::text("started (UTC)"),
            Column::text("test"),
            Column::text("status"),
            Column::num("runs", ""),
            Column::text("command"),
        ],
        rows: results
            .iter()
            .map(|r| {
                vec![
                    r.started_utc.clone(),
                    r.spec
                        .as_ref()
                        .map_or_else(|| "—".into(), |s| s.kind().as_str().to_string()),
                    crate::print::status_name(r.status).to_string(),
                    r.runs.len().to_string(),
                    shell_line(&r.command),
                ]
            })
            .collect(),
    }
}
