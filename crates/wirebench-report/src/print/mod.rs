//! Printers: JSON, CSV and human text of a [`RunResult`], and live interval lines.
//!
//! Printers only format fields already computed by [`wirebench_analysis`]; they compute no
//! figure. Human output names the unit of every figure (rates in decimal bits per second,
//! `Gbit/s` = 10^9 bit/s; byte counts in binary multiples, `GiB` = 2^30 bytes) and ends with a
//! footer saying what the figures count. Human lines are at most [`MAX_COLUMNS`] wide. Every
//! string a peer supplied is escaped (see [`text`]).
//!
//! - [`text`]: the sentences of warnings, abort reasons, flow errors, engines and errors;
//! - [`units`]: rates, byte counts, sizes and durations in human units;
//! - `stream`, `rr`, `udp`: the per-workload human blocks and CSV rows;
//! - [`limits`]: `wirebench limits` and the line a stream result gets from it;
//! - `profile`: an end's CPU profile (stacked bar and category table);
//! - `csv`: the CSV document.

mod brief;
pub mod claims;
pub mod compare;
mod csv;
mod iperf3;
pub mod limits;
pub mod mesh;
pub mod profile;
pub mod rr;
mod stream;
pub mod study;
pub mod sweep;
pub mod text;
mod udp;
pub mod units;
pub mod verdict;

use std::fmt::Write as _;

use wirebench_model::result::{Aggregate, EndCpu, RunRecord, RunResult, RunStatus, Summary};
use wirebench_model::side::{HostRole, IntervalData};
use wirebench_model::spec::{Direction, TestSpec, WorkloadKind};
use wirebench_stats::ci::Interval;
use wirebench_stats::cpu::CpuBreakdown;

pub use self::csv::{csv, csv_cell, csv_flows, csv_header, csv_header_for, csv_intervals};
pub use self::profile::unavailable as profile_unavailable;
pub use self::text::error_text;
use self::units::RateUnit;
use crate::label;
use wirebench_analysis::live::{self, LiveRows};

/// Widest line of human output, in characters.
pub const MAX_COLUMNS: usize = 100;

/// Above this many flows in a direction, the human table shows a summary of the flows (the
/// slowest few) instead of a row per flow, unless [`HumanOptions::per_flow`] is set.
pub const FLOW_ROWS_MAX: usize = 16;

/// How much of a result the human printer shows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum Verbosity {
    /// One summary line per test (per direction of a stream or UDP test) and the error of a
    /// failed one (`-q/--quiet`).
    Quiet,
    /// The header, the tables, a CPU line per end, the congestion control, the verdict's
    /// first line and the warnings (the default).
    #[default]
    Normal,
    /// Everything: the per-direction notes, the engines, each end's CPU block, the verdict's
    /// evidence and suggestions, this machine's limits and the footer defining the figures
    /// (`-v/--verbose`).
    Verbose,
}

/// Choices of the human printer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct HumanOptions {
    /// The unit of rates.
    pub rate_unit: RateUnit,
    /// A row per flow whatever the number of flows.
    pub per_flow: bool,
    /// How much to show.
    pub verbosity: Verbosity,
}

impl HumanOptions {
    /// True when everything is shown (`-v`).
    pub(crate) fn verbose(&self) -> bool {
        self.verbosity == Verbosity::Verbose
    }
}

/// The result as pretty-printed JSON with a trailing newline. Always valid JSON.
pub fn json(r: &RunResult) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        // Not reachable with the model's types; stay valid JSON regardless.
        serde_json::json!({
            "schema_version": r.schema_version,
            "tool": r.tool,
            "started_unix_ms": r.started_unix_ms,
            "started_utc": r.started_utc,
            "status": "failed",
            "spec": null,
            "server_address": r.server_address,
            "embedded_server": r.embedded_server,
            "runs": [],
            "aggregate": null,
            "warnings": [],
            "error": { "kind": "internal", "message": format!("cannot encode result: {e}"),
                       "field": null, "limit": null },
        })
        .to_string()
    });
    s.push('\n');
    s
}

/// One JSON value on one line with a line break (for `--json-stream`).
pub fn json_line<T: serde::Serialize>(v: &T) -> String {
    let mut s = serde_json::to_string(v)
        .unwrap_or_else(|e| serde_json::json!({ "error": e.to_string() }).to_string());
    s.push('\n');
    s
}

