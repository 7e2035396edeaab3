//! A study's analysis: the figures of a point, conditions on levels, expectations and the
//! pivot tables `study show` prints.
//!
//! # Figures of a point
//!
//! `throughput_bps`, `transactions_per_s`, `rtt_p50_ns`, `rtt_p99_ns` and `loss_pct` are the
//! sweep's headline figure of the point ([`super::sweep::point_figure`]: means over the
//! point's runs). The CPU figures are means over the runs that have a summary:
//! `client_cpu_pct` / `server_cpu_pct` are that end's process threads' CPU time (user +
//! system) as a percentage of one CPU over its window (`threads_util_pct_of_one_cpu`: both
//! ends share one machine in a namespace testbed, so `/proc/stat` cannot tell them apart);
//! `system_busy_pct` is the busy share of all CPUs seen by the client end;
//! `client_demand_us_per_kb` / `server_demand_us_per_kb` are the threads' service demand.
//!
//! # Expectations
//!
//! The points of the expectation's test(s) that meet its conditions are grouped by every
//! level except the factors its selectors name; in each group the numerator's point (the one
//! whose levels include every numerator level) and the denominator's are looked up, and
//! `numerator / denominator OP value` (or `numerator OP value`) is evaluated. A level
//! measured more than once (re-measured points) contributes its median. The expectation
//! holds when every group that has both points meets the bound, and has no data when no
//! group has them.

use wirebench_model::profile::ProfileCategory;
use wirebench_model::result::RunResult;
use wirebench_model::side::HostRole;
use wirebench_model::study::{
    CompareOp, Condition, Expectation, ExpectationCase, ExpectationOutcome, FigureName,
    FigureValue, Level, StudyFactor, StudyPoint, Verdict,
};
use wirebench_model::sweep::{FactorValue, PointFigure};

use super::sweep::point_figure;

