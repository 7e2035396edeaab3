//! The client commands (`stream`, `rr`, `crr`, `udp`): flags to a spec, the [`Runner`] to a
//! result, the result to the chosen output. Nothing here measures or computes.

pub mod iperf3;

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use wirebench_analysis::live::{Joined, LiveJoin};
use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{RunRecord, RunResult, RunStatus};
use wirebench_model::spec::TestSpec;
use wirebench_model::spec::MAX_INTERVAL_SAMPLES;
use wirebench_net::runner::{failed_result, Observer, Runner, Target};
use wirebench_proto::message::IntervalMsg;
use wirebench_report::print::{self, units::RateUnit, HumanOptions, Verbosity};

use crate::args::ClientArgs;
use crate::client::runner_config;
use crate::output::{verbosity, write_atomically};
use crate::specs::SpecResult;
use crate::under_load::LoadPlan;
use crate::{EXIT_ABORTED, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_INVALID, EXIT_OK, EXIT_USAGE};

/// Output format of a client command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// Tables and live lines for a person.
    Human,
    /// One RunResult document.
    Json,
    /// Newline-delimited JSON: interval objects, then the result.
    JsonStream,
    /// CSV rows.
    Csv,
}

impl Format {
    /// The format the flags ask for.
    pub fn of(a: &ClientArgs) -> Format {
        if a.json {
            Format::Json
        } else if a.json_stream {
            Format::JsonStream
        } else if a.csv {
            Format::Csv
        } else {
            Format::Human
        }
    }
}

/// Where the result goes: stdout, or a file written atomically.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sink {
    /// Standard output.
    Stdout,
    /// This file (its directory checked writable before the test).
    File(PathBuf),
}

impl Sink {
    /// The sink `-o` asks for (`-` and no `-o` are stdout).
    pub fn of(a: &ClientArgs) -> Sink {
        match a.output.as_deref() {
            Some(p) if p != Path::new("-") => Sink::File(p.to_path_buf()),
            _ => Sink::Stdout,
        }
    }
}

/// The human printer's options from the flags.
fn human_options(a: &ClientArgs) -> HumanOptions {
    HumanOptions {
        rate_unit: a
            .rate_unit
            .as_deref()
            .and_then(|u| u.parse::<RateUnit>().ok())
            .unwrap_or_default(),
        per_flow: a.per_flow,
        verbosity: verbosity(a.verbose, a.quiet),
    }
}

/// Prints the live lines of a run: human lines, or JSON objects with --json-stream.
pub(crate) struct Live {
    format: Format,
    human: HumanOptions,
    timestamps: bool,
    /// False when the intervals are sampled for the result only.
    print_intervals: bool,
    /// A stream receiver's lines joined with its sender's TCP_INFO.
    join: LiveJoin,
    /// The live stream legend was printed.
    legend_done: bool,
}

impl Live {
    /// Live lines as the client flags ask; interval lines only if `print_intervals`.
    pub(crate) fn of(a: &ClientArgs, print_intervals: bool) -> Live {
        Live {
            format: Format::of(a),
            human: human_options(a),
            timestamps: a.timestamps,
            print_intervals,
            join: LiveJoin::default(),
            legend_done: false,
        }
    }
}

impl Observer for Live {
    fn run_started(&mut self, index: u32, max_runs: u32) {
        if max_runs > 1 && self.format == Format::Human && self.human.verbosity != Verbosity::Quiet
        {
            let _ = writeln!(
                std::io::stdout().lock(),
                "run {} of at most {max_runs}",
                index + 1
            );
        }
    }

    fn interval(&mut self, spec: &TestSpec, m: &IntervalMsg) {
        if !self.print_intervals
            || (self.format == Format::Human && self.human.verbosity == Verbosity::Quiet)
        {
            return;
        }
        let mut out = std::io::stdout().lock();
        match self.format {
            Format::Human => {
                let stamp = if self.timestamps {
                    let now = wirebench_net::runner::unix_ms();
                    format!("{} ", wirebench_model::result::iso8601_utc(now))
                } else {
                    String::new()
                };
                let joined = self.join.push(m.host, spec, &m.sample);
                self.print_joined(&mut out, &stamp, &joined);
            }
            Format::JsonStream => {
                let event = serde_json::json!({
                    "event": "interval",
                    "unix_ms": wirebench_net::runner::unix_ms(),
                    "host": m.host,
                    "sample": m.sample,
                });
                let _ = out.write_all(print::json_line(&event).as_bytes());
                let _ = out.flush();
            }
            Format::Json | Format::Csv => {}
        }
    }

    fn run_finished(&mut self, _record: &RunRecord) {
        let joined = self.join.finish();
        let mut out = std::io::stdout().lock();
        self.print_joined(&mut out, "", &joined);
    }
}

