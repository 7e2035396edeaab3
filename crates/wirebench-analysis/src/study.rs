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
//! `client_copy_pct` etc. are a profile category's share of the end's sampled CPU time (idle
//! included); `client_copy_busy_pct` / `server_copy_busy_pct` are copy's share of the busy
//! samples (idle left out: `copy / (100 - idle)`), what the seed's fig. 5 breaks down;
//! `server_memory_busy_pct` / `server_interrupts_busy_pct` are memory management's and
//! interrupts' shares of the server's busy samples, the same way.
//! `server_mapped_pct` is the share of the server's zero-copy-received payload that was
//! mapped rather than copied (`TCP_ZEROCOPY_RECEIVE`'s own counts).
//!
//! # Expectations
//!
//! The points of the expectation's test(s) that meet its conditions are grouped by every
//! level except the factors its selectors name; in each group the numerator's point (the one
//! whose levels include every numerator level) and the denominator's are looked up, and
//! `numerator / denominator OP value` (or `numerator OP value`) is evaluated on the medians.
//! A level measured more than once (a study's repetitions, `repeat = N`, and re-measured
//! points) contributes its median, with its spread (min–max). A ratio whose two sides were
//! measured in the same rounds (two or more) is judged on its paired ratios: each round's
//! numerator over the same round's denominator (each side's median over its points of the
//! round), their median the compared value and their range its spread. The rounds
//! interleave the cells, so a drift of the machine moves both sides of a round alike and the
//! pairing cancels it, as a side-by-side benchmark pairs its interleaved runs. Otherwise
//! the compared value is the medians' ratio and its spread the numerator's range over the
//! denominator's (`num.min / den.max` to `num.max / den.min`: the error bars of the two
//! medians overlap when it straddles 1), or, without a denominator, the numerator's median
//! and range. A group whose bound lies within the spread is inconclusive — its rounds do
//! not agree on the side of the bound — whichever side the median is on. The expectation does not
//! hold when a group misses the bound outside its spread, is inconclusive when no group
//! fails and one is inconclusive, holds when every group holds, and has no data when no
//! group has both points.

use wirebench_model::profile::ProfileCategory;
use wirebench_model::result::RunResult;
use wirebench_model::side::HostRole;
use wirebench_model::study::{
    CompareOp, Condition, Expectation, ExpectationCase, ExpectationOutcome, FigureName,
    FigureValue, Level, Spread, StudyFactor, StudyPoint, Verdict,
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
    for (host, fig) in [
        (HostRole::Client, FigureName::ClientCopyBusyPct),
        (HostRole::Server, FigureName::ServerCopyBusyPct),
    ] {
        push(fig, busy_share(r, host, ProfileCategory::Copy));
    }
    push(
        FigureName::ServerMemoryBusyPct,
        busy_share(r, HostRole::Server, ProfileCategory::MemoryManagement),
    );
    push(
        FigureName::ServerInterruptsBusyPct,
        busy_share(r, HostRole::Server, ProfileCategory::Interrupts),
    );
    push(FigureName::ServerMappedPct, mapped_pct(r, HostRole::Server));
    out
}

/// The share of an end's `TCP_ZEROCOPY_RECEIVE` payload that was mapped, percent: bytes
/// mapped over bytes mapped and copied, summed over the runs and that end's receiving flows
/// on the zerocopy path; `None` without any.
fn mapped_pct(r: &RunResult, host: HostRole) -> Option<f64> {
    let (mapped, copied) = r
        .runs
        .iter()
        .filter_map(|run| match host {
            HostRole::Server => run.server.as_ref(),
            HostRole::Client => run.client.as_ref(),
        })
        .filter_map(|side| side.stream())
        .flat_map(|s| s.flows.iter())
        .filter(|f| {
            f.path
                == wirebench_model::side::PathUsed::Recv(wirebench_model::spec::RecvPath::Zerocopy)
        })
        .filter_map(|f| f.zerocopy.as_ref())
        .fold((0u64, 0u64), |(m, c), z| {
            (
                m.saturating_add(z.bytes_mapped),
                c.saturating_add(z.bytes_copied),
            )
        });
    let all = mapped.saturating_add(copied);
    (all > 0).then(|| mapped as f64 / all as f64 * 100.0)
}

