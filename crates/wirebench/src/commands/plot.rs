//! `wirebench plot INPUT` and `wirebench report INPUT`: a result (a RunResult JSON file, a
//! SweepResult JSON file, a sweep's `-o` directory, or the JSON of `wirebench limits --json`)
//! drawn as SVG, or written as one self-contained HTML page.

use std::path::{Path, PathBuf};

use clap::Args;
use wirebench_model::limits::LimitsResult;
use wirebench_model::result::RunResult;
use wirebench_model::sweep::SweepResult;
use wirebench_report::figures::{limits_figures, run_figures, sweep_figures, Named};
use wirebench_report::page::{limits_page, run_page, sweep_page};
use wirebench_report::study_page;

use crate::output::write_atomically;
use crate::{EXIT_FAILED, EXIT_OK, EXIT_USAGE};

/// `wirebench plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// A RunResult or SweepResult JSON file (`--json` output), a sweep's `-o` directory, a
    /// study's output directory, or the JSON of `wirebench limits --json`.
    pub input: std::path::PathBuf,
    /// Which figure: timeseries (a stream test's with TCP_INFO panels), tail, histogram,
    /// under-load (request/response), curve, curve-latency, latency-vs-load (sweeps), limits,
    /// table, ladder (studies); default the first that applies.
    #[arg(long, value_parser = ["timeseries", "tail", "histogram", "under-load", "curve", "curve-latency", "latency-vs-load", "limits", "table", "ladder"])]
    pub kind: Option<String>,
    /// Write the SVG here (atomically) instead of to stdout.
    #[arg(short, long, value_name = "FILE.svg")]
    pub output: Option<std::path::PathBuf>,
}

/// `wirebench report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// A RunResult or SweepResult JSON file (`--json` output), a sweep's `-o` directory, a
    /// study's output directory, or the JSON of `wirebench limits --json`.
    #[arg(required_unless_present = "compare")]
    pub input: Option<std::path::PathBuf>,
    /// Compare result files instead (A.json B.json, or sets split by `vs` as for `wirebench
    /// compare`): the page judges every figure and draws both sides, time series overlaid
    /// and boxes side by side.
    #[arg(
        long,
        num_args = 2..,
        value_name = "FILES",
        conflicts_with = "input"
    )]
    pub compare: Option<Vec<std::path::PathBuf>>,
    /// Confidence level of a comparison's intervals, 95 or 99.
    #[arg(long, value_name = "PCT", default_value_t = 99, requires = "compare",
          value_parser = crate::history::judge::parse_level)]
    pub level: u32,
    /// The HTML file to write (atomically).
    #[arg(short, long, value_name = "FILE.html")]
    pub output: std::path::PathBuf,
}

/// A result read from disk.
enum Input {
    /// One test.
    Run(Box<RunResult>),
    /// A sweep.
    Sweep(Box<SweepResult>),
    /// This machine's limits (`wirebench limits --json`), read from the file.
    Limits(Box<LimitsResult>, String),
}

/// Read `path`: a sweep directory (its `sweep.json`), or a JSON document of any kind (a
/// SweepResult has `"kind": "sweep"`, a LimitsResult `"kind": "limits"`).
fn load(path: &Path) -> Result<Input, String> {
    let file: PathBuf = if path.is_dir() {
        path.join("sweep.json")
    } else {
        path.to_path_buf()
    };
    let text = std::fs::read_to_string(&file)
        .map_err(|e| format!("cannot read {}: {e}", file.display()))?;
    let v: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("{} is not JSON: {e}", file.display()))?;
    if v.get("kind").and_then(|k| k.as_str()) == Some("limits") {
        LimitsResult::from_json(&text)
            .map(|l| Input::Limits(Box::new(l), file.display().to_string()))
            .map_err(|e| format!("{}: {e}", file.display()))
    } else if v.get("kind").and_then(|k| k.as_str()) == Some("sweep") {
        serde_json::from_value(v)
            .map(|s| Input::Sweep(Box::new(s)))
            .map_err(|e| format!("{} is not a wirebench sweep result: {e}", file.display()))
    } else {
        serde_json::from_value(v)
            .map(|r| Input::Run(Box::new(r)))
            .map_err(|e| format!("{} is not a wirebench result: {e}", file.display()))
    }
}

