//! io_uring receive path with provided buffers ([`UringReceiver`]).

use std::collections::VecDeque;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::ptr;
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring};

use super::os::{round_to_pages, Mapping};
use super::uring::{drain_cq, new_ring, probe_ops, push, require_ops, submit_wait, DROP_WAIT};

/// Buffer group id of the receive pool.
const BGID: u16 = 7;
/// `user_data` tags.
const TAG_RECV: u64 = 1;
const TAG_PROVIDE: u64 = 2;
const TAG_CANCEL: u64 = 3;
/// Largest number of buffers (buffer ids are 16-bit).
const MAX_BUFS: usize = 1 << 15;

/// Receives a TCP stream through io_uring into a pool of `nbufs` provided
/// buffers (`IORING_OP_PROVIDE_BUFFERS`) with buffer-selecting `Recv`:
/// one multishot receive (Linux 6.0+; completions in stream order) or, on
/// older kernels, one single-shot receive at a time.
///
/// Each [`recv`](Self::recv) returns the length of one completion, whose
/// bytes [`data`](Self::data) shows until the next `recv`, which gives the
/// buffer back to the kernel.
///
/// The receiver keeps a duplicate of the socket descriptor.
pub struct UringReceiver {
    ring: IoUring,
    sock: OwnedFd,
    /// The buffer pool; `None` only after being leaked in `drop`.
    pool: Option<Mapping>,
    buf_len: usize,
    multishot: bool,
    /// A receive request is in flight.
    armed: bool,
    /// A multishot receive has delivered data (so `EINVAL` is not "multishot
    /// unsupported").
    multishot_worked: bool,
    /// Completed buffers not yet handed out: (buffer id, length).
    ready: VecDeque<(u16, usize)>,
    /// The buffer handed out by the last `recv`.
    current: Option<(u16, usize)>,
    eof: bool,
    deferred: Option<io::Error>,
    cqes: Vec<(u64, i32, u32)>,
    completions: u64,
    no_buffers: u64,
}