/// The figures of a point's result (those its workload has).
pub fn figures(r: &RunResult) -> Vec<FigureValue> {
    let mut out = Vec::new();
    let mut push = |figure, value: Option<f64>| {
        if let Some(value) = value.filter(|v| v.is_finite()) {
            out.push(FigureValue { figure, value });
        }
    };
    match point_figure(r) {
        Some(PointFigure::Throughput { throughput_bps, .. }) => {
            push(FigureName::ThroughputBps, Some(throughput_bps))
        }
        Some(PointFigure::Udp {
            throughput_bps,
            loss_pct,
        }) => {
            push(FigureName::ThroughputBps, Some(throughput_bps));
            push(FigureName::LossPct, Some(loss_pct));
        }
        Some(PointFigure::Transactions {
            transactions_per_s,
            rtt_p50_ns,
            rtt_p99_ns,
            ..
        }) => {
            push(FigureName::TransactionsPerS, Some(transactions_per_s));
            push(FigureName::RttP50Ns, rtt_p50_ns.map(|v| v as f64));
            push(FigureName::RttP99Ns, rtt_p99_ns.map(|v| v as f64));
        }
        None => {}
    }
    let cpus: Vec<_> = r
        .runs
        .iter()
        .filter_map(|run| run.summary.as_ref())
        .flat_map(|s| s.cpu.iter())
        .collect();
    let mean = |host: HostRole, f: &dyn Fn(&wirebench_model::result::EndCpu) -> Option<f64>| {
        let v: Vec<f64> = cpus
            .iter()
            .filter(|c| c.host == host)
            .filter_map(|c| f(c))
            .collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    push(
        FigureName::ClientCpuPct,
        mean(HostRole::Client, &|c| Some(c.threads_util_pct_of_one_cpu)),
    );
    push(
        FigureName::ServerCpuPct,
        mean(HostRole::Server, &|c| Some(c.threads_util_pct_of_one_cpu)),
    );
    push(
        FigureName::SystemBusyPct,
        mean(HostRole::Client, &|c| Some(c.system_busy_pct)),
    );
    push(
        FigureName::ClientDemandUsPerKb,
        mean(HostRole::Client, &|c| c.threads_service_demand_us_per_kb),
    );
    push(
        FigureName::ServerDemandUsPerKb,
        mean(HostRole::Server, &|c| c.threads_service_demand_us_per_kb),
    );
    for (host, cat, fig) in [
        (
            HostRole::Client,
            ProfileCategory::Copy,
            FigureName::ClientCopyPct,
        ),
        (
            HostRole::Server,
            ProfileCategory::Copy,
            FigureName::ServerCopyPct,
        ),
        (
            HostRole::Client,
            ProfileCategory::Checksum,
            FigureName::ClientChecksumPct,
        ),
        (
            HostRole::Server,
            ProfileCategory::Checksum,
            FigureName::ServerChecksumPct,
        ),
    ] {
        let v = profile_share(r, host, cat);
        push(fig, v);
    }
    out
}

/// A category's share of an end's profiled CPU time, percent, the mean over the runs.
fn profile_share(r: &RunResult, host: HostRole, cat: ProfileCategory) -> Option<f64> {
    let v: Vec<f64> = r
        .runs
        .iter()
        .filter_map(|run| run.summary.as_ref())
        .flat_map(|s| s.profiles.iter())
        .filter(|e| e.host == host)
        .filter_map(|e| e.categories.iter().find(|c| c.category == cat))
        .map(|c| c.pct)
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
}

/// A point's value of `figure`.
pub fn figure_of(p: &StudyPoint, figure: FigureName) -> Option<f64> {
    p.figures
        .iter()
        .find(|f| f.figure == figure)
        .map(|f| f.value)
}

/// A value as a number: a count, or a name that reads as one (`0.5` percent).
fn numeric(v: &FactorValue) -> Option<f64> {
    match v {
        FactorValue::Number(n) => Some(*n as f64),
        FactorValue::Name(s) => s.trim().parse().ok(),
    }
}

/// Whether `have` stands in relation `op` to `want`: numbers compare as numbers, names
/// only with `==` and `!=`.
pub fn compare(have: &FactorValue, op: CompareOp, want: &FactorValue) -> bool {
    if let (Some(a), Some(b)) = (numeric(have), numeric(want)) {
        return compare_f64(a, op, b);
    }
    match op {
        CompareOp::Eq => have == want,
        CompareOp::Ne => have != want,
        _ => false,
    }
}

/// `a OP b` on numbers.
pub fn compare_f64(a: f64, op: CompareOp, b: f64) -> bool {
    match op {
        CompareOp::Lt => a < b,
        CompareOp::Le => a <= b,
        CompareOp::Gt => a > b,
        CompareOp::Ge => a >= b,
        CompareOp::Eq => a == b,
        CompareOp::Ne => a != b,
    }
}

/// A level's value among `levels`.
pub fn level_of(levels: &[Level], f: StudyFactor) -> Option<&FactorValue> {
    levels.iter().find(|l| l.factor == f).map(|l| &l.value)
}

/// Whether `levels` meet condition `c` (a factor without a level never does).
pub fn meets(levels: &[Level], c: &Condition) -> bool {
    level_of(levels, c.factor).is_some_and(|v| compare(v, c.op, &c.value))
}

/// Whether `levels` include every level of `selector`.
fn selects(levels: &[Level], selector: &[Level]) -> bool {
    selector
        .iter()
        .all(|s| level_of(levels, s.factor).is_some_and(|v| compare(v, CompareOp::Eq, &s.value)))
}

/// The median of the points' `figure` among `points`.
fn median_of<'a>(points: impl Iterator<Item = &'a StudyPoint>, figure: FigureName) -> Option<f64> {
    let mut v: Vec<f64> = points.filter_map(|p| figure_of(p, figure)).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    })
}

/// An end's profile breakdown of a point: every category's share of the sampled CPU
/// time, percent, in [`ProfileCategory::ALL`] order, the mean over the point's runs that
/// have one (`--profile`).
pub fn breakdown(p: &StudyPoint, host: HostRole) -> Option<Vec<(ProfileCategory, f64)>> {
    let ends: Vec<_> = p
        .result
        .runs
        .iter()
        .filter_map(|r| r.summary.as_ref())
        .flat_map(|s| s.profiles.iter())
        .filter(|e| e.host == host)
        .collect();
    if ends.is_empty() {
        return None;
    }
    Some(
        ProfileCategory::ALL
            .iter()
            .map(|c| {
                let sum: f64 = ends
                    .iter()
                    .filter_map(|e| e.categories.iter().find(|x| x.category == *c))
                    .map(|x| x.pct)
                    .sum();
                (*c, sum / ends.len() as f64)
            })
            .collect(),
    )
}

/// The median of `figure` over the points of `test` in cell `cell`.
pub fn cell_figure(
    points: &[StudyPoint],
    cell: u32,
    test: &str,
    figure: FigureName,
) -> Option<f64> {
    median_of(
        points.iter().filter(|p| p.cell == cell && p.test == test),
        figure,
    )
}

