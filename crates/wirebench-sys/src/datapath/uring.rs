//! io_uring send path ([`UringSender`]) and helpers shared with the receive
//! path.
//!
//! # Ordering on a stream socket
//!
//! Several sends in flight on one TCP socket may interleave if any of them
//! is short, so [`UringSender`] submits its `depth` sends as one *linked
//! chain* (`IOSQE_IO_LINK`), each with `MSG_WAITALL` (the kernel retries a
//! partial send itself on stream sockets). A send that still ends short or
//! fails breaks the chain: the rest complete with `-ECANCELED` and move no
//! data. The next chain is only submitted once every send of the previous
//! one has completed, and it starts exactly where the stream stopped. So
//! the stream is always the sender's buffer repeated, in order.

use std::io;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use io_uring::{cqueue, opcode, squeue, types, IoUring, Probe};

use super::os::{round_to_pages, unsupported_if, Mapping};
use super::SplitMix64;

/// `IORING_SEND_ZC_REPORT_USAGE` (Linux 6.2+): the notification tells
/// whether the data was copied after all.
const SEND_ZC_REPORT_USAGE: u16 = 8;
/// `IORING_NOTIF_USAGE_ZC_COPIED`, bit 31 of a notification's result.
const NOTIF_USAGE_ZC_COPIED: i32 = i32::MIN;
/// Largest buffer / single operation length accepted.
const MAX_OP_LEN: usize = 1 << 30;
/// Largest chain length.
const MAX_DEPTH: u32 = 256;
/// `user_data` of cancellation requests (send ops use their chain index).
const TAG_CANCEL: u64 = u64::MAX;
/// How long a drop waits for in-flight operations before leaking the buffers.
pub(crate) const DROP_WAIT: Duration = Duration::from_secs(5);

/// Creates a ring with `sq` submission and `cq` completion entries and
/// checks the features the data-path types rely on.
pub(crate) fn new_ring(sq: u32, cq: u32) -> io::Result<IoUring> {
    let ring = IoUring::builder().setup_cqsize(cq).build(sq).map_err(|e| {
        unsupported_if(
            e,
            &[libc::ENOSYS, libc::EPERM, libc::EACCES],
            "io_uring_setup (kernel.io_uring_disabled?)",
        )
    })?;
    if !ring.params().is_feature_ext_arg() {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "io_uring lacks IORING_FEAT_EXT_ARG (Linux 5.11+ needed for timed waits)",
        ));
    }
    Ok(ring)
}

/// The opcodes the running kernel supports.
pub(crate) fn probe_ops(ring: &IoUring) -> io::Result<Probe> {
    let mut probe = Probe::new();
    ring.submitter()
        .register_probe(&mut probe)
        .map_err(|e| unsupported_if(e, &[libc::EINVAL], "IORING_REGISTER_PROBE"))?;
    Ok(probe)
}

/// Fails with `Unsupported` unless every opcode in `codes` is supported.
pub(crate) fn require_ops(probe: &Probe, codes: &[(u8, &str)]) -> io::Result<()> {
    match codes.iter().find(|(code, _)| !probe.is_supported(*code)) {
        Some((_, name)) => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            format!("io_uring opcode {name} not supported by this kernel"),
        )),
        None => Ok(()),
    }
}

