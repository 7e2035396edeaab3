//! The cross-CPU transfer probe: how fast bytes cross from one CPU to another through memory,
//! as a stream's payload does between a sender and a receiver on different CPUs, with no
//! kernel in the path.
//!
//! A writer thread pinned to one CPU copies [`CHUNK_BYTES`] chunks from its own 1 MiB source
//! (which stays in its cache, like a payload block) into a ring of [`RING_BYTES`] (the bytes a
//! socket buffer holds in flight); a reader thread pinned to the other CPU copies each chunk
//! out into its own 1 MiB buffer and frees the slot. A batch counts the bytes the reader
//! copied out in about the batch time. Each slot is a [`Mutex`] taken once per chunk, so the
//! probe needs no `unsafe`; with one writer and one reader the locks are never contended.
//!
//! On a virtual machine this is where the host's placement of the two vCPUs shows: on the
//! machine of docs/bench/2026-11-28-amd-epyc-cross-cpu-placement.md it moved 200–300 Gbit/s for stretches and
//! 25–50 for others, several seconds each, and every split-CPU stream followed it.

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use wirebench_model::limits::Batch;
use wirebench_sys::mem::PlacedBuf;

/// Bytes per chunk copied in and out.
pub const CHUNK_BYTES: usize = 64 * 1024;
/// Bytes of the ring between the two threads.
pub const RING_BYTES: usize = 4 * 1024 * 1024;
/// Bytes of each thread's private buffer.
const PRIVATE_BYTES: usize = 1024 * 1024;
/// A thread that sees no progress from the other for this long gives up (the other could
/// not run: its CPU is held by something else).
const STALL: Duration = Duration::from_secs(2);

/// The ring and its two positions (chunks written and chunks read, ever).
struct Ring {
    slots: Vec<Mutex<PlacedBuf>>,
    written: AtomicU64,
    read: AtomicU64,
    stop: AtomicBool,
}

impl Ring {
    fn new() -> Ring {
        Ring {
            slots: (0..RING_BYTES / CHUNK_BYTES)
                .map(|_| Mutex::new(placed(CHUNK_BYTES)))
                .collect(),
            written: AtomicU64::new(0),
            read: AtomicU64::new(0),
            stop: AtomicBool::new(false),
        }
    }

    fn slot(&self, n: u64) -> &Mutex<PlacedBuf> {
        &self.slots[(n % self.slots.len() as u64) as usize]
    }
}

/// A page-aligned buffer (see [`wirebench_sys::mem`]: every copy of the probes runs at the
/// fastest placement).
fn placed(len: usize) -> PlacedBuf {
    PlacedBuf::new(len).unwrap_or_else(|e| panic!("cannot map a {len}-byte probe buffer: {e}"))
}

/// Spin until `ready()` or the ring stops; an error after [`STALL`] without it.
fn wait_until(ring: &Ring, ready: impl Fn() -> bool, what: &str) -> io::Result<bool> {
    let since = Instant::now();
    let mut spins = 0u32;
    while !ready() {
        if ring.stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        std::hint::spin_loop();
        spins = spins.wrapping_add(1);
        if spins.is_multiple_of(4096) && since.elapsed() > STALL {
            return Err(io::Error::other(format!("no {what} for {STALL:?}")));
        }
    }
    Ok(true)
}

/// The writer: fills free slots until the ring stops.
fn write_chunks(ring: &Ring) -> io::Result<()> {
    let mut src = placed(PRIVATE_BYTES);
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 7) as u8;
    }
    let mut off = 0;
    loop {
        let n = ring.written.load(Ordering::Relaxed);
        let free = || n - ring.read.load(Ordering::Acquire) < ring.slots.len() as u64;
        if !wait_until(ring, free, "free slot")? {
            return Ok(());
        }
        {
            let mut slot = ring
                .slot(n)
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            black_box(&mut slot[..]).copy_from_slice(black_box(&src[off..off + CHUNK_BYTES]));
        }
        ring.written.store(n + 1, Ordering::Release);
        off = (off + CHUNK_BYTES) % PRIVATE_BYTES;
    }
}

