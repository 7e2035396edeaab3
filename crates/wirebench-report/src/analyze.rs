//! The analysis: pure functions that turn both ends' [`SideReport`]s into the derived figures
//! of a [`Summary`], and repeated runs into an [`Aggregate`]. These definitions are the tool's
//! contract; the printers only format what is computed here.
//!
//! # Per flow
//!
//! - **Receiver** figures come from the end whose [`FlowSide`] for the flow has role
//!   `Receiver`; **sender** figures from the end whose `FlowSide` has role `Sender`. When one
//!   end's report is missing (or lacks the flow), the other end's figures are still used and
//!   the missing ones are 0 / absent, with a warning.
//! - `receiver_throughput_bps = window_bytes × 8 / ((window_end_ns − window_start_ns) / 1e9)`
//!   over the receiver's own window (end of warm-up → arrival of the last byte); the sender's
//!   likewise over its window (end of warm-up → stop instant). A zero-length window gives 0
//!   and a warning; nothing ever divides by zero.
//! - Retransmits, RTT, cwnd and MSS come from the sender's TCP_INFO (the sender is the end
//!   that retransmits and measures RTT); PMTU from the sender's socket (else the receiver's);
//!   SO_SNDBUF from the sender, SO_RCVBUF from the receiver; the congestion control from the
//!   sender (else the receiver).
//!
//! # Per direction
//!
//! - `receiver_throughput_bps = Σ receiver window_bytes × 8 / (max window_end_ns −
//!   min window_start_ns)` over the receivers of the direction's flows (the union of their
//!   windows, so it is at most the sum of the per-flow rates). Sender: the same over the
//!   senders.
//! - `unaccounted_bytes = Σ sender total_bytes − Σ receiver total_bytes` (whole test, warm-up
//!   included). TCP delivers every byte, so it is 0 on a complete run; when both ends report
//!   a completed run and it is not 0, a warning explains it (bytes sent but not read: the run
//!   was cut short or a flow failed).
//! - When the sender's and receiver's window bytes differ by more than 5 % of the receiver's,
//!   a note explains why they can: the sender counts bytes accepted into its socket buffer,
//!   the receiver bytes delivered, and the window edges at the two ends are apart by the bytes
//!   in flight.
//! - `flow_throughput` and `jain_index` are over the per-flow receiver throughputs.
//!
//! # Data paths
//!
//! - Per flow, `send_path` is the path the sender's end reports, `recv_path` the receiver's;
//!   `path_fallback` joins the ends' fallback reasons (`"sender (client): ..."`); `zerocopy`
//!   takes the send fields from the sender's stats and the receive fields from the
//!   receiver's; `verified_bytes` / `verify_errors` are the receiver's.
//! - Per direction, the distinct paths in flow order, the number of flows with a fallback,
//!   and the sums of the flows' zero-copy and verification figures (`None` when no flow has
//!   any). The fallback reasons themselves reach the warnings through the ends' warnings.
//!
//! # Intervals
//!
//! Interval rows come from the end that *receives* each direction: per sample, the bytes of
//! that end's `Receiver` entries for the direction's flows, and
//! `throughput_bps = bytes × 8 / ((end_ns − start_ns) / 1e9)` (0 for an empty interval).
//! Times are seconds after that end's start, on that end's clock.
//!
//! # CPU, per end
//!
//! - `system_busy_pct`: the whole machine's busy share over the end's CPU window (end of
//!   warm-up → stop), percent of all CPUs together.
//! - `threads_util_pct_of_one_cpu = (threads_user_ns + threads_system_ns) / window_ns × 100`.
//! - `service_demand_us_per_kb`: netperf's definition,
//!   [`us_per_kb`](wirebench_stats::demand::us_per_kb)`(system_busy_pct, cpus, T)` with `T`
//!   the total receiver throughput over all directions (what the test delivered).
//! - `threads_service_demand_us_per_kb`:
//!   [`us_per_kb_from_cpu_ns`](wirebench_stats::demand::us_per_kb_from_cpu_ns)`(threads user +
//!   system ns, Σ receiver window bytes)`.
//! - A warning when an end's busiest CPU is above 95 % busy (the result then measures that
//!   CPU, not the path), and when both ends share one machine (their system-wide figures
//!   count the same CPUs).
//!
//! Every warning of both reports is carried over, prefixed `client: ` / `server: `, and so
//! are flow errors.
//!
//! # Aggregate
//!
//! Over the runs that completed and have a summary: throughput = Σ of the directions'
//! `receiver_throughput_bps` per run; client and server CPU = each end's `system_busy_pct` per
//! run; Student-t intervals from [`wirebench_stats::ci::interval`]. `target_met` is true when
//! there is a throughput interval and every available interval's `width_pct` is at most the
//! target.

