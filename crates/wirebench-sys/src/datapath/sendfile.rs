//! `sendfile(2)` from a sealed, memory-backed file ([`MemFile`]).

use std::fs::File;
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::os::{cvt, cvt_len, retry_eintr, Mapping};
use super::SplitMix64;

/// Largest count one `sendfile` call transfers on Linux (`MAX_RW_COUNT`).
const MAX_RW_COUNT: usize = 0x7fff_f000;

/// Bytes generated and written per `write` while filling a [`MemFile`].
const FILL_CHUNK: usize = 1 << 20;

/// A memory-backed file (`memfd_create`) holding fixed content, the source
/// for [`sendfile()`].
///
/// After it is filled the file is sealed (`F_SEAL_WRITE | F_SEAL_SHRINK |
/// F_SEAL_GROW | F_SEAL_SEAL`): its content can never change, which is what
/// makes [`MemFile::as_bytes`] (a read-only mapping) sound and lets the
/// kernel send the page-cache pages without copying.
#[derive(Debug)]
pub struct MemFile {
    file: File,
    /// Read-only view of the content; `None` for an empty file.
    map: Option<Mapping>,
    len: usize,
}

impl MemFile {
    /// Creates a file of `len` pseudo-random, incompressible bytes
    /// (SplitMix64 seeded from the clock).
    ///
    /// # Errors
    ///
    /// `memfd_create`, `write`, sealing or `mmap` failed (e.g. out of memory).
    pub fn random(len: usize) -> io::Result<MemFile> {
        let mut rng = SplitMix64::from_clock();
        let mut chunk = vec![0u8; FILL_CHUNK.min(len)];
        Self::build(len, |file, mut left| {
            while left > 0 {
                let part = &mut chunk[..left.min(FILL_CHUNK)];
                rng.fill(part);
                file.write_all(part)?;
                left -= part.len();
            }
            Ok(())
        })
    }

    /// Creates a file holding a copy of `content`.
    ///
    /// # Errors
    ///
    /// `memfd_create`, `write`, sealing or `mmap` failed.
    pub fn from_bytes(content: &[u8]) -> io::Result<MemFile> {
        Self::build(content.len(), |file, _| file.write_all(content))
    }

    fn build(
        len: usize,
        fill: impl FnOnce(&mut File, usize) -> io::Result<()>,
    ) -> io::Result<MemFile> {
        let mut file = memfd()?;
        fill(&mut file, len).map_err(|e| io::Error::new(e.kind(), format!("memfd write: {e}")))?;
        seal(file.as_fd())?;
        let map = if len == 0 {
            None
        } else {
            Some(
                Mapping::shared_read_only(file.as_fd(), len)
                    .map_err(|e| io::Error::new(e.kind(), format!("mmap memfd: {e}")))?,
            )
        };
        Ok(MemFile { file, map, len })
    }

    /// Length of the content in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True for an empty file.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The file's content (for verifying what a receiver got).
    pub fn as_bytes(&self) -> &[u8] {
        match &self.map {
            // SAFETY: the mapping covers `len` readable bytes of a file sealed
            // against writes, shrinking and growing, so the bytes never change
            // and never disappear while `self` (and the mapping) lives.
            Some(map) => unsafe { std::slice::from_raw_parts(map.ptr(), self.len) },
            None => &[],
        }
    }
}

impl AsFd for MemFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// A new, empty, sealable memfd.
fn memfd() -> io::Result<File> {
    // SAFETY: the name is a valid NUL-terminated C string literal.
    let raw = unsafe {
        libc::memfd_create(
            c"wirebench-sendfile".as_ptr(),
            libc::MFD_CLOEXEC | libc::MFD_ALLOW_SEALING,
        )
    };
    let raw = cvt(raw).map_err(|e| io::Error::new(e.kind(), format!("memfd_create: {e}")))?;
    // SAFETY: `raw` is a freshly created descriptor owned by nobody else.
    Ok(File::from(unsafe { OwnedFd::from_raw_fd(raw) }))
}

/// Seals the file's content and size for good.
fn seal(fd: BorrowedFd<'_>) -> io::Result<()> {
    let seals = libc::F_SEAL_WRITE | libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_SEAL;
    // SAFETY: plain fcntl on an open descriptor with an integer argument.
    let rc = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_ADD_SEALS, seals) };
    cvt(rc)
        .map(drop)
        .map_err(|e| io::Error::new(e.kind(), format!("F_ADD_SEALS: {e}")))
}

/// Sends up to `len` bytes of `file`, starting at byte `offset`, to `sock`
/// with one `sendfile(2)` call (retried only on `EINTR`). Returns the number
/// of bytes sent: fewer than `len` when the socket buffer filled up or the
/// end of the file was reached, 0 if `offset >= file.len()` or `len == 0`.
///
/// The kernel hands the file's page-cache pages to TCP without copying.
///
/// # Errors
///
/// `WouldBlock` when the socket is non-blocking and full, or its send
/// timeout (`SO_SNDTIMEO`) expired before anything was sent; `BrokenPipe` /
/// `ConnectionReset` when the peer is gone; `InvalidInput` if `offset` does
/// not fit `off_t`.
pub fn sendfile<S: AsFd>(sock: &S, file: &MemFile, offset: u64, len: usize) -> io::Result<usize> {
    if len == 0 || offset >= file.len() as u64 {
        return Ok(0);
    }
    let count = len.min(MAX_RW_COUNT);
    let start = libc::off_t::try_from(offset)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "offset too large"))?;
    let out_fd = sock.as_fd().as_raw_fd();
    let in_fd = file.as_fd().as_raw_fd();
    retry_eintr(|| {
        let mut off = start;
        // SAFETY: both descriptors are open for the borrows; `off` is a live
        // `off_t` the kernel reads and updates.
        let rc = unsafe { libc::sendfile(out_fd, in_fd, &mut off, count) };
        cvt_len(rc)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn from_bytes_round_trips_and_is_sealed() {
        let content: Vec<u8> = (0..10_000u32).map(|i| (i % 251) as u8).collect();
        let f = MemFile::from_bytes(&content).unwrap();
        assert_eq!(f.len(), content.len());
        assert_eq!(f.as_bytes(), &content[..]);
        // Writes are refused by the seal.
        let mut dup = File::from(f.as_fd().try_clone_to_owned().unwrap());
        assert!(dup.write_all(b"x").is_err());
    }

    #[test]
    fn empty_and_random() {
        let e = MemFile::from_bytes(&[]).unwrap();
        assert!(e.is_empty());
        assert_eq!(e.as_bytes(), &[] as &[u8]);
        let r = MemFile::random(3 * FILL_CHUNK + 5).unwrap();
        assert_eq!(r.as_bytes().len(), 3 * FILL_CHUNK + 5);
        // Chunks differ (the PRNG continues across chunks).
        assert_ne!(
            &r.as_bytes()[..64],
            &r.as_bytes()[FILL_CHUNK..FILL_CHUNK + 64]
        );
    }
}
