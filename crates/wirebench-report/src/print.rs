//! Printers: JSON, CSV and human tables of a [`RunResult`], and live interval lines.
//!
//! Printers only format fields already computed by [`crate::analyze`]; they compute no
//! metric. In human output `Gbit/s` means 10^9 bit/s of TCP payload and `GB` 10^9 bytes; the
//! output says so in its footer. Human lines are at most [`MAX_COLUMNS`] columns wide.

use std::fmt::Write as _;

use wirebench_proto::measure::HostRole;
use wirebench_proto::spec::{Direction, FlowDir, TestSpec, Workload};

pub use crate::print_rr::{rr_interval_line, RR_CSV_HEADER, UDP_CSV_HEADER};
use crate::print_rr::{RR_FOOTER, UDP_FOOTER};
use wirebench_stats::ci::Interval;
use wirebench_stats::cpu::CpuBreakdown;

use crate::label;
use crate::schema::{
    Aggregate, DirectionSummary, EndCpu, FlowSummary, IntervalRow, RunRecord, RunResult, RunStatus,
    Summary,
};

/// Widest line of human output, in characters.
pub const MAX_COLUMNS: usize = 100;

/// The footer of human output: what the throughput figures count.
pub const FOOTER: &str = "Gbit/s = 10^9 bit/s of payload; receiver = bytes read by the \
    application at the receiving end over [end of warm-up, last byte]; sender = bytes accepted \
    by send() over [end of warm-up, stop]";

/// The CSV header line (without the line break).
pub const CSV_HEADER: &str = "run,status,direction,flows,receiver_throughput_bps,\
    sender_throughput_bps,receiver_bytes,sender_bytes,retransmits,client_cpu_busy_pct,\
    server_cpu_busy_pct,client_sd_us_per_kb,server_sd_us_per_kb,congestion,msg_size_bytes,\
    duration_ms";

/// The result as pretty-printed JSON with a trailing newline. Always valid JSON.
pub fn json(r: &RunResult) -> String {
    let mut s = serde_json::to_string_pretty(r).unwrap_or_else(|e| {
        // Not reachable with the types of this crate; stay valid JSON regardless.
        let fallback = serde_json::json!({
            "schema_version": r.schema_version,
            "tool": r.tool,
            "started_unix_ms": r.started_unix_ms,
            "status": "failed",
            "spec": null,
            "server_address": r.server_address,
            "embedded_server": r.embedded_server,
            "runs": [],
            "aggregate": null,
            "warnings": [],
            "error": { "kind": "internal", "message": format!("cannot encode result: {e}"),
                       "field": null },
        });
        fallback.to_string()
    });
    s.push('\n');
    s
}

// ---------------------------------------------------------------------------------------
// CSV
// ---------------------------------------------------------------------------------------

/// One CSV cell, quoted per RFC 4180 when it contains a comma, a quote or a line break.
pub fn csv_cell(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt_num<T: ToString>(v: Option<T>) -> String {
    v.map(|x| x.to_string()).unwrap_or_default()
}

fn status_name(s: RunStatus) -> &'static str {
    match s {
        RunStatus::Completed => "completed",
        RunStatus::Interrupted => "interrupted",
        RunStatus::Aborted => "aborted",
        RunStatus::Failed => "failed",
    }
}

fn dir_json_name(d: FlowDir) -> &'static str {
    match d {
        FlowDir::ClientToServer => "client_to_server",
        FlowDir::ServerToClient => "server_to_client",
    }
}

fn end_cpu(s: &Summary, host: HostRole) -> Option<&EndCpu> {
    s.cpu.iter().find(|c| c.host == host)
}

