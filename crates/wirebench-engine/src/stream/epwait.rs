//! How an epoll worker with receiving flows waits for events ([`RecvWait`] on the epoll
//! engine): `block` sleeps in `epoll_wait`; `auto` first checks the epoll set with a
//! zero-timeout `epoll_wait` and, while nothing is ready, naps on the worker's own timer
//! (as [`crate::recvwait`] does for one flow) before the blocking `epoll_wait`.
//!
//! A worker asleep in `epoll_wait` is on the epoll set's wait queue, so the CPU that
//! delivers data to any of its sockets (the sender's, over loopback and veth) wakes it: on
//! a VM an inter-processor interrupt. At 10,000 loopback flows that wake-up was 15 % of the
//! sending CPU's time per byte on an Intel Xeon VM; a napping worker is off the queue and
//! nobody wakes it (docs/bench/2026-11-27-intel-xeon-recv-wait.md, "The many-flow engine").
//!
//! `auto` naps only while the receive buffers of the worker's receiving flows sum to at
//! least [`NAP_MIN_RCVBUF_BYTES`] (the bound one flow's waiter applies to its own buffer,
//! spread over the flows that share the data arriving during a nap) and either the receive
//! calls are at most [`NAP_MAX_CALL_BYTES`] or the worker serves at least
//! [`NAP_SHARED_FLOWS`] receiving flows.

use std::os::fd::OwnedFd;

use rustix::event::{epoll, Timespec};
use wirebench_model::side::RecvWaitStats;
use wirebench_model::spec::{RecvWait, NAP_MAX_CALL_BYTES, NAP_MIN_RCVBUF_BYTES, NAP_SHARED_FLOWS};

use crate::recvwait::nap_until;

/// Receive calls on one flow between two reads of its `SO_RCVBUF` while the worker's sum
/// is below [`NAP_MIN_RCVBUF_BYTES`] (autotuning grows the buffers within the first round
/// trips).
const RCVBUF_RECHECK_CALLS: u64 = 64;

/// One epoll worker's wait, and its counts.
#[derive(Debug)]
pub(crate) struct EpollWait {
    stats: RecvWaitStats,
    /// The receive calls are larger than `auto` naps with on a few flows.
    large_calls: bool,
    /// Receiving flows the worker serves.
    flows: u32,
    /// Sum of the receiving flows' `SO_RCVBUF`, as last read.
    rcvbuf_sum: u64,
}

impl EpollWait {
    /// The wait for `asked`, with receive calls of `call_bytes`.
    pub(crate) fn new(asked: RecvWait, call_bytes: usize) -> EpollWait {
        EpollWait {
            stats: RecvWaitStats {
                asked,
                epoll_workers: 1,
                ..RecvWaitStats::default()
            },
            large_calls: call_bytes as u64 > NAP_MAX_CALL_BYTES,
            flows: 0,
            rcvbuf_sum: 0,
        }
    }

    /// A receiving flow whose buffer is `bytes` joins the worker.
    pub(crate) fn add_buffer(&mut self, bytes: u64) {
        self.flows += 1;
        self.rcvbuf_sum = self.rcvbuf_sum.saturating_add(bytes);
    }

    /// The calls are too large for `auto` to nap with, on this few flows.
    fn large(&self) -> bool {
        self.large_calls && self.flows < NAP_SHARED_FLOWS
    }

    /// A receive call was made on a flow that has now made `flow_calls` calls and whose
    /// buffer was last read as `*known`: every [`RCVBUF_RECHECK_CALLS`] calls, while the
    /// sum is below the bound, `read` reads it again and the sum follows.
    pub(crate) fn received(
        &mut self,
        flow_calls: u64,
        known: &mut u64,
        read: impl FnOnce() -> u64,
    ) {
        self.stats.recv_calls += 1;
        let counted = self.stats.asked == RecvWait::Auto && !self.large();
        if counted
            && self.rcvbuf_sum < NAP_MIN_RCVBUF_BYTES
            && flow_calls.is_multiple_of(RCVBUF_RECHECK_CALLS)
        {
            let now = read();
            self.rcvbuf_sum = self.rcvbuf_sum.saturating_sub(*known).saturating_add(now);
            *known = now;
        }
    }

