//! `MSG_ZEROCOPY` sends and their completion notifications (socket error
//! queue).
//!
//! With `SO_ZEROCOPY` enabled, every successful `send(MSG_ZEROCOPY)` of at
//! least one byte gets the next number of a per-socket 32-bit counter
//! (starting at 0). When the kernel no longer needs the pages of a range of
//! sends, it queues a notification `[lo, hi]` on the socket's error queue;
//! adjacent notifications may be coalesced into one range. A notification
//! with `SO_EE_CODE_ZEROCOPY_COPIED` means the kernel copied the data after
//! all (always the case over loopback, where data is handed to a local
//! socket).

use std::io;
use std::mem::size_of;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::os::{cvt_len, poll_one, retry_eintr, setsockopt_int, unsupported_if};

/// `SO_ZEROCOPY` (asm-generic/socket.h; not exported by `libc` for every
/// target).
const SO_ZEROCOPY: libc::c_int = 60;
/// `SO_EE_ORIGIN_ZEROCOPY` (linux/errqueue.h).
const SO_EE_ORIGIN_ZEROCOPY: u8 = 5;
/// `SO_EE_CODE_ZEROCOPY_COPIED` (linux/errqueue.h).
const SO_EE_CODE_ZEROCOPY_COPIED: u8 = 1;
/// Upper bound of error-queue messages read by one drain.
const MAX_DRAIN: usize = 4096;

/// Turns on `SO_ZEROCOPY`, required for [`send_zerocopy`]: without it the
/// kernel silently ignores `MSG_ZEROCOPY` and sends no notifications.
///
/// # Errors
///
/// `Unsupported` if the kernel or socket type lacks `SO_ZEROCOPY` (Linux
/// < 4.14 for TCP); otherwise the `setsockopt` error.
pub fn enable_zerocopy<S: AsFd>(sock: &S) -> io::Result<()> {
    setsockopt_int(sock.as_fd(), libc::SOL_SOCKET, SO_ZEROCOPY, 1).map_err(|e| {
        unsupported_if(
            e,
            &[libc::ENOPROTOOPT, libc::EOPNOTSUPP, libc::EINVAL],
            "SO_ZEROCOPY",
        )
    })
}

/// One `send(buf, MSG_ZEROCOPY)` (retried only on `EINTR`); returns the
/// bytes queued. Each call that returns `Ok(n)` with `n > 0` consumes one
/// notification number; [`ZeroCopyCompletions::send`] does the counting.
///
/// The kernel references the pages of `buf` until the matching notification
/// arrives: the caller must not modify `buf` before then (a data-integrity
/// caveat; the kernel only reads the pages).
///
/// # Errors
///
/// `WouldBlock` (socket full / send timeout), `ENOBUFS` when too many
/// notifications are outstanding (the socket's `optmem` budget,
/// `net.core.optmem_max`): drain completions and retry.
pub fn send_zerocopy<S: AsFd>(sock: &S, buf: &[u8]) -> io::Result<usize> {
    let fd = sock.as_fd().as_raw_fd();
    retry_eintr(|| {
        // SAFETY: `buf` is readable for its length during the call; the
        // kernel only reads (pins) its pages.
        let rc = unsafe {
            libc::send(
                fd,
                buf.as_ptr().cast(),
                buf.len(),
                libc::MSG_ZEROCOPY | libc::MSG_NOSIGNAL,
            )
        };
        cvt_len(rc)
    })
}

/// One completion notification: sends `lo..=hi` (wrapping 32-bit counter)
/// are done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ZeroCopyRange {
    /// First completed send number (`ee_info`).
    pub lo: u32,
    /// Last completed send number, inclusive (`ee_data`).
    pub hi: u32,
    /// The kernel copied the data (`SO_EE_CODE_ZEROCOPY_COPIED`). For a
    /// coalesced range this reflects the first notification of the range.
    pub copied: bool,
}

impl ZeroCopyRange {
    /// Number of sends in the range (handles counter wrap-around).
    pub fn count(&self) -> u64 {
        u64::from(self.hi.wrapping_sub(self.lo)) + 1
    }

