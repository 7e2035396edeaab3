//! Reconciliations that no real run can fail. A peer (or a bug) that reports figures which
//! cannot be true must not become a headline: each failed check is a
//! [`Impossibility`], and one of them makes the run invalid.
//!
//! The checks:
//! - TCP stream: the receivers of a direction read at most what its senders wrote over the
//!   whole test (TCP delivers nothing that was not sent), when both ends reported;
//! - UDP stream: receivers got at most as many distinct window datagrams as were sent, when
//!   both ends reported (against an iperf3 server only this end did: its reconciliation
//!   with the server's figures is the run's `iperf3` field);
//! - every flow at every end: window bytes ≤ whole-test bytes;
//! - a direction's rate (sender or receiver) is at most [`MAX_PLAUSIBLE_RATE_BPS`];
//! - TCP RR and UDP RR: the client completed at most as many transactions as the server
//!   answered, when the server reported request/response counts (the server counts a response when it is written, before the client can read
//!   it); CRR is left out (an abortive close races the server's count);
//! - request/response: at most [`MAX_PLAUSIBLE_TRANSACTIONS_PER_S`] transactions per second.

use wirebench_model::result::{RrSummary, StreamSummary, UdpSummary, WorkloadSummary};
use wirebench_model::side::{HostRole, SideReport};
use wirebench_model::spec::WorkloadKind;
use wirebench_model::warning::Impossibility;

/// Fastest plausible rate of one direction, bits per second: 10 Tbit/s, above the memory
/// bandwidth of any host that could send or receive it.
pub const MAX_PLAUSIBLE_RATE_BPS: f64 = 10e12;

/// Highest plausible transaction rate of a whole test, per second (a round trip takes at
/// least a few hundred nanoseconds per CPU).
pub const MAX_PLAUSIBLE_TRANSACTIONS_PER_S: f64 = 1e9;

fn stream(s: &StreamSummary, both: bool, out: &mut Vec<Impossibility>) {
    for d in &s.directions {
        if let (true, Some(sender_total_bytes), Some(receiver_total_bytes)) =
            (both, d.sender_total_bytes, d.receiver_total_bytes)
        {
            if receiver_total_bytes > sender_total_bytes {
                out.push(Impossibility::ReadMoreThanWritten {
                    dir: d.dir,
                    sender_total_bytes,
                    receiver_total_bytes,
                });
            }
        }
        rate(
            d.dir,
            d.receiver_throughput_bps.max(d.sender_throughput_bps),
            out,
        );
    }
}

fn rate(dir: wirebench_model::spec::FlowDir, bps: f64, out: &mut Vec<Impossibility>) {
    if !bps.is_finite() || bps > MAX_PLAUSIBLE_RATE_BPS {
        out.push(Impossibility::RateAboveCeiling {
            dir,
            rate_bps: if bps.is_finite() { bps } else { f64::MAX },
            ceiling_bps: MAX_PLAUSIBLE_RATE_BPS,
        });
    }
}

fn udp(u: &UdpSummary, both: bool, out: &mut Vec<Impossibility>) {
    for d in &u.directions {
        if both && d.counts.window_received > d.counts.window_sent {
            out.push(Impossibility::ReceivedMoreThanSent {
                dir: d.dir,
                sent: d.counts.window_sent,
                received: d.counts.window_received,
            });
        }
        rate(d.dir, d.receiver_rate_bps.max(d.sender_rate_bps), out);
    }
}

fn rr(r: &RrSummary, server_counted: bool, out: &mut Vec<Impossibility>) {
    if let Some(server) = r.server_total.as_ref().filter(|_| server_counted) {
        if r.workload != WorkloadKind::Crr && r.client_total.transactions > server.transactions {
            out.push(Impossibility::MoreTransactionsThanAnswered {
                client_transactions: r.client_total.transactions,
                server_transactions: server.transactions,
            });
        }
    }
    if !r.transactions_per_s.is_finite() || r.transactions_per_s > MAX_PLAUSIBLE_TRANSACTIONS_PER_S
    {
        out.push(Impossibility::TransactionRateAboveCeiling {
            transactions_per_s: if r.transactions_per_s.is_finite() {
                r.transactions_per_s
            } else {
                f64::MAX
            },
            ceiling_per_s: MAX_PLAUSIBLE_TRANSACTIONS_PER_S,
        });
    }
}

/// Window bytes above whole-test bytes, per flow, at each end that reported.
fn windows(reports: &[(HostRole, &SideReport)], out: &mut Vec<Impossibility>) {
    for (host, r) in reports {
        for f in r.stream().map(|s| s.flows.as_slice()).unwrap_or_default() {
            if f.window_bytes > f.total_bytes {
                out.push(Impossibility::WindowAboveTotal {
                    host: *host,
                    flow: f.flow,
                    window_bytes: f.window_bytes,
                    total_bytes: f.total_bytes,
                });
            }
        }
    }
}

/// Every check the summary `w` of `reports` fails (see the module docs).
pub(crate) fn check(
    w: &WorkloadSummary,
    reports: &[(HostRole, &SideReport)],
) -> Vec<Impossibility> {
    let mut out = Vec::new();
    match w {
        WorkloadSummary::Stream(s) => stream(s, reports.len() == 2, &mut out),
        WorkloadSummary::UdpStream(u) => udp(u, reports.len() == 2, &mut out),
        WorkloadSummary::Rr(r) => {
            let server_counted = reports
                .iter()
                .any(|(h, r)| *h == HostRole::Server && r.rr().is_some());
            rr(r, server_counted, &mut out)
        }
    }
    windows(reports, &mut out);
    out
}
