//! A study's plan: each cell's testbed (a [`LabSpec`]) and each test's sweep command line,
//! checked by the sweep's own planner before anything is built.

use std::fmt::Write as _;
use std::path::Path;

use wirebench_analysis::study::{level_of, meets};
use wirebench_lab::named::{parse_offloads, parse_sysctl, Endpoint, LabSpec, NamedError};
use wirebench_model::study::{Level, Placement, StudyFactor, TestbedFactor};
use wirebench_model::sweep::FactorValue;
use wirebench_report::print::study::levels_text;

use super::file::{CellSpec, FileError, StudyFile, TestEntry};
use crate::sweep::plan::{plan as sweep_plan, Plan};

/// Estimated time to build a testbed, read it back and start its daemon, seconds.
const BUILD_ESTIMATE_S: f64 = 0.5;
/// Estimated time a point takes beyond its measured window (connection set-up, results
/// exchange), seconds.
const POINT_OVERHEAD_ESTIMATE_S: f64 = 0.15;

/// One round's sweep of a test in a cell.
#[derive(Debug, Clone)]
pub struct TestRun {
    /// Directory of the sweep, relative to the study directory.
    pub dir: String,
    /// The sweep's arguments after `wirebench sweep TEST`.
    pub argv: Vec<String>,
}

/// A test of a cell: its sweep, once per round.
#[derive(Debug)]
pub struct PlannedTest {
    /// The test (index into the file's tests).
    pub test: usize,
    /// Each round's sweep (`runs[0]` is round 1); they differ only in their directory.
    pub runs: Vec<TestRun>,
    /// The checked sweep plan (of round 1).
    pub plan: Plan,
}

/// The order a study measures its cells in: `(round, cell)`, round 1 of every cell, then
/// round 2 of every cell, ... — repetitions interleaved, so that a slow drift of the
/// machine (a neighbour's build, thermal state, where buffers land) spreads over every
/// cell instead of biasing the cells measured last.
pub fn run_order(cells: usize, repeat: u32) -> Vec<(u32, usize)> {
    (1..=repeat.max(1))
        .flat_map(|r| (0..cells).map(move |c| (r, c)))
        .collect()
}

/// A cell: its testbed and its tests.
#[derive(Debug)]
pub struct PlannedCell {
    /// Position.
    pub index: usize,
    /// From the file.
    pub spec: CellSpec,
    /// The CPU placement.
    pub placement: Placement,
    /// The testbed (its name is set when the study runs).
    pub lab: LabSpec,
    /// The tests.
    pub tests: Vec<PlannedTest>,
}

/// The whole plan.
#[derive(Debug)]
pub struct StudyPlan {
    /// The file.
    pub file: StudyFile,
    /// The cells.
    pub cells: Vec<PlannedCell>,
}

impl StudyPlan {
    /// Rounds: how many times every cell's points are measured.
    pub fn repeat(&self) -> u32 {
        self.file.options.repeat.max(1)
    }

    /// Points planned over all cells and rounds (before dip re-measurements).
    pub fn points(&self) -> usize {
        self.cells
            .iter()
            .flat_map(|c| &c.tests)
            .map(|t| t.plan.points.len())
            .sum::<usize>()
            * self.repeat() as usize
    }

    /// Estimated wall time, seconds: builds, each point's first measured length plus an
    /// overhead (adaptive points may run longer).
    pub fn estimate_s(&self) -> f64 {
        let per_point: f64 = self
            .cells
            .iter()
            .flat_map(|c| &c.tests)
            .map(|t| {
                let o = &t.plan.options;
                let secs = if o.fixed_time {
                    self.file.options.time_s.unwrap_or(o.point_time_s)
                } else {
                    o.point_time_s
                };
                t.plan.points.len() as f64 * (secs + POINT_OVERHEAD_ESTIMATE_S)
            })
            .sum();
        (per_point + self.cells.len() as f64 * BUILD_ESTIMATE_S) * f64::from(self.repeat())
    }
}

/// The testbed factor's value at a cell.
fn tb(levels: &[Level], f: TestbedFactor) -> Option<&FactorValue> {
    level_of(levels, StudyFactor::Testbed(f))
}

/// The cell's placement.
pub fn placement_of(levels: &[Level]) -> Placement {
    match tb(levels, TestbedFactor::Placement) {
        Some(FactorValue::Name(n)) => Placement::ALL
            .into_iter()
            .find(|p| p.key() == n)
            .unwrap_or(Placement::Unpinned),
        _ => Placement::Unpinned,
    }
}