/// Evaluates an expectation on a study's points.
pub fn evaluate(e: &Expectation, points: &[StudyPoint]) -> ExpectationOutcome {
    let named: Vec<StudyFactor> = e
        .numerator
        .iter()
        .chain(e.denominator.iter().flatten())
        .map(|l| l.factor)
        .collect();
    let eligible: Vec<&StudyPoint> = points
        .iter()
        .filter(|p| e.test.as_ref().is_none_or(|t| *t == p.test))
        .filter(|p| e.conditions.iter().all(|c| meets(&p.levels, c)))
        .filter(|p| figure_of(p, e.figure).is_some())
        .collect();
    // A group: the test and every level the selectors do not name.
    let group_of = |p: &StudyPoint| -> (String, Vec<Level>) {
        let g = p
            .levels
            .iter()
            .filter(|l| !named.contains(&l.factor))
            .cloned()
            .collect();
        (p.test.clone(), g)
    };
    let mut groups: Vec<(String, Vec<Level>)> = Vec::new();
    for p in &eligible {
        let g = group_of(p);
        if !groups.contains(&g) {
            groups.push(g);
        }
    }
    let mut cases = Vec::new();
    for g in groups {
        let members = || eligible.iter().copied().filter(|p| group_of(p) == g);
        let Some(num) = median_of(
            members().filter(|p| selects(&p.levels, &e.numerator)),
            e.figure,
        ) else {
            continue;
        };
        let (den, value) = match &e.denominator {
            Some(d) => match median_of(members().filter(|p| selects(&p.levels, d)), e.figure) {
                Some(den) if den != 0.0 => (Some(den), num / den),
                _ => continue,
            },
            None => (None, num),
        };
        cases.push(ExpectationCase {
            group: g.1,
            numerator: num,
            denominator: den,
            value,
            holds: compare_f64(value, e.op, e.value),
        });
    }
    let verdict = if cases.is_empty() {
        Verdict::NoData
    } else if cases.iter().all(|c| c.holds) {
        Verdict::Holds
    } else {
        Verdict::DoesNotHold
    };
    ExpectationOutcome {
        expectation: e.clone(),
        verdict,
        cases,
    }
}

/// A table: rows are the x factor's values, columns the variants (every other level that
/// varies among the test's points), each cell the median of the figure.
#[derive(Debug, Clone, PartialEq)]
pub struct Pivot {
    /// The x factor.
    pub x: StudyFactor,
    /// The figure.
    pub y: FigureName,
    /// Row values, ascending.
    pub rows: Vec<FactorValue>,
    /// Column variants (the levels that differ between columns).
    pub columns: Vec<Vec<Level>>,
    /// `cells[row][column]`.
    pub cells: Vec<Vec<Option<f64>>>,
}

