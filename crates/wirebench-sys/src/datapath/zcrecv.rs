//! `TCP_ZEROCOPY_RECEIVE`: map received TCP payload pages into the process
//! instead of copying them.
//!
//! The receiver `mmap`s a read-only region of the socket; each
//! `getsockopt(TCP_ZEROCOPY_RECEIVE)` replaces whole pages of that region
//! with payload pages. Only payload that sits in page-sized, page-aligned
//! fragments can be mapped (on real NICs this needs header split; over
//! loopback, `MSG_ZEROCOPY` senders and an MSS whose payload is a multiple
//! of the page size help). The rest (`recv_skip_hint`) is copied, either by
//! the kernel into the copy buffer (`copybuf_address`, Linux 5.11+) or by a
//! plain `recv`.

use std::io;
use std::mem::{offset_of, size_of};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::ptr;

use crate::sockopt::Pod;

use super::os::{cvt, cvt_len, retry_eintr, round_to_pages, unsupported_if, Mapping};

/// Default mapped region size (2 MiB, one huge page on x86-64, as the
/// kernel's `tcp_mmap` selftest uses).
pub const DEFAULT_ZC_CHUNK: usize = 2 << 20;

/// `TCP_RECEIVE_ZEROCOPY_FLAG_TLB_CLEAN_HINT`: the target range holds no
/// mapped pages (we dropped them with `MADV_DONTNEED`), skip the zap.
const TLB_CLEAN_HINT: u32 = 0x1;

/// Mirror of the kernel's `struct tcp_zerocopy_receive`
/// (include/uapi/linux/tcp.h, Linux 5.11+ layout). Older kernels accept a
/// prefix of it; the kernel reports how many bytes it used in `optlen`.
#[repr(C)]
#[derive(Debug, Clone, Copy, Default)]
struct TcpZerocopyReceive {
    address: u64,
    length: u32,
    recv_skip_hint: u32,
    inq: u32,
    err: i32,
    copybuf_address: u64,
    copybuf_len: i32,
    flags: u32,
    msg_control: u64,
    msg_controllen: u64,
    msg_flags: u32,
    reserved: u32,
}

// SAFETY: `repr(C)`, integers only, no padding (checked below): every bit
// pattern is a valid value.
unsafe impl Pod for TcpZerocopyReceive {}

const _: () = {
    assert!(offset_of!(TcpZerocopyReceive, recv_skip_hint) == 12);
    assert!(offset_of!(TcpZerocopyReceive, err) == 20);
    assert!(offset_of!(TcpZerocopyReceive, copybuf_address) == 24);
    assert!(offset_of!(TcpZerocopyReceive, copybuf_len) == 32);
    assert!(offset_of!(TcpZerocopyReceive, flags) == 36);
    assert!(offset_of!(TcpZerocopyReceive, msg_flags) == 56);
    assert!(size_of::<TcpZerocopyReceive>() == 64);
};

/// `offsetofend(err)`: the option length a kernel must have used for `err`
/// (and `inq`) to be written.
const END_OF_ERR: usize = offset_of!(TcpZerocopyReceive, err) + size_of::<i32>();
/// `offsetofend(copybuf_len)`: likewise for the copy buffer (Linux 5.11+).
const END_OF_COPYBUF_LEN: usize = offset_of!(TcpZerocopyReceive, copybuf_len) + size_of::<i32>();

/// Option lengths tried, newest layout first: 64 bytes (5.11+), then the
/// original 16-byte structure (4.18 – 5.4 accept exactly that size).
const ZC_LENGTHS: [usize; 2] = [size_of::<TcpZerocopyReceive>(), 16];

/// Result of one [`ZeroCopyReceiver::recv`]: the stream bytes it consumed,
/// in order: first `mapped_bytes` (see [`ZeroCopyReceiver::mapped`]), then
/// `copied_bytes` at the start of the copy buffer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ZcRecv {
    /// Bytes mapped into the receiver's region.
    pub mapped_bytes: usize,
    /// Bytes copied into `copy_buf[..copied_bytes]`.
    pub copied_bytes: usize,
    /// The peer closed the stream and everything was consumed (both counts
    /// are 0 then).
    pub eof: bool,
}

