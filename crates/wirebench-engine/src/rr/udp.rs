//! UDP RR flows: the client (sequence-numbered requests, a timeout per transaction) and the
//! server (echoes the sequence number of every request of the right size). The rules are in
//! the [`super`] module docs.

use std::net::UdpSocket;
use std::time::{Duration, Instant};

use wirebench_model::warning::{FlowError, Step};

use socket2::SockRef;

use super::io::{
    busy_poll, payload, recv_from_raw, recv_raw, send_raw, send_to_raw, sleep_abortable,
    spin_yield, FlowEnd, Repeated, Tally,
};
use super::{FlowCtx, ERROR_BACKOFF, POLL_TIMEOUT, UDP_SEQ_BYTES};
use crate::buffers;
use crate::util::is_timeout;

enum Outcome {
    Answered(Duration),
    Lost,
    Failed,
    Aborted,
}

fn seq_of(buf: &[u8]) -> Option<u64> {
    Some(u64::from_be_bytes(*buf.first_chunk::<UDP_SEQ_BYTES>()?))
}

/// Busy polling on `s` when the end asks for it (`asked`, SO_BUSY_POLL µs), recorded in
/// `end`; false (with the flow's error set) if the socket could not be made non-blocking.
fn apply_busy_poll(asked: Option<u32>, s: &UdpSocket, end: &mut FlowEnd) -> bool {
    let Some(us) = asked else {
        return true;
    };
    match busy_poll(SockRef::from(s), us) {
        Ok(applied) => {
            end.busy_poll = Some(applied);
            true
        }
        Err(e) => {
            end.error = Some(FlowError::os(Step::SocketOptions, &e));
            false
        }
    }
}

/// A client flow: a transaction is lost after `timeout` without its response; `busy_poll`
/// as the end asks.
pub(super) fn client(
    ctx: &FlowCtx,
    s: &UdpSocket,
    timeout: Duration,
    busy_poll: Option<u32>,
) -> FlowEnd {
    let mut end = FlowEnd::new(Tally::new(true));
    if let Err(e) = s.peer_addr() {
        end.error = Some(FlowError::os(Step::Connect, &e));
        return end;
    }
    let mut req = payload(
        ctx.cfg.request_size_bytes.max(UDP_SEQ_BYTES),
        ctx.cfg.timing.buffer_offset,
    );
    let resp_len = ctx.cfg.response_size_bytes;
    // One spare byte so that an oversized datagram shows up as longer than expected.
    let mut buf = buffers::zeroed(resp_len + 1, ctx.cfg.timing.buffer_offset);
    let base_to = timeout.min(POLL_TIMEOUT);
    if let Err(e) = s
        .set_read_timeout(Some(base_to))
        .and_then(|()| s.set_write_timeout(Some(POLL_TIMEOUT)))
    {
        end.error = Some(FlowError::os(Step::SocketOptions, &e));
        return end;
    }
    let busy = busy_poll.is_some();
    if !apply_busy_poll(busy_poll, s, &mut end) {
        return end;
    }
    let mut cur_to = base_to;
    let mut failures = Repeated::default();
    let mut seq = 0u64;
    while !ctx.stopping() {
        req[..UDP_SEQ_BYTES].copy_from_slice(&seq.to_be_bytes());
        if cur_to != base_to && s.set_read_timeout(Some(base_to)).is_ok() {
            cur_to = base_to;
        }
        let t0 = Instant::now();
        let deadline = t0 + timeout;
        let outcome = match send_raw(s, &req) {
            Err(e) => {
                failures.note(Step::Send, &e);
                Outcome::Failed
            }
            Ok(_) => loop {
                match recv_raw(s, &mut buf) {
                    Ok(n) => {
                        let now = Instant::now();
                        let got = (n == resp_len).then(|| seq_of(&buf)).flatten();
                        match got {
                            Some(r) if r == seq && now <= deadline => {
                                break Outcome::Answered(now - t0)
                            }
                            Some(r) if r <= seq => {
                                end.tally.count(ctx.in_window(), |c| c.late += 1);
                                if r == seq {
                                    // Matching, but after the deadline: lost, then late.
                                    break Outcome::Lost;
                                }
                            }
                            _ => end.tally.count(ctx.in_window(), |c| c.garbage += 1),
                        }
                        if now >= deadline {
                            break Outcome::Lost;
                        }
                    }
                    Err(e) if is_timeout(&e) => {
                        if ctx.aborted() {
                            break Outcome::Aborted;
                        }
                        let now = Instant::now();
                        if now >= deadline {
                            break Outcome::Lost;
                        }
                        if busy {
                            spin_yield(&e);
                            continue;
                        }
                        let left = (deadline - now).max(Duration::from_micros(1));
                        if left < cur_to && s.set_read_timeout(Some(left)).is_ok() {
                            cur_to = left;
                        }
                    }
                    Err(e) => {
                        failures.note(Step::Receive, &e);
                        break Outcome::Failed;
                    }
                }
            },
        };
        let w = ctx.in_window();
        match outcome {
            Outcome::Answered(l) => ctx.client_transaction(&mut end.tally, l),
            Outcome::Lost => end.tally.count(w, |c| c.lost += 1),
            Outcome::Failed => {
                end.tally.count(w, |c| c.errors += 1);
                // Do not spin on an immediate error (e.g. ICMP port unreachable).
                sleep_abortable(deadline.saturating_duration_since(Instant::now()), ctx);
            }
            Outcome::Aborted => break,
        }
        ctx.publish(&end.tally);
        seq += 1;
    }
    let errors = end.tally.total.errors;
    end.warnings.extend(failures.warning(ctx.flow, errors));
    end
}

