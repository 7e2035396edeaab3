//! `wirebench sweep TEST [TEST flags] FACTOR...`: a test measured over a grid of factor
//! values, each point a complete RunResult, the curves analysed.
//!
//! The plan ([`plan`]) checks every point before anything runs. Points run one after the
//! other through one [`Runner`] (so an embedded server is started once). Each point's
//! length adapts: it runs `--point-time` (0.5 s; longer when the previous point of the
//! same curve predicts too small a count) and, while it counted fewer than `--min-count` calls,
//! datagrams or transactions, runs again longer, up to `--max-point-time` (4 s); `-t` fixes
//! the length instead. After the grid, stream and UDP
//! message-size curves have their dip candidates re-measured once (with their two
//! neighbours), and every curve is analysed (`wirebench-report`'s sweep analysis).
//!
//! With `-o DIR` the sweep writes, each file atomically, `DIR/points/NNNN.json` as each
//! point completes (durably: fsynced), and `DIR/sweep.json` (the whole SweepResult so far,
//! status `running` until the end) and `DIR/points.csv` after the first point, then at most
//! every [`WHOLE_FILES_PERIOD`] and at the end (rewriting them whole at every point costs
//! more as the sweep grows). Ctrl-C ends the point under way (it is not kept) and the sweep,
//! keeping every completed point; `--resume DIR` reads `DIR/sweep.json` plus the newer
//! `DIR/points/` files and runs the points still missing, with the command line recorded
//! there.

pub mod estimate;
pub mod help;
pub mod plan;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use wirebench_analysis::sweep::{analyze, point_count, point_figure};
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{iso8601_utc, RunStatus};
use wirebench_model::study::Testbed;
use wirebench_model::sweep::{
    FactorName, PointRole, Setting, SweepPoint, SweepResult, SweepStatus, SWEEP_SCHEMA_VERSION,
};
use wirebench_net::runner::{failed_result, unix_ms, Quiet, Runner, RunnerConfig};
use wirebench_report::print::sweep as show;

use crate::client::runner_config;
use crate::output::{write_atomically, write_derived};
use crate::under_load;
use crate::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
use plan::{point_argv, point_spec, Plan, SweepOptions};

/// What a sweep reports as it goes: the points it measured and the re-measurements it adds
/// to the plan. The command prints lines and draws a bar; a study feeds its own bar and
/// files.
pub trait Observer {
    /// `by` more points than planned will be measured (re-measurements).
    fn grow(&mut self, by: usize);
    /// A point was measured and recorded; `total` is the number of points planned so far.
    fn point(&mut self, p: &SweepPoint, total: usize);
}

/// `wirebench sweep` (its factors, options and the flags a point takes are listed after
/// its help by [`crate::cli::command`]).
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// The test every point runs.
    #[arg(value_parser = ["stream", "rr", "crr", "udp"])]
    pub test: String,
    /// The test's own flags (as for the single test), the factors and the sweep's options.
    #[arg(
        trailing_var_arg = true,
        allow_hyphen_values = true,
        value_name = "ARGS"
    )]
    pub args: Vec<String>,
}

/// The sweep command's observer: a line per point, under a bar on a terminal.
struct Progress {
    bar: Option<ProgressBar>,
    human: bool,
}

impl Progress {
    fn new(o: &SweepOptions, total: usize) -> Progress {
        let human = !o.json && !o.csv;
        let bar = (human && std::io::stdout().is_terminal()).then(|| {
            let b = ProgressBar::new(total as u64);
            if let Ok(style) = ProgressStyle::with_template(
                "{bar:30} {pos}/{len} points, {elapsed} elapsed, ETA {eta}",
            ) {
                b.set_style(style);
            }
            b
        });
        Progress { bar, human }
    }

    /// A line before the points (on stderr when stdout carries JSON or CSV).
    fn say(&self, line: &str) {
        match &self.bar {
            Some(b) => b.println(line),
            None if self.human => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            None => eprintln!("{line}"),
        }
    }

    fn done(&self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }
}

impl Observer for Progress {
    fn grow(&mut self, by: usize) {
        if let Some(b) = &self.bar {
            b.inc_length(by as u64);
        }
    }

