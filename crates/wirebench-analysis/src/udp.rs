//! The UDP stream analysis.
//!
//! - Window counts are the datagrams *sent* inside the sender's window, as each end counted
//!   them (the receiver classifies by the send time in each header), so
//!   `window_lost = window_sent − window_received` is exact. Totals cover the whole test.
//! - `sender_rate_bps = window bytes sent × 8 / sender window`; `receiver_rate_bps = window
//!   bytes received × 8 / the same sender window` (the same datagrams; the receiver's rate is
//!   the sender's minus what was lost).
//! - Direction figures are sums over the direction's flows; `jitter_max_ns` is the largest
//!   flow jitter; `invalid_datagrams` sums the receiving end's socket counts.
//! - Interval rows (at the receiving end): datagrams, the sequence numbers the interval
//!   covered (`expected`) and those lost in it, summed over the direction's flows as the
//!   engine counted them per flow (`UdpFlowInterval`: the advance of the highest sequence
//!   number minus the distinct datagrams received, clamped at 0);
//!   `loss_pct = lost / expected`; `jitter_max_ns` the largest flow jitter at the
//!   interval's end.
//!
//! # Where the lost datagrams went (per direction, whole test)
//!
//! Every sequence number the senders used and the receivers never got is lost somewhere:
//! `total_lost = Σ (datagrams_sent + send_refused) − Σ datagrams_received` (a refused send
//! still used its sequence number). It is split, from counts read from the kernel:
//!
//! - `refused_at_sender` = Σ `send_refused` (ENOBUFS: the datagram never left the host);
//! - `dropped_at_receiving_sockets` = Σ of the receive sockets' SO_RXQ_OVFL drop counts
//!   (`None` if any socket could not report it);
//! - `dropped_by_receiving_host` = the receiving end's /proc/net/snmp `InErrors` delta minus
//!   the socket drops (clamped at 0; `None` when not read). `InErrors` includes
//!   `RcvbufErrors`, which are the socket drops counted by the host, so only the rest is
//!   added;
//! - `lost_in_path` = `total_lost` minus the three above, clamped at 0: what the two hosts
//!   did not drop themselves.
//!
//! The host counters cover the receiver's whole network namespace over the test, so other
//! UDP traffic there would be attributed to this test too; the tool's own tests run in
//! private namespaces.

use wirebench_model::result::{
    EndFlowError, IntervalRow, UdpCounts, UdpDirectionSummary, UdpFlowSummary, UdpIntervalRow,
    UdpLossAttribution, UdpSummary,
};
use wirebench_model::side::{HostRole, SideReport};
use wirebench_model::spec::{CommonSpec, FlowDir, UdpStreamSpec};
use wirebench_model::udp::{UdpFlowInterval, UdpInterval, UdpRecvReport, UdpSendReport, UdpSide};
use wirebench_model::warning::Warning;

use super::{per_s, receiver_of, sender_of, Warnings, DIRS};

fn bps(bytes: u64, window_ns: u64) -> f64 {
    per_s(bytes, window_ns) * 8.0
}

/// What a UDP run delivered: receiver bits per second (all directions) and bytes.
pub(crate) fn delivered(u: &UdpSummary) -> (f64, u64) {
    (
        u.directions.iter().map(|d| d.receiver_rate_bps).sum(),
        u.directions
            .iter()
            .fold(0u64, |a, d| a.saturating_add(d.receiver_bytes)),
    )
}

fn loss_pct(lost: i64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        lost as f64 / sent as f64 * 100.0
    }
}

/// The counts of one flow from its sender's and receiver's reports.
pub fn counts(snd: Option<&UdpSendReport>, rcv: Option<&UdpRecvReport>) -> UdpCounts {
    let window_sent = snd.map_or(0, |s| s.window_datagrams_sent);
    let window_received = rcv.map_or(0, |r| r.window_datagrams_received);
    let total_sent = snd.map_or(0, |s| s.datagrams_sent);
    let total_received = rcv.map_or(0, |r| r.datagrams_received);
    let window_lost = window_sent as i64 - window_received as i64;
    UdpCounts {
        window_sent,
        window_received,
        window_lost,
        window_loss_pct: loss_pct(window_lost, window_sent),
        total_sent,
        total_received,
        total_lost: total_sent as i64 - total_received as i64,
        late: rcv.map_or(0, |r| r.late),
        duplicate: rcv.map_or(0, |r| r.duplicate),
        too_old: rcv.map_or(0, |r| r.too_old),
        send_refused: snd.map_or(0, |s| s.send_refused),
        send_errors: snd.map_or(0, |s| s.send_errors),
        pacing_resets: snd.map_or(0, |s| s.pacing_resets),
    }
}

