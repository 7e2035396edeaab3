//! Private helpers for `getsockopt(2)` on plain-old-data option values.

use std::io;
use std::mem::size_of;
use std::os::fd::{AsRawFd, BorrowedFd};

/// Types for which every bit pattern (including all zeroes) is a valid value,
/// so the kernel may write arbitrary bytes into them.
///
/// # Safety
///
/// Implementors must be `#[repr(C)]` (or primitive) types made only of
/// integers / integer arrays, valid for any bit pattern.
pub(crate) unsafe trait Pod: Copy {}

// SAFETY: `c_int` is a primitive integer; every bit pattern is valid.
unsafe impl Pod for libc::c_int {}

/// `getsockopt(fd, level, name)` into `value`; returns the number of bytes
/// the kernel wrote (never more than `size_of::<T>()`).
pub(crate) fn getsockopt<T: Pod>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    value: &mut T,
) -> io::Result<usize> {
    let size = size_of::<T>();
    let mut len = libc::socklen_t::try_from(size)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option buffer too large"))?;
    // SAFETY: `fd` is a valid open descriptor for the lifetime of the borrow;
    // `value` points to `len` writable bytes of a `Pod` type, for which any
    // bytes the kernel writes form a valid value; `len` is a valid out-pointer.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            level,
            name,
            (value as *mut T).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok((len as usize).min(size))
}

/// Reads an `int`-valued socket option.
pub(crate) fn getsockopt_int(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
) -> io::Result<libc::c_int> {
    let mut v: libc::c_int = 0;
    let len = getsockopt(fd, level, name, &mut v)?;
    if len != size_of::<libc::c_int>() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("getsockopt returned {len} bytes for an int option"),
        ));
    }
    Ok(v)
}

/// `setsockopt(fd, level, name, &v)` with a plain value `v` whose size is the option length.
pub(crate) fn setsockopt<T: Copy>(
    fd: BorrowedFd<'_>,
    level: libc::c_int,
    name: libc::c_int,
    v: T,
) -> io::Result<()> {
    let len = libc::socklen_t::try_from(size_of::<T>())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "option value too large"))?;
    // SAFETY: `fd` is open for the borrow; `v` is a live plain value of `len` bytes, which
    // the kernel only reads.
    let rc = unsafe { libc::setsockopt(fd.as_raw_fd(), level, name, (&v as *const T).cast(), len) };
    if rc == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}