/// The result as CSV: the header [`CSV_HEADER`] and one row per run × direction (`run` is
/// the run's 0-based `index`, `direction` the JSON name of the direction, `congestion` the
/// algorithms in use joined by `;`). A run without a summary, or a result without runs, gives
/// one row with its status and empty figures. Empty cell = not available. Lines end in `\n`.
pub fn csv(r: &RunResult) -> String {
    match r.spec.as_ref().map(|s| s.workload) {
        Some(w) if w.is_rr() => {
            return csv_lines(
                RR_CSV_HEADER,
                r.runs
                    .iter()
                    .map(|run| {
                        crate::print_rr::rr_csv_row(run, status_name(run.status), r.spec.as_ref())
                    })
                    .collect(),
            )
        }
        Some(Workload::UdpStream) => {
            return csv_lines(
                UDP_CSV_HEADER,
                r.runs
                    .iter()
                    .flat_map(|run| {
                        crate::print_rr::udp_csv_rows(run, status_name(run.status), r.spec.as_ref())
                    })
                    .collect(),
            )
        }
        _ => {}
    }
    let mut out = String::new();
    out.push_str(CSV_HEADER);
    out.push('\n');
    let msg = opt_num(r.spec.as_ref().map(|s| s.msg_size_bytes));
    let dur = opt_num(r.spec.as_ref().map(|s| s.duration_ms));
    let empty_row = |run: String, status: RunStatus| -> Vec<String> {
        let mut row = vec![run, status_name(status).to_string()];
        row.extend(std::iter::repeat_n(String::new(), 12));
        row.push(msg.clone());
        row.push(dur.clone());
        row
    };
    let mut rows: Vec<Vec<String>> = Vec::new();
    if r.runs.is_empty() {
        rows.push(empty_row(String::new(), r.status));
    }
    for run in &r.runs {
        let Some(s) = run.summary.as_ref().filter(|s| !s.directions.is_empty()) else {
            rows.push(empty_row(run.index.to_string(), run.status));
            continue;
        };
        let cc = s.congestion.join(";");
        let c = end_cpu(s, HostRole::Client);
        let v = end_cpu(s, HostRole::Server);
        for d in &s.directions {
            rows.push(vec![
                run.index.to_string(),
                status_name(run.status).to_string(),
                dir_json_name(d.dir).to_string(),
                d.flows.to_string(),
                d.receiver_throughput_bps.to_string(),
                d.sender_throughput_bps.to_string(),
                d.receiver_bytes.to_string(),
                d.sender_bytes.to_string(),
                d.retransmits.to_string(),
                opt_num(c.map(|c| c.system_busy_pct)),
                opt_num(v.map(|c| c.system_busy_pct)),
                opt_num(c.and_then(|c| c.service_demand_us_per_kb)),
                opt_num(v.and_then(|c| c.service_demand_us_per_kb)),
                cc.clone(),
                msg.clone(),
                dur.clone(),
            ]);
        }
    }
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

fn csv_lines(header: &str, rows: Vec<Vec<String>>) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push('\n');
    for row in rows {
        let cells: Vec<String> = row.iter().map(|c| csv_cell(c)).collect();
        out.push_str(&cells.join(","));
        out.push('\n');
    }
    out
}

// ---------------------------------------------------------------------------------------
// Human
// ---------------------------------------------------------------------------------------

/// `text` broken at spaces into lines of at most [`MAX_COLUMNS`] characters; the first line
/// starts with `first`, the others with `rest`. A word too long for a line is split.
fn wrap(out: &mut String, first: &str, rest: &str, text: &str) {
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
        // Split what does not fit on a line of its own.
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

fn gbit(bps: f64) -> String {
    format!("{:.3}", bps / 1e9)
}

fn secs(ms: u64) -> String {
    format!("{:.3} s", ms as f64 / 1000.0)
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Forward => "forward (client → server)",
        Direction::Reverse => "reverse (server → client)",
        Direction::Bidir => "bidirectional",
    }
}