/// The pivot of `figure` over `x` among the points of test `test`.
pub fn pivot(points: &[StudyPoint], test: &str, x: StudyFactor, y: FigureName) -> Pivot {
    let pts: Vec<&StudyPoint> = points.iter().filter(|p| p.test == test).collect();
    let mut rows: Vec<FactorValue> = pts
        .iter()
        .filter_map(|p| level_of(&p.levels, x).cloned())
        .collect();
    rows.sort_by(|a, b| match (numeric(a), numeric(b)) {
        (Some(x), Some(y)) => x.total_cmp(&y),
        _ => a.cmp(b),
    });
    rows.dedup();
    // Factors other than x whose levels differ among the points.
    let mut factors: Vec<StudyFactor> = Vec::new();
    for p in &pts {
        for l in &p.levels {
            if l.factor != x
                && !factors.contains(&l.factor)
                && pts
                    .iter()
                    .any(|q| level_of(&q.levels, l.factor) != Some(&l.value))
            {
                factors.push(l.factor);
            }
        }
    }
    let variant = |p: &StudyPoint| -> Vec<Level> {
        factors
            .iter()
            .filter_map(|f| {
                level_of(&p.levels, *f).map(|v| Level {
                    factor: *f,
                    value: v.clone(),
                })
            })
            .collect()
    };
    let mut columns: Vec<Vec<Level>> = Vec::new();
    for p in &pts {
        let v = variant(p);
        if !columns.contains(&v) {
            columns.push(v);
        }
    }
    let cells = rows
        .iter()
        .map(|r| {
            columns
                .iter()
                .map(|c| {
                    median_of(
                        pts.iter()
                            .copied()
                            .filter(|p| level_of(&p.levels, x) == Some(r) && variant(p) == *c),
                        y,
                    )
                })
                .collect()
        })
        .collect();
    Pivot {
        x,
        y,
        rows,
        columns,
        cells,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::study::TestbedFactor;
    use wirebench_model::sweep::FactorName;

    fn point(mtu: u64, path: &str, bps: f64) -> StudyPoint {
        StudyPoint {
            schema_version: 1,
            cell: 0,
            test: "stream".into(),
            levels: vec![
                Level {
                    factor: StudyFactor::Testbed(TestbedFactor::Mtu),
                    value: FactorValue::Number(mtu),
                },
                Level {
                    factor: StudyFactor::Test(FactorName::SendPath),
                    value: FactorValue::Name(path.into()),
                },
            ],
            settings: Vec::new(),
            figures: vec![FigureValue {
                figure: FigureName::ThroughputBps,
                value: bps,
            }],
            result: crate::tests::result_for(
                crate::tests::stream_spec(wirebench_model::spec::Direction::Forward, 1),
                Vec::new(),
            ),
        }
    }

    fn ratio_expectation(bound: f64) -> Expectation {
        Expectation {
            name: "sendfile helps".into(),
            test: None,
            figure: FigureName::ThroughputBps,
            numerator: vec![Level {
                factor: StudyFactor::Test(FactorName::SendPath),
                value: FactorValue::Name("sendfile".into()),
            }],
            denominator: Some(vec![Level {
                factor: StudyFactor::Test(FactorName::SendPath),
                value: FactorValue::Name("copy".into()),
            }]),
            conditions: vec![Condition {
                factor: StudyFactor::Testbed(TestbedFactor::Mtu),
                op: CompareOp::Ge,
                value: FactorValue::Number(9000),
            }],
            op: CompareOp::Gt,
            value: bound,
        }
    }

    #[test]
    fn ratio_is_evaluated_per_group_meeting_the_conditions() {
        let pts = vec![
            point(1500, "copy", 10.0),
            point(1500, "sendfile", 5.0),
            point(9000, "copy", 10.0),
            point(9000, "sendfile", 13.0),
            point(65520, "copy", 10.0),
            point(65520, "sendfile", 15.0),
        ];
        let o = evaluate(&ratio_expectation(1.2), &pts);
        assert_eq!(o.verdict, Verdict::Holds);
        assert_eq!(o.cases.len(), 2, "mtu 1500 is excluded by the condition");
        assert!((o.cases[0].value - 1.3).abs() < 1e-9);
        let o = evaluate(&ratio_expectation(1.4), &pts);
        assert_eq!(o.verdict, Verdict::DoesNotHold);
        assert_eq!(o.cases.iter().filter(|c| c.holds).count(), 1);
        let o = evaluate(&ratio_expectation(1.2), &pts[..2]);
        assert_eq!(o.verdict, Verdict::NoData);
    }

    #[test]
    fn pivot_rows_are_x_and_columns_the_variants() {
        let pts = vec![
            point(9000, "copy", 3.0),
            point(1500, "copy", 1.0),
            point(1500, "sendfile", 2.0),
            point(9000, "sendfile", 4.0),
            point(9000, "sendfile", 6.0),
        ];
        let p = pivot(
            &pts,
            "stream",
            StudyFactor::Testbed(TestbedFactor::Mtu),
            FigureName::ThroughputBps,
        );
        assert_eq!(
            p.rows,
            vec![FactorValue::Number(1500), FactorValue::Number(9000)]
        );
        assert_eq!(p.columns.len(), 2);
        assert_eq!(p.cells[0], vec![Some(1.0), Some(2.0)]);
        assert_eq!(
            p.cells[1],
            vec![Some(3.0), Some(5.0)],
            "median of the re-measurement"
        );
    }

    #[test]
    fn names_compare_only_for_equality_and_numbers_numerically() {
        let a = FactorValue::Name("0.5".into());
        assert!(compare(&a, CompareOp::Lt, &FactorValue::Number(1)));
        let n = FactorValue::Name("copy".into());
        assert!(!compare(&n, CompareOp::Lt, &FactorValue::Name("zz".into())));
        assert!(compare(
            &n,
            CompareOp::Ne,
            &FactorValue::Name("sendfile".into())
        ));
    }
}
