//! A UDP receive socket: datagrams demultiplexed to their flows and sequence-checked.

use super::*;

pub(super) struct RecvDone {
    pub(super) demux: RecvDemux,
    /// Datagrams the socket's buffer overflowed with (see `UdpRecvSocketReport`).
    pub(super) rcvbuf_drops: Option<u64>,
    pub(super) error: Option<FlowError>,
    pub(super) drain_truncated: bool,
}

/// Publish a flow's totals after a datagram of `class` (only what it changed).
pub(super) fn store_recv(c: &Counters, acc: &FlowRecvAccounting, class: SeqClass) {
    let counts = acc.counts();
    match class {
        SeqClass::InOrder | SeqClass::Late => {
            c.datagrams.store(counts.distinct(), Ordering::Relaxed);
            c.bytes.store(acc.bytes_received(), Ordering::Relaxed);
            c.missing.store(acc.missing(), Ordering::Relaxed);
            c.jitter_ns
                .store(acc.jitter_ns().round() as u64, Ordering::Relaxed);
            if class == SeqClass::Late {
                c.late.store(counts.late, Ordering::Relaxed);
            } else {
                c.seq_end.store(acc.seq_end(), Ordering::Relaxed);
            }
        }
        SeqClass::Duplicate => c.duplicate.store(counts.duplicate, Ordering::Relaxed),
        SeqClass::TooOld => {}
    }
}

pub(super) fn run_receiver(
    socket: &UdpSocket,
    peer: Option<SocketAddr>,
    flows: &[u32],
    counters: &[Counters],
    cfg: &UdpConfig,
    shared: &Shared,
    abort: &Abort,
) -> RecvDone {
    let window = cfg.receiver_window();
    // With iperf3's format a socket serves one flow (checked with the plan).
    let only_flow = flows.first().copied().unwrap_or(0);
    let mut demux = RecvDemux::new(
        flows
            .iter()
            .map(|&f| FlowRecvAccounting::new(f, cfg.reorder_window_seqs, window))
            .collect(),
    );
    let quiet = cfg.drain_quiet();
    let mut buf = buffers::zeroed(RECV_BUF_BYTES, cfg.timing.buffer_offset);
    let mut last_arrival: Option<Instant> = None;
    let mut error = None;
    let mut drain_truncated = false;
    // Once the stop flag is seen: the drain's hard end.
    let mut drain_deadline: Option<Instant> = None;
    // The kernel attaches the socket's drop count to each datagram (SO_RXQ_OVFL).
    let counting = wirebench_sys::udp::enable_drop_counter(socket).is_ok();
    let mut last_drops: Option<u32> = None;
    loop {
        if abort.is_set() {
            break;
        }
        let got = wirebench_sys::udp::recv_counting(socket, &mut buf).map(|r| {
            last_drops = r.drops.or(last_drops);
            (r.len, r.from)
        });
        let now = match got {
            Ok((_, from)) if peer.is_some_and(|p| p != from) => {
                demux.on_foreign_source();
                Instant::now()
            }
            Ok((n, _from)) => {
                let now = Instant::now();
                let dgram = buf.get(..n).unwrap_or_default();
                let parsed = cfg.wire.read(only_flow, dgram);
                if let DatagramOutcome::Accepted { flow_index, class } =
                    demux.on_parsed(parsed, dgram.len(), ns_since(shared.start, now))
                {
                    // Only the test's own datagrams keep the drain going.
                    last_arrival = Some(now);
                    if let (Some(c), Some(acc)) =
                        (counters.get(flow_index), demux.flows().get(flow_index))
                    {
                        store_recv(c, acc, class);
                    }
                }
                now
            }
            Err(e) if is_timeout(&e) => Instant::now(),
            // An ICMP error from an earlier datagram (connected sockets): not ours to stop on.
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => Instant::now(),
            Err(e) => {
                error = Some(FlowError::os(Step::Receive, &e));
                break;
            }
        };
        if drain_deadline.is_none() && shared.stop.load(Ordering::Relaxed) {
            drain_deadline = Some(
                shared
                    .stop_at
                    .checked_add(cfg.timing.drain_limit)
                    .unwrap_or(now),
            );
        }
        if let Some(deadline) = drain_deadline {
            let quiet_since = last_arrival.map_or(shared.stop_at, |t| t.max(shared.stop_at));
            if now.saturating_duration_since(quiet_since) >= quiet {
                break;
            }
            if now >= deadline {
                drain_truncated = true;
                break;
            }
        }
    }
    let proc_drops = wirebench_sys::udp::socket_drops(socket).ok();
    let rcvbuf_drops = match (counting.then_some(last_drops).flatten(), proc_drops) {
        (Some(a), Some(b)) => Some(u64::from(a).max(b)),
        (Some(a), None) => Some(u64::from(a)),
        (None, b) => b.or(counting.then_some(0)),
    };
    RecvDone {
        demux,
        rcvbuf_drops,
        error,
        drain_truncated,
    }
}