/// `text` broken at spaces into lines of at most [`MAX_COLUMNS`] characters; the first line
/// starts with `first`, the others with `rest`. A word too long for a line is split.
pub(crate) fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
    let mut line = first.to_string();
    let mut len = line.chars().count();
    let mut empty = true;
    let mut flush = |line: &mut String, len: &mut usize| {
        out.push_str(line.trim_end());
        out.push('\n');
        *line = rest.to_string();
        *len = line.chars().count();
    };
    for word in text.split_whitespace() {
        let mut chars: Vec<char> = word.chars().collect();
        if !empty && len + 1 + chars.len() > MAX_COLUMNS {
            flush(&mut line, &mut len);
            empty = true;
        }
        if !empty {
            line.push(' ');
            len += 1;
        }
        while len + chars.len() > MAX_COLUMNS && len < MAX_COLUMNS {
            let take = MAX_COLUMNS - len;
            line.extend(chars.drain(..take));
            flush(&mut line, &mut len);
        }
        len += chars.len();
        line.extend(chars);
        empty = false;
    }
    out.push_str(line.trim_end());
    out.push('\n');
}

/// The JSON name of a run status.
pub fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "completed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Aborted => "aborted",
        RunStatus::Failed => "failed",
        RunStatus::Invalid => "invalid",
    }
}

pub(crate) fn secs(ms: u64) -> String {
    format!("{:.3} s", ms as f64 / 1000.0)
}

pub(crate) fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward (client → server)",
        Direction::Reverse => "reverse (server → client)",
        Direction::Bidir => "bidirectional",
    }
}

pub(crate) fn end_cpu(s: &Summary, host: HostRole) -> Option<&EndCpu> {
    s.cpu.iter().find(|c| c.host == host)
}

/// The window a run actually measured, seconds: the longest CPU window of its ends (each
/// end's window runs from the end of warm-up to its stop instant).
fn measured_s(run: &RunRecord) -> Option<f64> {
    let s = run.summary.as_ref()?;
    s.cpu
        .iter()
        .map(|c| c.window_ns)
        .max()
        .filter(|&ns| ns > 0)
        .map(|ns| ns as f64 / 1e9)
}

/// The common part of the test line: flows, timing, window, CPUs.
fn common_line(s: &TestSpec, measured: Option<f64>) -> String {
    let c = &s.common;
    let mut t = format!(
        "{} flow{}{}, ",
        c.flows,
        text::plural(u64::from(c.flows)),
        if matches!(s.kind(), WorkloadKind::Stream | WorkloadKind::UdpStream) {
            " per direction"
        } else {
            ""
        }
    );
    let count = s.stop_after_bytes();
    match (count, measured) {
        (Some(n), m) => {
            let _ = write!(t, "stopping after {} per direction", units::size(n));
            if let Some(m) = m {
                let _ = write!(t, " ({m:.3} s measured, at most {})", secs(c.duration_ms));
            } else {
                let _ = write!(t, " (at most {})", secs(c.duration_ms));
            }
            return with_buffers_and_cpus(t, s);
        }
        (None, Some(m)) if (m * 1000.0 - c.duration_ms as f64).abs() > 50.0 => {
            let _ = write!(t, "{m:.3} s measured of {} asked", secs(c.duration_ms));
        }
        _ => {
            let _ = write!(t, "{} measured", secs(c.duration_ms));
        }
    }
    let _ = write!(t, " after {} warm-up", secs(c.warmup_ms));
    with_buffers_and_cpus(t, s)
}

/// The end of the test line: socket buffers, data buffers placed off a page boundary, and
/// pinned CPUs.
fn with_buffers_and_cpus(mut t: String, s: &TestSpec) -> String {
    let c = &s.common;
    if let Some(w) = c.window_bytes {
        let _ = write!(
            t,
            ", socket buffers {} requested",
            units::size(u64::from(w))
        );
    } else if s.kind() != WorkloadKind::UdpStream && s.kind() != WorkloadKind::UdpRr {
        t.push_str(", socket buffers autotuned");
    }
    match c.buffer_offset_bytes {
        Some(o) if o != 0 => {
            let _ = write!(t, ", data buffers {o} bytes past a page boundary");
        }
        _ => {}
    }
    if let Some(cpu) = c.client_cpu {
        let _ = write!(t, ", client data threads on CPU {cpu}");
    }
    if let Some(cpu) = c.server_cpu {
        let _ = write!(t, ", server data threads on CPU {cpu}");
    }
    t
}

fn spec_line(s: &TestSpec, measured: Option<f64>) -> String {
    let head = match s.kind() {
        WorkloadKind::Stream => stream::spec_head(s),
        WorkloadKind::UdpStream => udp::spec_head(s),
        _ => rr::spec_head(s),
    };
    format!("{head}; {}", common_line(s, measured))
}

