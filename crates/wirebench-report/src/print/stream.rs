//! The TCP stream printers: the test line, the per-flow table (or its summary for many
//! flows), the per-direction notes, the engine line and live interval lines.

use std::fmt::Write as _;

use wirebench_model::result::{
    DirectionSummary, FlowSummary, IntervalRow, RunRecord, StreamSummary,
};
use wirebench_model::side::SideReport;
use wirebench_model::spec::{
    FlowDir, RecvWait, TestSpec, WorkloadSpec, NAP_MAX_CALL_BYTES, NAP_MIN_RCVBUF_BYTES,
};

use super::units::{self, RateUnit};
use super::{direction_name, text, wrap, HumanOptions, FLOW_ROWS_MAX};
use crate::label;
use wirebench_analysis::live::{LiveStreamRow, LiveTcp};

/// What the stream figures count (human footer).
pub const FOOTER: &str = "rates: bit/s of TCP payload, decimal (Gbit/s = 10^9 bit/s); \
    receiver = bytes read by the application at the receiving end over [end of warm-up, last \
    byte]; sender = bytes accepted by send() over [end of warm-up, stop]; byte counts: KiB, \
    MiB, GiB = 2^10, 2^20, 2^30 bytes; KB in service demand = 1024 bytes";

/// How many of the slowest flows a many-flow summary lists.
const SLOWEST_SHOWN: usize = 5;

/// The workload part of the test line.
pub(crate) fn spec_head(s: &TestSpec) -> String {
    let WorkloadSpec::Stream(w) = &s.workload else {
        return "stream".into();
    };
    let mut t = format!("stream {}, ", direction_name(w.direction));
    if w.send_size_bytes == w.recv_size_bytes {
        let _ = write!(t, "{} per call", units::size(u64::from(w.send_size_bytes)));
    } else {
        let _ = write!(
            t,
            "{} per send call, {} per receive call",
            units::size(u64::from(w.send_size_bytes)),
            units::size(u64::from(w.recv_size_bytes))
        );
    }
    if let Some(r) = w.rate_bps {
        let _ = write!(
            t,
            ", paced at {} per flow",
            RateUnit::AutoBits.rate(r as f64)
        );
    }
    if w.send_path != Default::default() || w.recv_path != Default::default() {
        let _ = write!(
            t,
            ", send path {}, receive path {}",
            w.send_path.as_str(),
            w.recv_path.as_str()
        );
    }
    if !w.recv_wait.is_block() {
        let _ = write!(t, ", receive wait {}", w.recv_wait.as_str());
    }
    if w.verify {
        t.push_str(", payload verified");
    }
    if let Some(cc) = &w.tcp.congestion {
        let _ = write!(t, ", congestion control {cc} requested");
    }
    if w.tcp.nodelay {
        t.push_str(", TCP_NODELAY");
    }
    t
}

fn table_row(cells: [&str; 9]) -> String {
    let [flow, dir, rg, sg, rb, sb, re, rtt, cwnd] = cells;
    format!("{flow:>5} {dir:<7} {rg:>11} {sg:>11} {rb:>12} {sb:>12} {re:>8} {rtt:>8} {cwnd:>8}")
        .trim_end()
        .to_string()
}

fn opt_cell(v: Option<u32>) -> String {
    v.map_or_else(|| "-".to_string(), |x| x.to_string())
}

/// The end that sent no wirebench report: the server's, in a run against an iperf3 server
/// (its figures are in the iperf3 block). Its columns print "-", never a 0 that was not
/// measured.
#[derive(Debug, Clone, Copy)]
struct Unreported {
    server: bool,
}

impl Unreported {
    fn of(run: &RunRecord) -> Unreported {
        Unreported {
            server: run.iperf3.is_some() && run.server.is_none(),
        }
    }

    /// Whether the receiver's and the sender's columns of a direction are unreported.
    fn ends(self, dir: FlowDir) -> (bool, bool) {
        match dir {
            FlowDir::ClientToServer => (self.server, false),
            FlowDir::ServerToClient => (false, self.server),
        }
    }
}

/// `cell`, or "-" when its end did not report.
fn or_dash(blank: bool, cell: String) -> String {
    if blank {
        "-".into()
    } else {
        cell
    }
}

