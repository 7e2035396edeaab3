//! Memory copy and checksum batches per buffer size.
//!
//! For each size, one thread per CPU of the plan is pinned to its CPU and allocates and
//! touches its own source and destination buffers. Thread 0 calibrates: the repetitions of
//! a copy (and of a checksum) that fill the batch time. Then, batch after batch:
//!
//! 1. all threads copy their buffers `reps` times at once (a [`Barrier`] starts them); the
//!    batch counts every thread's bytes over the time of the slowest thread;
//! 2. thread 0 alone copies `reps` times (the others wait at the next barrier);
//! 3. thread 0 alone checksums its source `reps_checksum` times;
//! 4. thread 0 alone copies `reps` times into a second destination placed
//!    [`UNLUCKY_DISTANCE_BYTES`] after the source modulo a page (where `malloc` puts a block
//!    behind its header): the penalty of an unlucky placement.
//!
//! Every buffer is a [`PlacedBuf`] from the one allocator of the data paths: the source and
//! the first destination start on page boundaries, the placement at which the copy is
//! fastest on every CPU measured (AMD Zen 3 copies 20x slower at a distance of 1 to 31
//! bytes; see [`wirebench_sys::mem`]), so the copy figures are the machine's limit.
//!
//! So the four figures are interleaved, and a burst of noise lands on all of them. Every
//! copy goes through [`std::hint::black_box`] so that the compiler can neither merge the
//! repeated copies nor drop them, and every checksum result is consumed.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

use wirebench_model::limits::{Batch, LimitsNote, MemorySamples};

use wirebench_sys::mem::PlacedBuf;

use super::checksum::ones_complement_sum;

/// Where the unlucky destination starts after the source, modulo a page, bytes: the offset of
/// a `malloc`ed block behind its 16-byte header.
pub const UNLUCKY_DISTANCE_BYTES: usize = 16;

/// What the memory probe measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPlan {
    /// Buffer sizes, bytes, ascending.
    pub sizes: Vec<u64>,
    /// Batches per figure.
    pub batches: u32,
    /// The time a batch aims at (a copy longer than this makes a batch of one).
    pub batch_time: Duration,
    /// The CPUs of the all-threads figure, one pinned thread each; the first also runs the
    /// one-thread figures.
    pub cpus: Vec<usize>,
    /// `MemAvailable`, bytes: the buffers of a size may take at most half of it (`None`:
    /// no bound).
    pub available_bytes: Option<u64>,
}

/// Shared state of one size's threads.
struct Shared {
    barrier: Barrier,
    /// Copies per batch, set by thread 0's calibration.
    reps: AtomicU64,
    /// Each thread's time for the current all-threads batch, ns.
    elapsed_ns: Vec<AtomicU64>,
    notes: Mutex<Vec<LimitsNote>>,
}

/// Copy `src` into `dst` `reps` times; the time it took.
#[inline(never)]
fn copy_reps(src: &[u8], dst: &mut [u8], reps: u64) -> Duration {
    let t0 = Instant::now();
    for _ in 0..reps {
        black_box(&mut *dst).copy_from_slice(black_box(src));
        black_box(&mut *dst);
    }
    t0.elapsed()
}

/// Checksum `src` `reps` times, consuming every result; the time it took.
#[inline(never)]
fn checksum_reps(src: &[u8], reps: u64) -> Duration {
    let t0 = Instant::now();
    let mut sink = 0u64;
    for _ in 0..reps {
        sink = sink.wrapping_add(u64::from(ones_complement_sum(black_box(src))));
    }
    black_box(sink);
    t0.elapsed()
}

