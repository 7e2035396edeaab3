//! Study output: a point's progress line, the pivot tables, the expectations, the cells'
//! testbed timings and the CSV of `points.csv`.

use std::fmt::Write as _;

use wirebench_model::study::{
    CellRecord, ExpectationOutcome, FigureName, FigureValue, Level, Spread, StudyFactor,
    StudyManifest, StudyPoint, StudyStatus, TestbedFactor, Verdict,
};
use wirebench_model::sweep::FactorValue;
use wirebench_model::text::escape;

use super::units::{self, RateUnit};
use wirebench_analysis::study::{evaluate, figure_of, Pivot};

/// A factor's name as the study file writes it.
pub fn factor_key(f: StudyFactor) -> String {
    match f {
        StudyFactor::Testbed(t) => t.key().to_string(),
        StudyFactor::Test(t) => t.flag().trim_start_matches("--").replace('-', "_"),
    }
}

/// A level's value in words (`9000`, `100 Mbit/s`, `5.0 ms`, `64 K`, `sendfile`).
pub fn value_text(f: StudyFactor, v: &FactorValue) -> String {
    match (f, v) {
        (_, FactorValue::Name(s)) => escape(s),
        (StudyFactor::Testbed(TestbedFactor::Rate), FactorValue::Number(n)) => {
            RateUnit::AutoBits.rate(*n as f64)
        }
        (
            StudyFactor::Testbed(TestbedFactor::Delay | TestbedFactor::Jitter),
            FactorValue::Number(n),
        ) => units::duration_ns(*n as f64),
        (StudyFactor::Testbed(_), FactorValue::Number(n)) => n.to_string(),
        (StudyFactor::Test(t), v) => super::sweep::value_text(t.tests()[0], t, v),
    }
}