/// What one `getsockopt(TCP_ZEROCOPY_RECEIVE)` did.
#[derive(Debug, Default)]
struct ZcStep {
    mapped: usize,
    copied: usize,
    /// Queued bytes that must be read with a plain `recv` next.
    skip: usize,
    eof: bool,
    /// Socket error the kernel reported alongside (`zc.err`).
    err: Option<io::Error>,
}

/// Receives TCP payload by mapping pages with `TCP_ZEROCOPY_RECEIVE`, falling
/// back to copying for payload that cannot be mapped.
///
/// The mapped bytes of the last [`recv`](Self::recv) are readable through
/// [`mapped`](Self::mapped) until the next `recv` (which releases them with
/// `MADV_DONTNEED` first) or the drop of the receiver.
///
/// For a good mapped share, set a large `SO_RCVLOWAT` (e.g. the chunk size,
/// see [`crate::tcp::set_rcvlowat`]) so each call finds many full pages.
#[derive(Debug)]
pub struct ZeroCopyReceiver {
    map: Mapping,
    /// Option length the kernel accepts (see `ZC_LENGTHS`).
    optlen: usize,
    /// Bytes currently mapped at the start of the region.
    mapped: usize,
    /// Pages may be mapped only in the first `dirty` bytes of the region
    /// (0: nothing mapped, the kernel may skip its zap).
    dirty: usize,
    /// A socket error reported together with data, returned next call.
    pending_err: Option<io::Error>,
}

impl ZeroCopyReceiver {
    /// Maps a read-only region of `chunk_bytes` (rounded up to whole pages)
    /// of TCP socket `sock` and checks that the kernel supports
    /// `TCP_ZEROCOPY_RECEIVE` on it. [`DEFAULT_ZC_CHUNK`] is a good size.
    ///
    /// # Errors
    ///
    /// `Unsupported` if the kernel or socket cannot do it (`mmap` on the
    /// socket fails with `ENODEV`/`EOPNOTSUPP`/`EACCES`, or the option is
    /// unknown: `ENOPROTOOPT`/`EOPNOTSUPP`/`EINVAL`); `ENOTCONN` for a
    /// listening socket; other `mmap`/`getsockopt` errors.
    pub fn new<S: AsFd>(sock: &S, chunk_bytes: usize) -> io::Result<ZeroCopyReceiver> {
        let len = round_to_pages(chunk_bytes)?;
        let map = Mapping::shared_read_only(sock.as_fd(), len).map_err(|e| {
            unsupported_if(
                e,
                &[libc::ENODEV, libc::EOPNOTSUPP, libc::EACCES],
                "mmap TCP socket",
            )
        })?;
        let mut rx = ZeroCopyReceiver {
            map,
            optlen: ZC_LENGTHS[0],
            mapped: 0,
            dirty: 0,
            pending_err: None,
        };
        rx.optlen = rx.detect_optlen(sock.as_fd())?;
        Ok(rx)
    }

    /// Size of the mapped region in bytes: the most one call can map.
    pub fn chunk_bytes(&self) -> usize {
        self.map.len()
    }

    /// The bytes mapped by the last [`recv`](Self::recv) (empty if it mapped
    /// nothing).
    pub fn mapped(&self) -> &[u8] {
        // SAFETY: the first `mapped` bytes of the region are payload pages the
        // kernel mapped read-only; nobody writes them, and they stay mapped
        // until `recv` (which needs `&mut self`) or drop releases them.
        unsafe { std::slice::from_raw_parts(self.map.ptr(), self.mapped) }
    }

    /// Finds an option length the kernel accepts with a zero-length request
    /// (which consumes nothing).
    fn detect_optlen(&mut self, fd: BorrowedFd<'_>) -> io::Result<usize> {
        let mut last = None;
        for len in ZC_LENGTHS {
            self.optlen = len;
            match self.zc_call(fd, &mut [], 0) {
                // EIO: the stream already ended, but the request was understood.
                Ok(_) => return Ok(len),
                Err(e) if e.raw_os_error() == Some(libc::EIO) => return Ok(len),
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => last = Some(e),
                Err(e) => {
                    return Err(unsupported_if(
                        e,
                        &[libc::ENOPROTOOPT, libc::EOPNOTSUPP],
                        "TCP_ZEROCOPY_RECEIVE",
                    ))
                }
            }
        }
        let e = last.unwrap_or_else(|| io::Error::from_raw_os_error(libc::EINVAL));
        Err(unsupported_if(e, &[libc::EINVAL], "TCP_ZEROCOPY_RECEIVE"))
    }