/// The figures of an input.
fn figures(input: &Input) -> Vec<Named> {
    match input {
        Input::Run(r) => run_figures(r),
        Input::Sweep(s) => sweep_figures(s),
        Input::Limits(l, _) => limits_figures(l),
    }
}

/// `wirebench plot`; the exit code.
pub fn plot(a: &PlotArgs) -> i32 {
    let fail = |msg: String, code: i32| {
        eprintln!("wirebench plot: {msg}");
        code
    };
    if let Some(out) = &a.output {
        if let Err(msg) = output_not_input(out, &a.input) {
            return fail(msg, EXIT_USAGE);
        }
    }
    if let Some(o) = &a.output {
        if o.extension().is_some_and(|e| e != "svg") {
            return fail(
                format!(
                    "-o {}: wirebench draws SVG only (any browser shows it; convert it with a tool \
                     of your choice)",
                    o.display()
                ),
                EXIT_USAGE,
            );
        }
    }
    if a.input.join("manifest.json").exists() {
        return plot_study(a);
    }
    let input = match load(&a.input) {
        Ok(i) => i,
        Err(e) => return fail(e, EXIT_USAGE),
    };
    let all = figures(&input);
    let available: Vec<&str> = all.iter().map(|n| n.kind.name()).collect();
    let chosen = match &a.kind {
        Some(k) => all.iter().find(|n| n.kind.name() == k),
        None => all.first(),
    };
    let Some(fig) = chosen else {
        return fail(
            if all.is_empty() {
                format!(
                    "{}: no figure applies (no completed run or point)",
                    a.input.display()
                )
            } else {
                format!(
                    "--kind {}: not a figure of {} (it has: {})",
                    a.kind.as_deref().unwrap_or(""),
                    a.input.display(),
                    available.join(", ")
                )
            },
            EXIT_USAGE,
        );
    };
    let svg = match fig.svg() {
        Ok(s) => s,
        Err(e) => {
            return fail(
                format!("cannot draw the {} figure: {e}", fig.kind.name()),
                EXIT_FAILED,
            )
        }
    };
    match &a.output {
        Some(path) => match write_atomically(path, svg.as_str().as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(e) => fail(
                format!("cannot write {}: {e:#}", path.display()),
                EXIT_FAILED,
            ),
        },
        None => {
            print!("{}", svg.as_str());
            EXIT_OK
        }
    }
}

/// Refuses an output path that would replace what is read: the input file itself (also
/// through another name), or, for a sweep or study directory, one of the data files in it
/// (`.json`, `.jsonl`, `.csv`; a page or figure written into the directory is fine).
pub fn output_not_input(output: &Path, input: &Path) -> Result<(), String> {
    use std::os::unix::fs::MetadataExt;
    let Ok(out) = std::fs::metadata(output) else {
        return Ok(()); // a new file replaces nothing
    };
    let refuse = || {
        Err(format!(
            "-o {}: that is {}'s own data; write the output elsewhere",
            output.display(),
            input.display()
        ))
    };
    let Ok(inp) = std::fs::metadata(input) else {
        return Ok(());
    };
    if (out.dev(), out.ino()) == (inp.dev(), inp.ino()) {
        return refuse();
    }
    if inp.is_dir() {
        let data = matches!(
            output.extension().and_then(|e| e.to_str()),
            Some("json" | "jsonl" | "csv")
        );
        let inside = match (output.canonicalize(), input.canonicalize()) {
            (Ok(o), Ok(i)) => o.starts_with(&i),
            _ => false,
        };
        if data && inside {
            return refuse();
        }
    }
    Ok(())
}

/// Writes `svg` to `-o FILE` (atomically) or stdout.
fn emit(output: Option<&Path>, svg: &str, cmd: &str) -> i32 {
    match output {
        Some(path) => match write_atomically(path, svg.as_bytes()) {
            Ok(()) => EXIT_OK,
            Err(e) => {
                eprintln!("wirebench {cmd}: cannot write {}: {e:#}", path.display());
                EXIT_FAILED
            }
        },
        None => {
            print!("{svg}");
            EXIT_OK
        }
    }
}

