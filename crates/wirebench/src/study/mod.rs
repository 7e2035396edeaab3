//! `wirebench study run FILE.toml [-o DIR]`, `study run --resume DIR`, `study show DIR`:
//! tests measured over testbed cells built on this machine (see `studies/README.md`).
//!
//! The file is parsed and every cell's every test planned (by the sweep's own planner)
//! before anything is built ([`file`], [`plan`]); [`exec`] builds each cell's testbed,
//! starts a daemon in its server namespace, runs each test's sweep from the client
//! namespace, and tears the cell down. Completed points survive Ctrl-C, errors and a killed
//! run: `--resume DIR` measures only what is missing.

pub mod all;
pub mod exec;
mod expect;
pub mod file;
mod levels;
pub mod plan;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use clap::{Args, Subcommand};
use wirebench_analysis::study::{evaluate, pivot};
use wirebench_lab::named::LabManager;
use wirebench_model::study::{
    FigureName, StudyFactor, StudyManifest, StudyPoint, StudyStatus, Verdict,
};
use wirebench_report::print::study as show;
use wirebench_report::study_page::StudyTable;

use crate::{EXIT_FAILED, EXIT_INTERRUPTED, EXIT_OK, EXIT_USAGE};
use exec::{new_manifest, study_point, Runner, Shared};
use file::StudyFile;
use plan::StudyPlan;

/// Exit code: a study ran, and one of its expectations does not hold.
pub const EXIT_EXPECTATION: i32 = 5;

/// Prefix of the labs studies build (`st-PID`).
const LAB_PREFIX: &str = "st-";

/// `wirebench study`.
#[derive(Debug, Args)]
pub struct StudyArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: StudyCommand,
}

/// The study subcommands.
#[derive(Debug, Subcommand)]
pub enum StudyCommand {
    /// Run a study file (or continue one with --resume DIR).
    Run(RunArgs),
    /// Print a study directory's tables and expectations.
    Show(ShowArgs),
}

/// `wirebench study run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The study file (TOML); not with --resume or --all.
    #[arg(required_unless_present_any = ["resume", "all"], conflicts_with_all = ["resume", "all"])]
    pub file: Option<PathBuf>,
    /// Output directory (default `study-YYYYMMDD-HHMMSS`; with --all, the parent of one
    /// directory per study, default `studies-YYYYMMDD-HHMMSS`).
    #[arg(short, long, value_name = "DIR", conflicts_with = "resume")]
    pub output: Option<PathBuf>,
    /// Continue the study in DIR: measure only the points it lacks.
    #[arg(long, value_name = "DIR", conflicts_with = "all")]
    pub resume: Option<PathBuf>,
    /// Run every shipped study (the *.toml files of the studies directory), then print the
    /// claims table: each seed claim, this machine's result and its verdict.
    #[arg(long)]
    pub all: bool,
    /// The shipped studies' directory for --all (default: $WIREBENCH_STUDIES, then
    /// PREFIX/share/wirebench/studies beside the binary, the source checkout's studies/,
    /// ./studies).
    #[arg(long, value_name = "DIR", requires = "all")]
    pub studies_dir: Option<PathBuf>,
    /// Replace a study already in the output directory (its manifest, results and cells).
    #[arg(long, conflicts_with = "resume")]
    pub force: bool,
    /// Measure every cell's points N times (rounds interleaved across the cells), overriding
    /// the file's `repeat`.
    #[arg(long, value_name = "N", conflicts_with = "resume",
          value_parser = clap::value_parser!(u32).range(1..=file::MAX_REPEAT as i64))]
    pub repeat: Option<u32>,
    /// Check the file and print the plan (cells, points, estimated time); build nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the manifest as JSON at the end instead of the tables.
    #[arg(long)]
    pub json: bool,
    /// Saving the study (its manifest and points) to the results history.
    #[command(flatten)]
    pub save: crate::history::SaveArgs,
}

/// `wirebench study show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A study's output directory.
    pub dir: PathBuf,
    /// Print the manifest (expectations evaluated) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Entry point; the exit code.
pub fn run(a: StudyArgs) -> i32 {
    match a.command {
        StudyCommand::Run(r) => run_study(r),
        StudyCommand::Show(s) => show_study(&s),
    }
}

