//! `sendfile(2)` from a file held in memory ([`MemFile`]).

use std::fs::{File, OpenOptions};
use std::io::{self, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use super::os::{cvt, cvt_len, retry_eintr, Mapping};
use super::SplitMix64;

/// Largest count one `sendfile` call transfers on Linux (`MAX_RW_COUNT`).
const MAX_RW_COUNT: usize = 0x7fff_f000;

/// Bytes generated and written per `write` while filling a [`MemFile`].
const FILL_CHUNK: usize = 1 << 20;

/// A file held in memory with fixed content, the source for [`sendfile()`].
///
/// Two backings:
/// - **memfd** ([`MemFile::random`], [`MemFile::from_bytes`]): a `memfd_create` file
///   sealed after it is filled (`F_SEAL_WRITE | F_SEAL_SHRINK | F_SEAL_GROW |
///   F_SEAL_SEAL`): its content can never change, which is what makes the read-only mapping
///   behind [`MemFile::as_bytes`] sound.
/// - **page-cache tmpfile** ([`MemFile::page_cache_from_bytes`]): an unlinked `O_TMPFILE`
///   on a disk filesystem, whose pages stay in the page cache (as iperf3 `-Z` sends from a
///   temporary file). Where the filesystem keeps large folios (ext4, xfs), `sendfile`
///   hands TCP fewer, larger page fragments than from a memfd, whose tmpfs pages are 4 KiB
///   unless shmem transparent huge pages are enabled. [`MemFile::as_bytes`] then returns a
///   private copy of the content (such a file cannot be sealed).
#[derive(Debug)]
pub struct MemFile {
    file: File,
    view: View,
    len: usize,
}

/// How [`MemFile::as_bytes`] sees the content.
#[derive(Debug)]
enum View {
    /// Read-only mapping of a sealed memfd.
    Sealed(Mapping),
    /// Private copy (the file itself is not sealed).
    Copy(Vec<u8>),
    /// Empty file.
    Empty,
}

/// `TMPFS_MAGIC` from `statfs(2)`: a tmpfs directory gives no gain over a memfd.
const TMPFS_MAGIC: i64 = 0x0102_1994;
/// `RAMFS_MAGIC`.
const RAMFS_MAGIC: i64 = 0x8584_58f6;

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

    /// Creates a sealed memfd holding a copy of `content`.
    ///
    /// # Errors
    ///
    /// `memfd_create`, `write`, sealing or `mmap` failed.
    pub fn from_bytes(content: &[u8]) -> io::Result<MemFile> {
        Self::build(content.len(), |file, _| file.write_all(content))
    }

    /// Creates an unlinked temporary file in `dir` holding a copy of `content`, kept in the
    /// page cache; falls back to [`MemFile::from_bytes`] (a memfd) when `dir` is on tmpfs
    /// or ramfs (no gain) or cannot hold an `O_TMPFILE`. See [`MemFile::backing`].
    ///
    /// # Errors
    ///
    /// Those of [`MemFile::from_bytes`] when it falls back.
    pub fn page_cache_from_bytes(content: &[u8], dir: &Path) -> io::Result<MemFile> {
        match tmpfile_with(content, dir) {
            Ok(Some(file)) => Ok(MemFile {
                file,
                view: if content.is_empty() {
                    View::Empty
                } else {
                    View::Copy(content.to_vec())
                },
                len: content.len(),
            }),
            Ok(None) | Err(_) => Self::from_bytes(content),
        }
    }

    /// `"memfd"` or `"tmpfile"` (an unlinked file in the page cache of a disk filesystem).
    pub fn backing(&self) -> &'static str {
        match self.view {
            View::Copy(_) => "tmpfile",
            View::Sealed(_) | View::Empty => "memfd",
        }
    }

    fn build(
        len: usize,
        fill: impl FnOnce(&mut File, usize) -> io::Result<()>,
    ) -> io::Result<MemFile> {
        let mut file = memfd()?;
        fill(&mut file, len).map_err(|e| io::Error::new(e.kind(), format!("memfd write: {e}")))?;
        seal(file.as_fd())?;
        let view = if len == 0 {
            View::Empty
        } else {
            View::Sealed(
                Mapping::shared_read_only(file.as_fd(), len)
                    .map_err(|e| io::Error::new(e.kind(), format!("mmap memfd: {e}")))?,
            )
        };
        Ok(MemFile { file, view, len })
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
        match &self.view {
            // SAFETY: the mapping covers `len` readable bytes of a file sealed
            // against writes, shrinking and growing, so the bytes never change
            // and never disappear while `self` (and the mapping) lives.
            View::Sealed(map) => unsafe { std::slice::from_raw_parts(map.ptr(), self.len) },
            View::Copy(v) => v,
            View::Empty => &[],
        }
    }
}

impl AsFd for MemFile {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

/// An unlinked `O_TMPFILE` in `dir` filled with `content`; `None` if `dir` is on tmpfs or
/// ramfs.
fn tmpfile_with(content: &[u8], dir: &Path) -> io::Result<Option<File>> {
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .mode(0o600)
        .custom_flags(libc::O_TMPFILE | libc::O_CLOEXEC)
        .open(dir)?;
    // SAFETY: `st` is a plain-data struct the kernel fills; the descriptor is open.
    let magic = unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        cvt(libc::fstatfs(file.as_raw_fd(), &mut st))?;
        #[allow(clippy::useless_conversion)] // `f_type`'s width differs between targets
        i64::from(st.f_type)
    };
    if magic == TMPFS_MAGIC || magic == RAMFS_MAGIC {
        return Ok(None);
    }
    file.write_all(content)?;
    Ok(Some(file))
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
    fn page_cache_file_round_trips_or_falls_back() {
        let content: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
        let f = MemFile::page_cache_from_bytes(&content, &std::env::temp_dir()).unwrap();
        assert_eq!(f.len(), content.len());
        assert_eq!(f.as_bytes(), &content[..]);
        // What sendfile reads is the file itself, not the copy.
        let mut got = vec![0u8; content.len()];
        let n = pread_all(&f, &mut got);
        assert_eq!(&got[..n], &content[..n]);
        assert_eq!(n, content.len());
        let shm = Path::new("/dev/shm");
        if shm.is_dir() {
            let m = MemFile::page_cache_from_bytes(&content, shm).unwrap();
            assert_eq!(m.backing(), "memfd", "tmpfs gives no gain: a memfd is used");
        }
    }

    fn pread_all(f: &MemFile, buf: &mut [u8]) -> usize {
        use std::os::unix::fs::FileExt;
        let file = File::from(f.as_fd().try_clone_to_owned().unwrap());
        file.read_at(buf, 0).unwrap()
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