use std::collections::BTreeMap;

use wirebench_proto::measure::{
    FlowSide, HostRole, IntervalSample, Role, SideReport, SideStatus, TcpInfoReport, ZeroCopyStats,
};
use wirebench_proto::spec::{FlowDir, TestSpec, Workload};
use wirebench_stats::ci::{self, ConfidenceLevel, Interval};
use wirebench_stats::demand;
use wirebench_stats::summary::{jain_index, spread};

use crate::label;
use crate::schema::{
    Aggregate, DirectionSummary, EndCpu, FlowSummary, IntervalRow, RunRecord, RunStatus, Summary,
};

/// Busiest-CPU share above which a run is reported as CPU-bound, percent.
pub const CPU_BOUND_PCT: f64 = 95.0;

/// Relative difference between sender and receiver window bytes above which a note explains
/// it, percent of the receiver's bytes.
pub const WINDOW_DIFF_NOTE_PCT: f64 = 5.0;

/// Both directions, in report order.
const DIRS: [FlowDir; 2] = [FlowDir::ClientToServer, FlowDir::ServerToClient];

/// `bytes × 8 / (window_ns / 1e9)` in bits per second; `None` for an empty window.
fn rate_bps(bytes: u64, window_ns: u64) -> Option<f64> {
    if window_ns == 0 {
        return None;
    }
    let r = bytes as f64 * 8.0 / (window_ns as f64 / 1e9);
    r.is_finite().then_some(r)
}

/// Push `w` unless it is already there.
fn warn(warnings: &mut Vec<String>, w: String) {
    if !warnings.contains(&w) {
        warnings.push(w);
    }
}

/// The reports that exist, client first.
fn present<'a>(
    client: &'a SideReport,
    server: Option<&'a SideReport>,
) -> Vec<(HostRole, &'a SideReport)> {
    let mut v = vec![(HostRole::Client, client)];
    if let Some(s) = server {
        v.push((HostRole::Server, s));
    }
    v
}

/// The `FlowSide` of `flow` with `role`, looking at `preferred`'s report first.
fn locate<'a>(
    reports: &[(HostRole, &'a SideReport)],
    flow: u32,
    role: Role,
    preferred: HostRole,
) -> Option<(HostRole, &'a FlowSide)> {
    let find = |want_preferred: bool| {
        reports
            .iter()
            .filter(|(h, _)| (*h == preferred) == want_preferred)
            .find_map(|(h, r)| {
                r.flows
                    .iter()
                    .find(|f| f.flow == flow && f.role == role)
                    .map(|f| (*h, f))
            })
    };
    find(true).or_else(|| find(false))
}

/// Flow id → direction: the spec's flows, plus any flow a report carries that the spec does
/// not (with a warning).
fn flow_map(
    spec: &TestSpec,
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Vec<String>,
) -> BTreeMap<u32, FlowDir> {
    let mut map: BTreeMap<u32, FlowDir> = spec_flow_map(spec);
    for (host, r) in reports {
        for f in &r.flows {
            if let std::collections::btree_map::Entry::Vacant(e) = map.entry(f.flow) {
                e.insert(f.dir);
                warn(
                    warnings,
                    format!(
                        "{}: reports flow {} which the test spec does not have",
                        label::host(*host),
                        f.flow
                    ),
                );
            }
        }
    }
    map
}

/// Flow id → direction, from the spec alone.
fn spec_flow_map(spec: &TestSpec) -> BTreeMap<u32, FlowDir> {
    spec.flow_dirs()
        .into_iter()
        .enumerate()
        .map(|(i, d)| (u32::try_from(i).unwrap_or(u32::MAX), d))
        .collect()
}

/// Earliest start and latest end of a set of windows, as a length in ns (0 if none).
fn union_window_ns<'a>(sides: impl Iterator<Item = &'a FlowSide>) -> u64 {
    let mut lo = u64::MAX;
    let mut hi = 0u64;
    let mut any = false;
    for f in sides {
        any = true;
        lo = lo.min(f.window_start_ns);
        hi = hi.max(f.window_end_ns);
    }
    if any {
        hi.saturating_sub(lo)
    } else {
        0
    }
}