/// Busy share and its split; the busy time no tick sampled (so no state is known for it)
/// appears only when there is some.
fn breakdown(b: &CpuBreakdown) -> String {
    let unattributed = if b.unattributed_pct > 0.0 {
        format!(", no tick sampled {:.1}", b.unattributed_pct)
    } else {
        String::new()
    };
    format!(
        "busy {:5.1} %  (user {:.1}, system {:.1}, softirq {:.1}, irq {:.1}, steal {:.1}{unattributed})",
        b.busy_pct, b.user_pct, b.system_pct, b.softirq_pct, b.irq_pct, b.steal_pct
    )
}

fn opt_demand(v: Option<f64>) -> String {
    v.map_or_else(|| "n/a".to_string(), |x| format!("{x:.3}"))
}

fn cpu_block(out: &mut String, c: &EndCpu) {
    let _ = writeln!(
        out,
        "{} CPU ({} CPUs, window {:.3} s; % of all CPUs unless noted)",
        label::host(c.host),
        c.cpus,
        c.window_ns as f64 / 1e9
    );
    let _ = writeln!(out, "  system-wide      {}", breakdown(&c.system));
    let _ = writeln!(
        out,
        "  busiest CPU {:<4} {}",
        c.busiest_cpu,
        breakdown(&c.busiest)
    );
    let _ = writeln!(
        out,
        "  wirebench threads {:.1} % of one CPU (user {:.3} s, system {:.3} s)",
        c.threads_util_pct_of_one_cpu,
        c.threads_user_ns as f64 / 1e9,
        c.threads_system_ns as f64 / 1e9
    );
    if let Some(ns) = c.threads_run_delay_ns.filter(|_| c.window_ns > 0) {
        let _ = writeln!(
            out,
            "  run-queue wait   {:.1} % of the window ({:.3} s, threads summed; wake-up to \
             running included)",
            100.0 * ns as f64 / c.window_ns as f64,
            ns as f64 / 1e9
        );
    }
    if c.service_demand_us_per_tx.is_some() || c.threads_service_demand_us_per_tx.is_some() {
        let _ = writeln!(
            out,
            "  service demand   {} µs/tx system-wide (netperf), {} µs/tx wirebench threads",
            opt_demand(c.service_demand_us_per_tx),
            opt_demand(c.threads_service_demand_us_per_tx)
        );
    } else {
        let _ = writeln!(
            out,
            "  service demand   {} µs/KB system-wide (netperf), {} µs/KB wirebench threads",
            opt_demand(c.service_demand_us_per_kb),
            opt_demand(c.threads_service_demand_us_per_kb)
        );
    }
}