/// Repetitions of an operation that took `one` to fill `target` (at least 1).
fn reps_for(one: Duration, target: Duration) -> u64 {
    let one_ns = one.as_nanos().max(1);
    (target.as_nanos().div_ceil(one_ns)).clamp(1, 1 << 32) as u64
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// One thread of one size: pin, allocate, touch, calibrate (thread 0), then the batches.
/// Thread 0 returns the size's samples.
fn worker(index: usize, cpu: usize, size: usize, plan: &MemoryPlan, sh: &Shared) -> MemorySamples {
    if let Err(e) = wirebench_sys::thread::pin_current_thread(cpu) {
        if let Ok(mut n) = sh.notes.lock() {
            n.push(LimitsNote::PinFailed {
                cpu: cpu as u32,
                error: e.to_string(),
            });
        }
    }
    // Allocated and written by the thread itself, so its pages are local to its CPU.
    let mut src = placed(size, 0);
    for (i, b) in src.iter_mut().enumerate() {
        *b = (i * 7 + 3) as u8;
    }
    let mut dst = placed(size, 0);
    let mut unlucky = (index == 0).then(|| placed(size, UNLUCKY_DISTANCE_BYTES));
    // Touch the destinations and warm the caches and TLB: untimed.
    let first = copy_reps(&src, &mut dst, 1);
    if let Some(u) = unlucky.as_mut() {
        copy_reps(&src, u, 1);
    }
    let mut out = MemorySamples {
        buffer_bytes: size as u64,
        ..MemorySamples::default()
    };
    let mut reps_checksum = 1;
    if index == 0 {
        let one = copy_reps(&src, &mut dst, 1).min(first);
        sh.reps
            .store(reps_for(one, plan.batch_time), Ordering::Relaxed);
        reps_checksum = reps_for(checksum_reps(&src, 1), plan.batch_time);
    }
    sh.barrier.wait();
    let reps = sh.reps.load(Ordering::Relaxed);
    let threads = sh.elapsed_ns.len() as u64;
    let bytes = size as u64 * reps;
    for _ in 0..plan.batches {
        sh.barrier.wait();
        let t = copy_reps(&src, &mut dst, reps);
        sh.elapsed_ns[index].store(ns(t), Ordering::Relaxed);
        sh.barrier.wait();
        if index != 0 {
            continue;
        }
        if threads > 1 || plan.cpus.len() == 1 {
            let slowest = sh
                .elapsed_ns
                .iter()
                .map(|e| e.load(Ordering::Relaxed))
                .max()
                .unwrap_or(0);
            out.copy_all.push(Batch {
                count: bytes * threads,
                elapsed_ns: slowest,
            });
        }
        let t = copy_reps(&src, &mut dst, reps);
        out.copy_one.push(Batch {
            count: bytes,
            elapsed_ns: ns(t),
        });
        let t = checksum_reps(&src, reps_checksum);
        out.checksum.push(Batch {
            count: size as u64 * reps_checksum,
            elapsed_ns: ns(t),
        });
        if let Some(u) = unlucky.as_mut() {
            // The unlucky copy may be 20x slower: a twentieth of the repetitions keeps the
            // batch near its time.
            let reps_unlucky = reps.div_ceil(20);
            let t = copy_reps(&src, u, reps_unlucky);
            out.copy_unlucky.push(Batch {
                count: size as u64 * reps_unlucky,
                elapsed_ns: ns(t),
            });
        }
    }
    out
}

/// A probe buffer of `size` bytes, `offset` bytes past a page boundary.
fn placed(size: usize, offset: usize) -> PlacedBuf {
    PlacedBuf::at_offset(size, offset)
        .unwrap_or_else(|e| panic!("cannot map a {size}-byte probe buffer: {e}"))
}

/// Measure one buffer size on `threads` threads (the plan's first CPUs).
fn measure_size(
    plan: &MemoryPlan,
    size: usize,
    threads: usize,
) -> (MemorySamples, Vec<LimitsNote>) {
    let sh = Shared {
        barrier: Barrier::new(threads),
        reps: AtomicU64::new(1),
        elapsed_ns: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        notes: Mutex::new(Vec::new()),
    };
    let samples = std::thread::scope(|s| {
        let handles: Vec<_> = plan.cpus[..threads]
            .iter()
            .enumerate()
            .map(|(i, &cpu)| {
                let sh = &sh;
                std::thread::Builder::new()
                    .name(format!("wb-mem{i}"))
                    .spawn_scoped(s, move || worker(i, cpu, size, plan, sh))
            })
            .collect();
        let mut first = None;
        for h in handles {
            match h.map(|h| h.join()) {
                Ok(Ok(m)) if first.is_none() => first = Some(m),
                _ => {}
            }
        }
        first.unwrap_or_default()
    });
    let notes = sh.notes.into_inner().unwrap_or_default();
    (samples, notes)
}

/// Run the memory probe: the samples of every size that fit the memory budget, and notes
/// for what did not.
pub fn measure(plan: &MemoryPlan) -> (Vec<MemorySamples>, Vec<LimitsNote>) {
    let mut all = Vec::new();
    let mut notes: Vec<LimitsNote> = Vec::new();
    if plan.cpus.is_empty() || plan.batches == 0 {
        return (all, notes);
    }
    for &size in &plan.sizes {
        let Ok(bytes) = usize::try_from(size) else {
            continue;
        };
        let fits = |threads: usize| {
            let needed = size.saturating_mul(2).saturating_mul(threads as u64);
            match plan.available_bytes {
                Some(a) if needed > a / 2 => Err(LimitsNote::MemoryTooLarge {
                    buffer_bytes: size,
                    threads: threads as u32,
                    needed_bytes: needed,
                    available_bytes: a,
                }),
                _ => Ok(threads),
            }
        };
        let threads = match fits(plan.cpus.len()).or_else(|n| {
            notes.push(n);
            fits(1)
        }) {
            Ok(t) => t,
            Err(n) => {
                notes.push(n);
                continue;
            }
        };
        let (samples, size_notes) = measure_size(plan, bytes, threads);
        for n in size_notes {
            if !notes.contains(&n) {
                notes.push(n);
            }
        }
        all.push(samples);
    }
    (all, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reps_fill_the_batch() {
        assert_eq!(
            reps_for(Duration::from_micros(10), Duration::from_millis(5)),
            500
        );
        assert_eq!(
            reps_for(Duration::from_millis(50), Duration::from_millis(5)),
            1
        );
        assert_eq!(
            reps_for(Duration::ZERO, Duration::from_millis(1)),
            1_000_000
        );
    }

    #[test]
    fn batches_count_what_they_did() {
        let cpus = wirebench_sys::thread::current_thread_affinity().unwrap();
        let plan = MemoryPlan {
            sizes: vec![64 * 1024, 1 << 20],
            batches: 3,
            batch_time: Duration::from_millis(1),
            cpus: cpus.iter().copied().take(2).collect(),
            available_bytes: None,
        };
        let (samples, notes) = measure(&plan);
        assert!(notes.is_empty(), "{notes:?}");
        assert_eq!(samples.len(), 2);
        for m in &samples {
            assert_eq!(m.copy_one.len(), 3);
            assert_eq!(m.checksum.len(), 3);
            assert_eq!(m.copy_all.len(), 3);
            for b in m.copy_one.iter().chain(&m.checksum).chain(&m.copy_all) {
                assert!(b.elapsed_ns > 0 && b.count > 0);
                assert_eq!(b.count % m.buffer_bytes, 0);
            }
            let threads = plan.cpus.len() as u64;
            assert_eq!(m.copy_all[0].count, m.copy_one[0].count * threads);
        }
    }

    #[test]
    fn sizes_beyond_the_budget_are_skipped_or_run_on_one_thread() {
        let cpu = wirebench_sys::thread::current_thread_affinity().unwrap()[0];
        let plan = MemoryPlan {
            sizes: vec![64 * 1024, 1 << 20],
            batches: 1,
            batch_time: Duration::from_micros(100),
            cpus: vec![cpu, cpu],
            // Half of it holds two threads' 64 KiB buffers, not one thread's 1 MiB ones.
            available_bytes: Some(512 * 1024),
        };
        let (samples, notes) = measure(&plan);
        assert_eq!(samples.len(), 1);
        assert_eq!(samples[0].buffer_bytes, 64 * 1024);
        assert_eq!(samples[0].copy_all.len(), 1);
        assert!(
            matches!(
                notes.as_slice(),
                [
                    LimitsNote::MemoryTooLarge { threads: 2, .. },
                    LimitsNote::MemoryTooLarge {
                        threads: 1,
                        needed_bytes: 2_097_152,
                        ..
                    }
                ]
            ),
            "{notes:?}"
        );
    }
}
