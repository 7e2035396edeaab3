//! The waker of the blocking TCP RR flows.
//!
//! A closed-loop TCP RR client and a TCP RR server block in `recv(2)` with no timeout: a
//! receive timeout arms a kernel timer on every read that blocks, which costs about 2 % of a
//! same-CPU round trip. Instead this thread watches the run and shuts the flows' sockets
//! down for reading (`shutdown(SHUT_RD)`, which wakes a blocked reader with end-of-file and
//! sends nothing) when the run is aborted or the drain past the stop instant expires. The
//! flows then see their give-up condition and end as they would have on a timeout. It checks
//! every [`WAKER_PERIOD`], so an abort is noticed within that.

use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use super::Shared;
use crate::abort::Abort;

/// How often the waker looks at the run.
pub(super) const WAKER_PERIOD: Duration = Duration::from_millis(20);

/// Duplicates of the blocking flows' sockets and the count of flows still running.
pub(super) struct Waker {
    sockets: Vec<TcpStream>,
    live: AtomicUsize,
}

impl Waker {
    /// A waker over `sockets`, or `None` if one could not be duplicated (the flows then keep
    /// their poll-period timeouts).
    pub(super) fn new<'a>(sockets: impl Iterator<Item = &'a TcpStream>) -> Option<Waker> {
        let sockets: Vec<TcpStream> = sockets
            .map(TcpStream::try_clone)
            .collect::<std::io::Result<_>>()
            .ok()?;
        let live = AtomicUsize::new(sockets.len());
        Some(Waker { sockets, live })
    }

    /// A flow has ended.
    pub(super) fn flow_done(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Watch the run until every flow has ended; on an abort or once the drain past the stop
    /// instant has expired, shut every socket down for reading.
    pub(super) fn watch(&self, shared: &Shared, abort: &Abort, drain_limit: Duration) {
        while self.live.load(Ordering::Acquire) > 0 {
            let expired = shared
                .stop_instant()
                .is_some_and(|t| Instant::now() > t + drain_limit);
            if abort.is_set() || expired {
                for s in &self.sockets {
                    let _ = s.shutdown(Shutdown::Read);
                }
                return;
            }
            thread::sleep(WAKER_PERIOD);
        }
    }
}
