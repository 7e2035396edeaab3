//! The analysis of the request/response and UDP stream workloads (see [`crate::analyze`] for
//! the conventions shared with the stream analysis).
//!
//! # Request/response
//!
//! - Transactions, latency and the window are the **client's**: a transaction counts when its
//!   response has been read in full (CRR: and its connection closed) inside the client's
//!   window; `transactions_per_s = transactions / window`. Latency is the client's HDR
//!   histogram of those transactions, merged over flows.
//! - `server_total` is what the server counted over the whole test. For TCP RR the client's
//!   and the server's totals are equal on a complete run (every request answered and read);
//!   a warning says so when they are not.
//! - UDP RR: `loss_pct = lost / (transactions + lost)` over the client's window.
//! - CPU: service demand per transaction, netperf's definition
//!   ([`us_per_transaction`](wirebench_stats::demand::us_per_transaction) of the end's
//!   system-wide busy share and `transactions_per_s`), and of wirebench's own threads
//!   ([`us_per_transaction_from_cpu_ns`](wirebench_stats::demand::us_per_transaction_from_cpu_ns)).
//!
//! # UDP stream
//!
//! - Window counts are the datagrams *sent* inside the sender's window, as each end counted
//!   them (the receiver classifies by the send time in each header), so
//!   `window_lost = window_sent − window_received` is exact. Totals cover the whole test.
//! - `sender_rate_bps = window bytes sent × 8 / sender window`; `receiver_rate_bps = window
//!   bytes received × 8 / the same sender window` (the same datagrams; the receiver's rate is
//!   the sender's minus what was lost).
//! - Direction figures are sums over the direction's flows; `jitter_max_ns` is the largest
//!   flow jitter; `invalid_datagrams` sums the receiving end's socket counts.

use wirebench_proto::measure::{HostRole, SideReport, UdpReport};
use wirebench_proto::rr::{RrCounts, RrInterval, RrReport};
use wirebench_proto::spec::{FlowDir, TestSpec};
use wirebench_proto::udp::{UdpRecvReport, UdpSendReport};
use wirebench_stats::summary::{jain_index, spread};

use crate::label;
use crate::schema::{
    OpenLoopSummary, RrFlowRow, RrIntervalRow, RrSummary, UdpCounts, UdpDirectionSummary,
    UdpFlowSummary, UdpSummary,
};

fn per_s(count: u64, window_ns: u64) -> f64 {
    if window_ns == 0 {
        return 0.0;
    }
    count as f64 / (window_ns as f64 / 1e9)
}

fn bps(bytes: u64, window_ns: u64) -> f64 {
    per_s(bytes, window_ns) * 8.0
}