fn spec_line(s: &TestSpec) -> String {
    if s.workload != Workload::Stream {
        return crate::print_rr::spec_line(s);
    }
    let mut t = format!(
        "stream {}, {} flow{} per direction, {} measured after {} warm-up, {} bytes per call",
        direction_name(s.direction),
        s.flows,
        if s.flows == 1 { "" } else { "s" },
        secs(s.duration_ms),
        secs(s.warmup_ms),
        s.msg_size_bytes
    );
    match s.window_bytes {
        Some(w) => {
            let _ = write!(t, ", socket buffers {w} bytes requested");
        }
        None => t.push_str(", socket buffers autotuned"),
    }
    if let Some(cc) = &s.congestion {
        let _ = write!(t, ", congestion control {cc} requested");
    }
    if s.nodelay {
        t.push_str(", TCP_NODELAY");
    }
    if let Some(cpu) = s.client_cpu {
        let _ = write!(t, ", client data threads on CPU {cpu}");
    }
    if let Some(cpu) = s.server_cpu {
        let _ = write!(t, ", server data threads on CPU {cpu}");
    }
    t
}

/// Header and rows of the per-flow table. Column widths keep a row within 98 characters.
fn table_row(cells: [&str; 9]) -> String {
    let [flow, dir, rg, sg, rb, sb, re, rtt, cwnd] = cells;
    format!("{flow:>5} {dir:<7} {rg:>11} {sg:>11} {rb:>16} {sb:>16} {re:>8} {rtt:>8} {cwnd:>8}")
        .trim_end()
        .to_string()
}

