//! The summary of a run against a stock iperf3 server (`--iperf3`): the server's end sends
//! no wirebench report, so its figures in the summary come from its results exchange
//! (completed by [`super::iperf3::complete`]), marked with `iperf3_end` on every flow and
//! direction they fill. Without this the summary would count that end as having moved
//! nothing: a forward UDP test "lost" every datagram, a forward TCP test left every byte
//! "unaccounted".
//!
//! What iperf3 counts, and so what is filled:
//! - TCP: per stream, bytes over its own span (after its omitted seconds, `-O`) and, as the
//!   sender, retransmits. The window figures of its end are those; its whole-test totals are
//!   the same count without `-O`, and unknown (`None`) with it.
//! - UDP: per stream, as the receiver, the highest sequence number seen and the datagrams
//!   missing below it (received = the difference), jitter; as the sender, the datagrams
//!   sent. It counts no late or duplicate datagrams (0 here), and no receiving host's drops
//!   (`None` in the loss attribution). `udp --iperf3` runs without omitted seconds, so its
//!   counts cover the whole test, as this end's do.

use wirebench_model::iperf3::{Iperf3Server, Iperf3Stream};
use wirebench_model::result::{DirectionSummary, FlowSummary, StreamSummary, WorkloadSummary};
use wirebench_model::side::Role;
use wirebench_model::udp_summary::{
    UdpCounts, UdpDirectionSummary, UdpFlowSummary, UdpLossAttribution, UdpSummary,
};
use wirebench_stats::summary::{jain_index, spread};

/// Fill the iperf3 server's end of `workload` from `server`'s streams. `omit`: the test had
/// omitted seconds.
pub fn fill(workload: &mut WorkloadSummary, server: &Iperf3Server, omit: bool) {
    match workload {
        WorkloadSummary::Stream(s) => fill_stream(s, &server.streams, omit),
        WorkloadSummary::UdpStream(u) => fill_udp(u, &server.streams),
        WorkloadSummary::Rr(_) => {}
    }
}

/// The server's stream on `flow`.
fn stream_of(streams: &[Iperf3Stream], flow: u32) -> Option<&Iperf3Stream> {
    streams.iter().find(|s| s.flow == Some(flow))
}

/// The longest span of `streams`, ns.
fn span_ns<'a>(streams: impl Iterator<Item = &'a Iperf3Stream>) -> u64 {
    streams
        .map(|s| ((s.end_s - s.start_s).max(0.0) * 1e9) as u64)
        .max()
        .unwrap_or(0)
}

fn rate_bps(bytes: u64, ns: u64) -> f64 {
    if ns == 0 {
        0.0
    } else {
        bytes as f64 * 8.0 / (ns as f64 / 1e9)
    }
}