/// `wirebench plot STUDY-DIR`: the ladder (`--kind ladder`) or the first table's figure
/// (`--kind table`, the default).
fn plot_study(a: &PlotArgs) -> i32 {
    let st = match crate::study::load(&a.input) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("wirebench plot: {e}");
            return EXIT_USAGE;
        }
    };
    let ladder = study_page::ladder_figures(
        &st.manifest,
        &st.points,
        &crate::study::ladder_columns(&st.file),
    );
    let tables: Vec<_> = crate::study::tables(&st.file, &st.points)
        .iter()
        .filter_map(|t| study_page::table_figure(&st.manifest, &st.points, t))
        .collect();
    let fig = match a.kind.as_deref() {
        Some("ladder") => ladder.into_iter().next(),
        Some("table") | None => tables.into_iter().next(),
        Some(k) => {
            eprintln!("wirebench plot: --kind {k}: a study has the kinds table and ladder");
            return EXIT_USAGE;
        }
    };
    let Some(fig) = fig else {
        eprintln!(
            "wirebench plot: {}: no figure applies (no completed point)",
            a.input.display()
        );
        return EXIT_USAGE;
    };
    match fig.svg {
        Ok(svg) => emit(a.output.as_deref(), svg.as_str(), "plot"),
        Err(e) => {
            eprintln!("wirebench plot: cannot draw: {e}");
            EXIT_FAILED
        }
    }
}

/// `wirebench report`; the exit code.
pub fn report(a: &ReportArgs) -> i32 {
    if let Some(files) = &a.compare {
        return report_compare(a, files);
    }
    let Some(input) = a.input.as_deref() else {
        eprintln!("wirebench report: give a result file or directory, or --compare A B");
        return EXIT_USAGE;
    };
    if let Err(msg) = output_not_input(&a.output, input) {
        eprintln!("wirebench report: {msg}");
        return EXIT_USAGE;
    }
    if input.join("manifest.json").exists() {
        let st = match crate::study::load(input) {
            Ok(s) => s,
            Err(e) => {
                eprintln!("wirebench report: {e}");
                return EXIT_USAGE;
            }
        };
        let tables = crate::study::tables(&st.file, &st.points);
        let summary = crate::study::summary_text(&st.manifest, &st.file, &st.points);
        let page = study_page::study_page(
            &st.manifest,
            &st.points,
            &tables,
            &crate::study::ladder_columns(&st.file),
            &summary,
        )
        .to_html();
        return write_page(&a.output, &page);
    }
    let input = match load(input) {
        Ok(i) => i,
        Err(e) => {
            eprintln!("wirebench report: {e}");
            return EXIT_USAGE;
        }
    };
    let page = match &input {
        Input::Run(r) => run_page(r),
        Input::Sweep(s) => sweep_page(s),
        Input::Limits(l, path) => limits_page(l, path),
    }
    .to_html();
    write_page(&a.output, &page)
}

/// `wirebench report --compare FILES`: the comparison's page.
fn report_compare(a: &ReportArgs, files: &[std::path::PathBuf]) -> i32 {
    for f in files.iter().filter(|f| f.as_os_str() != "vs") {
        if let Err(msg) = output_not_input(&a.output, f) {
            eprintln!("wirebench report: {msg}");
            return EXIT_USAGE;
        }
    }
    let s = match crate::history::judge::read_file_sides(files) {
        Ok(s) => s,
        Err((code, e)) => {
            eprintln!("wirebench report: {e}");
            return code;
        }
    };
    let level = wirebench_stats::ci::ConfidenceLevel::from_pct(a.level)
        .unwrap_or(wirebench_stats::ci::ConfidenceLevel::P99);
    let c = wirebench_analysis::compare::compare(&s.a, &s.b, (s.side_a, s.side_b), level);
    let page = wirebench_report::compare_page::compare_page(&c, &s.a, &s.b).to_html();
    write_page(&a.output, &page)
}

/// Write a page atomically; the exit code.
fn write_page(output: &Path, page: &str) -> i32 {
    match write_atomically(output, page.as_bytes()) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("wirebench report: cannot write {}: {e:#}", output.display());
            EXIT_FAILED
        }
    }
}