/// The request/response summary, from the client's report (and the server's, if any).
/// Returns `None` (with a warning) when the client has no request/response report.
pub(crate) fn rr_summary(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    warnings: &mut Vec<String>,
) -> Option<RrSummary> {
    let Some(c) = client.rr.as_ref() else {
        warnings.push("client: no request/response figures were reported".into());
        return None;
    };
    let s: Option<&RrReport> = server.and_then(|s| s.rr.as_ref());
    let window_ns = c.window_end_ns.saturating_sub(c.window_start_ns);
    let client_window = c.window_sum();
    let client_total = c.total_sum();
    let server_total = s.map(RrReport::total_sum);
    if let (Some(st), true) = (server_total, both_completed(client, server)) {
        if c.workload == wirebench_proto::rr::RrWorkload::TcpRr
            && st.transactions != client_total.transactions
        {
            warnings.push(format!(
                "the server answered {} transactions and the client completed {}: the run \
                 ended with requests in flight",
                st.transactions, client_total.transactions
            ));
        }
    }
    let mut per_flow = Vec::new();
    let mut rates = Vec::new();
    for f in &c.flows {
        let tps = per_s(f.window.transactions, window_ns);
        rates.push(tps);
        let server_error = s
            .and_then(|s| s.flows.iter().find(|x| x.flow == f.flow))
            .and_then(|x| x.error.clone());
        per_flow.push(RrFlowRow {
            flow: f.flow,
            transactions: f.window.transactions,
            transactions_per_s: tps,
            rtt_p50_ns: f.latency.map(|l| l.p50_ns),
            rtt_p99_ns: f.latency.map(|l| l.p99_ns),
            lost: f.window.lost,
            errors: f.window.errors.saturating_add(f.window.connect_errors),
            error: f
                .error
                .clone()
                .map(|e| format!("client: {e}"))
                .or(server_error.map(|e| format!("server: {e}"))),
        });
    }
    for row in &per_flow {
        if let Some(e) = &row.error {
            warnings.push(format!("flow {}: {e}", row.flow));
        }
    }
    let attempts = client_window
        .transactions
        .saturating_add(client_window.lost);
    let loss_pct = (c.workload == wirebench_proto::rr::RrWorkload::UdpRr && attempts > 0)
        .then(|| client_window.lost as f64 / attempts as f64 * 100.0);
    let open_loop = {
        let ols: Vec<_> = c.flows.iter().filter_map(|f| f.open_loop).collect();
        (!ols.is_empty()).then(|| OpenLoopSummary {
            requested_per_s: ols.iter().map(|o| o.requested_per_s).sum(),
            achieved_per_s: per_s(client_window.transactions, window_ns),
            missed_slots: ols.iter().map(|o| o.missed_slots).sum(),
            peak_outstanding: ols.iter().map(|o| o.peak_outstanding).max().unwrap_or(0),
        })
    };
    if let Some(ol) = &open_loop {
        if ol.missed_slots > ol.requested_per_s as u64 / 100 + 1 {
            warnings.push(format!(
                "open loop: {} scheduled requests were never sent (the outstanding cap was \
                 reached or the sender fell behind); the achieved rate is below the requested",
                ol.missed_slots
            ));
        }
    }
    Some(RrSummary {
        workload: c.workload,
        close_mode: c.close_mode,
        request_size_bytes: c.request_size_bytes,
        response_size_bytes: c.response_size_bytes,
        burst: c.burst,
        flows: spec.flows,
        window_ns,
        transactions: client_window.transactions,
        transactions_per_s: per_s(client_window.transactions, window_ns),
        latency: c.latency,
        client_window,
        client_total,
        server_total: server_total.or_else(|| server.is_some().then(RrCounts::default)),
        loss_pct,
        open_loop,
        per_flow,
        flow_transactions_per_s: spread(&rates),
        jain_index: jain_index(&rates),
    })
}

fn both_completed(client: &SideReport, server: Option<&SideReport>) -> bool {
    use wirebench_proto::measure::SideStatus;
    matches!(client.status, SideStatus::Completed)
        && server.is_some_and(|s| matches!(s.status, SideStatus::Completed))
}

fn udp_of(r: Option<&SideReport>) -> Option<&UdpReport> {
    r.and_then(|r| r.udp.as_ref())
}

fn counts(snd: Option<&UdpSendReport>, rcv: Option<&UdpRecvReport>) -> UdpCounts {
    let window_sent = snd.map_or(0, |s| s.window_datagrams_sent);
    let window_received = rcv.map_or(0, |r| r.window_datagrams_received);
    let total_sent = snd.map_or(0, |s| s.datagrams_sent);
    let total_received = rcv.map_or(0, |r| r.datagrams_received);
    let window_lost = window_sent as i64 - window_received as i64;
    UdpCounts {
        window_sent,
        window_received,
        window_lost,
        window_loss_pct: if window_sent == 0 {
            0.0
        } else {
            window_lost as f64 / window_sent as f64 * 100.0
        },
        total_sent,
        total_received,
        total_lost: total_sent as i64 - total_received as i64,
        late: rcv.map_or(0, |r| r.late),
        duplicate: rcv.map_or(0, |r| r.duplicate),
        too_old: rcv.map_or(0, |r| r.too_old),
        send_errors: snd.map_or(0, |s| s.send_errors),
        pacing_resets: snd.map_or(0, |s| s.pacing_resets),
    }
}

fn add(a: &mut UdpCounts, b: &UdpCounts) {
    a.window_sent += b.window_sent;
    a.window_received += b.window_received;
    a.window_lost += b.window_lost;
    a.total_sent += b.total_sent;
    a.total_received += b.total_received;
    a.total_lost += b.total_lost;
    a.late += b.late;
    a.duplicate += b.duplicate;
    a.too_old += b.too_old;
    a.send_errors += b.send_errors;
    a.pacing_resets += b.pacing_resets;
    a.window_loss_pct = if a.window_sent == 0 {
        0.0
    } else {
        a.window_lost as f64 / a.window_sent as f64 * 100.0
    };
}

