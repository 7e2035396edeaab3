//! The TCP stream analysis.
//!
//! # Per flow
//!
//! - **Receiver** figures come from the end whose [`FlowSide`] for the flow has role
//!   `Receiver`; **sender** figures from the end whose `FlowSide` has role `Sender`. When one
//!   end's report is missing (or lacks the flow), the other end's figures are still used and
//!   the missing ones are 0 / absent, with a warning.
//! - `receiver_throughput_bps = window_bytes × 8 / (window length / 1e9)` over the receiver's
//!   own window (end of warm-up → arrival of the last byte); the sender's likewise over its
//!   window (end of warm-up → stop instant). A zero-length window gives 0 and a warning;
//!   nothing ever divides by zero.
//! - Retransmits, RTT, cwnd and MSS come from the sender's TCP_INFO (the sender is the end
//!   that retransmits and measures RTT); PMTU from the sender's socket (else the receiver's);
//!   SO_SNDBUF from the sender, SO_RCVBUF from the receiver; the congestion control from the
//!   sender (else the receiver).
//!
//! # Per direction
//!
//! - `receiver_throughput_bps = Σ receiver window_bytes × 8 / (max window end − min window
//!   start)` over the receivers of the direction's flows (the union of their windows, so it is
//!   at most the sum of the per-flow rates). Sender: the same over the senders.
//! - `unaccounted_bytes = Σ sender total_bytes − Σ receiver total_bytes` (whole test, warm-up
//!   included). TCP delivers every byte, so it is 0 on a complete run; when both ends report
//!   a completed run and it is not 0, a warning explains it.
//! - When the sender's and receiver's window bytes differ by more than 5 % of the receiver's,
//!   a note explains why they can (the sender counts bytes accepted into its socket buffer,
//!   the receiver bytes delivered, and the window edges at the two ends are apart by the
//!   bytes in flight).
//! - `flow_throughput` and `jain_index` are over the per-flow receiver throughputs.
//!
//! # Data paths
//!
//! Per flow, `send_path` is the path the sender's end reports, `recv_path` the receiver's;
//! `path_fallback` lists each end's fallback reason; `zerocopy` takes the send fields from the
//! sender's stats and the receive fields from the receiver's; verification figures are the
//! receiver's. Per direction: the distinct paths in flow order, the number of flows with a
//! fallback, and the sums of the flows' zero-copy and verification figures (`None` when no
//! flow has any).
//!
//! # Intervals
//!
//! Interval rows come from the end that *receives* each direction: per sample, the bytes of
//! that end's `Receiver` entries for the direction's flows, and `throughput_bps = bytes × 8 /
//! (interval length / 1e9)` (0 for an empty interval). Times are seconds after that end's
//! start, on that end's clock. TCP_INFO per interval: [`super::tcp_series`]. Whether the rate
//! held over them: [`super::stability`].

use std::collections::BTreeMap;

use wirebench_model::result::{
    DirectionSummary, EndFallback, EndFlowError, FlowSummary, IntervalRow, StreamSummary,
};
use wirebench_model::side::{
    ByteInterval, FlowSide, HostRole, PathUsed, RecvWaitStats, Role, SideReport, Span,
    TcpInfoReport, ZeroCopyStats,
};
use wirebench_model::spec::{CommonSpec, FlowDir, RecvPath, SendPath, StreamSpec, TestSpec};
use wirebench_model::warning::Warning;
use wirebench_stats::summary::{jain_index, spread};

use super::{rate_bps, receiver_of, sender_of, Warnings, DIRS};

/// Relative difference between sender and receiver window bytes above which a note explains
/// it, percent of the receiver's bytes.
pub const WINDOW_DIFF_NOTE_PCT: f64 = 5.0;

/// What a stream run delivered: receiver bits per second (all directions) and bytes.
pub(crate) fn delivered(s: &StreamSummary) -> (f64, u64) {
    (
        s.directions.iter().map(|d| d.receiver_throughput_bps).sum(),
        s.directions
            .iter()
            .fold(0u64, |a, d| a.saturating_add(d.receiver_bytes)),
    )
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
                r.stream()?
                    .flows
                    .iter()
                    .find(|f| f.flow == flow && f.role == role)
                    .map(|f| (*h, f))
            })
    };
    find(true).or_else(|| find(false))
}

/// Flow id → direction, from the spec alone.
pub(crate) fn spec_flow_map(spec: &TestSpec) -> BTreeMap<u32, FlowDir> {
    flow_dir_map(spec.flow_dirs())
}

/// Flow id → direction of `dirs`, the flows in flow-id order.
pub(crate) fn flow_dir_map(dirs: Vec<FlowDir>) -> BTreeMap<u32, FlowDir> {
    dirs.into_iter()
        .enumerate()
        .map(|(i, d)| (u32::try_from(i).unwrap_or(u32::MAX), d))
        .collect()
}