    fn point(&mut self, p: &SweepPoint, total: usize) {
        let line = show::point_line(p, total);
        match &self.bar {
            Some(b) => {
                b.println(line);
                b.inc(1);
            }
            None if self.human => {
                let mut out = std::io::stdout().lock();
                let _ = writeln!(out, "{line}");
                let _ = out.flush();
            }
            None => {}
        }
    }
}

/// How often a running sweep rewrites its whole `sweep.json` and `points.csv` (the point
/// files are written at every point).
pub const WHOLE_FILES_PERIOD: Duration = Duration::from_secs(2);

/// A sweep under way.
struct Sweeper<'a> {
    plan: Plan,
    /// The runner's configuration (under-load points start their own runners).
    cfg: RunnerConfig,
    runner: Runner,
    interrupt: Arc<AtomicBool>,
    result: SweepResult,
    observer: &'a mut dyn Observer,
    /// Recorded in every point's result (a study's testbed as read back).
    testbed: Option<Testbed>,
    /// Re-measurements planned after the grid.
    extra: usize,
    /// When `sweep.json` and `points.csv` were last written.
    whole_written: Option<Instant>,
    /// The last point measured: its settings, length (s) and count (calls, datagrams or
    /// transactions).
    last_length: Option<(Vec<Setting>, f64, u64)>,
}