fn signed(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn fill_stream(s: &mut StreamSummary, streams: &[Iperf3Stream], omit: bool) {
    for f in &mut s.flows {
        if let Some(t) = stream_of(streams, f.flow) {
            fill_stream_flow(f, t, omit);
        }
    }
    for d in &mut s.directions {
        let members: Vec<&FlowSummary> = s
            .flows
            .iter()
            .filter(|f| f.dir == d.dir && f.iperf3_end.is_some())
            .collect();
        let Some(role) = members.first().and_then(|f| f.iperf3_end) else {
            continue;
        };
        let theirs = || members.iter().filter_map(|f| stream_of(streams, f.flow));
        fill_stream_direction(d, &members, role, span_ns(theirs()), omit);
    }
}

fn fill_stream_flow(f: &mut FlowSummary, t: &Iperf3Stream, omit: bool) {
    let total = (!omit).then_some(t.bytes);
    match t.role {
        Role::Receiver => {
            f.receiver_bytes = t.bytes;
            f.receiver_throughput_bps = t.throughput_bps;
            f.receiver_total_bytes = total;
        }
        Role::Sender => {
            f.sender_bytes = t.bytes;
            f.sender_throughput_bps = t.throughput_bps;
            f.sender_total_bytes = total;
            if let Some(r) = t.retransmits {
                f.retransmits = u32::try_from(r).unwrap_or(u32::MAX);
            }
        }
    }
    f.iperf3_end = Some(t.role);
}

fn fill_stream_direction(
    d: &mut DirectionSummary,
    members: &[&FlowSummary],
    role: Role,
    window_ns: u64,
    omit: bool,
) {
    let sum =
        |pick: fn(&FlowSummary) -> u64| members.iter().fold(0u64, |a, f| a.saturating_add(pick(f)));
    match role {
        Role::Receiver => {
            d.receiver_bytes = sum(|f| f.receiver_bytes);
            d.receiver_window_ns = window_ns;
            d.receiver_throughput_bps = rate_bps(d.receiver_bytes, window_ns);
            d.receiver_total_bytes = (!omit).then_some(d.receiver_bytes);
            let rates: Vec<f64> = members.iter().map(|f| f.receiver_throughput_bps).collect();
            d.flow_throughput = spread(&rates);
            d.jain_index = jain_index(&rates);
        }
        Role::Sender => {
            d.sender_bytes = sum(|f| f.sender_bytes);
            d.sender_window_ns = window_ns;
            d.sender_throughput_bps = rate_bps(d.sender_bytes, window_ns);
            d.sender_total_bytes = (!omit).then_some(d.sender_bytes);
            d.retransmits = sum(|f| u64::from(f.retransmits));
        }
    }
    d.unaccounted_bytes = match (d.sender_total_bytes, d.receiver_total_bytes) {
        (Some(s), Some(r)) => Some(signed(s).saturating_sub(signed(r))),
        _ => None,
    };
    d.iperf3_end = Some(role);
}

fn fill_udp(u: &mut UdpSummary, streams: &[Iperf3Stream]) {
    for f in &mut u.flows {
        let datagram_bytes = u
            .directions
            .iter()
            .find(|d| d.dir == f.dir)
            .map_or(0, |d| u64::from(d.datagram_bytes));
        if let Some(t) = stream_of(streams, f.flow) {
            fill_udp_flow(f, t, datagram_bytes);
        }
    }
    for d in &mut u.directions {
        let members: Vec<&UdpFlowSummary> = u
            .flows
            .iter()
            .filter(|f| f.dir == d.dir && f.iperf3_end.is_some())
            .collect();
        let Some(role) = members.first().and_then(|f| f.iperf3_end) else {
            continue;
        };
        let theirs: Vec<&Iperf3Stream> = members
            .iter()
            .filter_map(|f| stream_of(streams, f.flow))
            .collect();
        fill_udp_direction(d, &members, &theirs, role);
    }
}

fn loss_pct(lost: i64, sent: u64) -> f64 {
    if sent == 0 {
        0.0
    } else {
        lost as f64 / sent as f64 * 100.0
    }
}

/// Recompute the losses of `c` from its sent and received counts.
fn relose(c: &mut UdpCounts) {
    c.window_lost = signed(c.window_sent).saturating_sub(signed(c.window_received));
    c.window_loss_pct = loss_pct(c.window_lost, c.window_sent);
    c.total_lost = signed(c.total_sent).saturating_sub(signed(c.total_received));
}

/// One flow; `datagram_bytes`: the payload of each of its datagrams (this end's receive
/// rate is over the sender's window, which is iperf3's span when iperf3 sends).
fn fill_udp_flow(f: &mut UdpFlowSummary, t: &Iperf3Stream, datagram_bytes: u64) {
    let Some(x) = t.udp.as_ref() else {
        return;
    };
    match t.role {
        Role::Receiver => {
            let received = x.packets.saturating_sub(x.lost.unwrap_or(0));
            f.counts.window_received = received;
            f.counts.total_received = received;
            f.receiver_rate_bps = t.throughput_bps;
            f.jitter_ns = x.jitter_ms.map_or(0.0, |ms| ms * 1e6);
        }
        Role::Sender => {
            f.counts.window_sent = x.packets;
            f.counts.total_sent = x.packets;
            f.sender_rate_bps = t.throughput_bps;
            f.receiver_rate_bps = rate_bps(
                f.counts.window_received.saturating_mul(datagram_bytes),
                span_ns(std::iter::once(t)),
            );
        }
    }
    relose(&mut f.counts);
    f.iperf3_end = Some(t.role);
}

fn fill_udp_direction(
    d: &mut UdpDirectionSummary,
    members: &[&UdpFlowSummary],
    theirs: &[&Iperf3Stream],
    role: Role,
) {
    let mut c = UdpCounts::default();
    for f in members {
        super::udp::add(&mut c, &f.counts);
    }
    let bytes = theirs.iter().fold(0u64, |a, s| a.saturating_add(s.bytes));
    let window_ns = span_ns(theirs.iter().copied());
    match role {
        Role::Receiver => {
            d.receiver_bytes = bytes;
            d.receiver_rate_bps = rate_bps(bytes, window_ns);
            d.jitter_max_ns = members.iter().map(|f| f.jitter_ns).fold(0.0, f64::max);
        }
        Role::Sender => {
            d.sender_bytes = bytes;
            d.sender_window_ns = window_ns;
            d.sender_rate_bps = rate_bps(bytes, window_ns);
            d.receiver_rate_bps = rate_bps(d.receiver_bytes, window_ns);
        }
    }
    d.loss = reattribute(&c, &d.loss);
    d.counts = c;
    d.iperf3_end = Some(role);
}

/// The loss attribution of `c`, keeping what the receiving end's kernel said of its drops
/// in `before` (nothing, when that end is iperf3's).
fn reattribute(c: &UdpCounts, before: &UdpLossAttribution) -> UdpLossAttribution {
    let total_lost = (c.total_sent + c.send_refused).saturating_sub(c.total_received);
    let lost_in_path = total_lost
        .saturating_sub(c.send_refused)
        .saturating_sub(before.dropped_at_receiving_sockets.unwrap_or(0))
        .saturating_sub(before.dropped_by_receiving_host.unwrap_or(0));
    UdpLossAttribution {
        total_lost,
        refused_at_sender: c.send_refused,
        dropped_at_receiving_sockets: before.dropped_at_receiving_sockets,
        dropped_by_receiving_host: before.dropped_by_receiving_host,
        lost_in_path,
    }
}