    /// Interprets a `sock_extended_err`; `None` unless it is a zerocopy
    /// notification.
    fn from_ee(ee: &libc::sock_extended_err) -> Option<ZeroCopyRange> {
        (ee.ee_errno == 0 && ee.ee_origin == SO_EE_ORIGIN_ZEROCOPY).then_some(ZeroCopyRange {
            lo: ee.ee_info,
            hi: ee.ee_data,
            copied: ee.ee_code & SO_EE_CODE_ZEROCOPY_COPIED != 0,
        })
    }
}

/// What one error-queue read produced.
enum ErrQueue {
    /// The queue is empty.
    Empty,
    /// A zerocopy notification.
    Range(ZeroCopyRange),
    /// Something else (e.g. an ICMP error or a timestamp); skipped.
    Other,
}

/// Control buffer for one `recvmsg(MSG_ERRQUEUE)`: room for a
/// `sock_extended_err` plus the offender address, 8-byte aligned.
#[repr(C, align(8))]
struct Control([u8; 128]);

/// Reads one message from the socket's error queue without blocking.
fn read_errqueue(fd: BorrowedFd<'_>) -> io::Result<ErrQueue> {
    let mut control = Control([0; 128]);
    // SAFETY: `msghdr` is a C struct of integers and pointers; all zeroes
    // (null pointers, zero lengths) is a valid value.
    let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
    msg.msg_control = control.0.as_mut_ptr().cast();
    msg.msg_controllen = control.0.len() as _;
    let res = retry_eintr(|| {
        // SAFETY: `msg` points to the live control buffer of the stated
        // length and to no data iovecs; the kernel writes only within them.
        let rc = unsafe {
            libc::recvmsg(
                fd.as_raw_fd(),
                &mut msg,
                libc::MSG_ERRQUEUE | libc::MSG_DONTWAIT,
            )
        };
        cvt_len(rc)
    });
    match res {
        Ok(_) => Ok(parse_control(&msg)),
        Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(ErrQueue::Empty),
        Err(e) => Err(e),
    }
}

/// Finds an `IP_RECVERR` / `IPV6_RECVERR` control message in `msg` and
/// interprets it.
fn parse_control(msg: &libc::msghdr) -> ErrQueue {
    // SAFETY: `msg` was filled by `recvmsg`: `msg_control`/`msg_controllen`
    // describe our control buffer holding well-formed cmsg headers; the
    // CMSG_* helpers stay within `msg_controllen`.
    let mut cmsg = unsafe { libc::CMSG_FIRSTHDR(msg) };
    while !cmsg.is_null() {
        // SAFETY: `cmsg` is non-null and points to a header inside the buffer.
        let hdr = unsafe { &*cmsg };
        let is_recverr = (hdr.cmsg_level == libc::SOL_IP && hdr.cmsg_type == libc::IP_RECVERR)
            || (hdr.cmsg_level == libc::SOL_IPV6 && hdr.cmsg_type == libc::IPV6_RECVERR);
        let data_len = (hdr.cmsg_len as usize)
            // SAFETY: CMSG_LEN is a pure computation.
            .saturating_sub(unsafe { libc::CMSG_LEN(0) } as usize);
        if is_recverr && data_len >= size_of::<libc::sock_extended_err>() {
            // SAFETY: the payload holds at least a `sock_extended_err`
            // (checked above); it may be unaligned, hence read_unaligned.
            let ee = unsafe {
                libc::CMSG_DATA(cmsg)
                    .cast::<libc::sock_extended_err>()
                    .read_unaligned()
            };
            return ZeroCopyRange::from_ee(&ee).map_or(ErrQueue::Other, ErrQueue::Range);
        }
        // SAFETY: `msg` and `cmsg` are valid as above.
        cmsg = unsafe { libc::CMSG_NXTHDR(msg, cmsg) };
    }
    ErrQueue::Other
}