fn run_block(out: &mut String, run: &RunRecord, total_runs: usize, r: &RunResult, o: HumanOptions) {
    if o.verbose() || total_runs > 1 || run.status != RunStatus::Completed {
        let _ = writeln!(
            out,
            "run {} of {}: {}",
            u64::from(run.index) + 1,
            total_runs,
            status_name(run.status)
        );
    }
    if ended_in_warmup(run) {
        let _ = writeln!(
            out,
            "  {} during warm-up: the measurement window never opened, so there are no figures",
            status_name(run.status)
        );
        return;
    }
    let Some(s) = &run.summary else {
        out.push_str("  no figures: no report was received\n");
        return;
    };
    match &s.workload {
        wirebench_model::result::WorkloadSummary::Stream(st) => {
            stream::block(out, st, run, o);
        }
        wirebench_model::result::WorkloadSummary::Rr(rr) => rr::block(out, rr, o.verbose()),
        wirebench_model::result::WorkloadSummary::UdpStream(u) if run.iperf3.is_some() => {
            iperf3::udp_own_end(out, u, o);
        }
        wirebench_model::result::WorkloadSummary::UdpStream(u) => udp::block(out, u, o),
    }
    for c in &s.cpu {
        if o.verbose() {
            cpu_block(out, c);
        } else {
            brief::cpu_line(out, c);
        }
    }
    if let Some(i) = &run.iperf3 {
        iperf3::block(out, i, o);
    }
    // Both ends on one kernel sample the same CPUs system-wide: one profile says it all.
    let mut shown: Vec<&[u32]> = Vec::new();
    let profile_cost = r.profile_cost.as_ref();
    for p in &s.profiles {
        let side = match p.host {
            HostRole::Client => run.client.as_ref(),
            HostRole::Server => run.server.as_ref(),
        };
        let Some(r) = side.and_then(|r| r.profile.as_ref()) else {
            continue;
        };
        if s.same_host && shown.contains(&r.cpus.as_slice()) {
            let _ = writeln!(
                out,
                "{} profile: the same CPUs of the same kernel as above, not repeated",
                label::host(p.host)
            );
            continue;
        }
        shown.push(&r.cpus);
        // What /proc/stat counted stolen over that end's CPU window, when it covered the
        // CPUs the profile sampled.
        let stolen_cpu_ns = s
            .cpu
            .iter()
            .find(|c| c.host == p.host && c.cpus as usize == r.cpus.len())
            .map(EndCpu::stolen_cpu_ns);
        profile::block(out, p, r, profile_cost, stolen_cpu_ns);
    }
    if r.spec.as_ref().is_some_and(|sp| sp.tcp().is_some()) {
        let cc = if s.congestion.is_empty() {
            "not reported".to_string()
        } else {
            s.congestion
                .iter()
                .map(|c| wirebench_model::text::escape(c))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let requested = r
            .spec
            .as_ref()
            .and_then(TestSpec::congestion)
            .map_or_else(|| "each host's default".to_string(), |c| c.to_string());
        wrap(
            out,
            "",
            "  ",
            &format!("congestion control in use: {cc} (requested: {requested})"),
        );
    }
    if let Some(v) = &s.verdict {
        let lines = verdict::lines(v);
        if o.verbose() {
            for (head, text) in lines {
                wrap(out, head, "  ", &text);
            }
        } else if let Some((head, text)) = lines.first() {
            let more = if lines.len() > 1 {
                " (-v for the evidence)"
            } else {
                ""
            };
            wrap(out, head, "  ", &format!("{text}{more}"));
        }
    }
    for w in &s.warnings {
        wrap(out, "warning: ", "         ", &text::noted(w));
    }
}

/// True when a run stopped before either end's measurement window opened.
pub fn ended_in_warmup(run: &RunRecord) -> bool {
    run.status != RunStatus::Completed
        && run.client.is_some()
        && [&run.client, &run.server]
            .into_iter()
            .flatten()
            .all(|side| side.window.is_none())
}

fn interval_text(name: &str, i: &Interval, scale: f64, unit: &str, target: f64) -> String {
    format!(
        "{name} {:.2} {unit} ± {:.2} ({}% CI, width {:.1}% of mean; target {}%: {})",
        i.mean / scale,
        i.half_width / scale,
        i.level_pct,
        i.width_pct,
        target,
        if i.within(target) { "met" } else { "not met" }
    )
}

fn aggregate_block(out: &mut String, a: &Aggregate) {
    let _ = writeln!(out, "over {} runs:", a.runs);
    let t = a.target_width_pct;
    match (&a.throughput_bps, &a.transactions_per_s) {
        (Some(i), _) => wrap(
            out,
            "",
            "  ",
            &interval_text("throughput", i, 1e9, "Gbit/s", t),
        ),
        (None, Some(i)) => wrap(
            out,
            "",
            "  ",
            &interval_text("transactions", i, 1.0, "/s", t),
        ),
        (None, None) => {
            out.push_str("throughput: no confidence interval (fewer than 2 usable runs)\n")
        }
    }
    let rest = [
        (&a.rtt_p50_ns, "median round trip", 1e3, "µs"),
        (&a.client_cpu_busy_pct, "client CPU busy", 1.0, "%"),
        (&a.server_cpu_busy_pct, "server CPU busy", 1.0, "%"),
    ];
    for (iv, name, scale, unit) in rest {
        if let Some(i) = iv {
            wrap(out, "", "  ", &interval_text(name, i, scale, unit, t));
        }
    }
    if !a.target_met {
        wrap(
            out,
            "WARNING: ",
            "         ",
            &format!(
                "confidence target not met: the {}% intervals are not all within {}% of the \
                 mean after {} runs; treat these figures as uncertain",
                a.level_pct, t, a.runs
            ),
        );
    }
}

fn server_text(r: &RunResult) -> String {
    match (&r.server_address, r.embedded_server) {
        (Some(a), true) => format!("server {a} (embedded in this process)"),
        (Some(a), false) => format!("server {}", wirebench_model::text::escape(a)),
        (None, true) => "embedded server".to_string(),
        (None, false) => "no server".to_string(),
    }
}

/// Everything [`human_with`] prints ([`Verbosity::Verbose`]), in the default units.
pub fn human(r: &RunResult) -> String {
    human_with(
        r,
        HumanOptions {
            verbosity: Verbosity::Verbose,
            ..HumanOptions::default()
        },
    )
}

/// The result as human-readable text: a header naming the test and the window it measured,
/// then per run the workload's table, a CPU block per end, the congestion control and the
/// run's warnings; then the aggregate over iterations, the invocation's warnings, the error
/// of a failed invocation, and a footer defining the units. Lines are at most
/// [`MAX_COLUMNS`] characters.
///
/// That is the view of [`Verbosity::Verbose`]; [`Verbosity::Normal`] leaves out the
/// per-direction notes, engines, CPU breakdowns (a line per end instead), the verdict's
/// evidence, this machine's limits and the footer (the table's own legend stays);
/// [`Verbosity::Quiet`] is a summary line per test.
pub fn human_with(r: &RunResult, o: HumanOptions) -> String {
    if o.verbosity == Verbosity::Quiet {
        return brief::quiet(r, o);
    }
    let mut out = String::new();
    wrap(
        &mut out,
        "",
        "  ",
        &format!(
            "{}: {}; {}; started {}",
            r.tool,
            status_name(r.status),
            server_text(r),
            r.started_utc
        ),
    );
    if let Some(t) = &r.title {
        wrap(
            &mut out,
            "",
            "  ",
            &format!("title: {}", wirebench_model::text::escape(t)),
        );
    }
    if let Some(s) = &r.spec {
        let measured = r.runs.last().and_then(measured_s);
        wrap(&mut out, "", "  ", &spec_line(s, measured));
    }
    for run in &r.runs {
        out.push('\n');
        run_block(&mut out, run, r.runs.len(), r, o);
    }
    if let Some(a) = &r.aggregate {
        out.push('\n');
        aggregate_block(&mut out, a);
    }
    if let Some(u) = &r.under_load {
        out.push('\n');
        wrap(&mut out, "", "  ", &rr::under_load_text(u));
    }
    if let Some(p) = r.physical.as_ref().filter(|_| o.verbose()) {
        out.push('\n');
        wrap(&mut out, "", "  ", &limits::physical_line(p));
    }
    if !r.warnings.is_empty() {
        out.push('\n');
    }
    for w in &r.warnings {
        wrap(&mut out, "warning: ", "         ", &text::noted(w));
    }
    if let Some(e) = &r.error {
        wrap(&mut out, "error: ", "       ", &error_text(e));
    }
    if o.verbose() && r.runs.iter().any(|run| run.summary.is_some()) {
        out.push('\n');
        match r.spec.as_ref().map(TestSpec::kind) {
            Some(WorkloadKind::UdpStream) => wrap(&mut out, "", "", udp::FOOTER),
            Some(k) if k.is_rr() => wrap(&mut out, "", "", rr::FOOTER),
            _ => wrap(&mut out, "", "", stream::FOOTER),
        }
    }
    out
}

/// The human lines of one live interval sample measured at `host` (none for a sample that
/// has no rows at that end, such as a request/response server's).
pub fn interval_lines(host: HostRole, spec: &TestSpec, sample: &IntervalData) -> Vec<String> {
    interval_lines_with(host, spec, sample, HumanOptions::default())
}

/// [`interval_lines`] with options.
pub fn interval_lines_with(
    host: HostRole,
    spec: &TestSpec,
    sample: &IntervalData,
    o: HumanOptions,
) -> Vec<String> {
    match live::rows(host, spec, sample) {
        LiveRows::Stream(rows) => rows.iter().map(|r| stream::interval_line(r, o)).collect(),
        LiveRows::Rr(row) => row.iter().map(rr::interval_line).collect(),
        LiveRows::UdpStream(rows) => rows.iter().map(|r| udp::interval_line(r, o)).collect(),
    }
}

/// The human lines of a joined live sample ([`wirebench_analysis::live::LiveJoin`]): a stream
/// direction's line with its sender's retransmits and congestion window (and a line per flow
/// with `--per-flow`), or a request/response or UDP sample's lines.
pub fn joined_lines(j: &live::Joined, o: HumanOptions) -> Vec<String> {
    match j {
        live::Joined::Stream(r) => stream::live_lines(r, o),
        live::Joined::Other(LiveRows::Stream(rows)) => {
            rows.iter().map(|r| stream::interval_line(r, o)).collect()
        }
        live::Joined::Other(LiveRows::Rr(row)) => row.iter().map(rr::interval_line).collect(),
        live::Joined::Other(LiveRows::UdpStream(rows)) => {
            rows.iter().map(|r| udp::interval_line(r, o)).collect()
        }
    }
}

/// The legend printed once before the first live stream line, wrapped.
pub fn live_stream_legend() -> String {
    let mut out = String::new();
    wrap(&mut out, "", " ", stream::LIVE_LEGEND);
    out
}