/// A server flow; `busy_poll` as the end asks. With the run's waker (`ctx.waker`) its reads
/// block with no timeout and it ends when the waker shuts its socket down for reading (see
/// the `waker` module); without, it wakes every poll period to look at its end rules.
pub(super) fn server(ctx: &FlowCtx, s: &UdpSocket, busy_poll: Option<u32>) -> FlowEnd {
    let mut end = FlowEnd::new(Tally::new(false));
    let woken = ctx.waker.is_some();
    if let Err(e) = s
        .set_read_timeout((!woken).then_some(POLL_TIMEOUT))
        .and_then(|()| s.set_write_timeout(Some(POLL_TIMEOUT)))
    {
        end.error = Some(FlowError::os(Step::SocketOptions, &e));
        return end;
    }
    if !apply_busy_poll(busy_poll, s, &mut end) {
        return end;
    }
    let req_len = ctx.cfg.request_size_bytes;
    let mut buf = buffers::zeroed(req_len + 1, ctx.cfg.timing.buffer_offset);
    let mut resp = payload(
        ctx.cfg.response_size_bytes.max(UDP_SEQ_BYTES),
        ctx.cfg.timing.buffer_offset,
    );
    let mut last_activity = Instant::now();
    let mut failures = Repeated::default();
    let mut poll = POLL_TIMEOUT;
    // The daemon connects a flow's socket to its client once the setup has named it: then
    // each answer goes out on the socket's cached route with send(2), where sendto(2) with
    // an address looks the route up again for every datagram.
    let connected = s.peer_addr().ok();
    while !ctx.aborted() {
        if !woken {
            if ctx.server_done(last_activity) {
                break;
            }
            if ctx.server_poll() != poll {
                poll = ctx.server_poll();
                let _ = s.set_read_timeout(Some(poll));
            }
        }
        // The client has finished: every request it sent is queued here already (or was
        // given up on), so answer what is queued without waiting and end once it is empty.
        let draining = ctx.stop_at().is_some() && ctx.abort.is_peer_finished();
        let received = if draining {
            match recv_from_raw(s, &mut buf, rustix::net::RecvFlags::DONTWAIT) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                r => r,
            }
        } else {
            recv_from_raw(s, &mut buf, rustix::net::RecvFlags::empty())
        };
        match received {
            Ok(Some((n, peer))) => {
                if !woken {
                    last_activity = Instant::now();
                }
                if n != req_len || n < UDP_SEQ_BYTES {
                    end.tally.count(ctx.in_window(), |c| c.garbage += 1);
                } else {
                    resp[..UDP_SEQ_BYTES].copy_from_slice(&buf[..UDP_SEQ_BYTES]);
                    let sent = match connected {
                        Some(to) if to == peer => send_raw(s, &resp),
                        _ => send_to_raw(s, &resp, peer),
                    };
                    match sent {
                        Ok(_) => end.tally.transaction(ctx.in_window(), None),
                        Err(e) => {
                            end.tally.count(ctx.in_window(), |c| c.errors += 1);
                            failures.note(Step::Send, &e);
                        }
                    }
                }
                ctx.publish(&end.tally);
            }
            // Shut down for reading by the waker and nothing left queued: the flow's end.
            Ok(None) => break,
            Err(e) if is_timeout(&e) => spin_yield(&e),
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                failures.note(Step::Receive, &e);
                ctx.publish(&end.tally);
                sleep_abortable(ERROR_BACKOFF, ctx);
            }
        }
    }
    let errors = end.tally.total.errors;
    end.warnings.extend(failures.warning(ctx.flow, errors));
    end
}
