//! How a thread-per-flow stream receiver waits while its socket is empty
//! ([`RecvWait`]): block in the receive call, nap on the thread's own timer, or spin on
//! zero-timeout polls.
//!
//! A thread blocked in `recv` sits on the socket's wait queue, so the CPU that delivers the
//! data (the sender's, over loopback and veth) wakes it, and on a VM waking a halted CPU is
//! an inter-processor interrupt that exits to the host. On an Intel Xeon VM at 128 KiB
//! calls that wake-up was 18.6 % of the sender's CPU against iperf3's 9.8 %, and the sender
//! was the limit; a receiver that naps off the wait queue took it away (+12 % at 128 KiB,
//! loopback and veth; docs/bench/2026-11-27-intel-xeon-recv-wait.md). The waiter runs before each
//! receive call; the call itself is the path's ([`crate::paths::Receiver`]).

use std::net::TcpStream;
use std::os::fd::AsFd;
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags, Timespec};
use wirebench_model::side::RecvWaitStats;
use wirebench_model::spec::{
    RecvPath, RecvWait, NAPS_BEFORE_BLOCK, NAP_MAX_CALL_BYTES, NAP_MIN_RCVBUF_BYTES, NAP_US,
    SPIN_US,
};

/// Receive calls `auto` makes between two reads of `SO_RCVBUF` while it is below
/// [`NAP_MIN_RCVBUF_BYTES`] (autotuning grows it within the first round trips).
const RCVBUF_RECHECK_CALLS: u64 = 64;

/// A receiving flow's waiter: call [`Waiter::wait`] before every receive call.
#[derive(Debug)]
pub(crate) struct Waiter {
    stats: RecvWaitStats,
    /// `auto`: the receive call at which to read `SO_RCVBUF` next, while it is small.
    recheck_at: u64,
    /// `auto`: the buffer was large enough at the last read.
    big_buffer: bool,
    /// `auto`: the receive calls are larger than it naps with.
    large_calls: bool,
}

impl Waiter {
    /// The waiter for `asked` on `path`, for receive calls of `call_bytes`; `None` for the
    /// paths that wait their own way.
    pub(crate) fn new(asked: RecvWait, path: RecvPath, call_bytes: usize) -> Option<Waiter> {
        match path {
            RecvPath::Copy | RecvPath::Discard | RecvPath::Splice => Some(Waiter {
                stats: RecvWaitStats {
                    asked,
                    ..RecvWaitStats::default()
                },
                recheck_at: 0,
                big_buffer: false,
                large_calls: call_bytes as u64 > NAP_MAX_CALL_BYTES,
            }),
            RecvPath::Zerocopy | RecvPath::Uring => None,
        }
    }

    /// Waits, this flow's way, until `s` has data, or hands over to the blocking receive
    /// call that follows.
    pub(crate) fn wait(&mut self, s: &TcpStream) {
        let calls = self.stats.recv_calls;
        self.stats.recv_calls += 1;
        match self.stats.asked {
            RecvWait::Block => {}
            RecvWait::Nap => self.nap(s),
            RecvWait::Spin => self.spin(s),
            RecvWait::Auto if self.large_calls => self.stats.large_calls += 1,
            RecvWait::Auto => {
                if calls >= self.recheck_at {
                    self.big_buffer = rcvbuf_bytes(s) >= NAP_MIN_RCVBUF_BYTES;
                    self.recheck_at = calls + RCVBUF_RECHECK_CALLS;
                }
                if self.big_buffer {
                    self.nap(s);
                } else {
                    self.stats.small_buffer_calls += 1;
                }
            }
        }
    }

    /// The counts so far.
    pub(crate) fn stats(&self) -> RecvWaitStats {
        self.stats.clone()
    }

    fn nap(&mut self, s: &TcpStream) {
        nap_until(&mut self.stats, || readable(s));
    }

    fn spin(&mut self, s: &TcpStream) {
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_micros(SPIN_US) {
            if readable(s) {
                return;
            }
            self.stats.empty_polls += 1;
        }
        self.stats.blocking_waits += 1;
    }
}

/// The nap both waiters take (a flow's [`Waiter`] and an epoll worker's
/// [`EpollWait`](crate::stream::epwait::EpollWait)): check with `ready` (a zero-timeout
/// check); while it finds nothing, sleep [`NAP_US`] µs on the thread's own timer and check
/// again, at most [`NAPS_BEFORE_BLOCK`] times. Counts the empty checks, the naps and their
/// time in `stats`, and a blocking wait if the naps ran out. True if `ready` found
/// something (the caller then proceeds without blocking).
pub(crate) fn nap_until(stats: &mut RecvWaitStats, mut ready: impl FnMut() -> bool) -> bool {
    for i in 0..=NAPS_BEFORE_BLOCK {
        if i > 0 {
            let t0 = Instant::now();
            std::thread::sleep(Duration::from_micros(NAP_US));
            stats.naps += 1;
            stats.nap_ns += t0.elapsed().as_nanos() as u64;
        }
        if ready() {
            return true;
        }
        stats.empty_polls += 1;
    }
    stats.blocking_waits += 1;
    false
}