impl UringReceiver {
    /// Creates a ring, a pool of `nbufs` buffers of `buf_len` bytes given to
    /// the kernel, and a duplicate of `sock`'s descriptor.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for zero or oversized `buf_len` / `nbufs` (at most
    /// 32768 buffers of at most 1 GiB); `Unsupported` if io_uring is
    /// unavailable, disabled, or lacks `PROVIDE_BUFFERS` / `RECV` (Linux <
    /// 5.7); mapping or io_uring errors.
    pub fn new<S: AsFd>(sock: &S, buf_len: usize, nbufs: usize) -> io::Result<UringReceiver> {
        let pool_len = buf_len.checked_mul(nbufs);
        if buf_len == 0 || buf_len > 1 << 30 || nbufs == 0 || nbufs > MAX_BUFS || pool_len.is_none()
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("UringReceiver: buf_len {buf_len}, nbufs {nbufs}"),
            ));
        }
        let sock = sock.as_fd().try_clone_to_owned()?;
        let cq = u32::try_from(nbufs + 8)
            .unwrap_or(u32::MAX)
            .next_power_of_two();
        let ring = new_ring(8, cq)?;
        require_ops(
            &probe_ops(&ring)?,
            &[
                (opcode::ProvideBuffers::CODE, "PROVIDE_BUFFERS"),
                (opcode::Recv::CODE, "RECV"),
                (opcode::AsyncCancel::CODE, "ASYNC_CANCEL"),
            ],
        )?;
        let pool = Mapping::anonymous(round_to_pages(pool_len.unwrap_or(0))?)?;
        let mut rx = UringReceiver {
            ring,
            sock,
            pool: Some(pool),
            buf_len,
            multishot: true,
            armed: false,
            multishot_worked: false,
            ready: VecDeque::new(),
            current: None,
            eof: false,
            deferred: None,
            cqes: Vec::new(),
            completions: 0,
            no_buffers: 0,
        };
        rx.provide(0, nbufs as u16)?;
        submit_wait(&rx.ring, 1, Duration::from_secs(5))?;
        rx.reap();
        match rx.deferred.take() {
            Some(e) => Err(io::Error::new(e.kind(), format!("PROVIDE_BUFFERS: {e}"))),
            None => Ok(rx),
        }
    }

    /// Whether a multishot receive is used (false after falling back on a
    /// pre-6.0 kernel).
    pub fn multishot(&self) -> bool {
        self.multishot
    }

    /// Receive completions that delivered data so far.
    pub fn completions(&self) -> u64 {
        self.completions
    }

    /// Times the kernel ran out of provided buffers (`ENOBUFS`), which ends a
    /// multishot receive until buffers are recycled.
    pub fn out_of_buffers(&self) -> u64 {
        self.no_buffers
    }

    /// Receives the next completion: returns its length (the bytes are in
    /// [`data`](Self::data)), or 0 at end of stream. Gives the previous
    /// buffer back to the kernel first.
    ///
    /// # Errors
    ///
    /// `TimedOut` if nothing arrived within `timeout`; a receive error such
    /// as `ConnectionReset` (after all data received before it); io_uring
    /// errors.
    pub fn recv(&mut self, timeout: Duration) -> io::Result<usize> {
        self.recycle_current()?;
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(n) = self.take_ready() {
                return Ok(n);
            }
            if let Some(e) = self.deferred.take() {
                return Err(e);
            }
            if self.eof {
                return Ok(0);
            }
            if !self.armed {
                self.arm()?;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "no io_uring receive completion in time",
                ));
            }
            submit_wait(&self.ring, 1, left)?;
            self.reap();
        }
    }

    /// The bytes of the completion returned by the last [`recv`](Self::recv)
    /// (empty before the first one and at end of stream).
    pub fn data(&self) -> &[u8] {
        match (&self.pool, self.current) {
            // SAFETY: buffer `bid` was consumed by the completion and is not
            // given back to the kernel before the next `recv` (`&mut self`),
            // so nothing writes it while this slice lives; `len <= buf_len`
            // and the buffer lies inside the pool.
            (Some(pool), Some((bid, len))) => unsafe {
                std::slice::from_raw_parts(pool.ptr().add(usize::from(bid) * self.buf_len), len)
            },
            _ => &[],
        }
    }

    fn take_ready(&mut self) -> Option<usize> {
        let (bid, len) = self.ready.pop_front()?;
        self.current = Some((bid, len));
        Some(len)
    }

    fn recycle_current(&mut self) -> io::Result<()> {
        match self.current.take() {
            Some((bid, _)) => self.provide(bid, 1),
            None => Ok(()),
        }
    }

    /// Queues `PROVIDE_BUFFERS` for buffers `first..first + count`.
    fn provide(&mut self, first: u16, count: u16) -> io::Result<()> {
        let Some(pool) = &self.pool else {
            return Ok(());
        };
        let addr = pool.ptr().wrapping_add(usize::from(first) * self.buf_len);
        let sqe = opcode::ProvideBuffers::new(addr, self.buf_len as i32, count, BGID, first)
            .build()
            .user_data(TAG_PROVIDE);
        // SAFETY: the buffers lie inside the pool, which outlives every
        // receive (see `drop`), and no reference to them exists: they are
        // neither `current` nor `ready`.
        unsafe { push(&mut self.ring, &sqe) }
    }

    /// Queues a buffer-selecting receive.
    fn arm(&mut self) -> io::Result<()> {
        let fd = types::Fd(self.sock.as_raw_fd());
        let sqe = if self.multishot {
            opcode::RecvMulti::new(fd, BGID).build()
        } else {
            opcode::Recv::new(fd, ptr::null_mut(), self.buf_len as u32)
                .buf_group(BGID)
                .build()
                .flags(squeue::Flags::BUFFER_SELECT)
        };
        // SAFETY: the receive writes only into provided pool buffers, which
        // outlive it (see `drop`), and names our own socket descriptor.
        unsafe { push(&mut self.ring, &sqe.user_data(TAG_RECV)) }?;
        self.armed = true;
        Ok(())
    }

    fn reap(&mut self) {
        let mut cqes = std::mem::take(&mut self.cqes);
        drain_cq(&mut self.ring, &mut cqes);
        for &(user_data, res, flags) in &cqes {
            match user_data {
                TAG_RECV => self.on_recv(res, flags),
                TAG_PROVIDE if res < 0 => {
                    self.deferred
                        .get_or_insert_with(|| io::Error::from_raw_os_error(-res));
                }
                _ => {}
            }
        }
        cqes.clear();
        self.cqes = cqes;
    }

    fn on_recv(&mut self, res: i32, flags: u32) {
        if !cqueue::more(flags) {
            self.armed = false;
        }
        let bid = cqueue::buffer_select(flags);
        if res > 0 {
            self.completions += 1;
            self.multishot_worked |= self.multishot;
            match bid {
                Some(bid) => self.ready.push_back((bid, res as usize)),
                None => {
                    self.deferred.get_or_insert_with(|| {
                        io::Error::other("receive completion without a buffer")
                    });
                }
            }
            return;
        }
        if let Some(bid) = bid {
            // A buffer selected for an empty or failed receive goes back.
            if let Err(e) = self.provide(bid, 1) {
                self.deferred.get_or_insert(e);
            }
        }
        match res {
            0 => self.eof = true,
            r if r == -libc::ENOBUFS => self.no_buffers += 1,
            r if r == -libc::EINVAL && self.multishot && !self.multishot_worked => {
                // Pre-6.0 kernel: no multishot receive; use single shots.
                self.multishot = false;
            }
            r => {
                self.deferred
                    .get_or_insert_with(|| io::Error::from_raw_os_error(-r));
            }
        }
    }
}

impl std::fmt::Debug for UringReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringReceiver")
            .field("sock", &self.sock)
            .field("buf_len", &self.buf_len)
            .field("multishot", &self.multishot)
            .field("armed", &self.armed)
            .field("ready", &self.ready.len())
            .field("eof", &self.eof)
            .finish_non_exhaustive()
    }
}

impl AsFd for UringReceiver {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl Drop for UringReceiver {
    fn drop(&mut self) {
        if self.armed {
            let sqe = opcode::AsyncCancel::new(TAG_RECV)
                .build()
                .user_data(TAG_CANCEL);
            // SAFETY: a cancellation names no memory.
            let _ = unsafe { push(&mut self.ring, &sqe) };
            let deadline = Instant::now() + DROP_WAIT;
            while self.armed {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || submit_wait(&self.ring, 1, left).is_err() {
                    break;
                }
                self.reap();
            }
        }
        if self.armed {
            // The kernel may still write into the pool: never unmap it.
            std::mem::forget(self.pool.take());
        }
    }
}
