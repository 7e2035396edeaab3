//! What the request/response flows share: full reads and writes that look at the stop and
//! abort flags while they wait, the orderly close, bounded sleeps, and the per-flow tally.

use std::io::{self, Read};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::os::fd::AsFd;
use std::thread;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_model::rr::{BusyPollFlow, RrCounts};
use wirebench_model::side::TcpInfoReport;
use wirebench_model::warning::{Cause, FlowError, OsError, Step, Warning};
use wirebench_stats::latency::LatencyHistogram;

use super::{FlowCtx, POLL_TIMEOUT};
use crate::buffers;
use crate::util::is_timeout;
use wirebench_sys::mem::PlacedBuf;

/// Why a full read or write did not complete.
#[derive(Debug)]
pub(super) enum Stall {
    /// EOF; `partial` if part of the message had arrived.
    Eof { partial: bool },
    /// `give_up` said so while the call was timing out; `partial` as above.
    GaveUp { partial: bool },
    /// A socket error.
    Io(io::Error),
}

impl Stall {
    /// The flow error of this stall at `step`; `waited` is the bound a give-up hit.
    pub(super) fn at(self, step: Step, waited: Duration) -> FlowError {
        let cause = match self {
            Stall::Eof { partial } => Cause::PeerClosed {
                mid_message: partial,
            },
            Stall::GaveUp { .. } => Cause::TimedOut {
                after_ms: waited.as_millis() as u64,
            },
            Stall::Io(e) => Cause::Os {
                error: OsError::from(&e),
            },
        };
        FlowError { step, cause }
    }
}

/// After a call found nothing to do (`WouldBlock`): give the CPU to whatever else is
/// runnable on it (the other end, when both share a CPU) and come back at once. On a
/// busy-polled (non-blocking) socket this is the spin; a blocking call whose SO_RCVTIMEO /
/// SO_SNDTIMEO expired reports `WouldBlock` too, and then it costs one `sched_yield` per
/// poll period (100 ms).
pub(super) fn spin_yield(e: &io::Error) {
    if e.kind() == io::ErrorKind::WouldBlock {
        thread::yield_now();
    }
}

/// `rr --busy-poll` on one data socket: make it non-blocking (its full reads and writes then
/// spin, see [`spin_yield`]) and set SO_BUSY_POLL to `us` microseconds (0: left unset), read
/// back. A failure to make it non-blocking is the flow's error; one to set SO_BUSY_POLL is
/// reported in the result and the flow spins all the same.
pub(super) fn busy_poll(s: SockRef<'_>, us: u32) -> io::Result<BusyPollFlow> {
    s.set_nonblocking(true)?;
    let mut applied = BusyPollFlow {
        so_busy_poll_us: None,
        so_busy_poll_error: None,
    };
    if us > 0 {
        match s.set_busy_poll(us).and_then(|()| s.busy_poll()) {
            Ok(v) => applied.so_busy_poll_us = Some(v),
            Err(e) => applied.so_busy_poll_error = Some(OsError::from(&e)),
        }
    }
    Ok(applied)
}

/// One send(2) with MSG_NOSIGNAL, made as a raw system call (rustix): the C library's
/// wrapper is a pthread cancellation point, which in a multi-threaded process costs two
/// extra calls around every send and receive (1–3 % of a same-CPU round trip on loopback,
/// interleaved A/B runs on an Intel Xeon VM).
pub(super) fn send_raw(s: impl AsFd, buf: &[u8]) -> io::Result<usize> {
    rustix::net::send(s, buf, rustix::net::SendFlags::NOSIGNAL).map_err(io::Error::from)
}

/// One recv(2), made as a raw system call (see [`send_raw`]).
pub(super) fn recv_raw(s: impl AsFd, buf: &mut [u8]) -> io::Result<usize> {
    rustix::net::recv(s, buf, rustix::net::RecvFlags::empty())
        .map(|(n, _)| n)
        .map_err(io::Error::from)
}

/// One recvfrom(2) with `flags`, made as a raw system call (see [`send_raw`]): the bytes
/// received and their IP source, or `None` when no datagram came: the socket was shut down
/// for reading (the waker's doing) and nothing is left queued.
pub(super) fn recv_from_raw(
    s: impl AsFd,
    buf: &mut [u8],
    flags: rustix::net::RecvFlags,
) -> io::Result<Option<(usize, SocketAddr)>> {
    let (n, _, from) = rustix::net::recvfrom(s, buf, flags)?;
    match from {
        None if n == 0 => Ok(None),
        from => from
            .and_then(|a| SocketAddr::try_from(a).ok())
            .map(|a| Some((n, a)))
            .ok_or_else(|| io::Error::other("a datagram without an IP source")),
    }
}

