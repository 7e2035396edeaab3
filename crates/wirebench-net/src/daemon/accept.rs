//! Accepting connections: the connection caps (in total and per source), the handshake
//! cap with eviction of the oldest slow handshake, and the first bytes of every connection,
//! which say whether it is a control connection (a session) or a data connection (routed
//! to its test by token).

use std::collections::VecDeque;
use std::io::Write;
use std::net::{IpAddr, Shutdown, SocketAddr, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use wirebench_model::validate::LimitName;
use wirebench_proto::data::{classify, ConnKind, DataHello, DATA_HELLO_BYTES, PREAMBLE_BYTES};
use wirebench_proto::frame;
use wirebench_proto::message::{ErrorCode, ErrorMsg, Message};

use super::lograte::log_refused;
use super::route::route_data;
use super::session::control_session;
use super::{State, CONN_THREAD_STACK_BYTES};
use crate::conn::{peek_exact_by, queued_bytes, read_exact_by};

/// Bytes of a complete data-connection handshake (preamble and hello). A handshaking
/// connection with this many bytes queued is waiting for its thread, not dripping, and is
/// not evicted.
const HANDSHAKE_READY_BYTES: usize = PREAMBLE_BYTES + DATA_HELLO_BYTES;

/// How many of the oldest handshakes an accept looks at for one to evict.
const EVICTION_SCAN: usize = 64;

/// Connections still in their handshake, oldest first, with a handle to close them.
#[derive(Default)]
pub(super) struct Handshakes {
    pub(super) next_id: u64,
    pub(super) queue: VecDeque<(u64, TcpStream)>,
}

/// One connection's share of the daemon's counters; released when dropped.
pub(super) struct ConnSlot {
    pub(super) state: Arc<State>,
    pub(super) ip: IpAddr,
    pub(super) handshake: Option<u64>,
    /// The connection's place in accept order (the listener accepts one at a time, so this
    /// is the order in which the kernel completed the connections). Each connection's
    /// handshake runs on its own thread, and those may finish in any order on a busy host;
    /// where the order matters (an iperf3 client's streams: their ids and, with `--bidir`,
    /// their directions follow the order it opened them) this restores it.
    pub(super) accepted_seq: u64,
}

impl ConnSlot {
    /// The connection finished its handshake: it no longer counts against (or can be evicted
    /// by) the handshake cap. Returns false if it had been evicted (and shut down) already.
    pub(super) fn end_handshake(&mut self) -> bool {
        let Some(id) = self.handshake.take() else {
            return true;
        };
        let Ok(mut h) = self.state.handshakes.lock() else {
            return true;
        };
        let before = h.queue.len();
        h.queue.retain(|(i, _)| *i != id);
        h.queue.len() < before
    }
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        let _ = self.end_handshake();
        if let Ok(mut m) = self.state.per_source.lock() {
            if let Some(c) = m.get_mut(&self.ip) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    m.remove(&self.ip);
                }
            }
        }
        self.state.open_connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Which listener a connection came from, so which protocol it speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Frontend {
    /// wirebench's own protocol.
    Native,
    /// iperf3's (`serve --iperf3`).
    Iperf3,
}

/// Count, check and hand a freshly accepted connection to its own thread.
pub(super) fn admit_connection(stream: TcpStream, state: &Arc<State>, frontend: Frontend) {
    let Ok(peer) = stream.peer_addr() else {
        return;
    };
    let open = state.open_connections.fetch_add(1, Ordering::AcqRel);
    if open >= state.cfg.max_connections {
        state.open_connections.fetch_sub(1, Ordering::AcqRel);
        refuse(
            stream,
            state,
            peer,
            frontend,
            LimitName::MaxConnections,
            format!(
                "the server is handling its maximum of {} connections",
                state.cfg.max_connections
            ),
        );
        return;
    }
    let over_source = match state.per_source.lock() {
        Ok(mut m) => {
            let c = m.entry(peer.ip()).or_insert(0);
            if *c >= state.cfg.max_conns_per_source {
                true
            } else {
                *c += 1;
                false
            }
        }
        Err(_) => true,
    };
    if over_source {
        state.open_connections.fetch_sub(1, Ordering::AcqRel);
        refuse(
            stream,
            state,
            peer,
            frontend,
            LimitName::MaxConnsPerSource,
            format!(
                "{} connections from {} are open, the most this server allows per source address",
                state.cfg.max_conns_per_source,
                peer.ip()
            ),
        );
        return;
    }
    let mut slot = ConnSlot {
        state: Arc::clone(state),
        ip: peer.ip(),
        handshake: None,
        accepted_seq: state.accepted.fetch_add(1, Ordering::Relaxed),
    };
    // Register as handshaking; at the cap, evict the oldest handshake that is not merely
    // waiting for its thread first. One with a complete data handshake queued is a
    // legitimate client in a burst (10000 flows connect at once), not a slow drip, and is
    // left alone; if the oldest are all like that, this connection is not registered (no
    // clone of its descriptor is kept) and only its handshake deadline bounds it.
    if let Ok(mut h) = state.handshakes.lock() {
        let cap = state.cfg.max_pending_handshakes.max(1);
        if h.queue.len() >= cap {
            let victim = h
                .queue
                .iter()
                .take(EVICTION_SCAN)
                .position(|(_, s)| queued_bytes(s) < HANDSHAKE_READY_BYTES);
            if let Some((_, old)) = victim.and_then(|at| h.queue.remove(at)) {
                let _ = old.shutdown(Shutdown::Both);
                state.evicted.fetch_add(1, Ordering::Relaxed);
            }
        }
        if h.queue.len() < cap {
            if let Ok(clone) = stream.try_clone() {
                let id = h.next_id;
                h.next_id += 1;
                h.queue.push_back((id, clone));
                slot.handshake = Some(id);
            }
        }
    }
    let st = Arc::clone(state);
    let spawned = thread::Builder::new()
        .name("wb-conn".into())
        .stack_size(CONN_THREAD_STACK_BYTES)
        .spawn(move || match frontend {
            Frontend::Native => handle_connection(stream, peer, &st, slot),
            Frontend::Iperf3 => super::iperf3::handle_connection(stream, peer, &st, slot),
        });
    if spawned.is_err() {
        // The slot went down with the closure: counters are already released.
        thread::sleep(Duration::from_millis(50));
    }
}