/// A category's share of an end's busy profiled CPU time (every category but idle),
/// percent, the mean over the runs whose profile has busy samples.
fn busy_share(r: &RunResult, host: HostRole, cat: ProfileCategory) -> Option<f64> {
    let v: Vec<f64> = r
        .runs
        .iter()
        .filter_map(|run| run.summary.as_ref())
        .flat_map(|s| s.profiles.iter())
        .filter(|e| e.host == host)
        .filter_map(|e| {
            let pct = |c: ProfileCategory| {
                e.categories
                    .iter()
                    .find(|x| x.category == c)
                    .map_or(0.0, |x| x.pct)
            };
            let busy = 100.0 - pct(ProfileCategory::Idle);
            (busy > 0.0).then(|| pct(cat) / busy * 100.0)
        })
        .collect();
    (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
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

/// The median, range and count of the points' `figure` among `points`.
fn spread_of<'a>(
    points: impl Iterator<Item = &'a StudyPoint>,
    figure: FigureName,
) -> Option<Spread> {
    spread(points.filter_map(|p| figure_of(p, figure)).collect())
}

/// The median, range and count of `v`; `None` when empty.
fn spread(mut v: Vec<f64>) -> Option<Spread> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(Spread {
        median: if n % 2 == 1 {
            v[n / 2]
        } else {
            (v[n / 2 - 1] + v[n / 2]) / 2.0
        },
        min: v[0],
        max: v[n - 1],
        count: n as u32,
    })
}

/// Each round's ratio of `figure` between the `num` and `den` points measured in that round
/// (each side's median over its points of the round: a re-measured point adds to its
/// round), over the rounds both sides have; their median, range and count, when at least
/// two rounds pair and every denominator is positive. The rounds of a study interleave its
/// cells, so a drift of the machine moves both sides of a round alike, and a paired ratio
/// cancels it where the medians' ratio with its cross range (the numerator's best round
/// over the denominator's worst) does not.
fn paired_ratios<'a>(
    num: impl Iterator<Item = &'a StudyPoint>,
    den: impl Iterator<Item = &'a StudyPoint>,
    figure: FigureName,
) -> Option<Spread> {
    let (n, d) = (round_medians(num, figure), round_medians(den, figure));
    let ratios: Vec<f64> = n
        .iter()
        .filter_map(|(r, a)| d.get(r).map(|b| (*a, *b)))
        .map(|(a, b)| if b > 0.0 && a >= 0.0 { a / b } else { f64::NAN })
        .collect();
    if ratios.len() < 2 || ratios.iter().any(|r| !r.is_finite()) {
        return None;
    }
    spread(ratios)
}

