//! Kernel data-path primitives for fast TCP send and receive paths.
//!
//! Every primitive works on a connected TCP socket (anything `AsFd`, e.g.
//! `std::net::TcpStream`) and honours the socket's own blocking mode and
//! `SO_SNDTIMEO` / `SO_RCVTIMEO`, except the io_uring types, which take an
//! explicit timeout per call.
//!
//! * [`sendfile()`] from a sealed, memory-backed [`MemFile`].
//! * [`SpliceSender`]: `vmsplice` a user buffer into a pipe, `splice` the
//!   pipe into the socket.
//! * [`SpliceDiscard`]: `splice` socket → pipe → `/dev/null`; and
//!   [`recv_discard`]: `recv(MSG_TRUNC)`, which on TCP drops data without
//!   copying it.
//! * `MSG_ZEROCOPY`: [`enable_zerocopy`], [`send_zerocopy`] and the
//!   completion tracker [`ZeroCopyCompletions`].
//! * `TCP_ZEROCOPY_RECEIVE`: [`ZeroCopyReceiver`] maps received pages into
//!   the process instead of copying them.
//! * io_uring: [`UringSender`] (registered buffer, `Send` / `WriteFixed` /
//!   `SendZc`, linked chains) and [`UringReceiver`] (provided buffers,
//!   multishot `Recv` when available).
//! * [`probe()`]: which of the above the running kernel supports.
//!
//! A feature the kernel lacks (or that is disabled, e.g. io_uring by
//! `kernel.io_uring_disabled`) is reported as an `io::Error` of kind
//! [`io::ErrorKind::Unsupported`](std::io::ErrorKind::Unsupported), so the
//! caller can fall back to plain `read`/`write`.
//!
//! Zero-copy send paths (splice/vmsplice, `MSG_ZEROCOPY`, `SendZc`) let the
//! kernel reference the caller's pages after the call returns; see each
//! type's documentation for when a buffer may be modified again.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

mod os;
mod probe;
mod sendfile;
mod splice;
mod uring;
mod uring_recv;
mod zcrecv;
mod zerocopy;

pub(crate) use os::{page_size, round_to_pages, Mapping};

pub use probe::{probe, DatapathSupport};
pub use sendfile::{sendfile, MemFile};
pub use splice::{recv_discard, SpliceDiscard, SpliceSender, DEFAULT_PIPE_SIZE};
pub use uring::{UringSendOp, UringSender, UringSenderStats};
pub use uring_recv::UringReceiver;
pub use zcrecv::{ZcRecv, ZeroCopyReceiver, DEFAULT_ZC_CHUNK};
pub use zerocopy::{enable_zerocopy, send_zerocopy, ZeroCopyCompletions, ZeroCopyRange};

/// A small, fast, non-cryptographic PRNG (SplitMix64) for payload bytes.
#[derive(Debug, Clone)]
pub(crate) struct SplitMix64(u64);

impl SplitMix64 {
    /// Seeds from the clock and a process-wide counter, so that two calls in
    /// the same nanosecond still differ.
    pub(crate) fn from_clock() -> SplitMix64 {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let n = COUNTER.fetch_add(1, Ordering::Relaxed);
        SplitMix64(nanos ^ n.wrapping_mul(0xA076_1D64_78BD_642F))
    }

    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Fills `buf` with the next pseudo-random bytes.
    pub(crate) fn fill(&mut self, buf: &mut [u8]) {
        let mut words = buf.chunks_exact_mut(8);
        for w in &mut words {
            w.copy_from_slice(&self.next_u64().to_le_bytes());
        }
        let rest = words.into_remainder();
        if !rest.is_empty() {
            let last = self.next_u64().to_le_bytes();
            rest.copy_from_slice(&last[..rest.len()]);
        }
    }
}

/// Fills `buf` with pseudo-random, incompressible bytes (SplitMix64 seeded
/// from the clock; not for cryptographic use).
pub fn fill_random(buf: &mut [u8]) {
    SplitMix64::from_clock().fill(buf);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fill_random_covers_odd_lengths_and_differs() {
        let mut a = vec![0u8; 1027];
        let mut b = vec![0u8; 1027];
        fill_random(&mut a);
        fill_random(&mut b);
        assert_ne!(a, b);
        // The tail (not a multiple of 8) is filled as well.
        assert!(a[1020..].iter().any(|&x| x != 0));
        // Roughly uniform: every byte value shows up in 64 KiB.
        let mut big = vec![0u8; 65536];
        fill_random(&mut big);
        let mut seen = [false; 256];
        for &x in &big {
            seen[usize::from(x)] = true;
        }
        assert!(seen.iter().all(|&s| s));
    }
}