fn flow_row(f: &FlowSummary, u: RateUnit, miss: Unreported) -> String {
    let (r, s) = miss.ends(f.dir);
    table_row([
        &f.flow.to_string(),
        label::dir(f.dir),
        &or_dash(r, u.value(f.receiver_throughput_bps)),
        &or_dash(s, u.value(f.sender_throughput_bps)),
        &or_dash(r, units::bytes(f.receiver_bytes)),
        &or_dash(s, units::bytes(f.sender_bytes)),
        &or_dash(s, f.retransmits.to_string()),
        &or_dash(s, opt_cell(f.rtt_us)),
        &or_dash(s, opt_cell(f.cwnd_segments)),
    ])
}

fn total_row(d: &DirectionSummary, u: RateUnit, miss: Unreported) -> String {
    let (r, s) = miss.ends(d.dir);
    table_row([
        "total",
        label::dir(d.dir),
        &or_dash(r, u.value(d.receiver_throughput_bps)),
        &or_dash(s, u.value(d.sender_throughput_bps)),
        &or_dash(r, units::bytes(d.receiver_bytes)),
        &or_dash(s, units::bytes(d.sender_bytes)),
        &or_dash(s, d.retransmits.to_string()),
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

/// `forward: paths: send zerocopy, receive copy; ...` with the zero-copy and verification
/// figures of the direction; `None` when neither end reported its paths.
fn paths_line(d: &DirectionSummary) -> Option<String> {
    if d.send_paths.is_empty() && d.recv_paths.is_empty() {
        return None;
    }
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            "not reported".to_string()
        } else {
            v.join("/")
        }
    };
    let mut line = format!(
        "{}: paths: send {}, receive {}",
        label::dir(d.dir),
        list(d.send_paths.iter().map(|p| p.as_str()).collect()),
        list(d.recv_paths.iter().map(|p| p.as_str()).collect())
    );
    if d.path_fallback_flows > 0 {
        let _ = write!(
            line,
            " ({} flow{} fell back to copy, see warnings)",
            d.path_fallback_flows,
            text::plural(u64::from(d.path_fallback_flows))
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

/// `forward: receive wait auto: ...`: how the receivers waited for data, summed over the
/// flows (or the epoll workers that served them), over the whole test; `None` when no
/// receiver reported it.
fn wait_line(d: &DirectionSummary) -> Option<String> {
    let w = d.recv_wait.as_ref()?;
    let n = |count: u64, what: &str| format!("{count} {what}{}", text::plural(count));
    let workers = u64::from(w.epoll_workers);
    let mut line = format!("{}: receive wait {}", label::dir(d.dir), w.asked.as_str());
    if workers > 0 {
        let _ = write!(line, " ({})", n(workers, "epoll worker"));
    }
    let _ = write!(line, ": {}", n(w.recv_calls, "receive call"));
    let (check, wait, timers, buffer) = if workers > 0 {
        (
            "zero-timeout epoll_wait",
            "epoll_wait",
            "the workers' own timers",
            "the workers' receive buffers summed below",
        )
    } else {
        (
            "zero-timeout poll",
            "call",
            "the receivers' own timers",
            "receive buffer below",
        )
    };
    if w.asked == RecvWait::Block {
        line.push_str(if workers > 0 {
            ", blocking in epoll_wait until a flow was ready"
        } else {
            ", each blocking until data arrived"
        });
        line.push_str(WHOLE_TEST);
        return Some(line);
    }
    let _ = write!(
        line,
        "; {} found nothing to read; {} on {timers} ({:.1} ms in all); {} blocked after \
         waiting that way",
        n(w.empty_polls, check),
        n(w.naps, "nap"),
        w.nap_ns as f64 / 1e6,
        n(w.blocking_waits, wait)
    );
    let unchecked = [
        (w.small_buffer_calls, buffer, NAP_MIN_RCVBUF_BYTES),
        (w.large_calls, "calls above", NAP_MAX_CALL_BYTES),
    ];
    for (count, why, bound) in unchecked.into_iter().filter(|u| u.0 > 0) {
        let _ = write!(
            line,
            "; {} blocked without a check ({why} {})",
            n(count, wait),
            units::size(bound)
        );
    }
    line.push_str(WHOLE_TEST);
    Some(line)
}

/// The window of the receive-wait counts: each receiver's (or worker's) whole life.
const WHOLE_TEST: &str = " (counted over the whole test, warm-up and drain included)";

/// `forward: per-flow receiver Gbit/s min .. median .. max ..; Jain fairness ..` of a
/// direction of more than one flow.
fn spread_line(out: &mut String, d: &DirectionSummary, u: RateUnit) {
    if d.flows <= 1 {
        return;
    }
    if let Some(s) = &d.flow_throughput {
        let mut line = format!(
            "{}: per-flow receiver {} min {} median {} max {}",
            label::dir(d.dir),
            u.label(s.max),
            u.value(s.min),
            u.value(s.median),
            u.value(s.max)
        );
        if let Some(j) = d.jain_index {
            let _ = write!(line, "; Jain fairness {j:.4}");
        }
        wrap(out, "", "  ", &line);
    }
}

/// A count, or "-" where it is not known.
fn opt<T: std::fmt::Display>(v: Option<T>) -> String {
    v.map_or_else(|| "-".to_string(), |v| v.to_string())
}

fn direction_notes(out: &mut String, d: &DirectionSummary, flows: &[&FlowSummary], u: RateUnit) {
    let name = label::dir(d.dir);
    wrap(
        out,
        "",
        "  ",
        &format!(
            "{name}: whole test: senders wrote {} bytes, receivers read {}, unaccounted {}",
            opt(d.sender_total_bytes),
            opt(d.receiver_total_bytes),
            opt(d.unaccounted_bytes)
        ),
    );
    spread_line(out, d, u);
    if let Some(line) = paths_line(d) {
        wrap(out, "", "  ", &line);
    }
    if let Some(line) = wait_line(d) {
        wrap(out, "", "  ", &line);
    }
    if let Some(dup) = d.dsack_segments.filter(|&n| n > 0) {
        let line = format!(
            "{name}: of the {} segments retransmitted (TCP_INFO at the senders' close, whole \
             connections), the receivers got {dup} twice (D-SACK): their originals had arrived \
             (reordering, or a loss-probe or retransmit timer that fired early; not loss)",
            d.retransmits
        );
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
    if flows.iter().any(|f| f.notsent_lowat_bytes.is_some()) {
        let line = format!(
            "{name}: TCP_NOTSENT_LOWAT {} bytes (senders' sockets, read back): a sender \
             wrote only while less than that was queued unsent",
            range(flows.iter().map(|f| f.notsent_lowat_bytes)),
        );
        wrap(out, "", "  ", &line);
    }
}

/// The flows of a direction to show as rows: all of them, or the slowest few.
fn shown<'a>(flows: &[&'a FlowSummary], o: HumanOptions) -> (Vec<&'a FlowSummary>, bool) {
    if o.per_flow || flows.len() <= FLOW_ROWS_MAX {
        return (flows.to_vec(), false);
    }
    let mut v = flows.to_vec();
    v.sort_by(|a, b| {
        a.receiver_throughput_bps
            .total_cmp(&b.receiver_throughput_bps)
    });
    v.truncate(SLOWEST_SHOWN);
    (v, true)
}

/// The human block of a stream run (without CPU and warnings, which every workload prints):
/// the table and its legend, then with `-v` the per-direction notes and the engines (the
/// flows' spread alone otherwise).
pub(crate) fn block(out: &mut String, s: &StreamSummary, run: &RunRecord, o: HumanOptions) {
    let peak = s
        .directions
        .iter()
        .map(|d| d.receiver_throughput_bps)
        .fold(0.0, f64::max);
    // One unit for the whole table: the one that fits the largest total.
    let u = o.rate_unit.fixed(peak);
    let miss = Unreported::of(run);
    let unit = u.label(peak);
    out.push_str(&table_row([
        "flow",
        "dir",
        &format!("recv {unit}"),
        &format!("send {unit}"),
        "recv bytes",
        "send bytes",
        "retrans",
        "RTT µs",
        "cwnd seg",
    ]));
    out.push('\n');
    for d in &s.directions {
        let flows: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.dir == d.dir).collect();
        let (rows, summarized) = shown(&flows, o);
        if summarized {
            let _ = writeln!(
                out,
                "  ({} flows {}: the {} slowest; --per-flow shows every flow)",
                flows.len(),
                label::dir(d.dir),
                rows.len()
            );
        }
        for f in rows {
            out.push_str(&flow_row(f, u, miss));
            out.push('\n');
        }
        out.push_str(&total_row(d, u, miss));
        out.push('\n');
    }
    wrap(
        out,
        "",
        " ",
        &format!(
            "({unit} = {}; forward = client → server, reverse = server → client; retrans, \
             RTT, cwnd: the sender's TCP_INFO)",
            unit_meaning(unit)
        ),
    );
    if !o.verbose() {
        for d in &s.directions {
            spread_line(out, d, u);
        }
        return;
    }
    for d in &s.directions {
        let flows: Vec<&FlowSummary> = s.flows.iter().filter(|f| f.dir == d.dir).collect();
        direction_notes(out, d, &flows, u);
    }
    let engine = |r: &Option<SideReport>| {
        r.as_ref()
            .and_then(|r| r.engine.as_ref())
            .map_or_else(|| "not reported".into(), text::engine)
    };
    wrap(
        out,
        "",
        "  ",
        &format!(
            "engine: client {}; server {}",
            engine(&run.client),
            engine(&run.server)
        ),
    );
}

fn unit_meaning(unit: &str) -> &'static str {
    match unit {
        "Tbit/s" => "10^12 bit/s",
        "Gbit/s" => "10^9 bit/s",
        "Mbit/s" => "10^6 bit/s",
        "kbit/s" => "10^3 bit/s",
        "GB/s" => "10^9 bytes/s",
        "MB/s" => "10^6 bytes/s",
        "kB/s" => "10^3 bytes/s",
        _ => "as shown",
    }
}

/// One live interval line, e.g.
/// `[  1.00-  2.00 s] server recv forward  12.35 Gbit/s  1.44 GiB` (`(warm-up)` appended for an
/// interval that overlaps the warm-up). Times are seconds on the measuring end's clock.
pub(crate) fn interval_line(row: &IntervalRow, o: HumanOptions) -> String {
    format!(
        "{}{}",
        interval_head(row, o),
        if row.in_warmup { " (warm-up)" } else { "" }
    )
}

/// The columns of a sender's TCP_INFO on a live line: `  Retr 3  Cwnd 1.250 MiB`, `-` for
/// a sample that did not arrive.
fn tcp_cells(t: Option<&LiveTcp>) -> String {
    match t {
        Some(t) => format!(
            "  Retr {:>4}  Cwnd {:>10}",
            t.retransmits,
            units::bytes(t.cwnd_bytes)
        ),
        None => format!("  Retr {:>4}  Cwnd {:>10}", "-", "-"),
    }
}

/// The live lines of a stream direction's interval: the receiver's line with its sender's
/// retransmits and congestion window (iperf3's `Retr`, `Cwnd`), then with `--per-flow` and
/// more than one flow a line per flow, e.g.
/// `[  1.00-  2.00 s] server recv forward  12.35 Gbit/s  1.44 GiB  Retr    0  Cwnd  2.500 MiB`.
pub(crate) fn live_lines(r: &LiveStreamRow, o: HumanOptions) -> Vec<String> {
    let warm = if r.row.in_warmup { " (warm-up)" } else { "" };
    let mut out = vec![format!(
        "{}{}{warm}",
        interval_head(&r.row, o),
        tcp_cells(r.tcp.as_ref())
    )];
    if o.per_flow && r.flows.len() > 1 {
        for f in &r.flows {
            out.push(format!(
                "[{:6.2}-{:6.2} s]   flow {:<10} {:>14} {:>10}{}{warm}",
                r.row.start_s,
                r.row.end_s,
                f.flow,
                o.rate_unit.rate(f.throughput_bps),
                units::bytes(f.bytes),
                tcp_cells(f.tcp.as_ref())
            ));
        }
    }
    out
}

/// What the live stream lines count (printed once before the first).
pub const LIVE_LEGEND: &str = "(Retr, Cwnd: the sending end's TCP_INFO, the client's forward, the \
    server's reverse: segments retransmitted in its interval of that number, window at its end)";

/// The part of a live line every byte-counting workload shares: the span, the measuring end,
/// the direction, the rate and the bytes.
pub(crate) fn interval_head(row: &IntervalRow, o: HumanOptions) -> String {
    format!(
        "[{:6.2}-{:6.2} s] {} recv {:<7} {:>14} {:>10}",
        row.start_s,
        row.end_s,
        label::host(row.host),
        label::dir(row.dir),
        o.rate_unit.rate(row.throughput_bps),
        units::bytes(row.bytes),
    )
}
