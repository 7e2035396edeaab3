//! Pipe-based paths: `vmsplice` + `splice` to send ([`SpliceSender`]),
//! `splice` to `/dev/null` to receive and discard ([`SpliceDiscard`]), and
//! `recv(MSG_TRUNC)` ([`recv_discard`]).

use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::ptr;

use socket2::{Protocol, SockRef};

use super::os::{cvt, cvt_len, retry_eintr};

/// Pipe size the data-path types ask for (1 MiB, the default
/// `fs.pipe-max-size`).
pub const DEFAULT_PIPE_SIZE: usize = 1 << 20;

/// A pipe with its two ends and its actual capacity.
#[derive(Debug)]
struct Pipe {
    read: OwnedFd,
    write: OwnedFd,
    size: usize,
}

impl Pipe {
    /// Creates a pipe and tries to resize it to `requested` bytes
    /// (`F_SETPIPE_SZ`, best effort: unprivileged users are capped by
    /// `fs.pipe-max-size`).
    fn new(requested: usize) -> io::Result<Pipe> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` is a writable array of two ints, as pipe2 requires.
        cvt(unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) })
            .map_err(|e| io::Error::new(e.kind(), format!("pipe2: {e}")))?;
        // SAFETY: pipe2 succeeded, so both are fresh descriptors owned by
        // nobody else.
        let (read, write) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        if let Ok(req) = libc::c_int::try_from(requested) {
            // SAFETY: plain fcntl with an integer argument on our own pipe.
            // A failure (EPERM/EBUSY) just leaves the default size.
            unsafe { libc::fcntl(write.as_raw_fd(), libc::F_SETPIPE_SZ, req) };
        }
        // SAFETY: plain fcntl query on our own pipe.
        let size = cvt(unsafe { libc::fcntl(write.as_raw_fd(), libc::F_GETPIPE_SZ) })?;
        let size = usize::try_from(size).unwrap_or(0).max(1);
        Ok(Pipe { read, write, size })
    }

    /// Moves the `len` bytes queued in the pipe to `/dev/null`.
    fn drain_to(&self, sink: &File, mut len: usize) -> io::Result<()> {
        while len > 0 {
            let n = splice(
                self.read.as_fd(),
                sink.as_fd(),
                len,
                libc::SPLICE_F_NONBLOCK,
            )?;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    "pipe emptied early",
                ));
            }
            len -= n;
        }
        Ok(())
    }
}

fn open_dev_null() -> io::Result<File> {
    File::options()
        .write(true)
        .open("/dev/null")
        .map_err(|e| io::Error::new(e.kind(), format!("open /dev/null: {e}")))
}

/// One `splice(2)` call between two descriptors (no offsets), retried on
/// `EINTR`.
fn splice(
    from: BorrowedFd<'_>,
    to: BorrowedFd<'_>,
    len: usize,
    flags: libc::c_uint,
) -> io::Result<usize> {
    retry_eintr(|| {
        // SAFETY: both descriptors are open for the borrows; null offsets
        // mean "current position / not seekable", nothing else is passed.
        let rc = unsafe {
            libc::splice(
                from.as_raw_fd(),
                ptr::null_mut(),
                to.as_raw_fd(),
                ptr::null_mut(),
                len,
                flags,
            )
        };
        cvt_len(rc)
    })
}

/// Sends user buffers with `vmsplice(2)` into a pipe and `splice(2)` from
/// the pipe into a socket, so the payload is never copied by the CPU.
///
/// # Buffer lifetime
///
/// `vmsplice` makes the pipe (and, after `splice`, the socket's send queue)
/// reference the *pages* of the caller's buffer; TCP keeps referencing them
/// until the data is acknowledged, and on loopback until the receiver has
/// read it. Modifying the buffer after [`SpliceSender::send`] returns can
/// therefore change bytes that are still to be (re)transmitted. Use a buffer
/// whose content never changes while the connection lives (the engine sends
/// one constant random buffer over and over). This is a data-integrity
/// caveat, not a memory-safety one: the kernel only reads the pages.
///
/// Between calls the pipe is always empty: bytes that reached the pipe but
/// not the socket (send timeout, non-blocking socket full, error) are
/// dropped, and the return value counts only bytes that reached the socket,
/// so `send` behaves like `write(2)`: the caller resends the rest.
#[derive(Debug)]
pub struct SpliceSender {
    pipe: Pipe,
    dev_null: File,
    /// Set if the pipe could not be emptied; later sends would reorder data.
    broken: bool,
}

impl SpliceSender {
    /// Creates the pipe, asking for `pipe_size` bytes of capacity (see
    /// [`DEFAULT_PIPE_SIZE`]); [`pipe_size`](Self::pipe_size) reports what
    /// the kernel granted.
    ///
    /// # Errors
    ///
    /// `pipe2`, `fcntl` or opening `/dev/null` failed.
    pub fn new(pipe_size: usize) -> io::Result<SpliceSender> {
        Ok(SpliceSender {
            pipe: Pipe::new(pipe_size)?,
            dev_null: open_dev_null()?,
            broken: false,
        })
    }

    /// Actual pipe capacity in bytes: at most this much is sent per call.
    pub fn pipe_size(&self) -> usize {
        self.pipe.size
    }

    /// Sends a prefix of `buf` (at most one pipe-full) and returns how many
    /// bytes reached the socket. Blocks like `write(2)` on a blocking socket
    /// (bounded by `SO_SNDTIMEO`). Returns 0 only for an empty `buf`.
    ///
    /// See the type-level documentation for why `buf` must not be modified
    /// afterwards while the connection may still transmit it.
    ///
    /// # Errors
    ///
    /// `WouldBlock` if nothing could be sent (non-blocking socket full or send
    /// timeout), `BrokenPipe` / `ConnectionReset` if the peer is gone, or the
    /// `vmsplice` / `splice` error. After an error that left the pipe
    /// non-empty, every later call fails with `Other`.
    pub fn send<S: AsFd>(&mut self, sock: &S, buf: &[u8]) -> io::Result<usize> {
        if self.broken {
            return Err(io::Error::other("splice pipe holds stale data"));
        }
        if buf.is_empty() {
            return Ok(0);
        }
        let queued = self.vmsplice(&buf[..buf.len().min(self.pipe.size)])?;
        let (sent, err) = self.pipe_to_socket(sock.as_fd(), queued);
        if sent < queued {
            // Drop what did not reach the socket: the caller resends it.
            if let Err(e) = self.pipe.drain_to(&self.dev_null, queued - sent) {
                self.broken = true;
                return Err(e);
            }
        }
        match err {
            Some(e) if sent == 0 => Err(e),
            _ => Ok(sent),
        }
    }

    /// Maps (references) the pages of `chunk` into the empty pipe.
    fn vmsplice(&self, chunk: &[u8]) -> io::Result<usize> {
        let iov = libc::iovec {
            iov_base: chunk.as_ptr().cast_mut().cast(),
            iov_len: chunk.len(),
        };
        let fd = self.pipe.write.as_raw_fd();
        retry_eintr(|| {
            // SAFETY: `iov` describes `chunk`, readable for the call; without
            // SPLICE_F_GIFT the kernel only reads (references) those pages.
            // NONBLOCK: our own pipe is empty, never wait on it.
            let rc = unsafe { libc::vmsplice(fd, &iov, 1, libc::SPLICE_F_NONBLOCK) };
            cvt_len(rc)
        })
    }

    /// Splices the `queued` pipe bytes into the socket until done or an
    /// error; returns the bytes moved and the error, if any. Each iteration
    /// moves data or ends the loop.
    fn pipe_to_socket(&self, sock: BorrowedFd<'_>, queued: usize) -> (usize, Option<io::Error>) {
        let mut sent = 0;
        while sent < queued {
            match splice(self.pipe.read.as_fd(), sock, queued - sent, 0) {
                Ok(0) => return (sent, Some(io::ErrorKind::WriteZero.into())),
                Ok(n) => sent += n,
                Err(e) => return (sent, Some(e)),
            }
        }
        (sent, None)
    }
}

/// Receives and discards data with `splice(2)` socket → pipe → `/dev/null`:
/// the payload pages move between kernel objects and are never copied to
/// user space.
#[derive(Debug)]
pub struct SpliceDiscard {
    pipe: Pipe,
    dev_null: File,
}

impl SpliceDiscard {
    /// Creates the pipe (asking for `pipe_size` bytes of capacity) and opens
    /// `/dev/null`.
    ///
    /// # Errors
    ///
    /// `pipe2`, `fcntl` or opening `/dev/null` failed.
    pub fn new(pipe_size: usize) -> io::Result<SpliceDiscard> {
        Ok(SpliceDiscard {
            pipe: Pipe::new(pipe_size)?,
            dev_null: open_dev_null()?,
        })
    }

    /// Actual pipe capacity in bytes: at most this much is consumed per call.
    pub fn pipe_size(&self) -> usize {
        self.pipe.size
    }

    /// Consumes up to `max` bytes (and at most one pipe-full) from `sock`
    /// and discards them. Returns the number of bytes consumed; 0 means end
    /// of stream (or `max == 0`). Blocks like `read(2)` on a blocking socket
    /// (bounded by `SO_RCVTIMEO`).
    ///
    /// # Errors
    ///
    /// `WouldBlock` if no data arrived (non-blocking socket or receive
    /// timeout), `ConnectionReset` etc., or the `splice` error.
    pub fn recv<S: AsFd>(&mut self, sock: &S, max: usize) -> io::Result<usize> {
        let want = max.min(self.pipe.size);
        if want == 0 {
            return Ok(0);
        }
        let n = splice(
            sock.as_fd(),
            self.pipe.write.as_fd(),
            want,
            libc::SPLICE_F_MOVE,
        )?;
        self.pipe.drain_to(&self.dev_null, n)?;
        Ok(n)
    }
}

/// Consumes and discards up to `len` bytes from a TCP socket with
/// `recv(MSG_TRUNC)`: TCP then drops the data without copying it. Returns
/// the bytes consumed; 0 means end of stream (or `len == 0`). Blocks like
/// `read(2)` on a blocking socket (bounded by `SO_RCVTIMEO`).
///
/// # Errors
///
/// `InvalidInput` if `sock` is not a TCP socket (on other protocols
/// `MSG_TRUNC` has different meanings); `WouldBlock` if no data arrived in
/// time; otherwise the `recv` error.
pub fn recv_discard<S: AsFd>(sock: &S, len: usize) -> io::Result<usize> {
    if SockRef::from(sock).protocol()? != Some(Protocol::TCP) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "recv_discard needs a TCP socket",
        ));
    }
    if len == 0 {
        return Ok(0);
    }
    let fd = sock.as_fd().as_raw_fd();
    retry_eintr(|| {
        // SAFETY: on a TCP socket, MSG_TRUNC makes the kernel skip the copy
        // to user space entirely, so the (null) buffer is never written.
        let rc = unsafe { libc::recv(fd, ptr::null_mut(), len, libc::MSG_TRUNC) };
        cvt_len(rc)
    })
}
