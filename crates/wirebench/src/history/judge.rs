//! `history compare`, `history regress` and `wirebench compare FILES`: two sets of results
//! judged figure by figure (`wirebench-analysis::compare`), printed in words or as
//! the Comparison JSON document.

use std::path::{Path, PathBuf};

use clap::Args;
use wirebench_analysis::compare::{compare, regressions};
use wirebench_model::compare::{CompareSide, Comparison};
use wirebench_model::result::RunResult;
use wirebench_report::print::compare as words;
use wirebench_stats::ci::ConfidenceLevel;
use wirebench_store::{Filter, Store};

use super::cmds::{load, open};
use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// Options shared by the comparing commands.
#[derive(Debug, Args, Clone)]
pub struct JudgeOptions {
    /// Confidence level of the intervals, 95 or 99 (a figure is significant when its
    /// p-value is below 1 − level). 99 by default: several figures are judged at once.
    #[arg(long, value_name = "PCT", default_value_t = 99, value_parser = parse_level)]
    pub level: u32,
    /// The Comparison JSON document (docs/compare.schema.json) instead of words.
    #[arg(long)]
    pub json: bool,
}

/// `--level`: 95 or 99.
pub fn parse_level(s: &str) -> Result<u32, String> {
    match s.parse::<u32>() {
        Ok(v @ (95 | 99)) => Ok(v),
        _ => Err(format!("'{s}': the level is 95 or 99")),
    }
}

impl JudgeOptions {
    fn level(&self) -> ConfidenceLevel {
        ConfidenceLevel::from_pct(self.level).unwrap_or(ConfidenceLevel::P99)
    }
}

/// `history compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The baseline: an id, a tag KEY=VALUE, or a selector (ids, tags, workload:W, host:H,
    /// since:DATE, last:N, comma-separated).
    pub a: String,
    /// The candidate, likewise.
    pub b: String,
    /// Output options.
    #[command(flatten)]
    pub opts: JudgeOptions,
}

/// `history regress`.
#[derive(Debug, Args)]
pub struct RegressArgs {
    /// The baseline: a tag KEY=VALUE or a selector.
    #[arg(long, value_name = "TAG|QUERY")]
    pub baseline: String,
    /// The candidate set (default: the newest stored result that is not in the baseline).
    #[arg(long, value_name = "TAG|QUERY")]
    pub candidate: Option<String>,
    /// A regression is a significant worsening by more than PCT percent.
    #[arg(long, value_name = "PCT", default_value_t = 0.0)]
    pub threshold: f64,
    /// Output options.
    #[command(flatten)]
    pub opts: JudgeOptions,
}

/// `wirebench compare`.
#[derive(Debug, Args)]
pub struct CompareFilesArgs {
    /// A.json B.json, or several files a side split by `vs`: a1.json a2.json vs b1.json.
    #[arg(required = true, num_args = 2.., value_name = "FILES")]
    pub files: Vec<PathBuf>,
    /// Output options.
    #[command(flatten)]
    pub opts: JudgeOptions,
}

fn side(selector: &str, results: &[(i64, RunResult)]) -> CompareSide {
    CompareSide {
        selector: selector.to_string(),
        results: results.iter().map(|(id, _)| id.to_string()).collect(),
        runs: 0,
        workloads: Vec::new(),
    }
}

fn docs(v: &[(i64, RunResult)]) -> Vec<RunResult> {
    v.iter().map(|(_, r)| r.clone()).collect()
}

fn emit(c: &Comparison, json: bool, text: String) {
    if json {
        println!("{}", serde_json::to_string_pretty(c).unwrap_or_default());
    } else {
        print!("{text}");
    }
}

/// `history compare A B`.
pub fn compare_db(path: &Path, a: &CompareArgs) -> i32 {
    let store = match open(path) {
        Ok(s) => s,
        Err(c) => return c,
    };
    let (ra, rb) = match (load(&store, &a.a), load(&store, &a.b)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => {
            eprintln!("wirebench history compare: {e}");
            return EXIT_FAILED;
        }
    };
    let c = compare(
        &docs(&ra),
        &docs(&rb),
        (side(&a.a, &ra), side(&a.b, &rb)),
        a.opts.level(),
    );
    emit(&c, a.opts.json, words::comparison(&c));
    EXIT_OK
}

