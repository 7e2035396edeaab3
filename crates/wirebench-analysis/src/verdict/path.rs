//! Rule 5 of the verdict: the path. A bottleneck downstream of the senders (a slower link,
//! a shaper) queues what they send faster than it carries: their smoothed round trip rises
//! above the minimum the path has without a queue. Senders starved of CPU, or held back by
//! a window or a buffer, build no such queue.

use std::net::SocketAddr;

use wirebench_model::side::{HostRole, Role, SideData, SideReport};
use wirebench_model::spec::FlowDir;

/// The senders' median smoothed round trip at least this much above their minimum is a
/// queue on the path, percent of the minimum.
pub const QUEUE_RISE_PCT: f64 = 20.0;
/// … and at least this much, ns: on a path of tens of microseconds (veth, a LAN), a rise
/// of a few of them is the ends' own scheduling, not a queue. A 200 Mbit/s shaper's
/// queue of 100 full-size segments holds 6 ms.
pub const QUEUE_RISE_MIN_NS: u64 = 500_000;

/// The senders' round trips in direction `dir`: (smallest `tcpi_min_rtt`, median smoothed
/// round trip over the window's interval samples), ns. `None` without both.
pub(super) fn round_trips(reports: &[(HostRole, &SideReport)], dir: FlowDir) -> Option<(u64, u64)> {
    let mut min_rtt_us: Option<u32> = None;
    let mut srtt_us: Vec<u32> = Vec::new();
    for (_, r) in reports {
        let Some(SideData::Stream(st)) = r.data.as_ref() else {
            continue;
        };
        let senders: Vec<u32> = st
            .flows
            .iter()
            .filter(|f| f.dir == dir && f.role == Role::Sender)
            .map(|f| f.flow)
            .collect();
        for f in st.flows.iter().filter(|f| senders.contains(&f.flow)) {
            if let Some(m) = f
                .socket
                .tcp_info
                .as_ref()
                .and_then(|t| t.min_rtt_us)
                .filter(|m| *m > 0)
            {
                min_rtt_us = Some(min_rtt_us.map_or(m, |x| x.min(m)));
            }
        }
        srtt_us.extend(
            st.intervals
                .iter()
                .filter(|i| !i.in_warmup)
                .flat_map(|i| i.tcp.iter())
                .filter(|t| !t.at_close && t.srtt_us > 0 && senders.contains(&t.flow))
                .map(|t| t.srtt_us),
        );
    }
    srtt_us.sort_unstable();
    let median = *srtt_us.get(srtt_us.len() / 2)?;
    Some((u64::from(min_rtt_us?) * 1000, u64::from(median) * 1000))
}

/// A queue formed: the median smoothed round trip `srtt_ns` rose above `min_rtt_ns` by
/// [`QUEUE_RISE_PCT`] and [`QUEUE_RISE_MIN_NS`].
pub(super) fn queued(min_rtt_ns: u64, srtt_ns: u64) -> bool {
    let rise = srtt_ns.saturating_sub(min_rtt_ns);
    rise >= QUEUE_RISE_MIN_NS && rise as f64 >= min_rtt_ns as f64 * QUEUE_RISE_PCT / 100.0
}

/// Every flow of the run went over loopback (its peer address, as an end reported it, is a
/// loopback address): there is no path to queue on.
pub(super) fn over_loopback(reports: &[(HostRole, &SideReport)]) -> bool {
    let mut peers = reports
        .iter()
        .filter_map(|(_, r)| match r.data.as_ref() {
            Some(SideData::Stream(st)) => Some(st),
            _ => None,
        })
        .flat_map(|st| st.flows.iter())
        .filter_map(|f| f.socket.peer.as_deref())
        .map(|p| p.parse::<SocketAddr>().is_ok_and(|a| a.ip().is_loopback()))
        .peekable();
    peers.peek().is_some() && peers.all(|l| l)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shaped 10 ms path whose queue added 2.6 ms is a queue; the same rise on a 50 ms
    /// path is not (5 %); 300 µs on a 50 µs path is the ends' scheduling, not a queue.
    #[test]
    fn a_queue_is_a_rise_above_the_minimum_round_trip() {
        assert!(queued(10_000_000, 12_600_000));
        assert!(!queued(50_000_000, 52_600_000));
        assert!(!queued(50_000, 350_000));
        assert!(queued(50_000, 700_000));
        assert!(!queued(10_000_000, 9_000_000));
    }
}