impl Live {
    /// Print joined live rows (the legend before the first stream line).
    fn print_joined(&mut self, out: &mut dyn Write, stamp: &str, joined: &[Joined]) {
        for j in joined {
            let lines = print::joined_lines(j, self.human);
            if matches!(j, Joined::Stream(_)) && !lines.is_empty() && !self.legend_done {
                self.legend_done = true;
                let _ = out.write_all(print::live_stream_legend().as_bytes());
            }
            for line in lines {
                let _ = writeln!(out, "{stamp}{line}");
            }
        }
    }
}

/// The exit code of a result.
pub fn exit_code(r: &RunResult) -> i32 {
    match r.status {
        RunStatus::Completed => EXIT_OK,
        RunStatus::Interrupted => EXIT_INTERRUPTED,
        RunStatus::Aborted => EXIT_ABORTED,
        RunStatus::Invalid => EXIT_INVALID,
        // Parameters refused here or by the server (its spec checks and policy limits, a
        // congestion control or socket option the host does not have) are invalid
        // parameters, as a bad command line is.
        RunStatus::Failed => match r.error.as_ref().map(|e| e.kind) {
            Some(
                ErrorKind::Usage
                | ErrorKind::InvalidSpec
                | ErrorKind::LimitExceeded
                | ErrorKind::SocketOption,
            ) => EXIT_USAGE,
            _ => EXIT_FAILED,
        },
    }
}

/// The interval when the user gave none (`-i 0` turns sampling off). Printed live every
/// second on a terminal with human output and with --json-stream (as long as the test is);
/// otherwise, for a stream test of at least 2 s, unprinted samples of an eighth of the test
/// (0.25 to 1 s), so that the result can say whether the rate held (the `rate_varied`
/// warning) and CSV `--intervals` has rows, as iperf3's JSON always has intervals, unless
/// that makes more than [`UNPRINTED_SAMPLE_BUDGET`] samples × connections. Printed intervals
/// are coarser when intervals × connections would exceed the bound. Returns whether the
/// samples are printed live.
fn live_interval(a: &ClientArgs, format: Format, spec: &mut TestSpec) -> bool {
    if a.interval.is_some() {
        return true;
    }
    let live = match format {
        Format::Human => std::io::stdout().is_terminal() && !a.quiet,
        Format::JsonStream => true,
        Format::Json | Format::Csv => false,
    };
    let duration_ms = spec.common.duration_ms;
    let conns = u64::from(spec.connection_count().max(1));
    let bound_ms = (duration_ms * conns).div_ceil(MAX_INTERVAL_SAMPLES);
    if live && duration_ms >= 1000 {
        spec.common.interval_ms = Some(bound_ms.max(1000));
        return true;
    }
    let per_ms = (duration_ms / 8).clamp(250, 1000);
    let samples = duration_ms.div_ceil(per_ms) * conns;
    if spec.kind() == wirebench_model::spec::WorkloadKind::Stream
        && duration_ms >= 2000
        && samples <= UNPRINTED_SAMPLE_BUDGET
    {
        spec.common.interval_ms = Some(per_ms);
    }
    false
}

/// Most interval samples × connections taken by default when nobody prints them: each sample
/// carries every flow's count in both ends' reports, so 10,000 flows are not sampled unasked.
const UNPRINTED_SAMPLE_BUDGET: u64 = 20_000;

/// Check before the test that `-o FILE` can be written (its directory takes a new file).
fn check_output(sink: &Sink) -> Result<(), ErrorInfo> {
    let Sink::File(path) = sink else {
        return Ok(());
    };
    probe_writable(path).map_err(|e| {
        ErrorInfo::new(
            ErrorKind::Output,
            format!("-o {}: cannot write there: {e:#}", path.display()),
        )
    })
}

/// Run a client command: `spec` built from its flags, `a` its common flags.
pub fn run_client(a: &ClientArgs, spec: SpecResult, load: Option<LoadPlan>) -> i32 {
    run_client_with(a, spec, load, None)
}