/// One sendto(2) to `peer`, made as a raw system call (see [`send_raw`]).
pub(super) fn send_to_raw(s: impl AsFd, buf: &[u8], peer: SocketAddr) -> io::Result<usize> {
    rustix::net::sendto(s, buf, rustix::net::SendFlags::NOSIGNAL, &peer).map_err(io::Error::from)
}

/// Write all of `buf`, waking every poll period to ask `give_up`.
pub(super) fn write_full(
    s: &TcpStream,
    buf: &[u8],
    give_up: &dyn Fn() -> bool,
) -> Result<(), Stall> {
    let mut off = 0;
    while off < buf.len() {
        match send_raw(s, &buf[off..]) {
            Ok(0) => return Err(Stall::Io(io::ErrorKind::WriteZero.into())),
            Ok(n) => off += n,
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err(Stall::GaveUp { partial: off > 0 });
                }
                spin_yield(&e);
            }
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

/// Read exactly `buf.len()` bytes, waking every poll period to ask `give_up`.
pub(super) fn read_full(
    s: &TcpStream,
    buf: &mut [u8],
    give_up: &dyn Fn() -> bool,
) -> Result<(), Stall> {
    let mut off = 0;
    while off < buf.len() {
        match recv_raw(s, &mut buf[off..]) {
            // The waker's shutdown reads as end-of-file: it means the run gave up.
            Ok(0) if give_up() => return Err(Stall::GaveUp { partial: off > 0 }),
            Ok(0) => return Err(Stall::Eof { partial: off > 0 }),
            Ok(n) => off += n,
            Err(e) if is_timeout(&e) => {
                if give_up() {
                    return Err(Stall::GaveUp { partial: off > 0 });
                }
                spin_yield(&e);
            }
            Err(e) => return Err(Stall::Io(e)),
        }
    }
    Ok(())
}

/// `len` random bytes, `offset` bytes past a page boundary.
pub(super) fn payload(len: usize, offset: usize) -> PlacedBuf {
    buffers::random(len, offset)
}

/// TCP_NODELAY and the poll-period socket timeouts.
pub(super) fn prepare_tcp(s: &TcpStream) -> io::Result<()> {
    SockRef::from(s).set_tcp_nodelay(true)?;
    s.set_read_timeout(Some(POLL_TIMEOUT))?;
    s.set_write_timeout(Some(POLL_TIMEOUT))
}

/// TCP_INFO of `s`, if readable.
pub(super) fn tcp_info_of(s: &TcpStream) -> Option<TcpInfoReport> {
    wirebench_sys::tcp::tcp_info(s)
        .ok()
        .map(|i| crate::stream::tcp_info_report(&i))
}

/// Shut our side down and wait (bounded by `limit` and abort) for the peer's EOF.
pub(super) fn orderly_finish(
    mut s: &TcpStream,
    ctx: &FlowCtx,
    limit: Duration,
) -> Result<(), FlowError> {
    s.shutdown(Shutdown::Write)
        .map_err(|e| FlowError::os(Step::Shutdown, &e))?;
    let deadline = Instant::now() + limit;
    let mut sink = [0u8; 256];
    loop {
        match s.read(&mut sink) {
            // End-of-file after an abort or past the drain may be the waker's shutdown.
            Ok(0) if ctx.aborted() || ctx.drain_expired() => {
                return Err(FlowError {
                    step: Step::PeerClose,
                    cause: Cause::TimedOut {
                        after_ms: limit.as_millis() as u64,
                    },
                })
            }
            Ok(0) => return Ok(()),
            Ok(_) => {
                return Err(FlowError::os(
                    Step::PeerClose,
                    &io::Error::new(io::ErrorKind::InvalidData, "data after the last message"),
                ))
            }
            Err(e) if is_timeout(&e) => {
                if ctx.aborted() || Instant::now() > deadline {
                    return Err(FlowError {
                        step: Step::PeerClose,
                        cause: Cause::TimedOut {
                            after_ms: limit.as_millis() as u64,
                        },
                    });
                }
                spin_yield(&e);
            }
            Err(e) => return Err(FlowError::os(Step::PeerClose, &e)),
        }
    }
}

/// Sleep for `d` in slices, returning early on abort.
pub(super) fn sleep_abortable(d: Duration, ctx: &FlowCtx) {
    let end = Instant::now() + d;
    while !ctx.aborted() {
        let now = Instant::now();
        if now >= end {
            return;
        }
        thread::sleep((end - now).min(POLL_TIMEOUT));
    }
}

/// Window and total counts of one flow plus its latency histogram (clients).
pub(super) struct Tally {
    pub(super) window: RrCounts,
    pub(super) total: RrCounts,
    pub(super) hist: Option<LatencyHistogram>,
}

impl Tally {
    pub(super) fn new(client: bool) -> Self {
        Tally {
            window: RrCounts::default(),
            total: RrCounts::default(),
            hist: client.then(LatencyHistogram::new),
        }
    }

    /// Count an event with `f` in the total and, if `in_window`, in the window.
    pub(super) fn count(&mut self, in_window: bool, f: impl Fn(&mut RrCounts)) {
        f(&mut self.total);
        if in_window {
            f(&mut self.window);
        }
    }

    /// Count a completed transaction; a window one records its latency.
    pub(super) fn transaction(&mut self, in_window: bool, latency: Option<Duration>) {
        self.total.transactions += 1;
        if in_window {
            self.window.transactions += 1;
            if let (Some(h), Some(l)) = (self.hist.as_mut(), latency) {
                h.record_duration(l);
            }
        }
    }
}

/// The last error of a kind a flow keeps going through, and how often it happened.
#[derive(Default)]
pub(super) struct Repeated {
    pub(super) last: Option<(Step, OsError)>,
}

impl Repeated {
    /// Remember `e` at `step`.
    pub(super) fn note(&mut self, step: Step, e: &io::Error) {
        self.last = Some((step, OsError::from(e)));
    }

    /// Remember a flow error (its OS error, or a description of its cause).
    pub(super) fn note_flow(&mut self, e: FlowError) {
        let os = match e.cause {
            Cause::Os { error } => error,
            other => OsError {
                errno: None,
                message: format!("{other:?}"),
            },
        };
        self.last = Some((e.step, os));
    }

    /// The warning for `count` such errors on `flow`, if there were any.
    pub(super) fn warning(self, flow: u32, count: u64) -> Option<Warning> {
        self.last.map(|(step, last)| Warning::RepeatedErrors {
            flow,
            step,
            count,
            last,
        })
    }
}

/// A data socket's addresses (`ip:port`), from getsockname and getpeername.
#[derive(Debug, Default)]
pub(super) struct Addresses {
    pub(super) local: Option<String>,
    pub(super) peer: Option<String>,
}

impl Addresses {
    pub(super) fn of(local: io::Result<SocketAddr>, peer: io::Result<SocketAddr>) -> Self {
        let mut a = Addresses::default();
        a.read(local, peer);
        a
    }

    /// Take a newer reading; a call that failed keeps the previous value.
    pub(super) fn read(&mut self, local: io::Result<SocketAddr>, peer: io::Result<SocketAddr>) {
        if let Ok(l) = local {
            self.local = Some(l.to_string());
        }
        if let Ok(p) = peer {
            self.peer = Some(p.to_string());
        }
    }
}

/// What a flow thread hands back.
pub(super) struct FlowEnd {
    pub(super) tally: Tally,
    pub(super) error: Option<FlowError>,
    pub(super) warnings: Vec<Warning>,
    pub(super) tcp_info: Option<TcpInfoReport>,
    pub(super) congestion: Option<String>,
    /// Open loop: (requests sent, peak outstanding).
    pub(super) open_loop: Option<(u64, u64)>,
    /// The data socket's addresses (CRR: the last connection's that could be read).
    pub(super) addresses: Addresses,
    /// Busy polling as applied to the data socket, when asked.
    pub(super) busy_poll: Option<BusyPollFlow>,
}

impl FlowEnd {
    pub(super) fn new(tally: Tally) -> Self {
        FlowEnd {
            tally,
            error: None,
            warnings: Vec::new(),
            tcp_info: None,
            congestion: None,
            open_loop: None,
            addresses: Addresses::default(),
            busy_poll: None,
        }
    }

    /// Read the socket's TCP_INFO and congestion control.
    pub(super) fn socket_facts(&mut self, s: &TcpStream) {
        self.tcp_info = tcp_info_of(s);
        self.congestion = wirebench_sys::tcp::congestion(s).ok();
    }
}