/// The lab a cell's testbed levels ask for (name left empty).
pub fn lab_spec(levels: &[Level]) -> Result<LabSpec, NamedError> {
    let mut s = LabSpec::default();
    let text = |v: &FactorValue| v.arg();
    for l in levels {
        let StudyFactor::Testbed(f) = l.factor else {
            continue;
        };
        let v = &l.value;
        match f {
            TestbedFactor::Mtu => s.mtu = v.number().unwrap_or(1500) as u32,
            TestbedFactor::Offload => s.offloads.extend(parse_offloads(&text(v))?),
            TestbedFactor::Rate => s.rate_bps = v.number(),
            TestbedFactor::Delay => s.impair.delay_ns = v.number().unwrap_or(0),
            TestbedFactor::Jitter => s.impair.jitter_ns = v.number().unwrap_or(0),
            TestbedFactor::Loss => s.impair.loss_pct = text(v).parse().unwrap_or(0.0),
            TestbedFactor::Reorder => s.impair.reorder_pct = text(v).parse().unwrap_or(0.0),
            TestbedFactor::Duplicate => s.impair.duplicate_pct = text(v).parse().unwrap_or(0.0),
            TestbedFactor::Cc => s.cc = Some(text(v)),
            TestbedFactor::Sysctl => s.sysctls.push(parse_sysctl(&text(v))?),
            TestbedFactor::Placement => {}
        }
    }
    match placement_of(levels) {
        Placement::Uniprocessor => {
            // CPU 0 takes the receive processing of both veth ends too.
            s.rps_cpus = Some("1".into());
            s.xps_cpus = Some("1".into());
        }
        Placement::DifferentCpus => {
            // Each host's receive processing on its own CPU, as on two machines: the
            // client's veth on CPU 0, the server's on CPU 1.
            s.rps_cpus = Some("1".into());
            s.server_rps_cpus = Some("2".into());
        }
        _ => {}
    }
    Ok(s)
}

/// Test flags a placement adds (`-A CLIENT,SERVER`).
fn placement_args(p: Placement) -> Vec<String> {
    match p {
        Placement::Unpinned => Vec::new(),
        Placement::SameCpu | Placement::Uniprocessor => vec!["-A".into(), "0,0".into()],
        Placement::DifferentCpus => vec!["-A".into(), "0,1".into()],
    }
}

/// The sweep arguments of test `t` in `cell`: the test's flags, the cell's, the matching
/// rules', the placement's, the server, the study's options, the factors and the output
/// directory.
pub fn sweep_argv(file: &StudyFile, cell: &CellSpec, t: &TestEntry, dir: &Path) -> Vec<String> {
    let mut a = t.args.clone();
    a.extend(cell.args.iter().cloned());
    for r in &file.rules {
        if r.test.as_ref().is_none_or(|l| *l == t.label)
            && r.when.iter().all(|c| meets(&cell.levels, c))
        {
            a.extend(r.args.iter().cloned());
        }
    }
    a.extend(placement_args(placement_of(&cell.levels)));
    a.extend(["-H".into(), Endpoint::Server.ipv4().to_string()]);
    let o = &file.options;
    let own_time = a
        .iter()
        .any(|x| x == "-t" || x == "--duration" || x.starts_with("--duration="));
    if let (Some(t), false) = (o.time_s, own_time) {
        a.extend(["-t".into(), t.to_string()]);
    }
    if let Some(v) = o.point_time_s {
        a.extend(["--point-time".into(), v.to_string()]);
    }
    if let Some(v) = o.max_point_time_s {
        a.extend(["--max-point-time".into(), v.to_string()]);
    }
    if let Some(v) = o.min_count {
        a.extend(["--min-count".into(), v.to_string()]);
    }
    if !o.remeasure {
        a.push("--no-remeasure".into());
    }
    a.extend(["--perturb".into(), o.perturb_bytes.to_string()]);
    for (f, v) in &t.factors {
        a.extend([f.flag().to_string(), v.clone()]);
    }
    if t.factors.is_empty() {
        a.push("--single-point".into());
    }
    a.extend(["-o".into(), dir.display().to_string()]);
    a
}

/// The directory of test `t` of cell `i` in round `round` of `repeat`, relative to the study
/// directory (`cells/0003-stream`; `cells/0003-stream-r2` when the study repeats).
pub fn test_dir(i: usize, t: &TestEntry, round: u32, repeat: u32) -> String {
    let label: String = t
        .label
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if repeat > 1 {
        format!("cells/{i:04}-{label}-r{round}")
    } else {
        format!("cells/{i:04}-{label}")
    }
}