/// Each round's median of `figure` over `points`, by round.
fn round_medians<'a>(
    points: impl Iterator<Item = &'a StudyPoint>,
    figure: FigureName,
) -> std::collections::BTreeMap<u32, f64> {
    let mut by_round: std::collections::BTreeMap<u32, Vec<&'a StudyPoint>> = Default::default();
    for p in points {
        by_round.entry(p.round).or_default().push(p);
    }
    by_round
        .into_iter()
        .filter_map(|(r, v)| spread_of(v.into_iter(), figure).map(|s| (r, s.median)))
        .collect()
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

/// The median of `figure` over the points of `test` in cell `cell` (every round).
pub fn cell_figure(
    points: &[StudyPoint],
    cell: u32,
    test: &str,
    figure: FigureName,
) -> Option<f64> {
    cell_spread(points, cell, test, figure).map(|s| s.median)
}

/// The median and range of `figure` over the points of `test` in cell `cell` (every
/// round).
pub fn cell_spread(
    points: &[StudyPoint],
    cell: u32,
    test: &str,
    figure: FigureName,
) -> Option<Spread> {
    spread_of(
        points.iter().filter(|p| p.cell == cell && p.test == test),
        figure,
    )
}

/// A group's verdict: `value` (the median) judged against `op bound`, inconclusive when
/// the bound lies within `lo..=hi` (a spread: more than one point, not all equal).
pub fn judge(value: f64, lo: f64, hi: f64, op: CompareOp, bound: f64) -> Verdict {
    if lo < hi && lo <= bound && bound <= hi {
        Verdict::Inconclusive
    } else if compare_f64(value, op, bound) {
        Verdict::Holds
    } else {
        Verdict::DoesNotHold
    }
}

/// The whole expectation's verdict from its groups'.
fn overall(cases: &[ExpectationCase]) -> Verdict {
    if cases.is_empty() {
        Verdict::NoData
    } else if cases.iter().any(|c| c.verdict == Verdict::DoesNotHold) {
        Verdict::DoesNotHold
    } else if cases.iter().any(|c| c.verdict == Verdict::Inconclusive) {
        Verdict::Inconclusive
    } else {
        Verdict::Holds
    }
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
        let Some(num) = spread_of(
            members().filter(|p| selects(&p.levels, &e.numerator)),
            e.figure,
        ) else {
            continue;
        };
        let mut paired_rounds = None;
        let (den, value, lo, hi) = match &e.denominator {
            Some(d) => match spread_of(members().filter(|p| selects(&p.levels, d)), e.figure) {
                Some(den) if den.median != 0.0 && den.min > 0.0 && num.min >= 0.0 => {
                    let ratios = paired_ratios(
                        members().filter(|p| selects(&p.levels, &e.numerator)),
                        members().filter(|p| selects(&p.levels, d)),
                        e.figure,
                    );
                    match ratios {
                        Some(r) => {
                            paired_rounds = Some(r.count);
                            (Some(den), r.median, r.min, r.max)
                        }
                        None => (
                            Some(den),
                            num.median / den.median,
                            num.min / den.max,
                            num.max / den.min,
                        ),
                    }
                }
                // A figure that can be zero or negative: the ratio's range is not bounded
                // by the ends' ranges; the medians' ratio alone.
                Some(den) if den.median != 0.0 => {
                    let v = num.median / den.median;
                    (Some(den), v, v, v)
                }
                _ => continue,
            },
            None => (None, num.median, num.min, num.max),
        };
        cases.push(ExpectationCase {
            group: g.1,
            numerator: num.median,
            denominator: den.map(|d| d.median),
            numerator_spread: num,
            denominator_spread: den,
            value,
            value_min: lo,
            value_max: hi,
            paired_rounds,
            verdict: judge(value, lo, hi, e.op, e.value),
        });
    }
    ExpectationOutcome {
        expectation: e.clone(),
        verdict: overall(&cases),
        cases,
    }
}