/// `mtu=9000 send_path=sendfile`.
pub fn levels_text(levels: &[Level]) -> String {
    levels
        .iter()
        .map(|l| {
            format!(
                "{}={}",
                factor_key(l.factor),
                value_text(l.factor, &l.value)
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// The levels that every one of `sets` holds with the same value (in the first set's
/// order): a table prints them once above it instead of in every row. Empty for fewer than
/// two sets.
pub fn constant_levels<'a>(sets: impl IntoIterator<Item = &'a [Level]>) -> Vec<Level> {
    let sets: Vec<&[Level]> = sets.into_iter().collect();
    if sets.len() < 2 {
        return Vec::new();
    }
    sets[0]
        .iter()
        .filter(|l| sets.iter().all(|s| s.contains(l)))
        .cloned()
        .collect()
}

/// `levels` without those in `constant`, as [`levels_text`] writes them.
pub fn varying_text(levels: &[Level], constant: &[Level]) -> String {
    let v: Vec<Level> = levels
        .iter()
        .filter(|l| !constant.contains(l))
        .cloned()
        .collect();
    levels_text(&v)
}

/// The line above a table that names its constant levels (empty when there are none).
fn constant_line(constant: &[Level]) -> String {
    if constant.is_empty() {
        String::new()
    } else {
        format!("every row: {}\n", levels_text(constant))
    }
}

/// A figure's value in its unit, for a table.
pub fn figure_value_text(f: FigureName, v: f64) -> String {
    match f {
        FigureName::ThroughputBps => RateUnit::AutoBits.rate(v),
        FigureName::TransactionsPerS => format!("{}/s", units::number(v)),
        FigureName::RttP50Ns | FigureName::RttP99Ns => format!("{:.1} µs", v / 1000.0),
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
        | FigureName::ServerInterruptsBusyPct => format!("{v:.1} %"),
        FigureName::ClientDemandUsPerKb | FigureName::ServerDemandUsPerKb => {
            format!("{v:.3} µs/KB")
        }
    }
}

/// A figure's median with its range over the points measured at one set of levels
/// (`25.9 Gbit/s (22.1 Gbit/s–27.0 Gbit/s, n=3)`); the median alone for a single point or
/// points that all agree.
pub fn spread_text(f: FigureName, s: &Spread) -> String {
    if s.count > 1 && s.min < s.max {
        format!(
            "{} ({}–{}, n={})",
            figure_value_text(f, s.median),
            figure_value_text(f, s.min),
            figure_value_text(f, s.max),
            s.count
        )
    } else {
        figure_value_text(f, s.median)
    }
}

/// A verdict in words (`holds`, `DOES NOT HOLD`, `inconclusive`, `no data`).
pub fn verdict_text(v: Verdict) -> &'static str {
    match v {
        Verdict::Holds => "holds",
        Verdict::DoesNotHold => "DOES NOT HOLD",
        Verdict::Inconclusive => "inconclusive",
        Verdict::NoData => "no data",
    }
}

/// A figure's heading: what it counts and where.
pub fn figure_title(f: FigureName) -> &'static str {
    match f {
        FigureName::ThroughputBps => "payload throughput at the receivers",
        FigureName::TransactionsPerS => "transactions per second (client)",
        FigureName::RttP50Ns => "round trip p50 (client)",
        FigureName::RttP99Ns => "round trip p99 (client)",
        FigureName::LossPct => "datagrams lost, % of sent",
        FigureName::ClientCpuPct => "client threads' CPU, % of one CPU",
        FigureName::ServerCpuPct => "server threads' CPU, % of one CPU",
        FigureName::SystemBusyPct => "all CPUs busy, %",
        FigureName::ClientDemandUsPerKb => "client service demand",
        FigureName::ServerDemandUsPerKb => "server service demand",
        FigureName::ClientCopyPct => "copy, % of the client end's profiled CPU",
        FigureName::ServerCopyPct => "copy, % of the server end's profiled CPU",
        FigureName::ClientChecksumPct => "checksum, % of the client end's profiled CPU",
        FigureName::ServerChecksumPct => "checksum, % of the server end's profiled CPU",
        FigureName::ClientCopyBusyPct => "copy, % of the client end's busy profiled CPU",
        FigureName::ServerCopyBusyPct => "copy, % of the server end's busy profiled CPU",
        FigureName::ServerMappedPct => "zero-copy receive: % of the server's payload mapped",
        FigureName::ServerMemoryBusyPct => {
            "memory management, % of the server end's busy profiled CPU"
        }
        FigureName::ServerInterruptsBusyPct => {
            "interrupts, % of the server end's busy profiled CPU"
        }
    }
}

/// The line printed as a point completes.
pub fn point_line(p: &StudyPoint, done: u64, total: u64) -> String {
    let figs: Vec<String> = p
        .figures
        .iter()
        .filter(|f| {
            matches!(
                f.figure,
                FigureName::ThroughputBps | FigureName::TransactionsPerS | FigureName::RttP50Ns
            )
        })
        .map(|f: &FigureValue| figure_value_text(f.figure, f.value))
        .collect();
    let figs = if figs.is_empty() {
        format!("no figure ({:?})", p.result.status).to_lowercase()
    } else {
        figs.join(", ")
    };
    format!(
        "[{done}/{total}] cell {} {} {}: {figs}",
        p.cell,
        escape(&p.test),
        levels_text(&p.levels)
    )
}

/// A pivot's column names: the variant levels. A factor some columns have and others lack
/// (an explicit cell without a rate limit) is shown as `factor=none` in the latter.
pub fn pivot_columns(p: &Pivot) -> Vec<String> {
    let constant = constant_levels(p.columns.iter().map(Vec::as_slice));
    let mut all: Vec<StudyFactor> = Vec::new();
    for c in &p.columns {
        for l in c {
            if !all.contains(&l.factor) && !constant.contains(l) {
                all.push(l.factor);
            }
        }
    }
    p.columns
        .iter()
        .map(|c| {
            if all.is_empty() {
                return "value".to_string();
            }
            all.iter()
                .map(|f| match c.iter().find(|l| l.factor == *f) {
                    Some(l) => format!("{}={}", factor_key(*f), value_text(*f, &l.value)),
                    None => format!("{}=none", factor_key(*f)),
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect()
}

/// A pivot's rows as text: the x value, then each column's median and range (`-` where
/// none).
pub fn pivot_rows(p: &Pivot) -> Vec<Vec<String>> {
    p.rows
        .iter()
        .zip(&p.cells)
        .map(|(r, cells)| {
            let mut row = vec![value_text(p.x, r)];
            row.extend(cells.iter().map(|c| match c {
                Some(s) => spread_text(p.y, s),
                None => "-".into(),
            }));
            row
        })
        .collect()
}

/// A pivot as a text table under `title`.
pub fn pivot_text(title: &str, p: &Pivot) -> String {
    let mut head = vec![factor_key(p.x)];
    head.extend(pivot_columns(p));
    format!(
        "{title}: {}\n{}{}",
        figure_title(p.y),
        constant_line(&constant_levels(p.columns.iter().map(Vec::as_slice))),
        table(&head, &pivot_rows(p))
    )
}

/// An expectation's outcome in words, with the measured figures.
pub fn expectation_text(o: &ExpectationOutcome) -> String {
    let e = &o.expectation;
    let verdict = verdict_text(o.verdict);
    let what = match &e.denominator {
        Some(d) => format!(
            "{}({}) / {}({})",
            e.figure.key(),
            levels_text(&e.numerator),
            e.figure.key(),
            levels_text(d)
        ),
        None if e.numerator.is_empty() => e.figure.key().to_string(),
        None => format!("{}({})", e.figure.key(), levels_text(&e.numerator)),
    };
    let cond: Vec<String> = e
        .conditions
        .iter()
        .map(|c| {
            format!(
                "{} {} {}",
                factor_key(c.factor),
                c.op.symbol(),
                value_text(c.factor, &c.value)
            )
        })
        .collect();
    let mut out = format!(
        "{verdict}: {} — {what} {} {}{}\n",
        escape(&e.name),
        e.op.symbol(),
        e.value,
        if cond.is_empty() {
            String::new()
        } else {
            format!(" where {}", cond.join(" and "))
        }
    );
    for c in &o.cases {
        let range = if c.value_min < c.value_max {
            format!(
                " ({:.3}–{:.3}{})",
                c.value_min,
                c.value_max,
                super::claims::paired_text(c.paired_rounds)
            )
        } else {
            String::new()
        };
        let fig = match &c.denominator_spread {
            Some(d) => format!(
                "{:.3}{range} = {} / {}",
                c.value,
                spread_text(e.figure, &c.numerator_spread),
                spread_text(e.figure, d)
            ),
            None => spread_text(e.figure, &c.numerator_spread),
        };
        let tag = match c.verdict {
            Verdict::Holds => "ok          ",
            Verdict::DoesNotHold => "FAIL        ",
            _ => "inconclusive",
        };
        let _ = writeln!(out, "    {tag} {fig}  ({})", levels_text(&c.group));
    }
    out
}

/// A table with a row per cell (its label) and a column per (test, figure): the tuning
/// ladder of the 10GbE slides, each rung one cell.
pub fn ladder_text(
    cells: &[CellRecord],
    points: &[StudyPoint],
    columns: &[(String, FigureName)],
) -> String {
    let mut head = vec!["cell".to_string()];
    head.extend(
        columns
            .iter()
            .map(|(t, f)| format!("{} {}", escape(t), f.key())),
    );
    // One row per cell: its first round's record (every round's points are in its figures).
    let cells: Vec<&CellRecord> = cells.iter().filter(|c| c.round <= 1).collect();
    let unlabelled = cells.iter().filter(|c| c.label.is_none());
    let constant = constant_levels(unlabelled.map(|c| c.levels.as_slice()));
    let rows: Vec<Vec<String>> = cells
        .iter()
        .map(|c| {
            let mut row = vec![c
                .label
                .as_deref()
                .map(escape)
                .unwrap_or_else(|| varying_text(&c.levels, &constant))];
            row.extend(columns.iter().map(|(t, f)| {
                wirebench_analysis::study::cell_spread(points, c.index, t, *f)
                    .map_or("-".to_string(), |s| spread_text(*f, &s))
            }));
            row
        })
        .collect();
    format!("{}{}", constant_line(&constant), table(&head, &rows))
}

/// Left-aligned first column, right-aligned others.
fn table(head: &[String], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = head.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    let line = |cells: &[String]| -> String {
        let mut s = String::new();
        for (i, (c, w)) in cells.iter().zip(&widths).enumerate() {
            if i == 0 {
                let _ = write!(s, "{c:<w$}");
            } else {
                let _ = write!(s, "  {c:>w$}");
            }
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(head);
    for r in rows {
        out.push_str(&line(r));
    }
    out
}

/// A profile category's name in tables and legends.
pub fn category_label(c: wirebench_model::profile::ProfileCategory) -> &'static str {
    super::profile::category_name(c)
}

/// Each profiled point of `test` (its levels in words) with `host`'s breakdown.
pub fn breakdown_rows(
    points: &[StudyPoint],
    test: &str,
    host: wirebench_model::side::HostRole,
) -> Vec<(
    String,
    Vec<(wirebench_model::profile::ProfileCategory, f64)>,
)> {
    let constant = constant_levels(
        points
            .iter()
            .filter(|p| p.test == test)
            .map(|p| p.levels.as_slice()),
    );
    points
        .iter()
        .filter(|p| p.test == test)
        .filter_map(|p| {
            wirebench_analysis::study::breakdown(p, host)
                .map(|b| (varying_text(&p.levels, &constant), b))
        })
        .collect()
}

/// The CPU breakdown of `host` at every profiled point of `test` (the seed's fig. 5 table):
/// a row per point, a column per category, percent of the end's CPU time over its window
/// (the categories' sampled time plus the unsampled remainder, counted in idle).
pub fn breakdown_text(
    points: &[StudyPoint],
    test: &str,
    host: wirebench_model::side::HostRole,
) -> String {
    use wirebench_model::profile::ProfileCategory;
    let rows_data = breakdown_rows(points, test, host);
    if rows_data.is_empty() {
        return String::new();
    }
    let mut head = vec!["point".to_string()];
    head.extend(
        ProfileCategory::ALL
            .iter()
            .map(|c| super::profile::category_name(*c).to_string()),
    );
    let rows: Vec<Vec<String>> = rows_data
        .iter()
        .map(|(l, b)| {
            let mut r = vec![l.clone()];
            r.extend(b.iter().map(|(_, v)| format!("{v:.1}")));
            r
        })
        .collect();
    format!(
        "{} CPU breakdown, % of its CPUs' time over the window ({}); idle includes the \
         unsampled time /proc/stat counts idle, unsampled busy is the time it counts busy that \
         no sample stands for:\n{}",
        crate::label::host(host),
        escape(test),
        table(&head, &rows)
    )
}

/// The cells' testbed timings: build, teardown, measured and wall time.
pub fn cells_text(cells: &[CellRecord]) -> String {
    let constant = constant_levels(cells.iter().map(|c| c.levels.as_slice()));
    let mut out = constant_line(&constant).replace("every row", "every cell");
    let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.0} ms"));
    let rounds = cells.iter().any(|c| c.round > 1);
    for c in cells {
        let status = status_text(c.status);
        let _ = writeln!(
            out,
            "cell {:>3}{} {:<11} build {:>7}  teardown {:>7}  measured {:>8}  wall {:>8}  {}{}",
            c.index,
            if rounds {
                format!(" round {}", c.round)
            } else {
                String::new()
            },
            status,
            ms(c.build_ms),
            ms(c.teardown_ms),
            ms(c.measured_ms),
            ms(c.wall_ms),
            c.label
                .as_deref()
                .map(|l| format!("{}: ", escape(l)))
                .unwrap_or_default(),
            varying_text(&c.levels, &constant)
        );
        if let Some(e) = &c.error {
            let _ = writeln!(out, "         error: {}", escape(e));
        }
    }
    out
}

/// The study's header: title, seed, host, status.
pub fn header(m: &StudyManifest) -> String {
    let mut out = format!("study: {}\n", escape(&m.title));
    if let Some(s) = &m.seed {
        let _ = writeln!(out, "mirrors: {}", escape(s));
    }
    if let Some(h) = &m.host {
        let _ = writeln!(
            out,
            "host: {} CPUs, {}, Linux {}, default congestion control {}",
            h.cpus_online.map_or("?".into(), |n| n.to_string()),
            h.cpu_model.as_deref().map_or("unknown CPU".into(), escape),
            h.kernel_release.as_deref().map_or("?".into(), escape),
            h.default_congestion.as_deref().map_or("?".into(), escape),
        );
    }
    let done = m
        .cells
        .iter()
        .filter(|c| c.status == StudyStatus::Completed)
        .count();
    let _ = writeln!(
        out,
        "started {}, {} of {} cells completed, status {}",
        m.started_utc,
        done,
        m.cells.len(),
        status_text(m.status)
    );
    if m.repeat > 1 {
        let _ = writeln!(
            out,
            "repeat {}: every cell built and measured once per round, round 1 of every cell \
             before round 2; figures are medians (min–max over the rounds, n = points)",
            m.repeat
        );
    }
    if let Some(e) = &m.error {
        let _ = writeln!(out, "error: {}", escape(e));
    }
    out
}

/// A status in words.
pub fn status_text(s: StudyStatus) -> &'static str {
    match s {
        StudyStatus::Completed => "completed",
        StudyStatus::Running => "not run",
        StudyStatus::Interrupted => "interrupted",
        StudyStatus::Failed => "FAILED",
    }
}

/// `points.csv`: a row per point: cell, round, test, a column per factor, a column per figure,
/// the point's status.
pub fn csv(points: &[StudyPoint]) -> String {
    let mut factors: Vec<StudyFactor> = Vec::new();
    for p in points {
        for l in &p.levels {
            if !factors.contains(&l.factor) {
                factors.push(l.factor);
            }
        }
    }
    let mut out = String::from("cell,round,test");
    for f in &factors {
        let _ = write!(out, ",{}", factor_key(*f));
    }
    for f in FigureName::ALL {
        let _ = write!(out, ",{}", f.key());
    }
    out.push_str(",status\n");
    let field = super::csv_cell;
    for p in points {
        let _ = write!(out, "{},{},{}", p.cell, p.round, field(&escape(&p.test)));
        for f in &factors {
            let v = wirebench_analysis::study::level_of(&p.levels, *f)
                .map(|v| field(&escape(&v.arg())))
                .unwrap_or_default();
            let _ = write!(out, ",{v}");
        }
        for f in FigureName::ALL {
            let v = figure_of(p, f).map(|v| format!("{v}")).unwrap_or_default();
            let _ = write!(out, ",{v}");
        }
        let status = serde_json::to_value(p.result.status)
            .ok()
            .and_then(|v| v.as_str().map(String::from))
            .unwrap_or_default();
        let _ = writeln!(out, ",{status}");
    }
    out
}

/// Expectations of a manifest re-evaluated on `points` (what `study show` prints).
pub fn expectations_text(m: &StudyManifest, points: &[StudyPoint]) -> String {
    let mut out = String::new();
    for o in &m.expectations {
        out.push_str(&expectation_text(&evaluate(&o.expectation, points)));
    }
    out
}

/// The warnings of the points' results (a CPU-bound end, a short window, ...), each said
/// once with the points that raised it (up to six named); empty when there are none.
pub fn warnings_text(points: &[StudyPoint]) -> String {
    let mut by_text: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for p in points {
        let run_level = p
            .result
            .runs
            .iter()
            .filter_map(|r| r.summary.as_ref())
            .flat_map(|s| s.warnings.iter());
        for n in p.result.warnings.iter().chain(run_level) {
            let at = format!("cell {} {}", p.cell, escape(&p.test));
            let list = by_text.entry(super::text::noted(n)).or_default();
            if !list.contains(&at) {
                list.push(at);
            }
        }
    }
    if by_text.is_empty() {
        return String::new();
    }
    let mut out = String::from("warnings:\n");
    let distinct = by_text.len();
    for (text, at) in by_text.into_iter().take(20) {
        let shown: Vec<&str> = at.iter().take(6).map(String::as_str).collect();
        let more = if at.len() > 6 {
            format!(" and {} more", at.len() - 6)
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "  {} ({} point{}: {}{more})",
            text.trim_end(),
            at.len(),
            if at.len() == 1 { "" } else { "s" },
            shown.join(", ")
        );
    }
    if distinct > 20 {
        let _ = writeln!(
            out,
            "  and {} more (each point's in results.jsonl)",
            distinct - 20
        );
    }
    out
}
