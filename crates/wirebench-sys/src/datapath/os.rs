//! Private syscall helpers shared by the data-path modules: return-value
//! conversion, `EINTR` retry, `poll(2)`, `setsockopt(2)` and owned memory
//! mappings.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::{self, NonNull};
use std::time::Duration;

/// Converts a `-1`-on-error return value into an `io::Result`.
pub(crate) fn cvt(rc: libc::c_int) -> io::Result<libc::c_int> {
    if rc == -1 {
        Err(io::Error::last_os_error())
    } else {
        Ok(rc)
    }
}

/// Converts an `ssize_t` byte count (`-1` on error) into an `io::Result`.
pub(crate) fn cvt_len(rc: libc::ssize_t) -> io::Result<usize> {
    usize::try_from(rc).map_err(|_| io::Error::last_os_error())
}

/// Runs `f` again while it fails with `EINTR`; no other retry.
pub(crate) fn retry_eintr<T>(mut f: impl FnMut() -> io::Result<T>) -> io::Result<T> {
    loop {
        match f() {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            other => return other,
        }
    }
}

/// The system page size in bytes.
pub(crate) fn page_size() -> usize {
    // SAFETY: `sysconf` has no memory-safety preconditions.
    let rc = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(rc).ok().filter(|&p| p > 0).unwrap_or(4096)
}

/// Rounds `len` up to a multiple of the page size (at least one page).
pub(crate) fn round_to_pages(len: usize) -> io::Result<usize> {
    let page = page_size();
    len.max(1)
        .checked_next_multiple_of(page)
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "length too large"))
}

/// Re-labels `e` as `Unsupported` if its errno is one of `errnos`, keeping
/// the original message as context.
pub(crate) fn unsupported_if(e: io::Error, errnos: &[libc::c_int], what: &str) -> io::Error {
    match e.raw_os_error() {
        Some(code) if errnos.contains(&code) => {
            io::Error::new(io::ErrorKind::Unsupported, format!("{what}: {e}"))
        }
        _ => io::Error::new(e.kind(), format!("{what}: {e}")),
    }
}

/// Sets an `int`-valued socket option.
pub(crate) fn setsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: libc::c_int,
) -> io::Result<()> {
    // SAFETY: `fd` is open for the borrow; `value` is a live c_int whose exact
    // size is passed as the option length; the kernel only reads it.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (&value as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    cvt(rc).map(drop)
}

/// `poll(2)` on one descriptor. Returns the `revents` (0 on timeout or
/// `EINTR`); `None` waits without limit.
pub(crate) fn poll_one(
    fd: BorrowedFd<'_>,
    events: libc::c_short,
    timeout: Option<Duration>,
) -> io::Result<libc::c_short> {
    let ms = match timeout {
        None => -1,
        // Round up so that a sub-millisecond timeout still sleeps.
        Some(t) => libc::c_int::try_from(t.as_micros().div_ceil(1000)).unwrap_or(libc::c_int::MAX),
    };
    let mut pfd = libc::pollfd {
        fd: fd.as_raw_fd(),
        events,
        revents: 0,
    };
    // SAFETY: `pfd` is one valid, writable `pollfd` and the count passed is 1.
    let rc = unsafe { libc::poll(&mut pfd, 1, ms) };
    match cvt(rc) {
        Ok(0) => Ok(0),
        Ok(_) => Ok(pfd.revents),
        Err(e) if e.kind() == io::ErrorKind::Interrupted => Ok(0),
        Err(e) => Err(e),
    }
}

/// An owned memory mapping, unmapped on drop.
///
/// The type only hands out a raw pointer: which parts may be read or
/// written through references (and when) is decided by its owner.
#[derive(Debug)]
pub(crate) struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: a mapping is process-wide memory; owning it from another thread is
// fine, and `Mapping` itself never reads or writes the memory.
unsafe impl Send for Mapping {}
// SAFETY: `&Mapping` only exposes the address and length; accesses through
// the raw pointer are synchronised by the owners.
unsafe impl Sync for Mapping {}

impl Mapping {
    /// Private anonymous read-write memory of `len` bytes (zero-filled,
    /// page-aligned).
    pub(crate) fn anonymous(len: usize) -> io::Result<Mapping> {
        Self::map(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
        )
    }

    /// Like [`Mapping::anonymous`], with every page faulted in now (`MAP_POPULATE`), so
    /// that first touches cost nothing later.
    pub(crate) fn anonymous_populated(len: usize) -> io::Result<Mapping> {
        Self::map(
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
        )
    }

    /// A read-only `MAP_SHARED` mapping of the first `len` bytes of `fd`.
    pub(crate) fn shared_read_only(fd: BorrowedFd<'_>, len: usize) -> io::Result<Mapping> {
        Self::map(len, libc::PROT_READ, libc::MAP_SHARED, fd.as_raw_fd())
    }

    fn map(
        len: usize,
        prot: libc::c_int,
        flags: libc::c_int,
        fd: libc::c_int,
    ) -> io::Result<Mapping> {
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "cannot map 0 bytes",
            ));
        }
        // SAFETY: a fresh mapping chosen by the kernel (no MAP_FIXED), so no
        // existing memory is affected; the result is checked below.
        let ptr = unsafe { libc::mmap(ptr::null_mut(), len, prot, flags, fd, 0) };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast::<u8>())
            .ok_or_else(|| io::Error::other("mmap returned a null mapping"))?;
        Ok(Mapping { ptr, len })
    }

    /// Start address of the mapping.
    pub(crate) fn ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Length of the mapping in bytes.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// `madvise(MADV_DONTNEED)` on the first `len` bytes: drops the pages
    /// mapped there (for a TCP receive mapping: gives them back).
    pub(crate) fn discard_pages(&self, len: usize) -> io::Result<()> {
        let len = len.min(self.len);
        // SAFETY: the range lies inside this mapping; its owners guarantee no
        // reference into the range is alive (they call this before handing
        // out new slices).
        let rc = unsafe { libc::madvise(self.ptr().cast(), len, libc::MADV_DONTNEED) };
        cvt(rc).map(drop)
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` describe a mapping created by `mmap` and owned
        // exclusively by this value; nothing references it any more.
        unsafe {
            libc::munmap(self.ptr().cast(), self.len);
        }
    }
}