    /// Receives the next bytes of the stream: maps what it can, copies the
    /// rest into `copy_buf` (kernel copy buffer or a plain `recv`). Blocks
    /// until data arrives like `read(2)` does on this socket: honours the
    /// blocking mode, `SO_RCVTIMEO` and `SO_RCVLOWAT`.
    ///
    /// # Errors
    ///
    /// `InvalidInput` for an empty `copy_buf`; `WouldBlock` if no data arrived
    /// (non-blocking socket or receive timeout); a socket error such as
    /// `ConnectionReset` (if it came together with data, it is returned by
    /// the next call instead).
    pub fn recv<S: AsFd>(&mut self, sock: &S, copy_buf: &mut [u8]) -> io::Result<ZcRecv> {
        if copy_buf.is_empty() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "copy buffer must not be empty",
            ));
        }
        if let Some(e) = self.pending_err.take() {
            return Err(e);
        }
        self.release();
        let fd = sock.as_fd();
        let mut step = self.step(fd, copy_buf)?;
        if step.mapped + step.copied == 0 && !step.eof && step.skip == 0 {
            // Nothing queued: wait like read(2) would, then try again.
            if peek_wait(fd, self.map.len())? == 0 {
                return Ok(ZcRecv {
                    eof: true,
                    ..ZcRecv::default()
                });
            }
            step = self.step(fd, copy_buf)?;
        }
        self.finish(fd, step, copy_buf)
    }

    /// Turns a step into the call's result, reading unmappable bytes with a
    /// plain `recv` if the step consumed nothing.
    fn finish(
        &mut self,
        fd: BorrowedFd<'_>,
        step: ZcStep,
        copy_buf: &mut [u8],
    ) -> io::Result<ZcRecv> {
        self.mapped = step.mapped;
        if step.mapped + step.copied > 0 {
            self.pending_err = step.err;
            return Ok(ZcRecv {
                mapped_bytes: step.mapped,
                copied_bytes: step.copied,
                eof: false,
            });
        }
        if let Some(e) = step.err {
            return Err(e);
        }
        if step.eof {
            return Ok(ZcRecv {
                eof: true,
                ..ZcRecv::default()
            });
        }
        let want = if step.skip > 0 {
            step.skip.min(copy_buf.len())
        } else {
            copy_buf.len()
        };
        let n = plain_recv(fd, &mut copy_buf[..want])?;
        Ok(ZcRecv {
            mapped_bytes: 0,
            copied_bytes: n,
            eof: n == 0,
        })
    }

    /// One zerocopy request for a whole region, with EOF (`EIO`) confirmed.
    fn step(&mut self, fd: BorrowedFd<'_>, copy_buf: &mut [u8]) -> io::Result<ZcStep> {
        let region = self.map.len();
        match self.zc_call(fd, copy_buf, region) {
            Err(e) if e.raw_os_error() == Some(libc::EIO) => {
                // EIO: nothing queued and the peer sent FIN, or the socket
                // failed. A non-blocking peek tells which.
                peek_nonblocking(fd).map(|n| ZcStep {
                    eof: n == 0,
                    ..ZcStep::default()
                })
            }
            other => other,
        }
    }

    /// One `getsockopt(TCP_ZEROCOPY_RECEIVE)` asking for `len` bytes.
    fn zc_call(
        &mut self,
        fd: BorrowedFd<'_>,
        copy_buf: &mut [u8],
        len: usize,
    ) -> io::Result<ZcStep> {
        let mut zc = TcpZerocopyReceive {
            address: self.map.ptr() as u64,
            length: u32::try_from(len).unwrap_or(u32::MAX),
            copybuf_address: copy_buf.as_mut_ptr() as u64,
            copybuf_len: i32::try_from(copy_buf.len()).unwrap_or(i32::MAX),
            flags: if self.dirty == 0 { TLB_CLEAN_HINT } else { 0 },
            ..TcpZerocopyReceive::default()
        };
        let mut optlen = self.optlen as libc::socklen_t;
        let rc = retry_eintr(|| {
            // SAFETY: `zc` is a live Pod of at least `optlen` bytes that the
            // kernel reads and writes back. It names our own socket mapping
            // (pages there are replaced, never our heap) and `copy_buf`, which
            // is writable for `copybuf_len` bytes during the call.
            let rc = unsafe {
                libc::getsockopt(
                    fd.as_raw_fd(),
                    libc::IPPROTO_TCP,
                    libc::TCP_ZEROCOPY_RECEIVE,
                    (&mut zc as *mut TcpZerocopyReceive).cast(),
                    &mut optlen,
                )
            };
            cvt(rc)
        });
        if let Err(e) = rc {
            if e.raw_os_error() != Some(libc::EIO) {
                // Unknown what (if anything) got mapped: release it all later.
                self.dirty = self.map.len();
            }
            return Err(e);
        }
        let step = decode(&zc, (optlen as usize).min(self.optlen));
        self.dirty = self.dirty.max(step.mapped);
        Ok(step)
    }

    /// Gives the previously mapped pages back (`MADV_DONTNEED`), as the
    /// kernel selftest does, so the next request can skip the zap.
    fn release(&mut self) {
        self.mapped = 0;
        if self.dirty > 0 && self.map.discard_pages(self.dirty).is_ok() {
            self.dirty = 0;
        }
    }
}