impl Sweeper<'_> {
    /// Measure one point: adaptive length unless `-t` fixed it. `None` if interrupted.
    fn measure(&mut self, settings: &[Setting], role: PointRole) -> Option<SweepPoint> {
        let o = &self.plan.options;
        let argv = point_argv(&self.plan.test_cmd, &self.plan.test_args, settings);
        let mut secs = self.first_length(settings);
        loop {
            let mut args = argv.clone();
            if !o.fixed_time {
                args.extend(["-t".to_string(), format!("{secs}")]);
            }
            let mut result = match point_spec(&args) {
                Ok((spec, _, None)) => self.runner.run(&spec, &mut Quiet),
                Ok((spec, _, Some(load))) => {
                    under_load::measure(&self.cfg, &self.interrupt, &spec, load, &mut Quiet)
                }
                Err(msg) => failed_result(None, None, false, ErrorInfo::new(ErrorKind::Usage, msg)),
            };
            result.testbed = self.testbed.clone().map(Box::new);
            // Against this machine's limits when they are cached for this boot, as the
            // single test is (its physical context is drawn along the curve).
            crate::limits_cache::finish(&mut result);
            if result.status == RunStatus::Interrupted || self.interrupt.load(Ordering::Relaxed) {
                return None;
            }
            let completed = result.status == RunStatus::Completed;
            let count = point_count(&result).unwrap_or(0);
            let duration_ms = result.spec.as_ref().map_or(0, |s| s.common.duration_ms);
            if completed && !o.fixed_time && count < o.min_count && secs < o.max_point_time_s {
                let factor = (o.min_count as f64 / count.max(1) as f64).ceil().max(2.0);
                secs = (secs * factor).min(o.max_point_time_s);
                continue;
            }
            self.last_length = Some((settings.to_vec(), secs, count));
            return Some(SweepPoint {
                index: self.result.points.len() as u32,
                role,
                settings: settings.to_vec(),
                duration_ms,
                figure: if completed {
                    point_figure(&result)
                } else {
                    None
                },
                result,
            });
        }
    }

    /// The first length of a point (s): `--point-time`, or longer when the previous point
    /// lies on the same curve (same settings but the last, fastest-varying factor) and its
    /// count rate predicts fewer than `--min-count` in `--point-time`, so that a curve whose
    /// points need longer runs does not measure and discard a short probe at every point.
    /// Along the message size the prediction assumes the byte rate holds (the count rate
    /// falls as the size grows), the worst case for the count; a prediction that is too
    /// long only lengthens the point.
    fn first_length(&self, settings: &[Setting]) -> f64 {
        let o = &self.plan.options;
        let Some((prev, secs, count)) = &self.last_length else {
            return o.point_time_s;
        };
        let same_curve = prev.len() == settings.len()
            && prev.iter().zip(settings).rev().skip(1).all(|(a, b)| a == b);
        if !same_curve || o.fixed_time || *secs <= 0.0 {
            return o.point_time_s;
        }
        let mut per_s = *count as f64 / secs;
        if let (Some(a), Some(b)) = (prev.last(), settings.last()) {
            if let (FactorName::MsgSize, Some(from), Some(to)) =
                (a.factor, a.value.number(), b.value.number())
            {
                if to > from && from > 0 {
                    per_s *= from as f64 / to as f64;
                }
            }
        }
        if per_s <= 0.0 {
            return o.point_time_s;
        }
        // 10 % headroom, whole tenths of a second.
        let needed = (o.min_count as f64 / per_s * 1.1 * 10.0).ceil() / 10.0;
        needed.clamp(o.point_time_s, o.max_point_time_s.max(o.point_time_s))
    }

    /// Record a measured point: progress line, files.
    fn record(&mut self, p: SweepPoint) {
        let total = self.plan.points.len() + self.extra;
        self.result.points.push(p);
        self.write_dir(false);
        if let Some(p) = self.result.points.last() {
            self.observer.point(p, total);
        }
    }

    /// Write the output directory, if any (each file atomically): the newest point's file,
    /// durably (fsynced); `sweep.json` and `points.csv` when `end` (durably), after the
    /// first point and then at most every [`WHOLE_FILES_PERIOD`] (not fsynced: a power loss
    /// leaves an older but whole copy, and a resume also reads the point files).
    fn write_dir(&mut self, end: bool) {
        let Some(dir) = self.plan.options.out_dir.clone() else {
            return;
        };
        let mut problems = Vec::new();
        if let Some(p) = self.result.points.last() {
            let path = dir.join("points").join(format!("{:04}.json", p.index));
            let json = serde_json::to_string_pretty(p).unwrap_or_default();
            if let Err(e) = write_atomically(&path, json.as_bytes()) {
                problems.push(format!("{e:#}"));
            }
        }
        let due = self
            .whole_written
            .is_none_or(|t| t.elapsed() >= WHOLE_FILES_PERIOD);
        if !(end || due) {
            for p in problems {
                eprintln!("wirebench sweep: cannot write {}: {p}", dir.display());
            }
            return;
        }
        self.whole_written = Some(Instant::now());
        let whole_file = if end { write_atomically } else { write_derived };
        let json = serde_json::to_string_pretty(&self.result).unwrap_or_default();
        if let Err(e) = whole_file(&dir.join("sweep.json"), json.as_bytes()) {
            problems.push(format!("{e:#}"));
        }
        if let Err(e) = whole_file(&dir.join("points.csv"), show::csv(&self.result).as_bytes()) {
            problems.push(format!("{e:#}"));
        }
        for p in problems {
            eprintln!("wirebench sweep: cannot write {}: {p}", dir.display());
        }
    }

    /// Is a grid point with these settings already measured (resume)?
    fn done(&self, settings: &[Setting]) -> bool {
        self.result
            .points
            .iter()
            .any(|p| p.role == PointRole::Grid && p.settings == settings)
    }

    /// The grid; false if interrupted.
    fn run_grid(&mut self) -> bool {
        let planned: Vec<Vec<Setting>> = self
            .plan
            .points
            .iter()
            .map(|p| p.settings.clone())
            .collect();
        for s in planned {
            if self.done(&s) {
                continue;
            }
            match self.measure(&s, PointRole::Grid) {
                Some(p) => self.record(p),
                None => return false,
            }
        }
        true
    }

    /// Re-measure each dip candidate and its two neighbours once; false if interrupted.
    fn remeasure_dips(&mut self) -> bool {
        if !self.plan.options.remeasure
            || self
                .result
                .points
                .iter()
                .any(|p| p.role == PointRole::Remeasure)
        {
            return true;
        }
        let curves = analyze(&self.result);
        let mut todo: Vec<Vec<Setting>> = Vec::new();
        for c in &curves {
            let Some(t) = &c.throughput else { continue };
            for d in &t.dips.dips {
                for size in [d.left_size_bytes, d.size_bytes, d.right_size_bytes] {
                    let mut s: Vec<Setting> = self
                        .plan
                        .factors
                        .iter()
                        .map(|f| Setting {
                            factor: f.name,
                            value: if f.name == c.along {
                                wirebench_model::sweep::FactorValue::Number(size)
                            } else {
                                c.variant
                                    .iter()
                                    .find(|v| v.factor == f.name)
                                    .map(|v| v.value.clone())
                                    .unwrap_or(wirebench_model::sweep::FactorValue::Number(0))
                            },
                        })
                        .collect();
                    s.dedup();
                    if !todo.contains(&s) {
                        todo.push(s);
                    }
                }
            }
        }
        self.observer.grow(todo.len());
        self.extra = todo.len();
        for s in todo {
            match self.measure(&s, PointRole::Remeasure) {
                Some(p) => self.record(p),
                None => return false,
            }
        }
        true
    }
}