/// A zero-timeout poll: true if `s` is readable (or in error, or polling failed: the
/// receive call then says what is wrong).
fn readable(s: &TcpStream) -> bool {
    let fd = s.as_fd();
    let mut fds = [PollFd::new(&fd, PollFlags::IN)];
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    !matches!(poll(&mut fds, Some(&now)), Ok(0))
}

/// `SO_RCVBUF` of `fd` (0 if it cannot be read: `auto` then blocks).
pub(crate) fn rcvbuf_bytes(fd: impl AsFd) -> u64 {
    rustix::net::sockopt::socket_recv_buffer_size(fd).map_or(0, |b| b as u64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    use wirebench_testkit::net::loopback_pair as pair;

    #[test]
    fn paths_that_wait_their_own_way_have_no_waiter() {
        assert!(Waiter::new(RecvWait::Nap, RecvPath::Zerocopy, 1 << 17).is_none());
        assert!(Waiter::new(RecvWait::Auto, RecvPath::Uring, 1 << 17).is_none());
        for p in [RecvPath::Copy, RecvPath::Discard, RecvPath::Splice] {
            assert!(Waiter::new(RecvWait::Auto, p, 1 << 17).is_some());
        }
    }

    #[test]
    fn an_empty_socket_naps_then_hands_over_and_a_full_one_does_not_wait() {
        let (mut c, s) = pair();
        let mut w = Waiter::new(RecvWait::Nap, RecvPath::Copy, 1 << 17).unwrap();
        let t0 = Instant::now();
        w.wait(&s);
        let st = w.stats();
        assert_eq!(st.naps, u64::from(NAPS_BEFORE_BLOCK));
        assert_eq!(st.empty_polls, u64::from(NAPS_BEFORE_BLOCK) + 1);
        assert_eq!(st.blocking_waits, 1);
        // Every nap sleeps at least what it asked (the kernel never wakes a timer early).
        assert!(st.nap_ns >= u64::from(NAPS_BEFORE_BLOCK) * NAP_US * 1000);
        assert!(t0.elapsed().as_nanos() as u64 >= st.nap_ns);
        c.write_all(b"x").unwrap();
        // The byte is in the receive queue once the write returns over loopback.
        w.wait(&s);
        let st2 = w.stats();
        assert_eq!(st2.naps, st.naps);
        assert_eq!(st2.empty_polls, st.empty_polls);
        assert_eq!(st2.recv_calls, 2);
    }

    #[test]
    fn auto_blocks_on_a_small_buffer_and_spin_gives_up() {
        let (_c, s) = pair();
        socket2::SockRef::from(&s)
            .set_recv_buffer_size(64 * 1024)
            .unwrap();
        let mut w = Waiter::new(RecvWait::Auto, RecvPath::Copy, 1 << 17).unwrap();
        w.wait(&s);
        w.wait(&s);
        let st = w.stats();
        assert_eq!((st.small_buffer_calls, st.naps, st.empty_polls), (2, 0, 0));
        let mut sp = Waiter::new(RecvWait::Spin, RecvPath::Copy, 1 << 17).unwrap();
        let t0 = Instant::now();
        sp.wait(&s);
        assert!(t0.elapsed() >= Duration::from_micros(SPIN_US));
        let st = sp.stats();
        assert_eq!((st.blocking_waits, st.naps), (1, 0));
        assert!(st.empty_polls >= 1);
    }

    #[test]
    fn auto_blocks_with_large_calls_even_on_a_large_buffer() {
        let (_c, s) = pair();
        socket2::SockRef::from(&s)
            .set_recv_buffer_size(4 << 20)
            .unwrap();
        assert!(rcvbuf_bytes(&s) >= NAP_MIN_RCVBUF_BYTES);
        let large = NAP_MAX_CALL_BYTES as usize + 1;
        let mut w = Waiter::new(RecvWait::Auto, RecvPath::Copy, large).unwrap();
        w.wait(&s);
        let st = w.stats();
        assert_eq!((st.large_calls, st.small_buffer_calls), (1, 0));
        assert_eq!((st.naps, st.empty_polls), (0, 0));
        // At the bound, the same empty socket is checked and napped on.
        let mut w = Waiter::new(RecvWait::Auto, RecvPath::Copy, large - 1).unwrap();
        w.wait(&s);
        let st = w.stats();
        assert_eq!(st.large_calls, 0);
        assert_eq!(st.naps, u64::from(NAPS_BEFORE_BLOCK));
    }
}