/// `history regress`: 0 no regression, 1 a regression, 2 nothing to judge.
pub fn regress(path: &Path, a: &RegressArgs) -> i32 {
    if !(a.threshold.is_finite() && a.threshold >= 0.0) {
        eprintln!("wirebench history regress: --threshold must be a percentage >= 0");
        return EXIT_USAGE;
    }
    let store = match open(path) {
        Ok(s) => s,
        Err(_) => return EXIT_USAGE,
    };
    let base = match load(&store, &a.baseline) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("wirebench history regress: baseline: {e}");
            return EXIT_USAGE;
        }
    };
    let (cand_sel, cand) = match &a.candidate {
        Some(s) => (s.clone(), load(&store, s)),
        None => newest_outside(&store, &base),
    };
    let cand = match cand {
        Ok(x) => x,
        Err(e) => {
            eprintln!("wirebench history regress: candidate: {e}");
            return EXIT_USAGE;
        }
    };
    let c = compare(
        &docs(&base),
        &docs(&cand),
        (side(&a.baseline, &base), side(&cand_sel, &cand)),
        a.opts.level(),
    );
    emit(&c, a.opts.json, words::regress(&c, a.threshold));
    if regressions(&c, a.threshold).is_empty() {
        EXIT_OK
    } else {
        EXIT_FAILED
    }
}

/// The newest stored result whose id is not among the baseline's.
fn newest_outside(
    store: &Store,
    base: &[(i64, RunResult)],
) -> (String, Result<Vec<(i64, RunResult)>, String>) {
    let ids = match store.ids(&Filter {
        limit: Some(base.len() + 1),
        ..Filter::default()
    }) {
        Ok(i) => i,
        Err(e) => return ("newest".into(), Err(e.to_string())),
    };
    match ids.into_iter().find(|id| base.iter().all(|(b, _)| b != id)) {
        Some(id) => (format!("newest ({id})"), load(store, &id.to_string())),
        None => (
            "newest".into(),
            Err("no stored result outside the baseline".into()),
        ),
    }
}

/// Two sides of result files: the results and their names.
pub struct FileSides {
    /// A's results.
    pub a: Vec<RunResult>,
    /// B's results.
    pub b: Vec<RunResult>,
    /// A's description.
    pub side_a: CompareSide,
    /// B's description.
    pub side_b: CompareSide,
}

/// Read `A.json B.json`, or sets split by `vs`; an exit code and a message on failure.
pub fn read_file_sides(files: &[PathBuf]) -> Result<FileSides, (i32, String)> {
    let split = files.iter().position(|f| f.as_os_str() == "vs");
    let (fa, fb): (&[PathBuf], &[PathBuf]) = match split {
        Some(i) => (&files[..i], &files[i + 1..]),
        None if files.len() == 2 => (&files[..1], &files[1..]),
        None => {
            return Err((
                EXIT_USAGE,
                "give A.json B.json, or split the sets with `vs`".into(),
            ))
        }
    };
    if fa.is_empty() || fb.is_empty() {
        return Err((EXIT_USAGE, "each side needs at least one file".into()));
    }
    let read = |files: &[PathBuf]| -> Result<Vec<RunResult>, String> {
        files
            .iter()
            .map(|f| {
                let t = std::fs::read_to_string(f).map_err(|e| format!("{}: {e}", f.display()))?;
                RunResult::from_json(&t).map_err(|e| format!("{}: {e}", f.display()))
            })
            .collect()
    };
    let (a, b) = match (read(fa), read(fb)) {
        (Ok(x), Ok(y)) => (x, y),
        (Err(e), _) | (_, Err(e)) => return Err((EXIT_FAILED, e)),
    };
    let names = |files: &[PathBuf]| CompareSide {
        selector: files
            .iter()
            .map(|f| f.display().to_string())
            .collect::<Vec<_>>()
            .join(" "),
        results: files.iter().map(|f| f.display().to_string()).collect(),
        runs: 0,
        workloads: Vec::new(),
    };
    Ok(FileSides {
        a,
        b,
        side_a: names(fa),
        side_b: names(fb),
    })
}

/// `wirebench compare FILES`.
pub fn compare_files(a: &CompareFilesArgs) -> i32 {
    let s = match read_file_sides(&a.files) {
        Ok(s) => s,
        Err((code, e)) => {
            eprintln!("wirebench compare: {e}");
            return code;
        }
    };
    let c = compare(&s.a, &s.b, (s.side_a, s.side_b), a.opts.level());
    emit(&c, a.opts.json, words::comparison(&c));
    EXIT_OK
}