fn read_manifest(dir: &Path) -> Result<StudyManifest, String> {
    let path = dir.join("manifest.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let m: StudyManifest = serde_json::from_str(&text)
        .map_err(|e| format!("{}: not a study manifest: {e}", path.display()))?;
    if m.schema_version != wirebench_model::study::STUDY_SCHEMA_VERSION {
        return Err(format!(
            "{}: study schema version {} is not one this wirebench reads ({})",
            path.display(),
            m.schema_version,
            wirebench_model::study::STUDY_SCHEMA_VERSION
        ));
    }
    Ok(m)
}

pub(crate) fn default_dir() -> PathBuf {
    let utc = wirebench_model::result::iso8601_utc(wirebench_net::runner::unix_ms());
    // 2026-11-25T01:40:00.123Z -> study-20261125-014000
    let digits: String = utc.chars().filter(char::is_ascii_digit).take(14).collect();
    PathBuf::from(format!(
        "study-{}-{}",
        &digits[..8.min(digits.len())],
        &digits[8.min(digits.len())..]
    ))
}

/// Points already measured in the study directory (each cell's sweep files).
fn measured_points(dir: &Path, plan: &StudyPlan) -> Vec<StudyPoint> {
    let mut out = Vec::new();
    for (round, i) in plan::run_order(plan.cells.len(), plan.repeat()) {
        let c = &plan.cells[i];
        for t in &c.tests {
            let run = &t.runs[(round - 1) as usize];
            let Ok(s) = crate::sweep::load_previous(&dir.join(&run.dir)) else {
                continue;
            };
            let entry = &plan.file.tests[t.test];
            let declared: Vec<_> = entry.factors.iter().map(|(f, _)| *f).collect();
            for p in &s.points {
                if p.result.status != wirebench_model::result::RunStatus::Interrupted {
                    out.push(study_point(
                        c.index as u32,
                        round,
                        &entry.label,
                        &c.spec.levels,
                        &declared,
                        p,
                    ));
                }
            }
        }
    }
    out
}

/// Removes a study's files from `dir` (`study run --force`).
fn clear_study(dir: &Path) -> std::io::Result<()> {
    for f in ["manifest.json", "results.jsonl", "points.csv"] {
        match std::fs::remove_file(dir.join(f)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match std::fs::remove_dir_all(dir.join("cells")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

fn usage(msg: &str) -> i32 {
    eprintln!("wirebench study: {msg}");
    EXIT_USAGE
}

fn run_study(a: RunArgs) -> i32 {
    if a.all {
        return all::run_all(&a);
    }
    let previous = match &a.resume {
        Some(dir) => match read_manifest(dir) {
            Ok(m) => Some(m),
            Err(e) => return usage(&e),
        },
        None => None,
    };
    let (path, text, dir) = match (&previous, &a.file) {
        (Some(m), _) => (
            m.file.clone(),
            m.file_text.clone(),
            a.resume.clone().unwrap_or_default(),
        ),
        (None, Some(f)) => match std::fs::read_to_string(f) {
            Ok(t) => (
                f.display().to_string(),
                t,
                a.output.clone().unwrap_or_else(default_dir),
            ),
            Err(e) => return usage(&format!("{}: cannot read: {e}", f.display())),
        },
        (None, None) => return usage("give a study file or --resume DIR"),
    };
    let mut file = match file::parse(&path, &text) {
        Ok(f) => f,
        Err(e) => return usage(&e.to_string()),
    };
    // A resumed study keeps the rounds it started with; --repeat overrides the file's.
    if let Some(n) = previous.as_ref().map(|m| m.repeat).or(a.repeat) {
        file.options.repeat = n.max(1);
    }
    let plan = match plan::plan(file, &dir, wirebench_sys::thread::online_cpus()) {
        Ok(p) => p,
        Err(e) => return usage(&e.to_string()),
    };
    if a.dry_run {
        print!("{}", plan::plan_text(&plan));
        return EXIT_OK;
    }
    if !wirebench_lab::available() {
        eprintln!(
            "wirebench study: building testbeds (network namespaces) needs root and `ip` (iproute2)"
        );
        return EXIT_FAILED;
    }
    if previous.is_none() && dir.join("manifest.json").exists() {
        if !a.force {
            return usage(&format!(
                "{} already holds a study; `wirebench study run --resume {}` continues it, \
                 --force replaces it",
                dir.display(),
                dir.display()
            ));
        }
        if let Err(e) = clear_study(&dir) {
            return usage(&format!("{}: {e}", dir.display()));
        }
    }
    // The study's directory may be shared with other users (it is the user's choice); its
    // `cells/`, which this process makes, must be its own directory and not a planted link.
    if let Err(e) = std::fs::create_dir_all(&dir)
        .and_then(|()| wirebench_sys::safefile::create_own_dir(&dir.join("cells")))
    {
        return usage(&format!("{}: {e}", dir.display()));
    }
    let command: Vec<String> = std::env::args().collect();
    let mut manifest = previous.unwrap_or_else(|| new_manifest(&plan, command));
    manifest.status = StudyStatus::Running;
    let points = measured_points(&dir, &plan);
    let shared = match Shared::open(&dir, points, plan.points() as u64, !a.json) {
        Ok(s) => s,
        Err(e) => return usage(&format!("{}: {e}", dir.display())),
    };
    let mgr = LabManager::new();
    // Labs of studies that were killed: their owner process is gone.
    for s in mgr.stale() {
        if s.name.starts_with(LAB_PREFIX) {
            let _ = mgr.down(&s.name);
        }
    }
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let mut r = Runner {
        plan: &plan,
        dir: dir.clone(),
        mgr,
        lab_name: format!("{LAB_PREFIX}{}", std::process::id()),
        interrupt,
        manifest,
        shared,
        cannot_start: false,
    };
    r.write_manifest();
    let finished = r.run();
    r.shared.finish();
    let failed: Vec<String> = r
        .manifest
        .cells
        .iter()
        .filter(|c| c.status == StudyStatus::Failed)
        .map(|c| {
            format!(
                "cell {}: {}",
                c.index,
                c.error.as_deref().unwrap_or("failed")
            )
        })
        .collect();
    r.manifest.status = if !finished {
        StudyStatus::Interrupted
    } else if !failed.is_empty() {
        StudyStatus::Failed
    } else {
        StudyStatus::Completed
    };
    r.manifest.error = (!failed.is_empty()).then(|| failed.join("; "));
    r.manifest.expectations = plan
        .file
        .expectations
        .iter()
        .map(|e| evaluate(e, &r.shared.points))
        .collect();
    r.write_manifest();
    let text = if a.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&r.manifest).unwrap_or_default()
        )
    } else {
        let mut t = summary_text(&r.manifest, &plan.file, &r.shared.points);
        if r.manifest.status == StudyStatus::Interrupted {
            t.push_str(&format!(
                "interrupted: {} point(s) kept in {}; `wirebench study run --resume {}` continues\n",
                r.shared.points.len(),
                dir.display(),
                dir.display()
            ));
        } else {
            t.push_str(&format!("results in {}\n", dir.display()));
        }
        t
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    drop(out);
    // After the study is printed and written: a database that cannot take it costs a
    // warning, never the study.
    if !r.shared.points.is_empty() {
        let e = crate::history::save::study_entry(&r.manifest, &r.shared.points, &a.save.tags);
        crate::history::save::save_entry(&a.save, &e, "the study");
    }
    exit_code(&r.manifest)
}

fn exit_code(m: &StudyManifest) -> i32 {
    match m.status {
        StudyStatus::Interrupted => EXIT_INTERRUPTED,
        StudyStatus::Failed => EXIT_FAILED,
        _ if m
            .expectations
            .iter()
            .any(|e| e.verdict == Verdict::DoesNotHold) =>
        {
            EXIT_EXPECTATION
        }
        _ => EXIT_OK,
    }
}

/// The figures a test's tables show by default.
fn headline(command: &str) -> &'static [FigureName] {
    match command {
        "stream" => &[
            FigureName::ThroughputBps,
            FigureName::ClientCpuPct,
            FigureName::ServerCpuPct,
        ],
        "udp" => &[FigureName::ThroughputBps, FigureName::LossPct],
        _ => &[FigureName::TransactionsPerS, FigureName::RttP50Ns],
    }
}

/// The tables a study shows: the file's `[[figure]]`s, or per test the headline figures
/// against the first factor that varies (a testbed factor first).
pub fn tables(file: &StudyFile, points: &[StudyPoint]) -> Vec<StudyTable> {
    if !file.figures.is_empty() {
        return file
            .figures
            .iter()
            .map(|f| StudyTable {
                title: f.title.clone(),
                test: f
                    .test
                    .clone()
                    .unwrap_or_else(|| file.tests[0].label.clone()),
                x: f.x,
                y: f.y,
            })
            .collect();
    }
    let labelled = file.cells.iter().any(|c| c.label.is_some());
    let mut out = Vec::new();
    // A ladder's factor-less tests are in the ladder table.
    for t in file
        .tests
        .iter()
        .filter(|t| !(labelled && t.factors.is_empty()))
    {
        // A numeric test factor (size, window, rate, flows...) is a curve's x; else the
        // first testbed factor that varies, else the test's first factor.
        let numeric = t.factors.iter().find(|(f, _)| !f.is_named());
        let x = numeric
            .map(|(f, _)| StudyFactor::Test(*f))
            .or_else(|| file.varying.first().map(|f| StudyFactor::Testbed(*f)))
            .or_else(|| t.factors.first().map(|(f, _)| StudyFactor::Test(*f)));
        let Some(x) = x else { continue };
        let ys: &[FigureName] = match t.command.as_str() {
            "stream" => &[
                FigureName::ThroughputBps,
                FigureName::ClientCpuPct,
                FigureName::ServerCpuPct,
            ],
            "udp" => &[FigureName::ThroughputBps, FigureName::LossPct],
            _ => &[FigureName::TransactionsPerS, FigureName::RttP50Ns],
        };
        for y in ys {
            if points
                .iter()
                .any(|p| p.test == t.label && p.figures.iter().any(|f| f.figure == *y))
            {
                out.push(StudyTable {
                    title: t.label.clone(),
                    test: t.label.clone(),
                    x,
                    y: *y,
                });
            }
        }
    }
    out
}

/// A ladder's columns (explicit labelled cells): the headline figures of each test that has
/// no factor of its own; empty for a crossed study.
pub fn ladder_columns(file: &StudyFile) -> Vec<(String, FigureName)> {
    let mut cols = Vec::new();
    if file.cells.iter().any(|c| c.label.is_some()) {
        for t in file.tests.iter().filter(|t| t.factors.is_empty()) {
            for y in headline(&t.command) {
                cols.push((t.label.clone(), *y));
            }
        }
    }
    cols
}

/// A study directory: its manifest, its file and its points (expectations evaluated).
pub struct LoadedStudy {
    /// The manifest.
    pub manifest: StudyManifest,
    /// The study file it ran.
    pub file: StudyFile,
    /// Its points.
    pub points: Vec<StudyPoint>,
    /// Lines of results.jsonl that could not be read.
    pub unreadable_lines: usize,
}

/// Reads a study directory.
pub fn load(dir: &Path) -> Result<LoadedStudy, String> {
    let mut manifest = read_manifest(dir)?;
    let file = file::parse(&manifest.file, &manifest.file_text)
        .map_err(|e| format!("the manifest's study file: {e}"))?;
    let (points, unreadable_lines) = read_points(dir)?;
    manifest.expectations = file
        .expectations
        .iter()
        .map(|e| evaluate(e, &points))
        .collect();
    Ok(LoadedStudy {
        manifest,
        file,
        points,
        unreadable_lines,
    })
}

/// The study in words: header, cells, tables, expectations.
pub fn summary_text(m: &StudyManifest, file: &StudyFile, points: &[StudyPoint]) -> String {
    let mut out = show::header(m);
    out.push('\n');
    out.push_str(&show::cells_text(&m.cells));
    let cols = ladder_columns(file);
    if !cols.is_empty() {
        out.push('\n');
        out.push_str(&show::ladder_text(&m.cells, points, &cols));
    }
    for t in tables(file, points) {
        let p = pivot(points, &t.test, t.x, t.y);
        if !p.rows.is_empty() {
            out.push('\n');
            out.push_str(&show::pivot_text(&t.title, &p));
        }
    }
    for t in &file.tests {
        for host in [
            wirebench_model::side::HostRole::Server,
            wirebench_model::side::HostRole::Client,
        ] {
            let b = show::breakdown_text(points, &t.label, host);
            if !b.is_empty() {
                out.push('\n');
                out.push_str(&b);
            }
        }
    }
    let w = show::warnings_text(points);
    if !w.is_empty() {
        out.push('\n');
        out.push_str(&w);
    }
    if !file.expectations.is_empty() {
        out.push_str("\nexpectations:\n");
        for e in &file.expectations {
            out.push_str(&show::expectation_text(&evaluate(e, points)));
        }
    }
    out
}

/// Reads `results.jsonl`; lines that do not parse (a run killed mid-write) are skipped and
/// counted.
fn read_points(dir: &Path) -> Result<(Vec<StudyPoint>, usize), String> {
    let path = dir.join("results.jsonl");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut bad = 0;
    let points = text
        .lines()
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| match serde_json::from_str::<StudyPoint>(l) {
            Ok(p) => Some(p),
            Err(_) => {
                bad += 1;
                None
            }
        })
        .collect();
    Ok((points, bad))
}

fn show_study(a: &ShowArgs) -> i32 {
    let st = match load(&a.dir) {
        Ok(s) => s,
        Err(e) => return usage(&e),
    };
    let text = if a.json {
        format!(
            "{}\n",
            serde_json::to_string_pretty(&st.manifest).unwrap_or_default()
        )
    } else {
        let mut t = summary_text(&st.manifest, &st.file, &st.points);
        if st.unreadable_lines > 0 {
            t.push_str(&format!(
                "{} line(s) of results.jsonl could not be read and were skipped\n",
                st.unreadable_lines
            ));
        }
        t
    };
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
    EXIT_OK
}