fn opt_cell(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

fn flow_row(f: &FlowSummary) -> String {
    table_row([
        &f.flow.to_string(),
        label::dir(f.dir),
        &gbit(f.receiver_throughput_bps),
        &gbit(f.sender_throughput_bps),
        &f.receiver_bytes.to_string(),
        &f.sender_bytes.to_string(),
        &f.retransmits.to_string(),
        &opt_cell(f.rtt_us),
        &opt_cell(f.cwnd_segments),
    ])
}

fn total_row(d: &DirectionSummary) -> String {
    table_row([
        "total",
        label::dir(d.dir),
        &gbit(d.receiver_throughput_bps),
        &gbit(d.sender_throughput_bps),
        &d.receiver_bytes.to_string(),
        &d.sender_bytes.to_string(),
        &d.retransmits.to_string(),
        "",
        "",
    ])
}

/// `a` if every value is `a`, `a..b` for a range, `-` for none.
fn range(values: impl Iterator<Item = Option<u32>>) -> String {
    let v: Vec<u32> = values.flatten().collect();
    match (v.iter().min(), v.iter().max()) {
        (Some(lo), Some(hi)) if lo == hi => lo.to_string(),
        (Some(lo), Some(hi)) => format!("{lo}..{hi}"),
        _ => "-".to_string(),
    }
}

fn breakdown(b: &CpuBreakdown) -> String {
    format!(
        "busy {:5.1} %  (user {:.1}, system {:.1}, softirq {:.1}, irq {:.1}, steal {:.1})",
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

fn direction_notes(out: &mut String, d: &DirectionSummary, flows: &[&FlowSummary]) {
    let name = label::dir(d.dir);
    let _ = writeln!(
        out,
        "{name}: whole test: senders wrote {} bytes, receivers read {}, unaccounted {}",
        d.sender_total_bytes, d.receiver_total_bytes, d.unaccounted_bytes
    );
    if d.flows > 1 {
        if let Some(s) = &d.flow_throughput {
            let mut line = format!(
                "{name}: per-flow receiver Gbit/s min {} median {} max {}",
                gbit(s.min),
                gbit(s.median),
                gbit(s.max)
            );
            if let Some(j) = d.jain_index {
                let _ = write!(line, "; Jain fairness {j:.4}");
            }
            wrap(out, "", "  ", &line);
        }
    }
    if let Some(line) = paths_line(d) {
        wrap(out, "", "  ", &line);
    }
    let line = format!(
        "{name}: effective socket buffers: SO_SNDBUF {} bytes (sender), SO_RCVBUF {} bytes \
         (receiver); MSS {} bytes, PMTU {} bytes",
        range(flows.iter().map(|f| f.sndbuf_bytes)),
        range(flows.iter().map(|f| f.rcvbuf_bytes)),
        range(flows.iter().map(|f| f.mss_bytes)),
        range(flows.iter().map(|f| f.pmtu_bytes)),
    );
    wrap(out, "", "  ", &line);
}

/// `forward: paths: send zerocopy, receive copy; ...` with the zero-copy and verification
/// figures of the direction; `None` when neither end reported its paths.
fn paths_line(d: &DirectionSummary) -> Option<String> {
    if d.send_paths.is_empty() && d.recv_paths.is_empty() {
        return None;
    }
    let list = |v: &[String]| {
        if v.is_empty() {
            "not reported".to_string()
        } else {
            v.join("/")
        }
    };
    let mut line = format!(
        "{}: paths: send {}, receive {}",
        label::dir(d.dir),
        list(&d.send_paths),
        list(&d.recv_paths)
    );
    if d.path_fallback_flows > 0 {
        let _ = write!(
            line,
            " ({} flow{} fell back to copy, see warnings)",
            d.path_fallback_flows,
            if d.path_fallback_flows == 1 { "" } else { "s" }
        );
    }
    if let Some(z) = &d.zerocopy {
        if z.sends > 0 {
            let _ = write!(
                line,
                "; zero-copy sends {}: {} completed without a copy, {} copied by the kernel",
                z.sends, z.sends_completed_zerocopy, z.sends_completed_copied
            );
        }
        if z.bytes_mapped > 0 || z.bytes_copied > 0 {
            let _ = write!(
                line,
                "; TCP_ZEROCOPY_RECEIVE {} bytes mapped, {} copied",
                z.bytes_mapped, z.bytes_copied
            );
        }
    }
    if let Some(v) = d.verified_bytes {
        let _ = write!(
            line,
            "; verified {v} bytes, {} differed",
            d.verify_errors.unwrap_or(0)
        );
    }
    Some(line)
}

fn run_block(out: &mut String, run: &RunRecord, total_runs: usize, spec: Option<&TestSpec>) {
    let _ = writeln!(
        out,
        "run {} of {}: {}",
        u64::from(run.index) + 1,
        total_runs,
        status_name(run.status)
    );
    let Some(s) = &run.summary else {
        out.push_str("  no figures: no report was received\n");
        return;
    };
    if s.rr.is_some() || s.udp.is_some() {
        if let Some(r) = &s.rr {
            crate::print_rr::rr_block(out, r);
        }
        if let Some(u) = &s.udp {
            crate::print_rr::udp_block(out, u);
        }
        tail_block(out, s, spec);
        return;
    }
    out.push_str(&table_row([
        "flow",
        "dir",
        "recv Gbit/s",
        "send Gbit/s",
        "recv bytes",
        "send bytes",
        "retrans",
        "RTT µs",
        "cwnd seg",
    ]));
    out.push('\n');
    for d in &s.directions {
        let flows: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.dir == d.dir).collect();
        for f in &flows {
            out.push_str(&flow_row(f));
            out.push('\n');
        }
        out.push_str(&total_row(d));
        out.push('\n');
    }
    out.push_str(
        "(forward = client → server, reverse = server → client; retrans, RTT, cwnd: the \
         sender's TCP_INFO)\n",
    );
    for d in &s.directions {
        let flows: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.dir == d.dir).collect();
        direction_notes(out, d, &flows);
    }
    let engine = |r: &Option<wirebench_proto::measure::SideReport>| {
        r.as_ref()
            .and_then(|r| r.engine.clone())
            .unwrap_or_else(|| "not reported".into())
    };
    let _ = writeln!(
        out,
        "engine: client {}; server {}",
        engine(&run.client),
        engine(&run.server)
    );
    tail_block(out, s, spec);
}

/// CPU blocks, congestion control and warnings of a run.
fn tail_block(out: &mut String, s: &Summary, spec: Option<&TestSpec>) {
    for c in &s.cpu {
        cpu_block(out, c);
    }
    if spec.is_some_and(|sp| sp.workload.is_udp()) {
        for w in &s.warnings {
            wrap(out, "warning: ", "         ", w);
        }
        return;
    }
    let cc = if s.congestion.is_empty() {
        "not reported".to_string()
    } else {
        s.congestion.join(", ")
    };
    let requested = spec
        .and_then(|sp| sp.congestion.as_deref())
        .map_or_else(|| "each host's default".to_string(), |c| c.to_string());
    wrap(
        out,
        "",
        "  ",
        &format!("congestion control in use: {cc} (requested: {requested})"),
    );
    for w in &s.warnings {
        wrap(out, "warning: ", "         ", w);
    }
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
    if let Some(i) = &a.rtt_p50_ns {
        wrap(
            out,
            "",
            "  ",
            &interval_text("median round trip", i, 1e3, "µs", t),
        );
    }
    if let Some(i) = &a.client_cpu_busy_pct {
        wrap(
            out,
            "",
            "  ",
            &interval_text("client CPU busy", i, 1.0, "%", t),
        );
    }
    if let Some(i) = &a.server_cpu_busy_pct {
        wrap(
            out,
            "",
            "  ",
            &interval_text("server CPU busy", i, 1.0, "%", t),
        );
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

/// The result as human-readable text: a header, then per run a per-flow table with a total
/// row per direction, whole-test byte accounting, effective socket buffers, a CPU block per
/// end, the congestion control and the run's warnings; then the aggregate over iterations,
/// the invocation's warnings, the error of a failed invocation, and a footer defining the
/// units. Lines are at most [`MAX_COLUMNS`] characters.
pub fn human(r: &RunResult) -> String {
    let mut out = String::new();
    let server = match (&r.server_address, r.embedded_server) {
        (Some(a), true) => format!("server {a} (embedded in this process)"),
        (Some(a), false) => format!("server {a}"),
        (None, true) => "embedded server".to_string(),
        (None, false) => "no server".to_string(),
    };
    wrap(
        &mut out,
        "",
        "  ",
        &format!("{}: {}; {}", r.tool, status_name(r.status), server),
    );
    if let Some(s) = &r.spec {
        wrap(&mut out, "", "  ", &spec_line(s));
    }
    for run in &r.runs {
        out.push('\n');
        run_block(&mut out, run, r.runs.len(), r.spec.as_ref());
    }
    if let Some(a) = &r.aggregate {
        out.push('\n');
        aggregate_block(&mut out, a);
    }
    if !r.warnings.is_empty() {
        out.push('\n');
    }
    for w in &r.warnings {
        wrap(&mut out, "warning: ", "         ", w);
    }
    if let Some(e) = &r.error {
        let mut msg = format!("{}: {}", e.kind, e.message);
        if let Some(f) = &e.field {
            let _ = write!(msg, " (field {f})");
        }
        wrap(&mut out, "error: ", "       ", &msg);
    }
    if r.runs.iter().any(|run| run.summary.is_some()) {
        out.push('\n');
        match r.spec.as_ref().map(|s| s.workload) {
            Some(w) if w.is_rr() => wrap(&mut out, "", "", RR_FOOTER),
            Some(Workload::UdpStream) => wrap(&mut out, "", "", UDP_FOOTER),
            _ => {
                wrap(&mut out, "", "", FOOTER);
                out.push_str("GB = 10^9 bytes; KB in service demand = 1024 bytes\n");
            }
        }
    }
    out
}

/// One live interval line, e.g.
/// `[  1.00-  2.00 s] server recv forward  12.345 Gbit/s  1.44 GB` (`(warm-up)` appended for
/// an interval that overlaps the warm-up). Times are seconds on the measuring end's clock.
pub fn interval_line(row: &IntervalRow) -> String {
    format!(
        "[{:6.2}-{:6.2} s] {} recv {:<7} {:7.3} Gbit/s {:5.2} GB{}",
        row.start_s,
        row.end_s,
        label::host(row.host),
        label::dir(row.dir),
        row.throughput_bps / 1e9,
        row.bytes as f64 / 1e9,
        if row.in_warmup { " (warm-up)" } else { "" }
    )
}