/// `a += b`, field by field (the loss percentage recomputed).
pub fn add(a: &mut UdpCounts, b: &UdpCounts) {
    a.window_sent += b.window_sent;
    a.window_received += b.window_received;
    a.window_lost += b.window_lost;
    a.total_sent += b.total_sent;
    a.total_received += b.total_received;
    a.total_lost += b.total_lost;
    a.late += b.late;
    a.duplicate += b.duplicate;
    a.too_old += b.too_old;
    a.send_refused += b.send_refused;
    a.send_errors += b.send_errors;
    a.pacing_resets += b.pacing_resets;
    a.window_loss_pct = loss_pct(a.window_lost, a.window_sent);
}

/// Where a direction's lost datagrams went (see the module docs), from its summed counts and
/// the receiving end's report.
pub fn attribute_loss(c: &UdpCounts, receiving: Option<&UdpSide>) -> UdpLossAttribution {
    let total_lost = (c.total_sent + c.send_refused).saturating_sub(c.total_received);
    let refused_at_sender = c.send_refused;
    let dropped_at_receiving_sockets = receiving.and_then(|u| {
        u.sockets
            .iter()
            .map(|s| s.rcvbuf_drops)
            .try_fold(0u64, |a, d| Some(a.saturating_add(d?)))
    });
    let dropped_by_receiving_host = receiving.and_then(|u| u.host_drops).map(|h| {
        h.in_errors
            .saturating_sub(dropped_at_receiving_sockets.unwrap_or(h.rcvbuf_errors))
    });
    let lost_in_path = total_lost
        .saturating_sub(refused_at_sender)
        .saturating_sub(dropped_at_receiving_sockets.unwrap_or(0))
        .saturating_sub(dropped_by_receiving_host.unwrap_or(0));
    UdpLossAttribution {
        total_lost,
        refused_at_sender,
        dropped_at_receiving_sockets,
        dropped_by_receiving_host,
        lost_in_path,
    }
}

/// One flow joined: window length, sent and received window bytes, and the summary.
struct FlowJoin {
    window_ns: u64,
    sent_bytes: u64,
    recv_bytes: u64,
    shape: Option<(u32, Option<u64>)>,
    summary: UdpFlowSummary,
}

/// The UDP stream summary from both ends' reports of a test of `common` and `udp`.
pub(crate) fn summarize(
    (common, udp): (&CommonSpec, &UdpStreamSpec),
    reports: &[(HostRole, &SideReport)],
    warnings: &mut Warnings,
) -> UdpSummary {
    let end = |h: HostRole| {
        reports
            .iter()
            .find(|(x, _)| *x == h)
            .and_then(|(_, r)| r.udp())
    };
    let map = super::stream::flow_dir_map(udp.direction.flow_dirs(common.flows));
    let mut flows = Vec::new();
    for (&flow, &dir) in &map {
        let snd = end(sender_of(dir)).and_then(|u| u.senders.iter().find(|s| s.flow == flow));
        let rcv = end(receiver_of(dir)).and_then(|u| u.receivers.iter().find(|r| r.flow == flow));
        flows.push(join_flow(flow, dir, snd, rcv, warnings));
    }
    let mut directions = Vec::new();
    for dir in DIRS {
        let members: Vec<&FlowJoin> = flows.iter().filter(|f| f.summary.dir == dir).collect();
        if !members.is_empty() {
            directions.push(direction(
                udp,
                dir,
                &members,
                end(receiver_of(dir)),
                warnings,
            ));
        }
    }
    let mut intervals = Vec::new();
    for d in &directions {
        let host = receiver_of(d.dir);
        if let Some(u) = end(host) {
            intervals.extend(
                u.intervals
                    .iter()
                    .filter_map(|s| interval_row(host, d.dir, &map, s)),
            );
        }
    }
    UdpSummary {
        directions,
        flows: flows.into_iter().map(|f| f.summary).collect(),
        intervals,
    }
}