/// Counts `MSG_ZEROCOPY` sends and their completions for one socket.
///
/// Completions are counted by range size, so out-of-order and coalesced
/// notifications are handled; the kernel notifies every send exactly once.
#[derive(Debug, Default, Clone)]
pub struct ZeroCopyCompletions {
    sent: u64,
    completed_zerocopy: u64,
    completed_copied: u64,
    notifications: u64,
}

impl ZeroCopyCompletions {
    /// A tracker with no sends.
    pub fn new() -> ZeroCopyCompletions {
        ZeroCopyCompletions::default()
    }

    /// [`send_zerocopy`] that counts the send when it queued data.
    ///
    /// # Errors
    ///
    /// As [`send_zerocopy`].
    pub fn send<S: AsFd>(&mut self, sock: &S, buf: &[u8]) -> io::Result<usize> {
        let n = send_zerocopy(sock, buf)?;
        if n > 0 {
            self.sent += 1;
        }
        Ok(n)
    }

    /// Counts one successful (`n > 0`) `MSG_ZEROCOPY` send made elsewhere.
    pub fn record_send(&mut self) {
        self.sent += 1;
    }

    /// Sends counted so far.
    pub fn sent(&self) -> u64 {
        self.sent
    }

    /// Sends not yet completed.
    pub fn outstanding(&self) -> u64 {
        self.sent.saturating_sub(self.completed())
    }

    /// Completed sends (zerocopy plus copied).
    pub fn completed(&self) -> u64 {
        self.completed_zerocopy + self.completed_copied
    }

    /// Completed sends whose pages were sent without a copy.
    pub fn completed_zerocopy(&self) -> u64 {
        self.completed_zerocopy
    }

    /// Completed sends the kernel copied anyway (`SO_EE_CODE_ZEROCOPY_COPIED`).
    pub fn completed_copied(&self) -> u64 {
        self.completed_copied
    }

    /// Notification messages read (each covers one or more sends).
    pub fn notifications(&self) -> u64 {
        self.notifications
    }

    /// Accounts one notification; returns the sends it completed.
    pub fn account(&mut self, range: ZeroCopyRange) -> u64 {
        let n = range.count();
        self.notifications += 1;
        if range.copied {
            self.completed_copied += n;
        } else {
            self.completed_zerocopy += n;
        }
        n
    }

    /// Drains the socket's error queue without blocking; returns the number
    /// of sends newly completed.
    ///
    /// # Errors
    ///
    /// The `recvmsg(MSG_ERRQUEUE)` error.
    pub fn poll<S: AsFd>(&mut self, sock: &S) -> io::Result<u64> {
        let mut done = 0;
        for _ in 0..MAX_DRAIN {
            match read_errqueue(sock.as_fd())? {
                ErrQueue::Empty => break,
                ErrQueue::Range(r) => done += self.account(r),
                ErrQueue::Other => {}
            }
        }
        Ok(done)
    }

    /// Waits (`poll` for `POLLERR`) until at least one send completes or
    /// `timeout` passes; returns the sends newly completed (0 on timeout or
    /// if nothing is outstanding).
    ///
    /// # Errors
    ///
    /// The error-queue read error, or a pending socket error (`SO_ERROR`).
    pub fn wait<S: AsFd>(&mut self, sock: &S, timeout: Duration) -> io::Result<u64> {
        let deadline = Instant::now() + timeout;
        loop {
            let done = self.poll(sock)?;
            let left = deadline.saturating_duration_since(Instant::now());
            if done > 0 || self.outstanding() == 0 || left.is_zero() {
                return Ok(done);
            }
            self.sleep_for_errqueue(sock.as_fd(), left)?;
        }
    }