/// Flow id → direction: the spec's flows (`dirs`), plus any flow a report carries that the
/// spec does not (with a warning).
fn flow_map(
    dirs: Vec<FlowDir>,
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Warnings,
) -> BTreeMap<u32, FlowDir> {
    let mut map = flow_dir_map(dirs);
    for (host, r) in reports {
        for f in r.stream().map(|s| s.flows.as_slice()).unwrap_or_default() {
            if let std::collections::btree_map::Entry::Vacant(e) = map.entry(f.flow) {
                e.insert(f.dir);
                warnings.run(Warning::UnexpectedFlow {
                    host: *host,
                    flow: f.flow,
                });
            }
        }
    }
    map
}

/// Earliest start and latest end of a set of windows, as a length in ns (0 if none).
fn union_window_ns<'a>(sides: impl Iterator<Item = &'a FlowSide>) -> u64 {
    let spans: Vec<Span> = sides.map(|f| f.window).collect();
    let lo = spans.iter().map(|s| s.start_ns).min();
    let hi = spans.iter().map(|s| s.end_ns).max();
    match (lo, hi) {
        (Some(lo), Some(hi)) => hi.saturating_sub(lo),
        _ => 0,
    }
}

/// Both ends' view of one flow.
struct Joined<'a> {
    dir: FlowDir,
    sender: Option<(HostRole, &'a FlowSide)>,
    receiver: Option<(HostRole, &'a FlowSide)>,
}

/// The stream summary of both ends' reports of a test of `common` and `stream`.
pub(crate) fn summarize(
    (common, stream): (&CommonSpec, &StreamSpec),
    reports: &[(HostRole, &SideReport)],
    server_present: bool,
    warnings: &mut Warnings,
) -> StreamSummary {
    let map = flow_map(stream.direction.flow_dirs(common.flows), reports, warnings);
    let joined: Vec<(u32, Joined<'_>)> = map
        .iter()
        .map(|(&flow, &dir)| {
            let sender = locate(reports, flow, Role::Sender, sender_of(dir));
            let receiver = locate(reports, flow, Role::Receiver, receiver_of(dir));
            let j = Joined {
                dir,
                sender,
                receiver,
            };
            (flow, j)
        })
        .collect();
    let flows: Vec<FlowSummary> = joined
        .iter()
        .map(|(flow, j)| flow_summary(*flow, j, reports, warnings))
        .collect();
    let both_completed = server_present
        && reports
            .iter()
            .all(|(_, r)| r.status == wirebench_model::side::SideStatus::Completed);
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
        let worker_waits = reports
            .iter()
            .find(|(h, _)| *h == receiver_of(dir))
            .and_then(|(_, r)| r.stream())
            .map_or(&[][..], |s| s.worker_waits.as_slice());
        let ctx = DirectionCtx {
            dir,
            worker_waits,
            both_completed,
            both_present: server_present,
            stop_after: stream.stop_after_bytes.map(|n| (n, common.duration_ms)),
        };
        directions.push(direction_summary(&ctx, &members, &per_flow, warnings));
    }
    let mut intervals = Vec::new();
    for d in &directions {
        let host = receiver_of(d.dir);
        if let Some((_, r)) = reports.iter().find(|(h, _)| *h == host) {
            for s in r
                .stream()
                .map(|s| s.intervals.as_slice())
                .unwrap_or_default()
            {
                intervals.extend(interval_row(host, d.dir, &map, s));
            }
        }
    }
    for d in &directions {
        if let Some(w) = super::stability::rate_varied(d.dir, &intervals) {
            warnings.run(w);
        }
    }
    let tcp_intervals = directions
        .iter()
        .flat_map(|d| super::tcp_series::rows(sender_of(d.dir), d.dir, &map, reports))
        .collect();
    StreamSummary {
        directions,
        flows,
        intervals,
        tcp_intervals,
    }
}

/// A side's window bytes and rate; a zero-length window is rate 0 with a warning.
fn side_rate(
    flow: u32,
    side: Option<(HostRole, &FlowSide)>,
    warnings: &mut Warnings,
) -> (u64, f64) {
    let Some((host, f)) = side else {
        return (0, 0.0);
    };
    let bps = rate_bps(f.window_bytes, f.window.len_ns()).unwrap_or_else(|| {
        warnings.run(Warning::ZeroWindow {
            flow,
            host,
            role: f.role,
        });
        0.0
    });
    (f.window_bytes, bps)
}

/// One flow, both ends joined.
fn flow_summary(
    flow: u32,
    j: &Joined<'_>,
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Warnings,
) -> FlowSummary {
    let has_report = |h: HostRole| reports.iter().any(|(x, _)| *x == h);
    for (side, role, expected) in [
        (j.sender, Role::Sender, sender_of(j.dir)),
        (j.receiver, Role::Receiver, receiver_of(j.dir)),
    ] {
        if side.is_none() && has_report(expected) {
            warnings.run(Warning::MissingFlowFigures {
                flow,
                host: expected,
                role,
            });
        }
    }
    let (receiver_bytes, receiver_throughput_bps) = side_rate(flow, j.receiver, warnings);
    let (sender_bytes, sender_throughput_bps) = side_rate(flow, j.sender, warnings);
    let snd = j.sender.map(|(_, f)| f);
    let rcv = j.receiver.map(|(_, f)| f);
    let ti: Option<&TcpInfoReport> = snd.and_then(|f| f.socket.tcp_info.as_ref());
    let mut errors = Vec::new();
    let mut path_fallback = Vec::new();
    for (host, f) in [j.sender, j.receiver].into_iter().flatten() {
        if let Some(e) = &f.error {
            warnings.run(Warning::FlowFailed {
                flow,
                host,
                error: e.clone(),
            });
            errors.push(EndFlowError {
                host,
                error: e.clone(),
            });
        }
        if let Some(reason) = &f.path_fallback {
            path_fallback.push(EndFallback {
                host,
                reason: reason.clone(),
            });
        }
    }
    FlowSummary {
        flow,
        dir: j.dir,
        sender: j.sender.map_or_else(|| sender_of(j.dir), |(h, _)| h),
        receiver_bytes,
        receiver_throughput_bps,
        sender_bytes,
        sender_throughput_bps,
        sender_total_bytes: Some(snd.map_or(0, |f| f.total_bytes)),
        receiver_total_bytes: Some(rcv.map_or(0, |f| f.total_bytes)),
        retransmits: ti.map_or(0, |t| t.retransmits_total),
        dsack_segments: ti.and_then(|t| t.dsack_dups),
        rtt_us: ti.map(|t| t.rtt_us),
        cwnd_segments: ti.map(|t| t.snd_cwnd_segments),
        mss_bytes: ti.map(|t| t.snd_mss_bytes),
        pmtu_bytes: snd
            .and_then(|f| f.socket.pmtu_bytes)
            .or_else(|| ti.map(|t| t.pmtu_bytes).filter(|&p| p != 0))
            .or_else(|| rcv.and_then(|f| f.socket.pmtu_bytes)),
        sndbuf_bytes: snd.and_then(|f| f.socket.sndbuf_bytes),
        rcvbuf_bytes: rcv.and_then(|f| f.socket.rcvbuf_bytes),
        notsent_lowat_bytes: snd.and_then(|f| f.socket.notsent_lowat_bytes),
        congestion: snd
            .and_then(|f| f.socket.congestion.clone())
            .or_else(|| rcv.and_then(|f| f.socket.congestion.clone())),
        errors,
        send_path: snd.and_then(|f| match f.path {
            PathUsed::Send(p) => Some(p),
            PathUsed::Recv(_) => None,
        }),
        recv_path: rcv.and_then(|f| match f.path {
            PathUsed::Recv(p) => Some(p),
            PathUsed::Send(_) => None,
        }),
        path_fallback,
        zerocopy: joined_zerocopy(snd, rcv),
        verified_bytes: rcv.and_then(|f| f.verify.map(|v| v.verified_bytes)),
        verify_errors: rcv.and_then(|f| f.verify.map(|v| v.mismatched_bytes)),
        iperf3_end: None,
    }
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

/// The distinct values, in order of first appearance.
fn distinct<T: PartialEq + Copy>(values: impl Iterator<Item = Option<T>>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for v in values.flatten() {
        if !out.contains(&v) {
            out.push(v);
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

/// What a direction's summary needs to know besides its flows.
struct DirectionCtx<'a> {
    dir: FlowDir,
    /// The waits of the epoll workers at the end that received this direction (each
    /// end receives one direction only).
    worker_waits: &'a [RecvWaitStats],
    both_completed: bool,
    both_present: bool,
    /// `-n/-k`: the count asked for per direction, and the duration bound (ms).
    stop_after: Option<(u64, u64)>,
}

/// Totals of one direction.
fn direction_summary(
    ctx: &DirectionCtx<'_>,
    members: &[&Joined<'_>],
    per_flow: &[&FlowSummary],
    warnings: &mut Warnings,
) -> DirectionSummary {
    let dir = ctx.dir;
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
                warnings.run(Warning::EmptyDirectionWindow { dir, role });
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
    if ctx.both_completed && diff > 0 {
        warnings.run(Warning::UnreadBytes {
            dir,
            sender_total_bytes,
            receiver_total_bytes,
        });
    }
    if let Some((asked_bytes, bound_ms)) = ctx.stop_after {
        if ctx.both_present && receiver_total_bytes < asked_bytes {
            warnings.run(Warning::StopCountNotReached {
                dir,
                receiver_total_bytes,
                asked_bytes,
                bound_ms,
            });
        }
    }
    if ctx.both_present && receiver_bytes > 0 {
        let apart = (sender_bytes as f64 - receiver_bytes as f64).abs() / receiver_bytes as f64;
        if apart * 100.0 > WINDOW_DIFF_NOTE_PCT {
            warnings.run(Warning::WindowEdgeDifference {
                dir,
                sender_bytes,
                receiver_bytes,
            });
        }
    }
    let rates: Vec<f64> = per_flow
        .iter()
        .zip(members)
        .filter(|(_, j)| j.receiver.is_some())
        .map(|(f, _)| f.receiver_throughput_bps)
        .collect();
    DirectionSummary {
        dir,
        flows: u32::try_from(members.len()).unwrap_or(u32::MAX),
        receiver_bytes,
        receiver_window_ns,
        receiver_throughput_bps,
        sender_bytes,
        sender_window_ns,
        sender_throughput_bps,
        sender_total_bytes: Some(sender_total_bytes),
        receiver_total_bytes: Some(receiver_total_bytes),
        unaccounted_bytes: Some(unaccounted_bytes),
        retransmits: per_flow
            .iter()
            .fold(0u64, |a, f| a.saturating_add(u64::from(f.retransmits))),
        dsack_segments: per_flow
            .iter()
            .filter_map(|f| f.dsack_segments)
            .map(u64::from)
            .reduce(u64::saturating_add),
        flow_throughput: spread(&rates),
        jain_index: jain_index(&rates),
        send_paths: distinct::<SendPath>(per_flow.iter().map(|f| f.send_path)),
        recv_paths: distinct::<RecvPath>(per_flow.iter().map(|f| f.recv_path)),
        path_fallback_flows: u32::try_from(
            per_flow
                .iter()
                .filter(|f| !f.path_fallback.is_empty())
                .count(),
        )
        .unwrap_or(u32::MAX),
        zerocopy: per_flow.iter().filter_map(|f| f.zerocopy.as_ref()).fold(
            None,
            |acc: Option<ZeroCopyStats>, z| {
                let mut a = acc.unwrap_or_default();
                a.add(z);
                Some(a)
            },
        ),
        recv_wait: receivers
            .iter()
            .filter_map(|f| f.recv_wait.as_ref())
            .chain(ctx.worker_waits)
            .fold(None, |acc: Option<RecvWaitStats>, w| {
                let mut a = acc.unwrap_or_else(|| RecvWaitStats {
                    asked: w.asked,
                    ..RecvWaitStats::default()
                });
                a.add(w);
                Some(a)
            }),
        verified_bytes: sum_present(per_flow.iter().map(|f| f.verified_bytes)),
        verify_errors: sum_present(per_flow.iter().map(|f| f.verify_errors)),
        iperf3_end: None,
    }
}

/// The row of `dir` in one sample measured at `host`: the bytes of its `Receiver` entries for
/// the flows of `dir` (per `map`). `None` if the sample has no such entry.
pub(crate) fn interval_row(
    host: HostRole,
    dir: FlowDir,
    map: &BTreeMap<u32, FlowDir>,
    sample: &ByteInterval,
) -> Option<IntervalRow> {
    let mut any = false;
    let mut bytes = 0u64;
    for fi in &sample.flows {
        if fi.role == Role::Receiver && map.get(&fi.flow) == Some(&dir) {
            any = true;
            bytes = bytes.saturating_add(fi.bytes);
        }
    }
    any.then(|| IntervalRow {
        start_s: sample.span.start_ns as f64 / 1e9,
        end_s: sample.span.end_ns as f64 / 1e9,
        host,
        dir,
        bytes,
        throughput_bps: rate_bps(bytes, sample.span.len_ns()).unwrap_or(0.0),
        in_warmup: sample.in_warmup,
    })
}

/// One receiving flow's throughput per interval, as measured at its receiving end: `(end of
/// the interval in seconds after that end's start, bytes read × 8 / interval length)`, in
/// bit/s; intervals of zero length are left out.
pub fn receiver_flow_intervals(
    side: &wirebench_model::side::StreamSide,
) -> Vec<(u32, Vec<(f64, f64)>)> {
    side.flows
        .iter()
        .filter(|f| f.role == Role::Receiver)
        .map(|f| {
            let pts = side
                .intervals
                .iter()
                .filter_map(|i| {
                    let b = i
                        .flows
                        .iter()
                        .find(|x| x.flow == f.flow && x.role == Role::Receiver)?;
                    let len = i.span.end_ns.saturating_sub(i.span.start_ns);
                    Some((i.span.end_ns as f64 / 1e9, rate_bps(b.bytes, len)?))
                })
                .collect();
            (f.flow, pts)
        })
        .collect()
}