fn join_flow(
    flow: u32,
    dir: FlowDir,
    snd: Option<&UdpSendReport>,
    rcv: Option<&UdpRecvReport>,
    warnings: &mut Warnings,
) -> FlowJoin {
    use wirebench_model::side::Role;
    if snd.is_none() {
        warnings.run(Warning::UdpMissingReport {
            flow,
            role: Role::Sender,
        });
    }
    if rcv.is_none() {
        warnings.run(Warning::UdpMissingReport {
            flow,
            role: Role::Receiver,
        });
    }
    let window_ns = snd.map_or(0, |s| s.window.len_ns());
    let mut errors = Vec::new();
    for (host, e) in [
        (sender_of(dir), snd.and_then(|s| s.error.clone())),
        (receiver_of(dir), rcv.and_then(|r| r.error.clone())),
    ] {
        if let Some(error) = e {
            warnings.run(Warning::FlowFailed {
                flow,
                host,
                error: error.clone(),
            });
            errors.push(EndFlowError { host, error });
        }
    }
    let sent_bytes = snd.map_or(0, |s| s.window_bytes_sent);
    let recv_bytes = rcv.map_or(0, |r| r.window_bytes_received);
    FlowJoin {
        window_ns,
        sent_bytes,
        recv_bytes,
        shape: snd.map(|s| (s.datagram_bytes, s.target_rate_bps)),
        summary: UdpFlowSummary {
            flow,
            dir,
            counts: counts(snd, rcv),
            sender_rate_bps: bps(sent_bytes, window_ns),
            receiver_rate_bps: bps(recv_bytes, window_ns),
            jitter_ns: rcv.map_or(0.0, |r| r.jitter_ns),
            errors,
            iperf3_end: None,
        },
    }
}

fn direction(
    udp: &UdpStreamSpec,
    dir: FlowDir,
    members: &[&FlowJoin],
    receiving: Option<&UdpSide>,
    warnings: &mut Warnings,
) -> UdpDirectionSummary {
    let mut c = UdpCounts::default();
    members.iter().for_each(|f| add(&mut c, &f.summary.counts));
    let window_ns = members.iter().map(|f| f.window_ns).max().unwrap_or(0);
    let sent_bytes: u64 = members.iter().map(|f| f.sent_bytes).sum();
    let recv_bytes: u64 = members.iter().map(|f| f.recv_bytes).sum();
    let spec_shape = (udp.datagram_bytes, udp.rate_bps);
    let (datagram_bytes, target) = members.iter().find_map(|f| f.shape).unwrap_or(spec_shape);
    if c.pacing_resets > 0 {
        warnings.run(Warning::PacingFellBehind {
            dir,
            resets: c.pacing_resets,
        });
    }
    UdpDirectionSummary {
        dir,
        flows: u32::try_from(members.len()).unwrap_or(u32::MAX),
        datagram_bytes,
        target_rate_per_flow_bps: target,
        loss: attribute_loss(&c, receiving),
        counts: c,
        sender_window_ns: window_ns,
        sender_bytes: sent_bytes,
        receiver_bytes: recv_bytes,
        sender_rate_bps: bps(sent_bytes, window_ns),
        receiver_rate_bps: bps(recv_bytes, window_ns),
        jitter_max_ns: members
            .iter()
            .map(|f| f.summary.jitter_ns)
            .fold(0.0, f64::max),
        invalid_datagrams: receiving
            .map_or(0, |u| u.sockets.iter().map(|s| s.invalid.total()).sum()),
        iperf3_end: None,
    }
}

/// What the receiving end `host` got of `dir` in one UDP interval: bytes and their rate,
/// datagrams, the sequence numbers covered and lost (summed over the direction's flows, each
/// flow's loss clamped at 0 by the engine; see `UdpFlowInterval`), late and duplicate
/// datagrams, and the largest flow jitter at the interval's end.
pub(crate) fn interval_row(
    host: HostRole,
    dir: FlowDir,
    map: &std::collections::BTreeMap<u32, FlowDir>,
    s: &UdpInterval,
) -> Option<UdpIntervalRow> {
    let mine: Vec<&UdpFlowInterval> = s
        .flows
        .iter()
        .filter(|f| {
            f.role == wirebench_model::side::Role::Receiver && map.get(&f.flow) == Some(&dir)
        })
        .collect();
    if mine.is_empty() {
        return None;
    }
    let sum =
        |f: fn(&UdpFlowInterval) -> u64| mine.iter().fold(0u64, |a, x| a.saturating_add(f(x)));
    let bytes = sum(|f| f.bytes);
    let (expected, lost) = (sum(|f| f.expected), sum(|f| f.lost));
    Some(UdpIntervalRow {
        row: IntervalRow {
            start_s: s.span.start_ns as f64 / 1e9,
            end_s: s.span.end_ns as f64 / 1e9,
            host,
            dir,
            bytes,
            throughput_bps: bps(bytes, s.span.len_ns()),
            in_warmup: s.in_warmup,
        },
        datagrams: sum(|f| f.datagrams),
        expected,
        lost,
        loss_pct: if expected == 0 {
            0.0
        } else {
            lost as f64 / expected as f64 * 100.0
        },
        late: sum(|f| f.late),
        duplicate: sum(|f| f.duplicate),
        jitter_max_ns: mine.iter().filter_map(|f| f.jitter_ns).max(),
    })
}