/// Plans every cell and test of `file`, writing sweeps under `out` (only named here).
pub fn plan(file: StudyFile, out: &Path, cpus: u32) -> Result<StudyPlan, FileError> {
    let mut cells = Vec::new();
    for (i, c) in file.cells.iter().enumerate() {
        let err = |m: String| FileError {
            file: file.path.clone(),
            line: 0,
            key: format!("cell {i} ({})", levels_text(&c.levels)),
            message: m,
        };
        let placement = placement_of(&c.levels);
        if placement == Placement::DifferentCpus && cpus < 2 {
            return Err(err(format!(
                "placement different_cpus needs 2 CPUs; this machine has {cpus}"
            )));
        }
        let mut lab = lab_spec(&c.levels).map_err(|e| err(e.to_string()))?;
        lab.name = "check".into();
        lab.validate().map_err(|e| err(e.to_string()))?;
        let mut tests = Vec::new();
        for (ti, t) in file.tests.iter().enumerate() {
            if let Some(only) = &t.cells {
                if !c.label.as_ref().is_some_and(|l| only.contains(l)) {
                    continue;
                }
            }
            let repeat = file.options.repeat.max(1);
            let runs: Vec<TestRun> = (1..=repeat)
                .map(|r| {
                    let dir = test_dir(i, t, r, repeat);
                    let argv = sweep_argv(&file, c, t, &out.join(&dir));
                    TestRun { dir, argv }
                })
                .collect();
            let plan = sweep_plan(&t.command, &runs[0].argv).map_err(|m| FileError {
                file: file.path.clone(),
                line: t.line,
                key: format!(
                    "test {:?} in cell {i} ({})",
                    t.label,
                    levels_text(&c.levels)
                ),
                message: m,
            })?;
            tests.push(PlannedTest {
                test: ti,
                runs,
                plan,
            });
        }
        cells.push(PlannedCell {
            index: i,
            spec: c.clone(),
            placement,
            lab,
            tests,
        });
    }
    Ok(StudyPlan { file, cells })
}

/// The plan in words (`study run --dry-run`).
pub fn plan_text(p: &StudyPlan) -> String {
    let mut out = format!("study: {}\n", wirebench_model::text::escape(&p.file.title));
    if let Some(s) = &p.file.seed {
        let _ = writeln!(out, "mirrors: {}", wirebench_model::text::escape(s));
    }
    let _ = writeln!(
        out,
        "{} cell(s), {} test(s), {} point(s){}, about {:.0} s (adaptive points may run longer)",
        p.cells.len(),
        p.file.tests.len(),
        p.points(),
        if p.repeat() > 1 {
            format!(
                " ({} round(s), each cell built and measured once per round)",
                p.repeat()
            )
        } else {
            String::new()
        },
        p.estimate_s()
    );
    for c in &p.cells {
        let _ = writeln!(
            out,
            "cell {:>3}: {}{}",
            c.index,
            c.spec
                .label
                .as_deref()
                .map(|l| format!("{}: ", wirebench_model::text::escape(l)))
                .unwrap_or_default(),
            levels_text(&c.spec.levels)
        );
        for t in &c.tests {
            let entry = &p.file.tests[t.test];
            let shown: Vec<String> = t.runs[0]
                .argv
                .iter()
                .take_while(|a| *a != "-o")
                .map(|a| wirebench_model::text::escape(a))
                .collect();
            let _ = writeln!(
                out,
                "    {} ({} point(s){}): wirebench sweep {} {}",
                wirebench_model::text::escape(&entry.label),
                t.plan.points.len(),
                if p.repeat() > 1 { " per round" } else { "" },
                entry.command,
                shown.join(" ")
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Rounds are interleaved: every cell's round 1 before any cell's round 2.
    #[test]
    fn rounds_are_interleaved_across_cells() {
        assert_eq!(
            run_order(3, 2),
            vec![(1, 0), (1, 1), (1, 2), (2, 0), (2, 1), (2, 2)]
        );
        assert_eq!(run_order(2, 1), vec![(1, 0), (1, 1)]);
        assert_eq!(run_order(2, 0), vec![(1, 0), (1, 1)], "at least one round");
        // No cell is measured twice in a row when there are two cells or more.
        let o = run_order(4, 3);
        assert!(o.windows(2).all(|w| w[0].1 != w[1].1));
    }
}
