//! TCP CRR flows: a new connection per transaction (client), and the server that serves the
//! connections routed to its flow. The rules are in the [`super`] module docs.

use std::io::{self, Read};
use std::net::TcpStream;
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_model::spec::CloseMode;
use wirebench_model::warning::{Cause, FlowError, Step};

use super::io::{
    orderly_finish, payload, prepare_tcp, read_full, sleep_abortable, write_full, Addresses,
    FlowEnd, Repeated, Tally,
};
use super::{ConnectFn, FlowCtx, ERROR_BACKOFF};
use crate::buffers;
use crate::util::is_timeout;

/// A client flow: each connection closed by `close_mode`, each transaction waiting at most
/// `peer_timeout` on the server.
pub(super) fn client(
    ctx: &FlowCtx,
    connect: &mut ConnectFn,
    close_mode: CloseMode,
    peer_timeout: Duration,
) -> FlowEnd {
    let req = payload(ctx.cfg.request_size_bytes, ctx.cfg.timing.buffer_offset);
    let mut resp = buffers::zeroed(ctx.cfg.response_size_bytes, ctx.cfg.timing.buffer_offset);
    let mut end = FlowEnd::new(Tally::new(true));
    let (mut connects, mut others) = (Repeated::default(), Repeated::default());
    while !ctx.stopping() {
        let t0 = Instant::now();
        let s = match connect() {
            Ok(s) => s,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.connect_errors += 1);
                connects.note(Step::Connect, &e);
                ctx.publish(&end.tally);
                sleep_abortable(ERROR_BACKOFF, ctx);
                continue;
            }
        };
        let close = (close_mode, peer_timeout);
        match transaction(ctx, &s, (&req, &mut resp), t0, &mut end.addresses, close) {
            Ok(latency) => ctx.client_transaction(&mut end.tally, latency),
            Err(_) if ctx.aborted() => break,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                others.note_flow(e);
            }
        }
        end.congestion = wirebench_sys::tcp::congestion(&s).ok();
        ctx.publish(&end.tally);
    }
    let total = end.tally.total;
    end.warnings
        .extend(connects.warning(ctx.flow, total.connect_errors));
    end.warnings.extend(others.warning(ctx.flow, total.errors));
    end
}

/// One CRR transaction on a fresh connection, closed by `close_mode` and waiting at most
/// `limit` on the server; returns connect-to-response latency. The connection's addresses go
/// to `addresses` once the response is in (outside the latency, before the close).
fn transaction(
    ctx: &FlowCtx,
    s: &TcpStream,
    (req, resp): (&[u8], &mut [u8]),
    t0: Instant,
    addresses: &mut Addresses,
    (close_mode, limit): (CloseMode, Duration),
) -> Result<Duration, FlowError> {
    prepare_tcp(s).map_err(|e| FlowError::os(Step::SocketOptions, &e))?;
    let deadline = Instant::now() + limit;
    let give_up = || ctx.aborted() || Instant::now() > deadline;
    write_full(s, req, &give_up).map_err(|e| e.at(Step::RequestWrite, limit))?;
    read_full(s, resp, &give_up).map_err(|e| e.at(Step::ResponseRead, limit))?;
    let latency = t0.elapsed();
    addresses.read(s.local_addr(), s.peer_addr());
    match close_mode {
        CloseMode::Orderly => {
            let left = deadline.saturating_duration_since(Instant::now());
            orderly_finish(s, ctx, left)?;
        }
        CloseMode::Abortive => {
            SockRef::from(s)
                .set_linger(Some(Duration::ZERO))
                .map_err(|e| FlowError::os(Step::SocketOptions, &e))?;
        }
    }
    Ok(latency)
}

/// A server flow over the connections `rx` hands it, each transaction waiting at most
/// `peer_timeout` on the client.
pub(super) fn server(ctx: &FlowCtx, rx: &Receiver<TcpStream>, peer_timeout: Duration) -> FlowEnd {
    let mut req = buffers::zeroed(ctx.cfg.request_size_bytes, ctx.cfg.timing.buffer_offset);
    let resp = payload(ctx.cfg.response_size_bytes, ctx.cfg.timing.buffer_offset);
    let mut end = FlowEnd::new(Tally::new(false));
    let mut last_activity = Instant::now();
    let mut failures = Repeated::default();
    while !ctx.aborted() && !ctx.server_done(last_activity) {
        let s = match rx.recv_timeout(ctx.server_poll()) {
            Ok(s) => s,
            Err(RecvTimeoutError::Timeout) => continue,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        match serve(ctx, &s, (&mut req, &resp), &mut end.addresses, peer_timeout) {
            Ok(reset) => {
                let w = ctx.in_window();
                end.tally.transaction(w, None);
                end.tally.count(w, |c| {
                    if reset {
                        c.closes_reset += 1
                    } else {
                        c.closes_orderly += 1
                    }
                });
            }
            Err(_) if ctx.aborted() => break,
            Err(e) => {
                end.tally.count(ctx.in_window(), |c| c.errors += 1);
                failures.note_flow(e);
            }
        }
        end.congestion = wirebench_sys::tcp::congestion(&s).ok();
        ctx.publish(&end.tally);
        drop(s);
        last_activity = Instant::now();
    }
    let errors = end.tally.total.errors;
    end.warnings.extend(failures.warning(ctx.flow, errors));
    end
}

/// Serve one CRR connection, waiting at most `limit` on the client; `Ok(true)` if the client
/// closed with RST, `Ok(false)` with FIN. The connection's addresses go to `addresses` once
/// the response is written (off the client's round trip; a reset that already closed the
/// socket keeps the previous ones).
fn serve(
    ctx: &FlowCtx,
    s: &TcpStream,
    (req, resp): (&mut [u8], &[u8]),
    addresses: &mut Addresses,
    limit: Duration,
) -> Result<bool, FlowError> {
    prepare_tcp(s).map_err(|e| FlowError::os(Step::SocketOptions, &e))?;
    let deadline = Instant::now() + limit;
    let give_up = || ctx.aborted() || Instant::now() > deadline;
    read_full(s, req, &give_up).map_err(|e| e.at(Step::RequestRead, limit))?;
    write_full(s, resp, &give_up).map_err(|e| e.at(Step::ResponseWrite, limit))?;
    addresses.read(s.local_addr(), s.peer_addr());
    let mut byte = [0u8; 1];
    loop {
        match (&*s).read(&mut byte) {
            Ok(0) => return Ok(false),
            Ok(_) => {
                return Err(FlowError::os(
                    Step::PeerClose,
                    &io::Error::new(io::ErrorKind::InvalidData, "data after the request"),
                ))
            }
            Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return Ok(true),
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err(FlowError {
                        step: Step::PeerClose,
                        cause: Cause::TimedOut {
                            after_ms: limit.as_millis() as u64,
                        },
                    });
                }
            }
            Err(e) => return Err(FlowError::os(Step::PeerClose, &e)),
        }
    }
}