/// Read a previous sweep's document from `DIR/sweep.json`, with the points written to
/// `DIR/points/` after it (`sweep.json` is rewritten only every [`WHOLE_FILES_PERIOD`]),
/// taken in index order up to the first one missing.
pub fn load_previous(dir: &Path) -> Result<SweepResult, String> {
    let path = dir.join("sweep.json");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        format!(
            "--resume {}: cannot read {}: {e}",
            dir.display(),
            path.display()
        )
    })?;
    let mut doc: SweepResult = serde_json::from_str(&text).map_err(|e| {
        format!(
            "--resume {}: {} is not a sweep document: {e}",
            dir.display(),
            path.display()
        )
    })?;
    loop {
        let next = dir
            .join("points")
            .join(format!("{:04}.json", doc.points.len()));
        let Ok(text) = std::fs::read_to_string(&next) else {
            break;
        };
        match serde_json::from_str::<SweepPoint>(&text) {
            Ok(p) if p.index as usize == doc.points.len() => doc.points.push(p),
            _ => {
                return Err(format!(
                    "--resume {}: {} is not this sweep's next point",
                    dir.display(),
                    next.display()
                ))
            }
        }
    }
    Ok(doc)
}

/// Whether `dir` holds a sweep's files (`sweep.json`, or point files).
pub fn holds_sweep(dir: &Path) -> bool {
    dir.join("sweep.json").exists()
        || std::fs::read_dir(dir.join("points")).is_ok_and(|mut d| d.next().is_some())
}