/// The reader: `batches` timed batches of about `batch_time` each, after an untimed warm-up
/// of a quarter of one.
fn read_batches(ring: &Ring, batches: u32, batch_time: Duration) -> io::Result<Vec<Batch>> {
    let mut dst = placed(PRIVATE_BYTES);
    let mut off = 0;
    let mut read_one = || -> io::Result<()> {
        let n = ring.read.load(Ordering::Relaxed);
        if !wait_until(ring, || ring.written.load(Ordering::Acquire) > n, "chunk")? {
            return Err(io::Error::other("the writer stopped"));
        }
        {
            let slot = ring
                .slot(n)
                .lock()
                .map_err(|_| io::Error::other("poisoned"))?;
            black_box(&mut dst[off..off + CHUNK_BYTES]).copy_from_slice(black_box(&slot[..]));
        }
        ring.read.store(n + 1, Ordering::Release);
        off = (off + CHUNK_BYTES) % PRIVATE_BYTES;
        Ok(())
    };
    let warm = Instant::now();
    while warm.elapsed() < batch_time / 4 {
        read_one()?;
    }
    (0..batches)
        .map(|_| {
            let t0 = Instant::now();
            let mut count = 0u64;
            loop {
                read_one()?;
                count += CHUNK_BYTES as u64;
                let e = t0.elapsed();
                if e >= batch_time {
                    return Ok(Batch {
                        count,
                        elapsed_ns: u64::try_from(e.as_nanos()).unwrap_or(u64::MAX),
                    });
                }
            }
        })
        .collect()
}

/// `batches` batches of about `batch_time` each, the writer pinned to `from_cpu` and the
/// reader to `to_cpu` (two different CPUs: on one, the two spinning threads would only
/// measure the scheduler). `count` is bytes.
///
/// # Errors
///
/// The CPUs are the same, pinning failed, or a thread saw no progress from the other for 2 s.
pub fn transfer_batches(
    from_cpu: usize,
    to_cpu: usize,
    batches: u32,
    batch_time: Duration,
) -> io::Result<Vec<Batch>> {
    if from_cpu == to_cpu {
        return Err(io::Error::other("the transfer probe needs two CPUs"));
    }
    let ring = Ring::new();
    std::thread::scope(|s| {
        let r = &ring;
        let writer = std::thread::Builder::new()
            .name("wb-xfer-w".into())
            .spawn_scoped(s, move || {
                let out = wirebench_sys::thread::pin_current_thread(from_cpu)
                    .and_then(|()| write_chunks(r));
                // A failed writer stops the reader's wait too.
                r.stop.store(true, Ordering::Relaxed);
                out
            })?;
        let reader = std::thread::Builder::new()
            .name("wb-xfer-r".into())
            .spawn_scoped(s, move || {
                let out = wirebench_sys::thread::pin_current_thread(to_cpu)
                    .and_then(|()| read_batches(r, batches, batch_time));
                r.stop.store(true, Ordering::Relaxed);
                out
            })?;
        let read = reader
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("reader panicked")));
        let written = writer
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("writer panicked")));
        // The writer's error is the cause when both failed.
        written?;
        read
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytes_cross_between_two_cpus_in_whole_chunks() {
        let cpus = wirebench_sys::thread::current_thread_affinity().unwrap();
        if cpus.len() < 2 {
            assert!(transfer_batches(cpus[0], cpus[0], 1, Duration::from_millis(1)).is_err());
            return;
        }
        let b = transfer_batches(cpus[0], cpus[1], 3, Duration::from_millis(5)).unwrap();
        assert_eq!(b.len(), 3);
        for x in b {
            assert!(x.count >= CHUNK_BYTES as u64 && x.count % CHUNK_BYTES as u64 == 0);
            assert!(x.elapsed_ns >= 5_000_000);
        }
    }

    #[test]
    fn one_cpu_or_a_cpu_that_does_not_exist_is_an_error_not_a_hang() {
        assert!(transfer_batches(0, 0, 1, Duration::from_millis(1)).is_err());
        assert!(transfer_batches(0, 100_000, 1, Duration::from_millis(1)).is_err());
        assert!(transfer_batches(100_000, 0, 1, Duration::from_millis(1)).is_err());
    }
}