/// Submits queued entries and waits until at least `want` completions are
/// ready or `timeout` passes (a timeout or signal is not an error: the
/// caller looks at the completion queue).
pub(crate) fn submit_wait(ring: &IoUring, want: usize, timeout: Duration) -> io::Result<()> {
    let ts = types::Timespec::from(timeout);
    let args = types::SubmitArgs::new().timespec(&ts);
    match ring.submitter().submit_with_args(want, &args) {
        Ok(_) => Ok(()),
        Err(e)
            if matches!(
                e.raw_os_error(),
                Some(libc::ETIME | libc::EINTR | libc::EBUSY)
            ) =>
        {
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Queues one entry, submitting first if the submission queue is full.
///
/// # Safety
///
/// Every buffer or pointer `entry` names must stay valid (and, for reads by
/// the kernel into memory, unaliased by references) until its completion
/// has been reaped.
pub(crate) unsafe fn push(ring: &mut IoUring, entry: &squeue::Entry) -> io::Result<()> {
    for _ in 0..2 {
        // SAFETY: forwarded to the caller's contract.
        if unsafe { ring.submission().push(entry) }.is_ok() {
            return Ok(());
        }
        ring.submit()?;
    }
    Err(io::Error::other("io_uring submission queue stays full"))
}

/// Moves every ready completion into `out` as `(user_data, result, flags)`.
pub(crate) fn drain_cq(ring: &mut IoUring, out: &mut Vec<(u64, i32, u32)>) {
    out.extend(
        ring.completion()
            .map(|c| (c.user_data(), c.result(), c.flags())),
    );
}

/// The operation a [`UringSender`] submits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum UringSendOp {
    /// `IORING_OP_SEND` with `MSG_WAITALL` (the default).
    #[default]
    Send,
    /// `IORING_OP_WRITE_FIXED` from the registered buffer (no `MSG_WAITALL`:
    /// short writes are more frequent and end the chain early). Like
    /// `write(2)`, may raise `SIGPIPE` when the peer is gone unless ignored.
    WriteFixed,
    /// `IORING_OP_SEND_ZC` from the registered buffer (Linux 6.0+): no copy
    /// on the send side; each send is followed by a notification.
    SendZc,
}

/// Counters of a [`UringSender`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UringSenderStats {
    /// Send completions that moved data.
    pub completions: u64,
    /// Bytes reported by those completions.
    pub bytes: u64,
    /// Sends cancelled because an earlier send of their chain ended short or
    /// failed.
    pub cancelled: u64,
    /// `SendZc` notifications received.
    pub zc_notifications: u64,
    /// Notifications saying the kernel copied the data anyway (needs Linux
    /// 6.2+; always the case over loopback).
    pub zc_copied: u64,
}

/// The chain of sends in flight.
#[derive(Debug, Default, Clone, Copy)]
struct Chain {
    /// Sends submitted.
    ops: u32,
    /// Sends whose (first) completion arrived.
    done: u32,
    /// Bytes they moved.
    bytes: usize,
    /// Buffer offset of the chain's first byte.
    start: usize,
}

/// Sends a constant buffer over and over through io_uring, from one
/// registered buffer, keeping up to `depth` sends in flight as a linked
/// chain (see the module documentation for why the stream stays in order).
///
/// The stream carried is the buffer ([`buffer`](Self::buffer)) repeated:
/// byte `i` of the stream is `buffer()[i % buffer().len()]`.
///
/// The sender keeps a duplicate of the socket descriptor, so the connection
/// only closes once both the caller's socket and the sender are dropped (or
/// after `shutdown`).
pub struct UringSender {
    ring: IoUring,
    sock: OwnedFd,
    /// Registered buffer 0; `None` only after being leaked in `drop`.
    buf: Option<Mapping>,
    buf_len: usize,
    depth: u32,
    /// Largest length of one send operation.
    max_send_len: usize,
    op: UringSendOp,
    send_zc: bool,
    report_usage: bool,
    /// Buffer offset of the next stream byte.
    pos: usize,
    chain: Chain,
    notifs_pending: u64,
    stats: UringSenderStats,
    deferred: Option<io::Error>,
    cqes: Vec<(u64, i32, u32)>,
}

impl UringSender {
    /// Creates a ring, a `buf_len`-byte buffer of random bytes registered
    /// with it (`IORING_REGISTER_BUFFERS`), and a duplicate of `sock`'s
    /// descriptor. `depth` (1..=256) is the number of sends per chain.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for a zero or too large (> 1 GiB) `buf_len` or a bad
    /// `depth`; `Unsupported` if io_uring is unavailable (`ENOSYS`, disabled
    /// by `kernel.io_uring_disabled`: `EPERM`) or too old; `ENOMEM` from
    /// registering when `RLIMIT_MEMLOCK` is too small (unprivileged users).
    pub fn new<S: AsFd>(sock: &S, buf_len: usize, depth: u32) -> io::Result<UringSender> {
        if buf_len == 0 || buf_len > MAX_OP_LEN || depth == 0 || depth > MAX_DEPTH {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("UringSender: buf_len {buf_len} (1..=1 GiB), depth {depth} (1..=256)"),
            ));
        }
        let sock = sock.as_fd().try_clone_to_owned()?;
        let entries = depth.next_power_of_two().max(2);
        let ring = new_ring(entries, entries * 4)?;
        let probe = probe_ops(&ring)?;
        require_ops(
            &probe,
            &[
                (opcode::Send::CODE, "SEND"),
                (opcode::WriteFixed::CODE, "WRITE_FIXED"),
            ],
        )?;
        let buf = Mapping::anonymous(round_to_pages(buf_len)?)?;
        // SAFETY: fresh private mapping of at least `buf_len` bytes; nothing
        // else references it yet.
        SplitMix64::from_clock()
            .fill(unsafe { std::slice::from_raw_parts_mut(buf.ptr(), buf_len) });
        let iov = libc::iovec {
            iov_base: buf.ptr().cast(),
            iov_len: buf_len,
        };
        // SAFETY: the buffer stays mapped until the ring is gone: `drop`
        // leaks it if operations may still use it, and `ring` is dropped
        // before `buf` (field order).
        unsafe { ring.submitter().register_buffers(&[iov]) }.map_err(|e| {
            io::Error::new(
                e.kind(),
                format!("IORING_REGISTER_BUFFERS ({buf_len} bytes; RLIMIT_MEMLOCK?): {e}"),
            )
        })?;
        Ok(UringSender {
            ring,
            sock,
            buf: Some(buf),
            buf_len,
            depth,
            max_send_len: buf_len,
            op: UringSendOp::Send,
            send_zc: probe.is_supported(opcode::SendZc::CODE),
            report_usage: true,
            pos: 0,
            chain: Chain::default(),
            notifs_pending: 0,
            stats: UringSenderStats::default(),
            deferred: None,
            cqes: Vec::new(),
        })
    }

    /// Whether the kernel supports `IORING_OP_SEND_ZC`.
    pub fn supports_send_zc(&self) -> bool {
        self.send_zc
    }

    /// The operation used from the next chain on.
    pub fn op(&self) -> UringSendOp {
        self.op
    }

    /// Selects the operation used from the next chain on.
    ///
    /// # Errors
    ///
    /// `Unsupported` for [`UringSendOp::SendZc`] if the kernel lacks it.
    pub fn set_op(&mut self, op: UringSendOp) -> io::Result<()> {
        if op == UringSendOp::SendZc && !self.send_zc {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "io_uring SEND_ZC not supported by this kernel (Linux 6.0+)",
            ));
        }
        self.op = op;
        Ok(())
    }

    /// The buffer whose repetition forms the stream.
    pub fn buffer(&self) -> &[u8] {
        match &self.buf {
            // SAFETY: the mapping holds `buf_len` initialised bytes; the
            // kernel only reads them and we only write through `&mut self`.
            Some(buf) => unsafe { std::slice::from_raw_parts(buf.ptr(), self.buf_len) },
            None => &[],
        }
    }

    /// Replaces the buffer content (same length) while nothing is in flight.
    ///
    /// # Errors
    ///
    /// `InvalidInput` if `content.len()` differs from the buffer length;
    /// `ResourceBusy` while sends or notifications are outstanding.
    pub fn set_buffer(&mut self, content: &[u8]) -> io::Result<()> {
        if content.len() != self.buf_len {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "content length differs from the buffer length",
            ));
        }
        if self.busy() {
            return Err(io::Error::new(
                io::ErrorKind::ResourceBusy,
                "sends still in flight",
            ));
        }
        if let Some(buf) = &self.buf {
            // SAFETY: no operation is in flight (checked above), so neither
            // the kernel nor any reference reads the buffer now; `&mut self`
            // excludes outstanding `buffer()` slices.
            unsafe { std::slice::from_raw_parts_mut(buf.ptr(), self.buf_len) }
                .copy_from_slice(content);
        }
        Ok(())
    }

    /// Caps the length of each send operation of later chains at `len` bytes (at least 1;
    /// the default is the buffer length), so that one operation carries one application
    /// message. A send never crosses the end of the buffer in any case.
    pub fn set_max_send_len(&mut self, len: usize) {
        self.max_send_len = len.clamp(1, self.buf_len);
    }

    /// Counters so far.
    pub fn stats(&self) -> UringSenderStats {
        self.stats
    }

    /// Sends still in flight plus `SendZc` notifications still due.
    pub fn in_flight(&self) -> u64 {
        u64::from(self.chain.ops - self.chain.done) + self.notifs_pending
    }

    fn busy(&self) -> bool {
        self.in_flight() > 0
    }

    /// Makes progress on the stream: if no chain is in flight, submits one
    /// of up to `depth` sends carrying at most `limit` bytes in total (the
    /// bytes the caller still wants to send, counted from the bytes reported
    /// so far); then waits up to `timeout` for completions and returns the
    /// bytes they report (possibly 0, e.g. for cancelled links or
    /// notifications). `limit` is ignored while a chain is in flight.
    ///
    /// # Errors
    ///
    /// `TimedOut` if no completion arrived within `timeout`; a send error
    /// such as `BrokenPipe` / `ConnectionReset` (returned by the next call
    /// if the same call also reported bytes); an io_uring error.
    pub fn send(&mut self, limit: u64, timeout: Duration) -> io::Result<usize> {
        if let Some(e) = self.deferred.take() {
            return Err(e);
        }
        if self.chain.ops == 0 {
            if limit == 0 {
                return Ok(0);
            }
            self.submit_chain(limit)?;
        }
        submit_wait(&self.ring, 1, timeout)?;
        let (bytes, reaped) = self.reap();
        if reaped == 0 {
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "no io_uring send completion in time",
            ));
        }
        match self.deferred.take() {
            Some(e) if bytes == 0 => Err(e),
            other => {
                self.deferred = other;
                Ok(bytes)
            }
        }
    }

    /// Waits until every send and notification has completed.
    ///
    /// # Errors
    ///
    /// `TimedOut` if some are still outstanding after `timeout`, or a
    /// pending send error.
    pub fn finish(&mut self, timeout: Duration) -> io::Result<()> {
        let deadline = Instant::now() + timeout;
        while self.busy() {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{} io_uring sends/notifications outstanding",
                        self.in_flight()
                    ),
                ));
            }
            submit_wait(&self.ring, 1, left)?;
            self.reap();
        }
        self.deferred.take().map_or(Ok(()), Err)
    }

    /// Queues a linked chain of sends covering at most `limit` bytes.
    fn submit_chain(&mut self, limit: u64) -> io::Result<()> {
        let start = self.pos;
        let (mut pos, mut left, mut pushed) = (start, limit, 0u32);
        let mut result = Ok(());
        while left > 0 && pushed < self.depth {
            let len = (self.buf_len - pos)
                .min(self.max_send_len)
                .min(usize::try_from(left).unwrap_or(usize::MAX));
            left -= len as u64;
            let mut sqe = self.entry(pos, len).user_data(u64::from(pushed));
            if left > 0 && pushed + 1 < self.depth {
                sqe = sqe.flags(squeue::Flags::IO_LINK);
            }
            // SAFETY: the entry names the registered buffer, which outlives
            // every operation (see `drop`), and our own socket descriptor.
            result = unsafe { push(&mut self.ring, &sqe) };
            if result.is_err() {
                break;
            }
            pushed += 1;
            pos = (pos + len) % self.buf_len;
        }
        self.chain = Chain {
            ops: pushed,
            done: 0,
            bytes: 0,
            start,
        };
        // A partly queued chain still runs (and stays ordered).
        if pushed > 0 {
            Ok(())
        } else {
            result
        }
    }

    /// The submission entry for `len` buffer bytes at offset `pos`.
    fn entry(&self, pos: usize, len: usize) -> squeue::Entry {
        let base = self.buf.as_ref().map_or(std::ptr::null_mut(), Mapping::ptr);
        let ptr = base.wrapping_add(pos).cast_const();
        let fd = types::Fd(self.sock.as_raw_fd());
        let len = len as u32;
        let flags = libc::MSG_WAITALL | libc::MSG_NOSIGNAL;
        match self.op {
            UringSendOp::Send => opcode::Send::new(fd, ptr, len).flags(flags).build(),
            // Offset 0: sockets reject any other position (ESPIPE).
            UringSendOp::WriteFixed => opcode::WriteFixed::new(fd, ptr, len, 0).build(),
            UringSendOp::SendZc => opcode::SendZc::new(fd, ptr, len)
                .buf_index(Some(0))
                .flags(flags)
                .zc_flags(if self.report_usage {
                    SEND_ZC_REPORT_USAGE
                } else {
                    0
                })
                .build(),
        }
    }

    /// Processes every ready completion; returns (bytes sent, completions).
    fn reap(&mut self) -> (usize, usize) {
        let mut cqes = std::mem::take(&mut self.cqes);
        drain_cq(&mut self.ring, &mut cqes);
        let mut bytes = 0;
        for &(user_data, res, flags) in &cqes {
            if user_data != TAG_CANCEL {
                bytes += self.on_cqe(res, flags);
            }
        }
        let reaped = cqes.len();
        cqes.clear();
        self.cqes = cqes;
        (bytes, reaped)
    }

    /// Accounts one send completion or notification; returns its bytes.
    fn on_cqe(&mut self, res: i32, flags: u32) -> usize {
        if cqueue::notif(flags) {
            self.notifs_pending = self.notifs_pending.saturating_sub(1);
            self.stats.zc_notifications += 1;
            if self.report_usage && res & NOTIF_USAGE_ZC_COPIED != 0 {
                self.stats.zc_copied += 1;
            }
            return 0;
        }
        if cqueue::more(flags) {
            self.notifs_pending += 1;
        }
        let bytes = self.result_bytes(res);
        self.chain.done += 1;
        self.chain.bytes += bytes;
        if self.chain.done >= self.chain.ops {
            self.pos = (self.chain.start + self.chain.bytes) % self.buf_len;
            self.chain = Chain::default();
        }
        bytes
    }

    /// Bytes of one send result; records errors.
    fn result_bytes(&mut self, res: i32) -> usize {
        if res >= 0 {
            let n = res as usize;
            if n > 0 {
                self.stats.completions += 1;
                self.stats.bytes += n as u64;
            }
            return n;
        }
        if res == -libc::ECANCELED {
            self.stats.cancelled += 1;
        } else if res == -libc::EINVAL && self.op == UringSendOp::SendZc && self.report_usage {
            // Linux 6.0/6.1 reject IORING_SEND_ZC_REPORT_USAGE; retry without.
            self.report_usage = false;
        } else {
            self.deferred
                .get_or_insert_with(|| io::Error::from_raw_os_error(-res));
        }
        0
    }

    /// Asks the kernel to cancel the sends of the chain in flight.
    fn cancel_chain(&mut self) {
        for i in 0..self.chain.ops {
            let sqe = opcode::AsyncCancel::new(u64::from(i))
                .build()
                .user_data(TAG_CANCEL);
            // SAFETY: a cancellation names no memory.
            if unsafe { push(&mut self.ring, &sqe) }.is_err() {
                break;
            }
        }
    }
}

impl std::fmt::Debug for UringSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UringSender")
            .field("sock", &self.sock)
            .field("buf_len", &self.buf_len)
            .field("depth", &self.depth)
            .field("max_send_len", &self.max_send_len)
            .field("op", &self.op)
            .field("in_flight", &self.in_flight())
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}

impl AsFd for UringSender {
    fn as_fd(&self) -> std::os::fd::BorrowedFd<'_> {
        self.sock.as_fd()
    }
}

impl Drop for UringSender {
    fn drop(&mut self) {
        if self.busy() {
            self.cancel_chain();
            let _ = self.finish(DROP_WAIT);
        }
        if self.busy() {
            // The kernel may still read the buffer: never unmap it.
            std::mem::forget(self.buf.take());
        }
    }
}
