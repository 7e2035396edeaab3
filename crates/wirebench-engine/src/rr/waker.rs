//! The waker of the blocking RR flows.
//!
//! A closed-loop TCP RR client, a TCP RR server and a UDP RR server block in their reads with
//! no timeout: a receive timeout arms a kernel timer on every read that blocks, which costs
//! about 2 % of a same-CPU round trip. Instead this thread watches the run and shuts the
//! flows' sockets down for reading (`shutdown(SHUT_RD)`, which wakes a blocked reader and
//! sends nothing): a TCP reader then sees end-of-file, a UDP reader gets what is still queued
//! and then a datagram of no length from no source. It does so
//! - for every flow, when the run is aborted or the drain past the stop instant expires: the
//!   flows then see their give-up condition and end as they would have on a timeout;
//! - for a UDP server ([`EndRule::UdpServer`]), past the stop instant, once the caller said
//!   the client has finished, or per flow once it has answered nothing for
//!   [`SERVER_IDLE_AFTER_STOP`]: the server's end rules (see the [`super`] module docs),
//!   which it kept before as receive timeouts.
//!
//! It checks every [`WAKER_PERIOD`], so an abort is noticed within that; a UDP server's
//! waker checks every [`SERVER_IDLE_AFTER_PEER`] from one period before the planned stop on.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::{Shared, SERVER_IDLE_AFTER_PEER, SERVER_IDLE_AFTER_STOP};
use crate::abort::Abort;

/// How often the waker looks at the run.
pub(super) const WAKER_PERIOD: Duration = Duration::from_millis(20);

/// When the waker shuts a flow's socket down besides an abort or an expired drain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum EndRule {
    /// Never: TCP flows end on their peer's end-of-file.
    Tcp,
    /// A UDP server's: past the stop instant, once the peer has finished, or once the flow
    /// has been idle for [`SERVER_IDLE_AFTER_STOP`].
    UdpServer,
}

/// Duplicates of the blocking flows' sockets and the count of flows still running.
pub(super) struct Waker {
    sockets: Vec<OwnedFd>,
    live: AtomicUsize,
    rule: EndRule,
}

impl Waker {
    /// A waker over `sockets` (in flow order: the i-th is flow slot i's) ended by `rule`, or
    /// `None` if one could not be duplicated (the flows then keep their poll-period
    /// timeouts).
    pub(super) fn new<S: AsFd>(sockets: impl Iterator<Item = S>, rule: EndRule) -> Option<Waker> {
        let sockets: Vec<OwnedFd> = sockets
            .map(|s| s.as_fd().try_clone_to_owned())
            .collect::<std::io::Result<_>>()
            .ok()?;
        let live = AtomicUsize::new(sockets.len());
        Some(Waker {
            sockets,
            live,
            rule,
        })
    }

    /// A flow has ended.
    pub(super) fn flow_done(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Watch the run until every flow has ended; on an abort or once the drain past the stop
    /// instant has expired, shut every socket down for reading; a UDP server's sockets also
    /// by its end rule. `planned_stop`: where the stop instant falls if nothing ends the run
    /// early.
    pub(super) fn watch(
        &self,
        shared: &Shared,
        abort: &Abort,
        drain_limit: Duration,
        planned_stop: Instant,
    ) {
        // Per flow: its last transaction count, when that last changed, and whether its
        // socket has been shut down.
        let mut seen: Vec<(u64, Instant, bool)> =
            vec![(0, shared.start, false); self.sockets.len()];
        while self.live.load(Ordering::Acquire) > 0 {
            let now = Instant::now();
            let stop = shared.stop_instant();
            let expired = stop.is_some_and(|t| now > t + drain_limit);
            let peer_done = stop.is_some() && abort.is_peer_finished();
            if abort.is_set() || expired || (self.rule == EndRule::UdpServer && peer_done) {
                for s in &self.sockets {
                    shut_read(s);
                }
                return;
            }
            if let (EndRule::UdpServer, Some(stop)) = (self.rule, stop) {
                self.shut_idle(shared, &mut seen, stop, now);
            }
            let near_stop = planned_stop.saturating_duration_since(now) <= WAKER_PERIOD;
            thread::sleep(if self.rule == EndRule::UdpServer && near_stop {
                SERVER_IDLE_AFTER_PEER
            } else {
                WAKER_PERIOD
            });
        }
    }

    /// Shut down the socket of every flow that has answered nothing for
    /// [`SERVER_IDLE_AFTER_STOP`] since the later of `stop` and its last answer.
    fn shut_idle(
        &self,
        shared: &Shared,
        seen: &mut [(u64, Instant, bool)],
        stop: Instant,
        now: Instant,
    ) {
        for ((s, counters), (count, changed, shut)) in
            self.sockets.iter().zip(&shared.counters).zip(seen)
        {
            let c = counters.transactions.load(Ordering::Relaxed);
            if c != *count {
                (*count, *changed) = (c, now);
            }
            let idle = now.saturating_duration_since(stop.max(*changed));
            if !*shut && idle > SERVER_IDLE_AFTER_STOP {
                shut_read(s);
                *shut = true;
            }
        }
    }
}

/// Shut `s` down for reading. On an unconnected UDP socket the call fails (ENOTCONN) and
/// still marks the socket shut and wakes its reader, which is all this needs.
fn shut_read(s: &OwnedFd) {
    let _ = rustix::net::shutdown(s, rustix::net::Shutdown::Read);
}