/// A table: rows are the x factor's values, columns the variants (every other level that
/// varies among the test's points), each cell the median of the figure with its range.
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
    /// `cells[row][column]`: median, range and count of the points there.
    pub cells: Vec<Vec<Option<Spread>>>,
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
                    spread_of(
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
            round: 1,
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
        assert_eq!(
            o.cases
                .iter()
                .filter(|c| c.verdict == Verdict::Holds)
                .count(),
            1
        );
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
        let medians = |row: &[Option<Spread>]| -> Vec<Option<f64>> {
            row.iter().map(|c| c.map(|s| s.median)).collect()
        };
        assert_eq!(medians(&p.cells[0]), vec![Some(1.0), Some(2.0)]);
        assert_eq!(
            medians(&p.cells[1]),
            vec![Some(3.0), Some(5.0)],
            "median of the re-measurement"
        );
        let s = p.cells[1][1].unwrap();
        assert_eq!((s.min, s.max, s.count), (4.0, 6.0, 2));
        assert_eq!(p.cells[0][0].unwrap().count, 1);
    }

    /// Three rounds of a 2-level ratio: judged on the medians' ratio; a bound inside the
    /// range the spreads allow (num.min/den.max .. num.max/den.min) is inconclusive, one
    /// outside it holds or fails by the median.
    #[test]
    fn a_bound_within_the_spread_is_inconclusive() {
        let pts = vec![
            point(9000, "copy", 10.0),
            point(9000, "copy", 11.0),
            point(9000, "copy", 12.0),
            point(9000, "sendfile", 12.0),
            point(9000, "sendfile", 15.0),
            point(9000, "sendfile", 16.0),
        ];
        // Medians 15 / 11; range 12/12 = 1.0 .. 16/10 = 1.6.
        let o = evaluate(&ratio_expectation(1.2), &pts);
        let c = &o.cases[0];
        assert!((c.value - 15.0 / 11.0).abs() < 1e-12);
        assert!((c.value_min - 1.0).abs() < 1e-12 && (c.value_max - 1.6).abs() < 1e-12);
        assert_eq!(c.numerator_spread.count, 3);
        assert_eq!(
            c.verdict,
            Verdict::Inconclusive,
            "median holds, 1.2 is in 1.0..1.6"
        );
        assert_eq!(o.verdict, Verdict::Inconclusive);
        // The median misses 1.5, but 1.5 is within the spread too.
        assert_eq!(
            evaluate(&ratio_expectation(1.5), &pts).verdict,
            Verdict::Inconclusive
        );
        // Outside the spread: decided by the median.
        assert_eq!(
            evaluate(&ratio_expectation(0.9), &pts).verdict,
            Verdict::Holds
        );
        assert_eq!(
            evaluate(&ratio_expectation(1.7), &pts).verdict,
            Verdict::DoesNotHold
        );
        // One failing group outweighs an inconclusive one.
        let mut more = pts.clone();
        more.extend([point(65520, "copy", 20.0), point(65520, "sendfile", 10.0)]);
        let o = evaluate(&ratio_expectation(1.2), &more);
        assert_eq!(o.cases.len(), 2);
        assert_eq!(o.verdict, Verdict::DoesNotHold);
        // A single point per level has no spread: a bound equal to it is judged, not
        // inconclusive.
        let single = vec![point(9000, "copy", 10.0), point(9000, "sendfile", 12.0)];
        assert_eq!(
            evaluate(&ratio_expectation(1.2), &single).verdict,
            Verdict::DoesNotHold
        );
        // Without a denominator the spread is the figure's own range.
        let mut plain = ratio_expectation(14.0);
        plain.denominator = None;
        let o = evaluate(&plain, &pts);
        assert_eq!(o.cases.len(), 1);
        assert_eq!((o.cases[0].value, o.cases[0].value_min), (15.0, 12.0));
        assert_eq!(o.verdict, Verdict::Inconclusive, "14 is within 12..16");
    }

    /// Three rounds in which the machine drifted (round 2 ran at half the speed of round 1
    /// on both sides): the medians' cross range straddles the bound, the paired ratios (one
    /// per round) do not.
    #[test]
    fn a_ratio_measured_in_the_same_rounds_is_judged_on_its_paired_ratios() {
        let at = |round: u32, path: &str, bps: f64| {
            let mut p = point(9000, path, bps);
            p.round = round;
            p
        };
        let pts = vec![
            at(1, "copy", 20.0),
            at(1, "sendfile", 30.0),
            at(2, "copy", 10.0),
            at(2, "sendfile", 14.0),
            at(3, "copy", 16.0),
            at(3, "sendfile", 22.0),
        ];
        let o = evaluate(&ratio_expectation(1.2), &pts);
        let c = &o.cases[0];
        // Per round: 1.5, 1.4, 1.375; the cross range would be 14/20 = 0.7 .. 30/10 = 3.0.
        assert_eq!(c.paired_rounds, Some(3));
        assert!((c.value - 1.4).abs() < 1e-12, "{}", c.value);
        assert!((c.value_min - 1.375).abs() < 1e-12 && (c.value_max - 1.5).abs() < 1e-12);
        assert_eq!(c.verdict, Verdict::Holds);
        // The sides' own medians are still reported as they are.
        assert_eq!((c.numerator, c.denominator), (22.0, Some(16.0)));
        // A re-measured point adds to its round: the round's median of the side.
        let mut more = pts.clone();
        more.push(at(2, "sendfile", 16.0));
        let c = &evaluate(&ratio_expectation(1.2), &more).cases[0];
        assert!((c.value_min - 1.375).abs() < 1e-12 && (c.value_max - 1.5).abs() < 1e-12);
        // Only one round in common: not paired, the medians' ratio and cross range.
        let unpaired = vec![
            at(1, "copy", 20.0),
            at(1, "sendfile", 30.0),
            at(2, "copy", 10.0),
            at(3, "sendfile", 14.0),
        ];
        let c = &evaluate(&ratio_expectation(1.2), &unpaired).cases[0];
        assert_eq!(c.paired_rounds, None);
        assert!((c.value - 22.0 / 15.0).abs() < 1e-12);
        assert_eq!(c.verdict, Verdict::Inconclusive, "{c:?}");
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