    /// Waits for events on `ep` into `events`, at most `timeout`; `quick` (the worker is
    /// past its stop instant: closing senders, draining receivers) skips the naps.
    pub(crate) fn wait(
        &mut self,
        ep: &OwnedFd,
        events: &mut Vec<epoll::Event>,
        timeout: &Timespec,
        quick: bool,
    ) -> rustix::io::Result<usize> {
        let nap = match self.stats.asked {
            RecvWait::Auto if quick => false,
            RecvWait::Auto if self.large() => {
                self.stats.large_calls += 1;
                false
            }
            RecvWait::Auto if self.rcvbuf_sum < NAP_MIN_RCVBUF_BYTES => {
                self.stats.small_buffer_calls += 1;
                false
            }
            RecvWait::Auto => true,
            // Validation refuses `nap` and `spin` on this engine; they block like `block`.
            RecvWait::Block | RecvWait::Nap | RecvWait::Spin => false,
        };
        if nap {
            let now = Timespec {
                tv_sec: 0,
                tv_nsec: 0,
            };
            // A zero-timeout epoll_wait; an error ends the naps and is returned.
            let mut checked = Ok(0);
            let found = nap_until(&mut self.stats, || {
                events.clear();
                checked = epoll::wait(ep, rustix::buffer::spare_capacity(events), Some(&now));
                !matches!(checked, Ok(0))
            });
            if found {
                return checked;
            }
        }
        events.clear();
        epoll::wait(ep, rustix::buffer::spare_capacity(events), Some(timeout))
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> RecvWaitStats {
        self.stats.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::net::TcpStream;
    use std::time::Instant;
    use wirebench_model::spec::{NAPS_BEFORE_BLOCK, NAP_US};

    use wirebench_testkit::net::loopback_pair as pair;

    fn watching(s: &TcpStream) -> OwnedFd {
        let ep = epoll::create(epoll::CreateFlags::CLOEXEC).unwrap();
        epoll::add(&ep, s, epoll::EventData::new_u64(0), epoll::EventFlags::IN).unwrap();
        ep
    }

    const SHORT: Timespec = Timespec {
        tv_sec: 0,
        tv_nsec: 1_000_000,
    };

    #[test]
    fn auto_naps_on_a_quiet_set_with_large_buffers_then_blocks() {
        let (mut c, s) = pair();
        let ep = watching(&s);
        let mut events = Vec::with_capacity(4);
        let mut w = EpollWait::new(RecvWait::Auto, 1 << 18);
        w.add_buffer(NAP_MIN_RCVBUF_BYTES);
        let t0 = Instant::now();
        assert_eq!(w.wait(&ep, &mut events, &SHORT, false).unwrap(), 0);
        let st = w.stats();
        assert_eq!(st.naps, u64::from(NAPS_BEFORE_BLOCK));
        assert_eq!(st.empty_polls, u64::from(NAPS_BEFORE_BLOCK) + 1);
        assert_eq!((st.blocking_waits, st.epoll_workers), (1, 1));
        // Every nap sleeps at least what it asked (a timer never fires early).
        assert!(st.nap_ns >= u64::from(NAPS_BEFORE_BLOCK) * NAP_US * 1000);
        assert!(t0.elapsed().as_nanos() as u64 >= st.nap_ns);
        // Data already queued (over loopback once the write returns): found at once.
        c.write_all(b"x").unwrap();
        assert_eq!(w.wait(&ep, &mut events, &SHORT, false).unwrap(), 1);
        assert_eq!(w.stats().naps, st.naps);
        assert_eq!(w.stats().empty_polls, st.empty_polls);
        // Past the stop instant it does not nap.
        let mut q = EpollWait::new(RecvWait::Auto, 1 << 18);
        q.add_buffer(NAP_MIN_RCVBUF_BYTES);
        let (_c2, s2) = pair();
        q.wait(&watching(&s2), &mut events, &SHORT, true).unwrap();
        assert_eq!(q.stats(), EpollWait::new(RecvWait::Auto, 1 << 18).stats());
    }

    #[test]
    fn auto_blocks_on_small_buffers_or_large_calls_and_block_never_checks() {
        let (_c, s) = pair();
        let ep = watching(&s);
        let mut events = Vec::with_capacity(4);
        let mut small = EpollWait::new(RecvWait::Auto, 1 << 18);
        small.add_buffer(NAP_MIN_RCVBUF_BYTES - 1);
        small.wait(&ep, &mut events, &SHORT, false).unwrap();
        let st = small.stats();
        assert_eq!((st.small_buffer_calls, st.naps, st.empty_polls), (1, 0, 0));
        let mut large = EpollWait::new(RecvWait::Auto, NAP_MAX_CALL_BYTES as usize + 1);
        large.add_buffer(NAP_MIN_RCVBUF_BYTES);
        large.wait(&ep, &mut events, &SHORT, false).unwrap();
        let st = large.stats();
        assert_eq!((st.large_calls, st.naps, st.empty_polls), (1, 0, 0));
        // Shared by NAP_SHARED_FLOWS flows, the same calls nap.
        for _ in 1..NAP_SHARED_FLOWS {
            large.add_buffer(0);
        }
        large.wait(&ep, &mut events, &SHORT, false).unwrap();
        let st = large.stats();
        assert_eq!((st.large_calls, st.naps), (1, u64::from(NAPS_BEFORE_BLOCK)));
        let mut block = EpollWait::new(RecvWait::Block, 1 << 18);
        block.add_buffer(NAP_MIN_RCVBUF_BYTES);
        block.wait(&ep, &mut events, &SHORT, false).unwrap();
        let st = block.stats();
        assert_eq!(
            (
                st.naps,
                st.empty_polls,
                st.blocking_waits,
                st.small_buffer_calls
            ),
            (0, 0, 0, 0)
        );
    }

    #[test]
    fn the_buffer_sum_follows_autotuning_every_64th_call() {
        let mut w = EpollWait::new(RecvWait::Auto, 1 << 18);
        let mut known = 128 << 10;
        w.add_buffer(known);
        for call in 1..RCVBUF_RECHECK_CALLS {
            w.received(call, &mut known, || unreachable!("read between rechecks"));
        }
        w.received(RCVBUF_RECHECK_CALLS, &mut known, || 2 << 20);
        assert_eq!((known, w.rcvbuf_sum), (2 << 20, 2 << 20));
        assert_eq!(w.stats().recv_calls, RCVBUF_RECHECK_CALLS);
        // Above the bound it reads no more.
        w.received(2 * RCVBUF_RECHECK_CALLS, &mut known, || {
            unreachable!("above the bound")
        });
    }
}