/// The UDP stream summary from both ends' reports.
pub(crate) fn udp_summary(
    spec: &TestSpec,
    client: &SideReport,
    server: Option<&SideReport>,
    warnings: &mut Vec<String>,
) -> UdpSummary {
    let ends = [
        (HostRole::Client, udp_of(Some(client))),
        (HostRole::Server, udp_of(server)),
    ];
    let end = |h: HostRole| ends.iter().find(|(x, _)| *x == h).and_then(|(_, u)| *u);
    let mut flows = Vec::new();
    for (i, dir) in spec.flow_dirs().into_iter().enumerate() {
        let flow = u32::try_from(i).unwrap_or(u32::MAX);
        let snd =
            end(label::sender_of(dir)).and_then(|u| u.senders.iter().find(|s| s.flow == flow));
        let rcv =
            end(label::receiver_of(dir)).and_then(|u| u.receivers.iter().find(|r| r.flow == flow));
        if snd.is_none() {
            warnings.push(format!("flow {flow}: no sender report"));
        }
        if rcv.is_none() {
            warnings.push(format!("flow {flow}: no receiver report"));
        }
        let window_ns = snd.map_or(0, |s| s.window_end_ns.saturating_sub(s.window_start_ns));
        let error = snd
            .and_then(|s| s.error.clone())
            .map(|e| format!("sender: {e}"))
            .or(rcv
                .and_then(|r| r.error.clone())
                .map(|e| format!("receiver: {e}")));
        if let Some(e) = &error {
            warnings.push(format!("flow {flow}: {e}"));
        }
        flows.push((
            window_ns,
            snd.map_or(0, |s| s.window_bytes_sent),
            rcv.map_or(0, |r| r.window_bytes_received),
            snd.map(|s| (s.datagram_bytes, s.target_rate_bps)),
            UdpFlowSummary {
                flow,
                dir,
                counts: counts(snd, rcv),
                sender_rate_bps: bps(snd.map_or(0, |s| s.window_bytes_sent), window_ns),
                receiver_rate_bps: bps(rcv.map_or(0, |r| r.window_bytes_received), window_ns),
                jitter_ns: rcv.map_or(0.0, |r| r.jitter_ns),
                error,
            },
        ));
    }
    let mut directions = Vec::new();
    for dir in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let members: Vec<_> = flows.iter().filter(|f| f.4.dir == dir).collect();
        if members.is_empty() {
            continue;
        }
        let mut c = UdpCounts::default();
        members.iter().for_each(|f| add(&mut c, &f.4.counts));
        let window_ns = members.iter().map(|f| f.0).max().unwrap_or(0);
        let sent_bytes: u64 = members.iter().map(|f| f.1).sum();
        let recv_bytes: u64 = members.iter().map(|f| f.2).sum();
        let (datagram_bytes, target) = members
            .iter()
            .find_map(|f| f.3)
            .unwrap_or((spec.msg_size_bytes, spec.rate_bps));
        let invalid = end(label::receiver_of(dir))
            .map_or(0, |u| u.sockets.iter().map(|s| s.invalid.total()).sum());
        if c.pacing_resets > 0 {
            warnings.push(format!(
                "{}: the sender fell behind its pacing schedule {} times and skipped ahead \
                 instead of bursting; the rate asked for was not met (the sender rate shows \
                 what was sent)",
                label::dir(dir),
                c.pacing_resets
            ));
        }
        if c.window_lost < 0 {
            warnings.push(format!(
                "{}: the receiver counted more window datagrams than the sender sent",
                label::dir(dir)
            ));
        }
        directions.push(UdpDirectionSummary {
            dir,
            flows: u32::try_from(members.len()).unwrap_or(u32::MAX),
            datagram_bytes,
            target_rate_per_flow_bps: target,
            counts: c,
            sender_window_ns: window_ns,
            sender_bytes: sent_bytes,
            receiver_bytes: recv_bytes,
            sender_rate_bps: bps(sent_bytes, window_ns),
            receiver_rate_bps: bps(recv_bytes, window_ns),
            jitter_max_ns: members.iter().map(|f| f.4.jitter_ns).fold(0.0, f64::max),
            invalid_datagrams: invalid,
        });
    }
    UdpSummary {
        directions,
        flows: flows.into_iter().map(|f| f.4).collect(),
    }
}

/// The live row of one request/response interval sample measured at `host`.
pub fn rr_interval_row(host: HostRole, s: &RrInterval) -> RrIntervalRow {
    let transactions: u64 = s.flows.iter().map(|f| f.transactions).sum();
    RrIntervalRow {
        start_s: s.start_ns as f64 / 1e9,
        end_s: s.end_ns as f64 / 1e9,
        host,
        transactions,
        transactions_per_s: per_s(transactions, s.end_ns.saturating_sub(s.start_ns)),
        lost: s.flows.iter().map(|f| f.lost).sum(),
        in_warmup: s.in_warmup,
    }
}
