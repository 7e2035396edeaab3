//! A UDP sending flow: paced datagrams with sequence numbers, send errors classified.

use super::*;

/// What a failed send means for the flow.
pub(super) enum SendFailure {
    /// The kernel had no room (ENOBUFS; EAGAIN on a non-blocking socket): the datagram never
    /// left this host.
    Refused,
    /// An ICMP-reported error (ECONNREFUSED, EHOSTUNREACH, ENETUNREACH): carry on.
    Transient,
    /// Anything else: the flow ends.
    Fatal,
}

pub(super) fn classify_send_error(e: &io::Error) -> SendFailure {
    match e.raw_os_error() {
        Some(libc::ENOBUFS) | Some(libc::EAGAIN) => SendFailure::Refused,
        Some(libc::ECONNREFUSED) | Some(libc::EHOSTUNREACH) | Some(libc::ENETUNREACH) => {
            SendFailure::Transient
        }
        _ => SendFailure::Fatal,
    }
}

pub(super) struct SendDone {
    pub(super) datagrams: u64,
    pub(super) bytes: u64,
    pub(super) window_datagrams: u64,
    pub(super) window_bytes: u64,
    pub(super) send_refused: u64,
    pub(super) send_errors: u64,
    pub(super) pacing_resets: u64,
    pub(super) end_ns: u64,
    pub(super) error: Option<FlowError>,
}

pub(super) fn run_sender(
    flow: u32,
    socket: &UdpSocket,
    counters: &Counters,
    cfg: &UdpConfig,
    shared: &Shared,
    abort: &Abort,
) -> SendDone {
    let mut buf = buffers::random(cfg.datagram_bytes, cfg.timing.buffer_offset);
    let window = cfg.sender_window();
    let mut schedule = cfg.schedule(shared.start);
    let mut d = SendDone {
        datagrams: 0,
        bytes: 0,
        window_datagrams: 0,
        window_bytes: 0,
        send_refused: 0,
        send_errors: 0,
        pacing_resets: 0,
        end_ns: window.end_ns,
        error: None,
    };
    let stop = || abort.is_set() || shared.stop.load(Ordering::Relaxed);
    let (spin, max_behind) = cfg.wire.pacing();
    let mut seq: u64 = 0;
    loop {
        if stop() {
            break;
        }
        if let Some(sch) = schedule.as_mut() {
            // Datagrams due at or after the stop instant are not sent.
            let Some(due) = sch.due(seq).filter(|&t| t < shared.stop_at) else {
                break;
            };
            if !wait_until(due, spin, &stop) {
                break;
            }
            sch.limit_lag(seq, Instant::now(), max_behind);
        }
        let now = Instant::now();
        if now >= shared.stop_at {
            break;
        }
        let send_ns = ns_since(shared.start, now);
        let header = DatagramHeader { flow, seq, send_ns };
        if cfg.wire.write(&header, &mut buf).is_err() {
            // Unreachable: the spec's validation keeps datagrams at least a header long.
            d.error = Some(FlowError::os(
                Step::Send,
                &io::ErrorKind::InvalidInput.into(),
            ));
            break;
        }
        match socket.send(&buf) {
            Ok(n) if n == buf.len() => {
                d.datagrams += 1;
                d.bytes += n as u64;
                if window.contains(send_ns) {
                    d.window_datagrams += 1;
                    d.window_bytes += n as u64;
                }
                counters.datagrams.store(d.datagrams, Ordering::Relaxed);
                counters.bytes.store(d.bytes, Ordering::Relaxed);
            }
            Ok(_) => {
                // A UDP send is all or nothing; count anything else as a failed send.
                d.send_errors += 1;
            }
            // The send buffer stayed full for a whole poll period, or a signal: retry this
            // datagram (a blocking UDP socket waits for room; nothing was lost).
            Err(e) if is_timeout(&e) => continue,
            Err(e) => match classify_send_error(&e) {
                SendFailure::Refused => d.send_refused += 1,
                SendFailure::Transient => d.send_errors += 1,
                SendFailure::Fatal => {
                    d.error = Some(FlowError::os(Step::Send, &e));
                    break;
                }
            },
        }
        counters
            .send_errors
            .store(d.send_errors + d.send_refused, Ordering::Relaxed);
        seq += 1;
    }
    if abort.is_set() || d.error.is_some() {
        d.end_ns = d.end_ns.min(ns_since(shared.start, Instant::now()));
    }
    d.pacing_resets = schedule.map_or(0, |s| s.resets());
    d
}
