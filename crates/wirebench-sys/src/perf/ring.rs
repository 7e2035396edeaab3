//! The mmap'ed ring buffer of one perf event: one metadata page followed by 2^n data pages.
//!
//! The kernel writes records at `data_head` and the reader consumes them up to it, then
//! publishes `data_tail` so the kernel may reuse the space. Ordering follows
//! `perf_event_open(2)`: `data_head` is loaded with acquire ordering (the records below it
//! are then visible), and `data_tail` is stored with release ordering after the bytes have
//! been copied out (the kernel must not overwrite them before). Records are 8-byte aligned
//! and may wrap around the end of the data area; [`Ring::read_available`] copies the whole
//! readable span out in at most two pieces, so the parser sees contiguous bytes.

use std::os::fd::{AsRawFd, BorrowedFd};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::PerfError;

/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD_OFFSET: usize = 1024;
const DATA_TAIL_OFFSET: usize = 1032;
const DATA_OFFSET_OFFSET: usize = 1040;
const DATA_SIZE_OFFSET: usize = 1048;

/// The largest data area allowed per CPU, in pages (bounded memory: 1024 × 4 KiB = 4 MiB).
pub const MAX_DATA_PAGES: usize = 1024;

/// One mapped ring buffer.
pub(crate) struct Ring {
    /// Start of the mapping (the metadata page).
    base: *mut u8,
    /// Bytes mapped.
    map_len: usize,
    /// Start of the data area.
    data: *const u8,
    /// Bytes in the data area (a power of two).
    data_size: u64,
}

// SAFETY: the ring's pointers designate a private mapping owned by this value; it is only
// accessed through `&mut self` (one thread at a time), and moving it between threads does
// not change what the kernel writes there.
unsafe impl Send for Ring {}

impl Ring {
    /// Maps `1 + data_pages` pages of the event `fd` (`data_pages` a power of two, at most
    /// [`MAX_DATA_PAGES`]).
    pub(crate) fn map(fd: BorrowedFd<'_>, data_pages: usize) -> Result<Ring, PerfError> {
        let data_pages = data_pages.clamp(1, MAX_DATA_PAGES).next_power_of_two();
        let page = page_size();
        let map_len = (1 + data_pages) * page;
        // SAFETY: a new shared mapping of a perf event fd, no address hint; the kernel
        // validates the length (1 + 2^n pages). The result is checked against MAP_FAILED.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd.as_raw_fd(),
                0,
            )
        };
        if p == libc::MAP_FAILED {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(PerfError::Mmap { errno, data_pages });
        }
        let base = p.cast::<u8>();
        // SAFETY: the metadata page is mapped and at least 4 KiB, so the two u64 fields at
        // offsets 1040 and 1048 are inside it and 8-byte aligned (the page is aligned).
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET_OFFSET).cast::<u64>()),
                std::ptr::read_volatile(base.add(DATA_SIZE_OFFSET).cast::<u64>()),
            )
        };
        // Kernels before 4.1 leave these zero: the data area is then the rest of the map.
        let (off, size) = if size == 0 {
            (page as u64, (data_pages * page) as u64)
        } else {
            (off, size)
        };
        let ring = Ring {
            base,
            map_len,
            // SAFETY: `off` is inside the mapping (the kernel reports the data area it
            // mapped; the fallback is one page in), so the pointer stays in bounds.
            data: unsafe { base.add(usize::try_from(off).unwrap_or(page)) },
            data_size: size,
        };
        Ok(ring)
    }

    /// The data area's size in bytes.
    pub(crate) fn data_size(&self) -> u64 {
        self.data_size
    }

    fn head(&self) -> &AtomicU64 {
        // SAFETY: `data_head` is an 8-byte aligned u64 inside the mapped metadata page,
        // which lives as long as `self`; the kernel updates it concurrently, which is what
        // an atomic is for.
        unsafe { AtomicU64::from_ptr(self.base.add(DATA_HEAD_OFFSET).cast::<u64>()) }
    }

    fn tail(&self) -> &AtomicU64 {
        // SAFETY: as for `head`: `data_tail` is an aligned u64 in the metadata page; the
        // kernel only reads it.
        unsafe { AtomicU64::from_ptr(self.base.add(DATA_TAIL_OFFSET).cast::<u64>()) }
    }

    /// Appends every byte between `data_tail` and `data_head` to `out` (unwrapped, in
    /// order) and releases that space to the kernel. Returns the bytes read.
    pub(crate) fn read_available(&mut self, out: &mut Vec<u8>) -> usize {
        let head = self.head().load(Ordering::Acquire);
        let tail = self.tail().load(Ordering::Relaxed);
        let avail = head.wrapping_sub(tail);
        if avail == 0 {
            return 0;
        }
        if avail > self.data_size {
            // Cannot happen with a cooperating kernel (it never overruns the tail); drop
            // everything rather than read garbage.
            self.tail().store(head, Ordering::Release);
            return 0;
        }
        let mask = self.data_size - 1;
        let start = (tail & mask) as usize;
        let len = avail as usize;
        let first = len.min(self.data_size as usize - start);
        out.reserve(len);
        // SAFETY: [start, start + first) and [0, len - first) lie inside the data area
        // (start < data_size, first <= data_size - start, len <= data_size), whose bytes
        // between tail and head the kernel has finished writing (acquire load of head) and
        // will not touch before the tail moves; `out` has `len` bytes reserved.
        unsafe {
            let dst = out.as_mut_ptr().add(out.len());
            std::ptr::copy_nonoverlapping(self.data.add(start), dst, first);
            std::ptr::copy_nonoverlapping(self.data, dst.add(first), len - first);
            out.set_len(out.len() + len);
        }
        self.tail().store(head, Ordering::Release);
        len
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: `base`/`map_len` are exactly the mapping made in `map`, unmapped once.
        unsafe {
            libc::munmap(self.base.cast::<libc::c_void>(), self.map_len);
        }
    }
}

/// The system's page size.
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf only reads a configuration value.
    let p = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(p).unwrap_or(4096).max(4096)
}