/// Removes a sweep's files from `dir` (`--force`): `sweep.json`, `points.csv` and the point
/// files, so that none of them can be read as part of the new sweep.
pub fn clear_sweep(dir: &Path) -> std::io::Result<()> {
    for f in ["sweep.json", "points.csv"] {
        match std::fs::remove_file(dir.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match std::fs::remove_dir_all(dir.join("points")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Checks that a resumed sweep's points belong to it: each point's settings are in the
/// grid its recorded command plans, and it was measured after the sweep started (a point
/// file left by an earlier sweep in the directory is not adopted).
pub fn check_previous(prev: &SweepResult, plan: &Plan, dir: &Path) -> Result<(), String> {
    for p in &prev.points {
        let file = || dir.join("points").join(format!("{:04}.json", p.index));
        if !plan.points.iter().any(|g| g.settings == p.settings) {
            return Err(format!(
                "--resume {}: point {} ({}) has settings that are not in the recorded grid; \
                 the directory mixes sweeps (start afresh with -o DIR --force)",
                dir.display(),
                p.index,
                file().display()
            ));
        }
        if p.result.started_unix_ms < prev.started_unix_ms {
            return Err(format!(
                "--resume {}: point {} ({}) was measured before this sweep started; the \
                 directory mixes sweeps (start afresh with -o DIR --force)",
                dir.display(),
                p.index,
                file().display()
            ));
        }
    }
    Ok(())
}

/// The resume directory named by `--resume DIR`, and the other arguments.
fn take_resume(args: &[String]) -> Result<(Option<PathBuf>, Vec<String>), String> {
    let mut rest = Vec::new();
    let mut dir = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if a == "--resume" {
            dir = Some(it.next().ok_or("--resume needs a directory")?.into());
        } else if let Some(d) = a.strip_prefix("--resume=") {
            dir = Some(d.into());
        } else {
            rest.push(a.clone());
        }
    }
    Ok((dir, rest))
}

/// Print an error before anything ran; `--json` gets an invalid SweepResult.
fn refuse(json: bool, test: &str, command: Vec<String>, msg: &str) -> i32 {
    if json {
        let now = unix_ms();
        let r = SweepResult {
            schema_version: SWEEP_SCHEMA_VERSION,
            kind: "sweep".into(),
            software: wirebench_net::software(),
            test: plan::kind_of_cmd(test),
            command,
            factors: Vec::new(),
            started_unix_ms: now,
            started_utc: iso8601_utc(now),
            ended_unix_ms: now,
            status: SweepStatus::Invalid,
            error: Some(msg.to_string()),
            points: Vec::new(),
            analysis: Vec::new(),
        };
        println!("{}", serde_json::to_string_pretty(&r).unwrap_or_default());
    } else {
        eprintln!("wirebench sweep: {msg}");
    }
    EXIT_USAGE
}

/// `wirebench sweep TEST ARGS...`; returns the exit code.
pub fn run(test: &str, args: &[String]) -> i32 {
    let json = args.iter().any(|a| a == "--json");
    let mut command = vec!["wirebench".to_string(), "sweep".into(), test.to_string()];
    command.extend(args.iter().cloned());
    let (resume, args) = match take_resume(args) {
        Ok(x) => x,
        Err(e) => return refuse(json, test, command, &e),
    };
    let previous = match &resume {
        Some(dir) => match load_previous(dir) {
            Ok(p) => Some(p),
            Err(e) => return refuse(json, test, command, &e),
        },
        None => None,
    };
    // A resumed sweep runs the command it recorded, writing to the same directory.
    let (test, args, command) = match &previous {
        Some(p) if p.command.len() >= 3 => {
            let mut a: Vec<String> = p.command[3..].to_vec();
            // This invocation's output format applies to the resumed sweep.
            a.retain(|x| x != "--json" && x != "--csv");
            a.extend(
                args.iter()
                    .filter(|x| *x == "--json" || *x == "--csv")
                    .cloned(),
            );
            if let Some(dir) = &resume {
                a.extend(["-o".to_string(), dir.display().to_string()]);
            }
            (p.command[2].clone(), a, p.command.clone())
        }
        _ => (test.to_string(), args, command),
    };
    let plan = match plan::plan(&test, &args) {
        Ok(p) => p,
        Err(e) => return refuse(json, &test, command, &e),
    };
    let done = |s: &[Setting]| {
        previous.as_ref().is_some_and(|p| {
            p.points
                .iter()
                .any(|x| x.role == PointRole::Grid && x.settings == s)
        })
    };
    let todo: Vec<&plan::PlannedPoint> =
        plan.points.iter().filter(|p| !done(&p.settings)).collect();
    if plan.options.dry_run {
        print!("{}", estimate::dry_run_text(&plan, &todo));
        return EXIT_OK;
    }
    let said = estimate::line(&plan, &estimate::estimate(&plan, todo.len()));
    match (&previous, &plan.options.out_dir) {
        (Some(prev), Some(dir)) => {
            if let Err(e) = check_previous(prev, &plan, dir) {
                return refuse(json, &test, command, &e);
            }
        }
        (None, Some(dir)) if holds_sweep(dir) => {
            if !plan.options.force {
                return refuse(
                    json,
                    &test,
                    command,
                    &format!(
                        "-o {d}: it holds a sweep already; `wirebench sweep --resume {d}` \
                         continues it, --force replaces it",
                        d = dir.display()
                    ),
                );
            }
            if let Err(e) = clear_sweep(dir) {
                return refuse(json, &test, command, &format!("-o {}: {e}", dir.display()));
            }
        }
        _ => {}
    }
    if let Some(dir) = &plan.options.out_dir {
        // DIR is the user's choice; its `points/` must be this process's own directory, not
        // a link another user planted there.
        if let Err(e) = std::fs::create_dir_all(dir)
            .and_then(|()| wirebench_sys::safefile::create_own_dir(&dir.join("points")))
        {
            return refuse(json, &test, command, &format!("-o {}: {e}", dir.display()));
        }
    }
    let cfg = match runner_config_of(&plan) {
        Ok(c) => c,
        Err(e) => return refuse(json, &test, command, &e),
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let mut progress = Progress::new(&plan.options, plan.points.len());
    progress.say(&said);
    let (test_cmd, options) = (plan.test_cmd.clone(), plan.options.clone());
    // Where the sweep is saved and under which title: the history flags among the test
    // flags (--db, --no-save, --tag) and -T, which the points themselves ignore.
    let (save, title) = plan
        .points
        .first()
        .and_then(|p| point_spec(&p.argv).ok())
        .map(|(_, c, _)| (c.save, c.title))
        .unwrap_or_default();
    let result = execute(
        Execution {
            plan,
            cfg,
            interrupt,
            previous,
            command,
            testbed: None,
        },
        &mut progress,
    );
    progress.done();
    let code = finish(&result, &test_cmd, &options);
    // After the sweep is printed and written: a database that cannot take it costs a
    // warning, never the sweep.
    if !result.points.is_empty() {
        let e = crate::history::save::sweep_entry(&result, title, &save.tags);
        crate::history::save::save_entry(&save, &e, "the sweep");
    }
    code
}

/// The runner configuration of a plan's points (from its first point's flags).
pub fn runner_config_of(plan: &Plan) -> Result<RunnerConfig, String> {
    let first = plan
        .points
        .first()
        .map(|p| p.argv.clone())
        .unwrap_or_default();
    point_spec(&first).and_then(|(_, c, _)| runner_config(&c).map_err(|e| e.message))
}

/// A sweep to run: the checked plan and what it runs with.
pub struct Execution {
    /// The plan.
    pub plan: Plan,
    /// The runner's configuration (see [`runner_config_of`]).
    pub cfg: RunnerConfig,
    /// Set to end the sweep after the point under way (which is not kept).
    pub interrupt: Arc<AtomicBool>,
    /// A previous run of the same plan (resume): its grid points are not measured again.
    pub previous: Option<SweepResult>,
    /// The command line recorded in the result.
    pub command: Vec<String>,
    /// The testbed recorded in every point's result.
    pub testbed: Option<Testbed>,
}

/// Runs a sweep: the grid, then the dip re-measurements; writes `-o DIR` as points complete
/// and returns the SweepResult, analysed, with its status (`completed` or `interrupted`).
pub fn execute(x: Execution, observer: &mut dyn Observer) -> SweepResult {
    let now = unix_ms();
    let mut result = x.previous.unwrap_or_else(|| SweepResult {
        schema_version: SWEEP_SCHEMA_VERSION,
        kind: "sweep".into(),
        software: wirebench_net::software(),
        test: x.plan.kind,
        command: x.command,
        factors: x.plan.factors.clone(),
        started_unix_ms: now,
        started_utc: iso8601_utc(now),
        ended_unix_ms: now,
        status: SweepStatus::Running,
        error: None,
        points: Vec::new(),
        analysis: Vec::new(),
    });
    // Points interrupted last time are measured again.
    result
        .points
        .retain(|p| p.result.status != RunStatus::Interrupted);
    result.status = SweepStatus::Running;
    let mut sw = Sweeper {
        runner: Runner::new(x.cfg.clone(), Arc::clone(&x.interrupt)),
        cfg: x.cfg,
        plan: x.plan,
        interrupt: x.interrupt,
        result,
        observer,
        testbed: x.testbed,
        extra: 0,
        whole_written: None,
        last_length: None,
    };
    let finished = sw.run_grid() && sw.remeasure_dips();
    sw.result.status = if finished {
        SweepStatus::Completed
    } else {
        SweepStatus::Interrupted
    };
    sw.result.ended_unix_ms = unix_ms();
    sw.result.analysis = analyze(&sw.result);
    sw.write_dir(true);
    sw.result
}

/// Print the outcome; the exit code.
fn finish(r: &SweepResult, test_cmd: &str, o: &SweepOptions) -> i32 {
    let text = if o.json {
        format!("{}\n", serde_json::to_string_pretty(r).unwrap_or_default())
    } else if o.csv {
        show::csv(r)
    } else {
        let mut t = show::summary(r);
        if r.status == SweepStatus::Interrupted {
            t.push_str(&match &o.out_dir {
                Some(d) => format!(
                    "interrupted: {} point(s) kept in {}; `wirebench sweep {} --resume {}` continues\n",
                    r.points.len(),
                    d.display(),
                    test_cmd,
                    d.display()
                ),
                None => format!(
                    "interrupted: {} point(s) kept (give -o DIR to be able to resume)\n",
                    r.points.len()
                ),
            });
        }
        t
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    match r.status {
        SweepStatus::Interrupted => EXIT_INTERRUPTED,
        _ if !r.points.is_empty() && r.points.iter().all(|p| p.figure.is_none()) => EXIT_FAILED,
        _ => EXIT_OK,
    }
}