    /// Waits until every counted send has completed.
    ///
    /// # Errors
    ///
    /// `TimedOut` if sends are still outstanding after `timeout`; otherwise
    /// as [`wait`](Self::wait).
    pub fn wait_all<S: AsFd>(&mut self, sock: &S, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        while self.outstanding() > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} of {} MSG_ZEROCOPY sends not completed",
                        self.outstanding(),
                        self.sent
                    ),
                ));
            }
            self.wait(sock, left)?;
        }
        Ok(())
    }

    /// Sleeps until the socket signals `POLLERR` or `left` passes. If
    /// `POLLERR` comes from a socket error rather than the queue, returns
    /// that error instead of spinning.
    fn sleep_for_errqueue(&mut self, fd: BorrowedFd<'_>, left: Duration) -> io::Result<()> {
        let revents = poll_one(fd, libc::POLLERR, Some(left))?;
        if revents & libc::POLLERR != 0 && self.poll(&fd)? == 0 {
            if let Some(e) = SockRef::from(&fd).take_error()? {
                return Err(e);
            }
            // Not ours (e.g. a non-zerocopy error-queue entry we skipped):
            // back off briefly instead of spinning.
            std::thread::sleep(Duration::from_millis(1).min(left));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ee(origin: u8, code: u8, lo: u32, hi: u32) -> libc::sock_extended_err {
        libc::sock_extended_err {
            ee_errno: 0,
            ee_origin: origin,
            ee_type: 0,
            ee_code: code,
            ee_pad: 0,
            ee_info: lo,
            ee_data: hi,
        }
    }

    #[test]
    fn ranges_count_and_wrap() {
        let r = ZeroCopyRange::from_ee(&ee(SO_EE_ORIGIN_ZEROCOPY, 0, 3, 7)).unwrap();
        assert_eq!(r.count(), 5);
        assert!(!r.copied);
        let r = ZeroCopyRange::from_ee(&ee(SO_EE_ORIGIN_ZEROCOPY, 1, u32::MAX - 1, 2)).unwrap();
        assert_eq!(r.count(), 5);
        assert!(r.copied);
        assert!(ZeroCopyRange::from_ee(&ee(2, 0, 0, 0)).is_none());
    }

    #[test]
    fn tracker_accounts_several_and_coalesced_ranges() {
        let mut t = ZeroCopyCompletions::new();
        for _ in 0..10 {
            t.record_send();
        }
        assert_eq!(t.outstanding(), 10);
        let range = |lo, hi, copied| ZeroCopyRange { lo, hi, copied };
        assert_eq!(t.account(range(0, 0, false)), 1);
        // A coalesced range, then one that arrives out of order.
        assert_eq!(t.account(range(4, 9, true)), 6);
        assert_eq!(t.account(range(1, 3, false)), 3);
        assert_eq!(t.outstanding(), 0);
        assert_eq!(t.completed_zerocopy(), 4);
        assert_eq!(t.completed_copied(), 6);
        assert_eq!(t.notifications(), 3);
    }

    #[test]
    fn parse_control_finds_recverr() {
        let mut control = Control([0; 128]);
        // SAFETY: zeroed msghdr is valid (see read_errqueue).
        let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
        msg.msg_control = control.0.as_mut_ptr().cast();
        msg.msg_controllen = control.0.len() as _;
        let payload = ee(SO_EE_ORIGIN_ZEROCOPY, 1, 10, 12);
        // SAFETY: building one cmsg inside the 128-byte, 8-aligned buffer;
        // CMSG_LEN(16) + header fits.
        unsafe {
            let c = libc::CMSG_FIRSTHDR(&msg);
            (*c).cmsg_level = libc::SOL_IPV6;
            (*c).cmsg_type = libc::IPV6_RECVERR;
            (*c).cmsg_len = libc::CMSG_LEN(size_of::<libc::sock_extended_err>() as u32) as _;
            libc::CMSG_DATA(c)
                .cast::<libc::sock_extended_err>()
                .write_unaligned(payload);
            msg.msg_controllen = libc::CMSG_SPACE(size_of::<libc::sock_extended_err>() as u32) as _;
        }
        match parse_control(&msg) {
            ErrQueue::Range(r) => assert_eq!(
                r,
                ZeroCopyRange {
                    lo: 10,
                    hi: 12,
                    copied: true
                }
            ),
            _ => panic!("no range parsed"),
        }
    }
}