/// Both ends' view of one flow.
struct Joined<'a> {
    dir: FlowDir,
    sender: Option<(HostRole, &'a FlowSide)>,
    receiver: Option<(HostRole, &'a FlowSide)>,
}

/// Figures derived from both ends' reports of one run. See the module documentation for the
/// definitions. `server` is `None` when the server's report never arrived; `same_host` says
/// both ends ran on one machine (embedded server, loopback).
pub fn summarize(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    same_host: bool,
) -> Summary {
    let reports = present(client, server);
    let mut warnings: Vec<String> = Vec::new();

    if server.is_none() {
        warnings.push(
            "server: no report received; the figures only the server measures (receiver side \
             of forward flows, sender side of reverse flows, its CPU) are 0 or absent"
                .to_string(),
        );
    }
    for (host, r) in &reports {
        for w in &r.warnings {
            warn(&mut warnings, format!("{}: {w}", label::host(*host)));
        }
        if let SideStatus::Aborted(reason) = &r.status {
            warn(
                &mut warnings,
                format!(
                    "{}: its part of the test was aborted: {reason}",
                    label::host(*host)
                ),
            );
        }
    }

    if spec.workload != Workload::Stream {
        return summarize_rr_udp(spec, client, server, same_host, &reports, warnings);
    }

    let map = flow_map(spec, &reports, &mut warnings);
    let joined: Vec<(u32, Joined<'_>)> = map
        .iter()
        .map(|(&flow, &dir)| {
            let sender = locate(&reports, flow, Role::Sender, label::sender_of(dir));
            let receiver = locate(&reports, flow, Role::Receiver, label::receiver_of(dir));
            (
                flow,
                Joined {
                    dir,
                    sender,
                    receiver,
                },
            )
        })
        .collect();

    // Per flow.
    let mut flows = Vec::with_capacity(joined.len());
    for (flow, j) in &joined {
        flows.push(flow_summary(*flow, j, &reports, &mut warnings));
    }

    // Per direction.
    let both_completed = server.is_some()
        && reports
            .iter()
            .all(|(_, r)| matches!(r.status, SideStatus::Completed));
    let mut directions = Vec::new();
    for dir in DIRS {
        let members: Vec<&Joined<'_>> = joined
            .iter()
            .filter(|(_, j)| j.dir == dir)
            .map(|(_, j)| j)
            .collect();
        if members.is_empty() {
            continue;
        }
        let per_flow: Vec<&FlowSummary> = flows.iter().filter(|f| f.dir == dir).collect();
        directions.push(direction_summary(
            dir,
            &members,
            &per_flow,
            both_completed,
            server.is_some(),
            &mut warnings,
        ));
    }

    // Intervals, from the receiving end of each direction.
    let mut intervals = Vec::new();
    for d in &directions {
        let host = label::receiver_of(d.dir);
        if let Some((_, r)) = reports.iter().find(|(h, _)| *h == host) {
            for s in &r.intervals {
                if let Some(row) = interval_row(host, d.dir, &map, s) {
                    intervals.push(row);
                }
            }
        }
    }

    // CPU.
    let delivered_bps: f64 = directions.iter().map(|d| d.receiver_throughput_bps).sum();
    let delivered_bytes: u64 = directions
        .iter()
        .fold(0u64, |a, d| a.saturating_add(d.receiver_bytes));
    let cpu = ends_cpu(
        &reports,
        (delivered_bps, delivered_bytes),
        None,
        same_host,
        &mut warnings,
    );

    // Congestion control actually in use.
    let mut congestion: Vec<String> = Vec::new();
    for (_, r) in &reports {
        for f in &r.flows {
            if let Some(cc) = &f.congestion {
                if !congestion.contains(cc) {
                    congestion.push(cc.clone());
                }
            }
        }
    }
    if let Some(want) = &spec.congestion {
        for cc in congestion.iter().filter(|cc| *cc != want) {
            warn(
                &mut warnings,
                format!("congestion control {cc} is in use although {want} was requested"),
            );
        }
    }
    if congestion.is_empty() && !flows.is_empty() {
        warn(
            &mut warnings,
            "the congestion control in use was not reported by either end".to_string(),
        );
    }

    Summary {
        directions,
        flows,
        intervals,
        cpu,
        congestion,
        same_host,
        warnings,
        rr: None,
        udp: None,
    }
}

/// [`summarize`] for the request/response and UDP stream workloads (definitions in
/// [`crate::analyze_rr`]).
fn summarize_rr_udp(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    same_host: bool,
    reports: &[(HostRole, &SideReport)],
    mut warnings: Vec<String>,
) -> Summary {
    let (rr, udp) = if spec.workload.is_rr() {
        (
            crate::analyze_rr::rr_summary(spec, client, server, &mut warnings),
            None,
        )
    } else {
        (
            None,
            Some(crate::analyze_rr::udp_summary(
                spec,
                client,
                server,
                &mut warnings,
            )),
        )
    };
    // Intervals: UDP bytes at the receiving end of each direction.
    let mut intervals = Vec::new();
    if let Some(u) = &udp {
        let map = spec_flow_map(spec);
        for d in &u.directions {
            let host = label::receiver_of(d.dir);
            if let Some((_, r)) = reports.iter().find(|(h, _)| *h == host) {
                intervals.extend(
                    r.intervals
                        .iter()
                        .filter_map(|s| interval_row(host, d.dir, &map, s)),
                );
            }
        }
    }
    let (delivered_bps, delivered_bytes) = udp.as_ref().map_or((0.0, 0), |u| {
        (
            u.directions.iter().map(|d| d.receiver_rate_bps).sum(),
            u.directions
                .iter()
                .fold(0u64, |a, d| a.saturating_add(d.receiver_bytes)),
        )
    });
    let tx = rr.as_ref().map(|r| (r.transactions_per_s, r.transactions));
    let cpu = ends_cpu(
        reports,
        (delivered_bps, delivered_bytes),
        tx,
        same_host,
        &mut warnings,
    );
    // TCP workloads: the congestion control asked for, else each end's default.
    let mut congestion: Vec<String> = Vec::new();
    if matches!(spec.workload, Workload::Rr | Workload::Crr) {
        let named = spec.congestion.clone().into_iter();
        let defaults = reports
            .iter()
            .filter_map(|(_, r)| r.env.default_congestion.clone());
        for cc in named.chain(defaults) {
            if !congestion.contains(&cc) {
                congestion.push(cc);
            }
            if spec.congestion.is_some() {
                break;
            }
        }
    }
    Summary {
        directions: Vec::new(),
        flows: Vec::new(),
        intervals,
        cpu,
        congestion,
        same_host,
        warnings,
        rr,
        udp,
    }
}

/// One flow, both ends joined.
fn flow_summary(
    flow: u32,
    j: &Joined<'_>,
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Vec<String>,
) -> FlowSummary {
    let has_report = |h: HostRole| reports.iter().any(|(x, _)| *x == h);
    for (side, role, expected) in [
        (j.sender, Role::Sender, label::sender_of(j.dir)),
        (j.receiver, Role::Receiver, label::receiver_of(j.dir)),
    ] {
        if side.is_none() && has_report(expected) {
            warn(
                warnings,
                format!(
                    "flow {flow}: the {} report has no {} figures for it; they are 0",
                    label::host(expected),
                    label::role(role)
                ),
            );
        }
    }

    let mut side_rate = |side: Option<(HostRole, &FlowSide)>, role: Role| -> (u64, f64) {
        let Some((host, f)) = side else {
            return (0, 0.0);
        };
        let ns = f.window_end_ns.saturating_sub(f.window_start_ns);
        let bps = rate_bps(f.window_bytes, ns).unwrap_or_else(|| {
            warn(
                warnings,
                format!(
                    "flow {flow}: the {} ({}) has a zero-length measurement window; its \
                     throughput is reported as 0",
                    label::role(role),
                    label::host(host)
                ),
            );
            0.0
        });
        (f.window_bytes, bps)
    };
    let (receiver_bytes, receiver_throughput_bps) = side_rate(j.receiver, Role::Receiver);
    let (sender_bytes, sender_throughput_bps) = side_rate(j.sender, Role::Sender);

    let snd = j.sender.map(|(_, f)| f);
    let rcv = j.receiver.map(|(_, f)| f);
    let ti: Option<&TcpInfoReport> = snd.and_then(|f| f.tcp_info.as_ref());

    let mut errors = Vec::new();
    for side in [j.sender, j.receiver].into_iter().flatten() {
        let (host, f) = side;
        if let Some(e) = &f.error {
            let text = format!("{} ({}): {e}", label::role(f.role), label::host(host));
            warn(warnings, format!("flow {flow}: {text}"));
            errors.push(text);
        }
    }

    FlowSummary {
        flow,
        dir: j.dir,
        sender: j.sender.map_or_else(|| label::sender_of(j.dir), |(h, _)| h),
        receiver_bytes,
        receiver_throughput_bps,
        sender_bytes,
        sender_throughput_bps,
        sender_total_bytes: snd.map_or(0, |f| f.total_bytes),
        receiver_total_bytes: rcv.map_or(0, |f| f.total_bytes),
        retransmits: ti.map_or(0, |t| t.retransmits_total),
        rtt_us: ti.map(|t| t.rtt_us),
        cwnd_segments: ti.map(|t| t.snd_cwnd_segments),
        mss_bytes: ti.map(|t| t.snd_mss_bytes),
        pmtu_bytes: snd
            .and_then(|f| f.pmtu_bytes)
            .or_else(|| ti.map(|t| t.pmtu_bytes).filter(|&p| p != 0))
            .or_else(|| rcv.and_then(|f| f.pmtu_bytes)),
        sndbuf_bytes: snd.and_then(|f| f.sndbuf_bytes),
        rcvbuf_bytes: rcv.and_then(|f| f.rcvbuf_bytes),
        congestion: snd
            .and_then(|f| f.congestion.clone())
            .or_else(|| rcv.and_then(|f| f.congestion.clone())),
        error: (!errors.is_empty()).then(|| errors.join("; ")),
        send_path: snd.and_then(|f| f.path.clone()),
        recv_path: rcv.and_then(|f| f.path.clone()),
        path_fallback: path_fallback(j),
        zerocopy: joined_zerocopy(snd, rcv),
        verified_bytes: rcv.and_then(|f| f.verified_bytes),
        verify_errors: rcv.and_then(|f| f.verify_errors),
    }
}

/// Both ends' fallback reasons of a flow, labelled with role and host.
fn path_fallback(j: &Joined<'_>) -> Option<String> {
    let reasons: Vec<String> = [j.sender, j.receiver]
        .into_iter()
        .flatten()
        .filter_map(|(host, f)| {
            f.path_fallback
                .as_ref()
                .map(|r| format!("{} ({}): {r}", label::role(f.role), label::host(host)))
        })
        .collect();
    (!reasons.is_empty()).then(|| reasons.join("; "))
}

/// The sender's send-side and the receiver's receive-side zero-copy figures of one flow.
fn joined_zerocopy(snd: Option<&FlowSide>, rcv: Option<&FlowSide>) -> Option<ZeroCopyStats> {
    let s = snd.and_then(|f| f.zerocopy.as_ref());
    let r = rcv.and_then(|f| f.zerocopy.as_ref());
    if s.is_none() && r.is_none() {
        return None;
    }
    let s = s.cloned().unwrap_or_default();
    let r = r.cloned().unwrap_or_default();
    Some(ZeroCopyStats {
        sends: s.sends,
        sends_completed_zerocopy: s.sends_completed_zerocopy,
        sends_completed_copied: s.sends_completed_copied,
        bytes_mapped: r.bytes_mapped,
        bytes_copied: r.bytes_copied,
    })
}

/// The sum of some zero-copy figures; `None` if there are none.
fn sum_zerocopy<'a>(stats: impl Iterator<Item = &'a ZeroCopyStats>) -> Option<ZeroCopyStats> {
    stats.fold(None, |acc: Option<ZeroCopyStats>, z| {
        let a = acc.unwrap_or_default();
        Some(ZeroCopyStats {
            sends: a.sends.saturating_add(z.sends),
            sends_completed_zerocopy: a
                .sends_completed_zerocopy
                .saturating_add(z.sends_completed_zerocopy),
            sends_completed_copied: a
                .sends_completed_copied
                .saturating_add(z.sends_completed_copied),
            bytes_mapped: a.bytes_mapped.saturating_add(z.bytes_mapped),
            bytes_copied: a.bytes_copied.saturating_add(z.bytes_copied),
        })
    })
}

/// The distinct values, in order of first appearance.
fn distinct<'a>(values: impl Iterator<Item = Option<&'a String>>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in values.flatten() {
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

/// The sum of the values present; `None` if none is.
fn sum_present(values: impl Iterator<Item = Option<u64>>) -> Option<u64> {
    values.flatten().fold(None, |a: Option<u64>, v| {
        Some(a.unwrap_or(0).saturating_add(v))
    })
}

/// Totals of one direction.
fn direction_summary(
    dir: FlowDir,
    members: &[&Joined<'_>],
    per_flow: &[&FlowSummary],
    both_completed: bool,
    both_present: bool,
    warnings: &mut Vec<String>,
) -> DirectionSummary {
    let name = label::dir(dir);
    let receivers: Vec<&FlowSide> = members
        .iter()
        .filter_map(|j| j.receiver.map(|(_, f)| f))
        .collect();
    let senders: Vec<&FlowSide> = members
        .iter()
        .filter_map(|j| j.sender.map(|(_, f)| f))
        .collect();
    let sum = |v: &[&FlowSide], pick: fn(&FlowSide) -> u64| {
        v.iter().fold(0u64, |a, f| a.saturating_add(pick(f)))
    };
    let receiver_bytes = sum(&receivers, |f| f.window_bytes);
    let sender_bytes = sum(&senders, |f| f.window_bytes);
    let receiver_total_bytes = sum(&receivers, |f| f.total_bytes);
    let sender_total_bytes = sum(&senders, |f| f.total_bytes);
    let receiver_window_ns = union_window_ns(receivers.iter().copied());
    let sender_window_ns = union_window_ns(senders.iter().copied());

    let mut total_rate = |bytes: u64, ns: u64, sides: &[&FlowSide], role: Role| -> f64 {
        rate_bps(bytes, ns).unwrap_or_else(|| {
            if !sides.is_empty() {
                warn(
                    warnings,
                    format!(
                        "{name}: the {}s' measurement window is empty; the total {} \
                         throughput is reported as 0",
                        label::role(role),
                        label::role(role)
                    ),
                );
            }
            0.0
        })
    };
    let receiver_throughput_bps = total_rate(
        receiver_bytes,
        receiver_window_ns,
        &receivers,
        Role::Receiver,
    );
    let sender_throughput_bps = total_rate(sender_bytes, sender_window_ns, &senders, Role::Sender);

    let diff = i128::from(sender_total_bytes) - i128::from(receiver_total_bytes);
    let unaccounted_bytes =
        i64::try_from(diff).unwrap_or(if diff < 0 { i64::MIN } else { i64::MAX });
    if both_completed && diff > 0 {
        warn(
            warnings,
            format!(
                "{name}: {diff} bytes were sent but never read (senders wrote \
                 {sender_total_bytes}, receivers read {receiver_total_bytes}): the run was cut \
                 short or a flow failed"
            ),
        );
    } else if both_completed && diff < 0 {
        warn(
            warnings,
            format!(
                "{name}: the receivers read {} bytes more than the senders report writing \
                 ({receiver_total_bytes} vs {sender_total_bytes}): the two reports are \
                 inconsistent",
                diff.unsigned_abs()
            ),
        );
    }
    if both_present && receiver_bytes > 0 {
        let apart = (sender_bytes as f64 - receiver_bytes as f64).abs() / receiver_bytes as f64;
        if apart * 100.0 > WINDOW_DIFF_NOTE_PCT {
            warn(
                warnings,
                format!(
                    "note: {name}: senders counted {sender_bytes} bytes in their window, \
                     receivers {receiver_bytes} ({:.1}% apart): the sender counts bytes \
                     accepted into its socket buffer, the receiver bytes delivered, and the \
                     warm-up/stop edges at the two ends differ by the bytes in flight",
                    apart * 100.0
                ),
            );
        }
    }

    let rates: Vec<f64> = per_flow
        .iter()
        .zip(members)
        .filter(|(_, j)| j.receiver.is_some())
        .map(|(f, _)| f.receiver_throughput_bps)
        .collect();
    let retransmits = per_flow
        .iter()
        .fold(0u64, |a, f| a.saturating_add(u64::from(f.retransmits)));

    DirectionSummary {
        dir,
        flows: u32::try_from(members.len()).unwrap_or(u32::MAX),
        receiver_bytes,
        receiver_window_ns,
        receiver_throughput_bps,
        sender_bytes,
        sender_window_ns,
        sender_throughput_bps,
        sender_total_bytes,
        receiver_total_bytes,
        unaccounted_bytes,
        retransmits,
        flow_throughput: spread(&rates),
        jain_index: jain_index(&rates),
        send_paths: distinct(per_flow.iter().map(|f| f.send_path.as_ref())),
        recv_paths: distinct(per_flow.iter().map(|f| f.recv_path.as_ref())),
        path_fallback_flows: u32::try_from(
            per_flow
                .iter()
                .filter(|f| f.path_fallback.is_some())
                .count(),
        )
        .unwrap_or(u32::MAX),
        zerocopy: sum_zerocopy(per_flow.iter().filter_map(|f| f.zerocopy.as_ref())),
        verified_bytes: sum_present(per_flow.iter().map(|f| f.verified_bytes)),
        verify_errors: sum_present(per_flow.iter().map(|f| f.verify_errors)),
    }
}

/// CPU figures of one end.
/// [`end_cpu`] of every end that measured CPU (a warning for one that did not), and the
/// warning that both ends' system-wide figures count the same CPUs when `same_host`.
fn ends_cpu(
    reports: &[(HostRole, &SideReport)],
    delivered: (f64, u64),
    transactions: Option<(f64, u64)>,
    same_host: bool,
    warnings: &mut Vec<String>,
) -> Vec<EndCpu> {
    let mut cpu = Vec::new();
    for (host, r) in reports {
        match &r.cpu {
            Some(c) => cpu.push(end_cpu(*host, c, delivered, transactions, warnings)),
            None => warn(
                warnings,
                format!("{}: no CPU figures were measured", label::host(*host)),
            ),
        }
    }
    if same_host {
        warn(
            warnings,
            "client and server ran on one machine: their system-wide CPU figures count the same \
             CPUs (the work of both ends together)"
                .to_string(),
        );
    }
    cpu
}

fn end_cpu(
    host: HostRole,
    c: &wirebench_proto::measure::CpuReport,
    (delivered_bps, delivered_bytes): (f64, u64),
    transactions: Option<(f64, u64)>,
    warnings: &mut Vec<String>,
) -> EndCpu {
    let name = label::host(host);
    let window_ns = c.window_end_ns.saturating_sub(c.window_start_ns);
    let threads_ns = c.threads_user_ns.saturating_add(c.threads_system_ns);
    let threads_util_pct_of_one_cpu = if window_ns == 0 {
        warn(
            warnings,
            format!("{name}: the CPU window is empty; thread utilization is reported as 0"),
        );
        0.0
    } else {
        threads_ns as f64 / window_ns as f64 * 100.0
    };
    let sys = &c.system;
    // /proc/stat is sampled at the scheduler tick: short bursts of work between idle periods
    // (a paced sender, a request/response ping-pong) can escape it, while the threads' own
    // times are exact. Say so when the machine-wide figure is below the threads' alone.
    let system_ns = sys.total.busy_pct / 100.0 * f64::from(sys.cpus) * window_ns as f64;
    if threads_ns > 20_000_000 && (threads_ns as f64) > 1.5 * system_ns {
        warn(
            warnings,
            format!(
                "{name}: the system-wide CPU figures ({:.1} % busy, tick-sampled /proc/stat) are \
                 below wirebench's own threads' exact CPU time; treat them as a lower bound",
                sys.total.busy_pct
            ),
        );
    }
    if sys.busiest.busy_pct > CPU_BOUND_PCT {
        warn(
            warnings,
            format!(
                "CPU-bound: {name} CPU {} at {:.0}% busy — the result measures the CPU, not \
                 the path",
                sys.busiest_cpu, sys.busiest.busy_pct
            ),
        );
    }
    EndCpu {
        host,
        window_ns,
        cpus: sys.cpus,
        system_busy_pct: sys.total.busy_pct,
        system: sys.total,
        busiest_cpu: sys.busiest_cpu,
        busiest: sys.busiest,
        threads_user_ns: c.threads_user_ns,
        threads_system_ns: c.threads_system_ns,
        threads_util_pct_of_one_cpu,
        service_demand_us_per_kb: demand::us_per_kb(sys.total.busy_pct, sys.cpus, delivered_bps),
        threads_service_demand_us_per_kb: demand::us_per_kb_from_cpu_ns(
            threads_ns,
            delivered_bytes,
        ),
        service_demand_us_per_tx: transactions
            .and_then(|(tps, _)| demand::us_per_transaction(sys.total.busy_pct, sys.cpus, tps)),
        threads_service_demand_us_per_tx: transactions
            .and_then(|(_, n)| demand::us_per_transaction_from_cpu_ns(threads_ns, n)),
    }
}

/// The row of `dir` in one sample measured at `host`: the bytes of its `Receiver` entries for
/// the flows of `dir` (per `map`). `None` if the sample has no such entry.
fn interval_row(
    host: HostRole,
    dir: FlowDir,
    map: &BTreeMap<u32, FlowDir>,
    sample: &IntervalSample,
) -> Option<IntervalRow> {
    let mut any = false;
    let mut bytes = 0u64;
    for fi in &sample.flows {
        if fi.role == Role::Receiver && map.get(&fi.flow) == Some(&dir) {
            any = true;
            bytes = bytes.saturating_add(fi.bytes);
        }
    }
    if !any {
        return None;
    }
    let ns = sample.end_ns.saturating_sub(sample.start_ns);
    Some(IntervalRow {
        start_s: sample.start_ns as f64 / 1e9,
        end_s: sample.end_ns as f64 / 1e9,
        host,
        dir,
        bytes,
        throughput_bps: rate_bps(bytes, ns).unwrap_or(0.0),
        in_warmup: sample.in_warmup,
    })
}

/// Rows of one live interval sample measured at `host`: one per direction of `spec` that
/// `host` receives and for which the sample has receiver entries (none for a sample from a
/// pure sender). Definitions as in [`summarize`].
pub fn interval_rows(host: HostRole, spec: &TestSpec, sample: &IntervalSample) -> Vec<IntervalRow> {
    let map = spec_flow_map(spec);
    DIRS.into_iter()
        .filter(|&d| label::receiver_of(d) == host)
        .filter_map(|d| interval_row(host, d, &map, sample))
        .collect()
}

/// A confidence interval that can be written as JSON (every field finite).
fn finite(iv: Option<Interval>) -> Option<Interval> {
    iv.filter(|i| {
        [i.mean, i.stddev, i.half_width, i.low, i.high, i.width_pct]
            .iter()
            .all(|x| x.is_finite())
    })
}

/// Confidence intervals over `runs` at `level`, and whether each is at most
/// `target_width_pct` percent of its mean wide (full width, netperf's `-I` convention).
///
/// Only runs with status `Completed` and a summary count. Intervals need at least two such
/// runs. An interval with a non-finite width (mean 0) counts as not meeting the target and is
/// left out of the result, so the document stays valid JSON. A NaN or negative target is
/// treated as 0.
pub fn aggregate(runs: &[RunRecord], level: ConfidenceLevel, target_width_pct: f64) -> Aggregate {
    let target = if target_width_pct.is_nan() {
        0.0
    } else {
        target_width_pct.clamp(0.0, f64::MAX)
    };
    let mut tp = Vec::new();
    let mut tps = Vec::new();
    let mut p50 = Vec::new();
    let mut client_cpu = Vec::new();
    let mut server_cpu = Vec::new();
    for run in runs.iter().filter(|r| r.status == RunStatus::Completed) {
        let Some(s) = &run.summary else { continue };
        match (&s.rr, &s.udp) {
            (Some(rr), _) => {
                tps.push(rr.transactions_per_s);
                if let Some(l) = &rr.latency {
                    p50.push(l.p50_ns as f64);
                }
            }
            (None, Some(u)) => tp.push(u.directions.iter().map(|d| d.receiver_rate_bps).sum()),
            (None, None) => tp.push(s.directions.iter().map(|d| d.receiver_throughput_bps).sum()),
        }
        for c in &s.cpu {
            match c.host {
                HostRole::Client => client_cpu.push(c.system_busy_pct),
                HostRole::Server => server_cpu.push(c.system_busy_pct),
            }
        }
    }
    let throughput_bps = ci::interval(&tp, level);
    let transactions_per_s = ci::interval(&tps, level);
    let rtt_p50_ns = ci::interval(&p50, level);
    let client_cpu_busy_pct = ci::interval(&client_cpu, level);
    let server_cpu_busy_pct = ci::interval(&server_cpu, level);
    let target_met = (throughput_bps.is_some() || transactions_per_s.is_some())
        && [
            &throughput_bps,
            &transactions_per_s,
            &client_cpu_busy_pct,
            &server_cpu_busy_pct,
        ]
        .into_iter()
        .flatten()
        .all(|i| i.within(target));
    Aggregate {
        level_pct: level.pct(),
        target_width_pct: target,
        target_met,
        runs: u32::try_from(runs.len()).unwrap_or(u32::MAX),
        throughput_bps: finite(throughput_bps),
        transactions_per_s: finite(transactions_per_s),
        rtt_p50_ns: finite(rtt_p50_ns),
        client_cpu_busy_pct: finite(client_cpu_busy_pct),
        server_cpu_busy_pct: finite(server_cpu_busy_pct),
    }
}