/// Tell a refused peer why (one best-effort error frame, never blocking; an iperf3 client
/// gets iperf3's `ACCESS_DENIED`) and close.
fn refuse(
    stream: TcpStream,
    state: &State,
    peer: SocketAddr,
    frontend: Frontend,
    limit: LimitName,
    message: String,
) {
    state.refusals.count(super::RefusalReason::Limit(limit));
    if state
        .log_limiter
        .lock()
        .map(|mut l| l.allow(Instant::now()))
        .unwrap_or(false)
    {
        tracing::warn!(%peer, ?limit, "connection refused: {message}");
    }
    let _ = stream.set_nonblocking(true);
    if frontend == Frontend::Iperf3 {
        let _ = (&stream).write(&[wirebench_iperf3::State::AccessDenied.byte()]);
        return;
    }
    let frame = frame::encode(&Message::Error(ErrorMsg {
        code: ErrorCode::LimitExceeded,
        field: None,
        limit: Some(limit),
        message,
    }));
    let _ = (&stream).write(&frame);
}

pub(super) fn handle_connection(
    mut stream: TcpStream,
    peer: SocketAddr,
    state: &Arc<State>,
    slot: ConnSlot,
) {
    let deadline = Instant::now() + state.cfg.timeouts.handshake;
    // The handshake is peeked, not read, until the connection leaves the handshake queue:
    // while its bytes sit in the kernel queue, eviction sees a complete handshake waiting
    // for this thread and leaves the connection alone (see `HANDSHAKE_READY_BYTES`).
    let mut preamble = [0u8; PREAMBLE_BYTES];
    if peek_exact_by(&stream, &mut preamble, deadline).is_err() {
        log_refused(
            state,
            peer,
            "connection closed, silent or evicted before its preamble",
        );
        return;
    }
    match classify(&preamble) {
        Ok(ConnKind::Data) => {
            let mut both = [0u8; HANDSHAKE_READY_BYTES];
            if peek_exact_by(&stream, &mut both, deadline).is_err() {
                log_refused(state, peer, "data connection without a complete hello");
                return;
            }
            // Leave the handshake queue before consuming the hello; a connection evicted in
            // the meantime was shut down and is dropped here, never handed to a test.
            let mut slot = slot;
            if !slot.end_handshake() {
                log_refused(
                    state,
                    peer,
                    "data connection evicted before its hello was read",
                );
                return;
            }
            if read_exact_by(&mut stream, &mut both, deadline).is_err() {
                log_refused(state, peer, "data connection without a complete hello");
                return;
            }
            let Ok(hello) = DataHello::decode_body(&both[PREAMBLE_BYTES..]) else {
                log_refused(state, peer, "data connection with a malformed hello");
                return;
            };
            route_data(state, peer, hello, stream, slot);
        }
        Ok(ConnKind::Control) => {
            // Consume the preamble peeked above.
            if read_exact_by(&mut stream, &mut preamble, deadline).is_err() {
                log_refused(state, peer, "control connection closed before its preamble");
                return;
            }
            control_session(stream, peer, state, slot)
        }
        Err(e) => log_refused(state, peer, &format!("not a wirebench connection: {e}")),
    }
}