/// Reads the result fields the kernel actually wrote (`len` bytes).
fn decode(zc: &TcpZerocopyReceive, len: usize) -> ZcStep {
    let copied = if len >= END_OF_COPYBUF_LEN {
        zc.copybuf_len
    } else {
        0
    };
    let sock_err = if len >= END_OF_ERR { zc.err } else { 0 };
    let mut err = (sock_err != 0).then(|| io::Error::from_raw_os_error(sock_err.abs()));
    if copied < 0 {
        err.get_or_insert_with(|| io::Error::from_raw_os_error(-copied));
    }
    ZcStep {
        mapped: zc.length as usize,
        copied: usize::try_from(copied).unwrap_or(0),
        skip: zc.recv_skip_hint as usize,
        eof: false,
        err,
    }
}

/// Waits until the socket has data (or EOF / error / timeout) without
/// consuming or copying anything: `recv(MSG_PEEK | MSG_TRUNC)` with no
/// buffer. Returns the bytes available (up to `max`), 0 at end of stream.
fn peek_wait(fd: BorrowedFd<'_>, max: usize) -> io::Result<usize> {
    peek(fd, max, 0)
}

/// Non-blocking peek: 0 at end of stream, `WouldBlock` if merely empty.
fn peek_nonblocking(fd: BorrowedFd<'_>) -> io::Result<usize> {
    peek(fd, 1, libc::MSG_DONTWAIT)
}

fn peek(fd: BorrowedFd<'_>, max: usize, flags: libc::c_int) -> io::Result<usize> {
    retry_eintr(|| {
        // SAFETY: only used on TCP sockets (a TCP_ZEROCOPY_RECEIVE request
        // succeeded on `fd`), where MSG_TRUNC skips the copy to user space, so
        // the null buffer is never written.
        let rc = unsafe {
            libc::recv(
                fd.as_raw_fd(),
                ptr::null_mut(),
                max,
                libc::MSG_PEEK | libc::MSG_TRUNC | flags,
            )
        };
        cvt_len(rc)
    })
}

/// A plain `recv` into `buf`.
fn plain_recv(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<usize> {
    retry_eintr(|| {
        // SAFETY: `buf` is writable for its length during the call.
        let rc = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        cvt_len(rc)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_ignores_fields_beyond_optlen() {
        let zc = TcpZerocopyReceive {
            length: 8192,
            recv_skip_hint: 100,
            err: 104,
            copybuf_len: 4096,
            ..TcpZerocopyReceive::default()
        };
        let full = decode(&zc, 64);
        assert_eq!((full.mapped, full.copied, full.skip), (8192, 4096, 100));
        assert_eq!(full.err.unwrap().raw_os_error(), Some(104));
        // Old kernel (16-byte structure): copybuf_len and err are our inputs.
        let old = decode(&zc, 16);
        assert_eq!((old.mapped, old.copied, old.skip), (8192, 0, 100));
        assert!(old.err.is_none());
        let neg = decode(
            &TcpZerocopyReceive {
                copybuf_len: -libc::EFAULT,
                ..TcpZerocopyReceive::default()
            },
            64,
        );
        assert_eq!(neg.err.unwrap().raw_os_error(), Some(libc::EFAULT));
    }

    #[test]
    fn end_offsets() {
        assert_eq!(END_OF_ERR, 24);
        assert_eq!(END_OF_COPYBUF_LEN, 36);
    }
}