/// [`run_client`], against a stock iperf3 server when `iperf3` is set (the retries allowed
/// while it is busy, ...); its port is then 5201 unless -p says otherwise.
pub fn run_client_with(
    a: &ClientArgs,
    spec: SpecResult,
    load: Option<LoadPlan>,
    iperf3: Option<wirebench_net::iperf3_client::Iperf3Options>,
) -> i32 {
    let format = Format::of(a);
    let out = Out::of(a);
    let mut spec = match spec {
        Ok(s) => s,
        Err((msg, field)) => {
            let mut info = ErrorInfo::new(ErrorKind::Usage, msg);
            info.field = field;
            return out.finish(failed_result(None, None, false, info));
        }
    };
    if let Err(info) = check_output(&out.sink) {
        return out.finish(failed_result(Some(spec), None, a.host.is_none(), info));
    }
    if iperf3.is_some() && a.from.is_some() {
        let info = ErrorInfo::new(
            ErrorKind::Usage,
            "--from runs a third-party test between two wirebench daemons; it cannot be used \
             with --iperf3",
        );
        return out.finish(failed_result(Some(spec), a.host.clone(), false, info));
    }
    let print_intervals = live_interval(a, format, &mut spec);
    let cfg = match runner_config(a) {
        Ok(mut c) if iperf3.is_some() => {
            c.iperf3 = iperf3;
            if let (Target::Remote(addr), None) = (&mut c.target, a.port) {
                addr.set_port(wirebench_iperf3::wire::DEFAULT_PORT);
            }
            c
        }
        Ok(c) => c,
        Err(info) => {
            let embedded = a.host.is_none();
            return out.finish(failed_result(Some(spec), a.host.clone(), embedded, info));
        }
    };
    let interrupt = Arc::new(AtomicBool::new(false));
    for sig in [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM] {
        let _ = signal_hook::flag::register(sig, Arc::clone(&interrupt));
    }
    let mut live = Live::of(a, print_intervals);
    // No live lines: a bar over the expected time instead (terminal, human output only).
    let bar = (!print_intervals || spec.common.interval_ms.is_none()).then(|| {
        let one = Duration::from_millis(spec.common.warmup_ms + spec.common.duration_ms);
        let runs = cfg.repetition.max_runs.max(1) * if load.is_some() { 2 } else { 1 };
        let human = format == Format::Human && !a.quiet;
        crate::progress::TimeBar::start(one * runs, human, "measuring")
    });
    let mut result = match load {
        Some(l) => crate::under_load::measure(&cfg, &interrupt, &spec, l, &mut live),
        None => Runner::new(cfg, interrupt).run(&spec, &mut live),
    };
    drop(bar);
    // Against this machine's limits when they are cached for this boot (never measured
    // here): the same step every sweep and study point goes through.
    crate::limits_cache::finish(&mut result);
    out.finish(result)
}

/// How a result is printed and where it goes.
pub struct Out {
    /// The format.
    pub format: Format,
    /// Where it goes.
    pub sink: Sink,
    /// Human printer options.
    pub human: HumanOptions,
    /// The user's title.
    pub title: Option<String>,
    /// CSV rows per interval (`--intervals`).
    pub csv_intervals: bool,
    /// CSV rows per flow (`--per-flow`).
    pub csv_flows: bool,
    /// Saving to the results history.
    pub save: crate::history::SaveArgs,
}

impl Out {
    /// The output the client flags ask for.
    pub fn of(a: &ClientArgs) -> Out {
        Out {
            format: Format::of(a),
            sink: Sink::of(a),
            human: human_options(a),
            title: a.title.clone(),
            csv_intervals: a.intervals,
            csv_flows: a.per_flow,
            save: a.save.clone(),
        }
    }

    /// The CSV view asked for: per interval, per flow, or per run and direction.
    fn csv(&self, r: &RunResult) -> String {
        if self.csv_intervals {
            print::csv_intervals(r)
        } else if self.csv_flows {
            print::csv_flows(r)
        } else {
            print::csv(r)
        }
    }

    /// Print (or write) the result, return the exit code. A human run's error also goes to
    /// stderr, once.
    pub fn finish(&self, mut r: RunResult) -> i32 {
        r.title.clone_from(&self.title);
        if r.command.is_empty() {
            r.command = std::env::args().collect();
        }
        // A refused spec field (here or by the server) in the user's terms: flag and unit.
        if let Some(e) = r.error.as_mut() {
            if let (Some(f), Some(p)) = (e.field, &e.problem) {
                e.message = crate::specs::user_message(f, p);
            }
        }
        let text = match self.format {
            Format::Json => print::json(&r),
            Format::JsonStream => print::json_line(&serde_json::json!({
                "event": "result",
                "result": r,
            })),
            Format::Csv => self.csv(&r),
            // A command that failed before running anything has only its error, which goes
            // to stderr (once).
            Format::Human if r.runs.is_empty() && r.error.is_some() => String::new(),
            Format::Human => print::human_with(&r, self.human),
        };
        let mut code = exit_code(&r);
        if self.format == Format::Human {
            if let Some(err) = &r.error {
                eprintln!("wirebench: {}", print::error_text(err));
            }
        }
        match &self.sink {
            Sink::File(path) => {
                // The file gets the document (JSON unless --csv); stdout still gets the
                // chosen format.
                let doc = match self.format {
                    Format::Csv => self.csv(&r),
                    _ => print::json(&r),
                };
                if let Err(e) = write_atomically(path, doc.as_bytes()) {
                    eprintln!("wirebench: cannot write {}: {e:#}", path.display());
                    if code == EXIT_OK {
                        code = EXIT_FAILED;
                    }
                }
                print_stdout(&text);
            }
            Sink::Stdout => print_stdout(&text),
        }
        // After the result is printed and written: a database that cannot take it costs
        // a warning, never the result.
        crate::history::save::save_run(&self.save, &r);
        code
    }
}

fn print_stdout(text: &str) {
    let mut out = std::io::stdout().lock();
    let _ = out.write_all(text.as_bytes());
    let _ = out.flush();
}

/// Checks that the output file can be written (see [`wirebench_sys::safefile::probe_writable`]).
fn probe_writable(path: &Path) -> Result<()> {
    Ok(wirebench_sys::safefile::probe_writable(path)?)
}
