//! Placed buffers: the memory every data path reads from or writes into, at a chosen position
//! relative to a page boundary.
//!
//! # Why placement decides speed
//!
//! The kernel copies between a socket and user memory with `rep movsb` on CPUs that report
//! fast short string moves (`fsrm`), and glibc's `memcpy` uses the same instruction for mid-
//! sized blocks. On AMD Zen 3 (EPYC, family 25 model 1; measured 2026-11-29) that
//! instruction runs about 20× slower when the destination lies 1 to 31 bytes after the
//! source modulo 4 KiB (0.3 GB/s against 5–6 GB/s for the same 64 KiB copy at any other
//! distance, whatever the source's own offset). The kernel fills a fresh socket's pages from
//! their start, so a receive buffer that begins 16 bytes past a page boundary — where
//! `malloc` puts every large block, behind its header — sits exactly in that window for the
//! bytes that come straight off fresh pages. `docs/bench/2026-11-29-amd-epyc-buffer-placement.md` has
//! the measurements.
//!
//! A [`PlacedBuf`] starts [`PlacedBuf::offset`] bytes past a page boundary (0, page-aligned,
//! by default), is backed by its own anonymous mapping (so no allocator decides where it
//! lands, and freeing other blocks cannot move it), and is faulted in when it is made (no
//! page faults in the measured window).

use std::fmt;
use std::io;
use std::ops::{Deref, DerefMut};

use crate::datapath::{page_size, round_to_pages, Mapping};

/// Where buffers start by default: on a page boundary.
pub const DEFAULT_OFFSET_BYTES: usize = 0;

/// The size of a memory page on this system, bytes (the unit of placement).
pub fn page_bytes() -> usize {
    page_size()
}

/// A zero-filled buffer of `len` bytes whose first byte lies `offset` bytes past a page
/// boundary, in memory of its own.
pub struct PlacedBuf {
    map: Mapping,
    offset: usize,
    len: usize,
}

impl PlacedBuf {
    /// A page-aligned buffer of `len` bytes.
    pub fn new(len: usize) -> io::Result<PlacedBuf> {
        PlacedBuf::at_offset(len, DEFAULT_OFFSET_BYTES)
    }

    /// A buffer of `len` bytes starting `offset` bytes past a page boundary; `offset` must be
    /// below the page size.
    pub fn at_offset(len: usize, offset: usize) -> io::Result<PlacedBuf> {
        let page = page_size();
        if offset >= page {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("buffer offset {offset} is not below the page size ({page} bytes)"),
            ));
        }
        let total = len
            .checked_add(offset)
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "length too large"))?;
        let map = Mapping::anonymous_populated(round_to_pages(total)?)?;
        Ok(PlacedBuf { map, offset, len })
    }

    /// Bytes from the page boundary before the buffer to its first byte (read from the
    /// address itself).
    pub fn offset(&self) -> usize {
        self.as_ptr() as usize % page_size()
    }

    /// The offset that was asked for (equal to [`PlacedBuf::offset`]).
    pub fn requested_offset(&self) -> usize {
        self.offset
    }
}

impl Deref for PlacedBuf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        // SAFETY: `offset + len` lies inside the mapping (checked in `at_offset`), which is
        // readable, initialised (zero-filled by the kernel) and owned by `self`; the shared
        // borrow of `self` keeps every mutable access away for the slice's lifetime.
        unsafe { std::slice::from_raw_parts(self.map.ptr().add(self.offset), self.len) }
    }
}

impl DerefMut for PlacedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in `deref`, and the mutable borrow of `self` makes this the only access.
        unsafe { std::slice::from_raw_parts_mut(self.map.ptr().add(self.offset), self.len) }
    }
}

impl fmt::Debug for PlacedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PlacedBuf")
            .field("len", &self.len)
            .field("offset", &self.offset())
            .finish()
    }
}

impl Clone for PlacedBuf {
    /// A new buffer with the same bytes at the same placement.
    ///
    /// # Panics
    /// If the system refuses the memory (as `Vec`'s clone does).
    fn clone(&self) -> PlacedBuf {
        let mut copy = PlacedBuf::at_offset(self.len, self.offset)
            .unwrap_or_else(|e| panic!("cannot map {} bytes: {e}", self.len));
        copy.copy_from_slice(self);
        copy
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placed_where_asked_and_zeroed() {
        for offset in [0, 8, 16, 64, 2048, 4032] {
            let mut b = PlacedBuf::at_offset(100_000, offset).unwrap();
            assert_eq!(b.offset(), offset);
            assert_eq!(b.len(), 100_000);
            assert!(b.iter().all(|&x| x == 0));
            b[99_999] = 7;
            assert_eq!(b.clone()[99_999], 7);
            assert_eq!(b.clone().offset(), offset);
        }
        assert_eq!(PlacedBuf::new(1).unwrap().offset(), 0);
        assert_eq!(PlacedBuf::new(0).unwrap().len(), 0);
    }

    #[test]
    fn an_offset_of_a_page_or_more_is_refused() {
        let e = PlacedBuf::at_offset(10, page_bytes()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
        assert!(PlacedBuf::at_offset(usize::MAX, 1).is_err());
    }
}
