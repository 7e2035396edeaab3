//! The system call and wake-up probes.
//!
//! - System call: a pinned thread makes `getppid(2)` in batches (calibrated to the batch
//!   time); each result is consumed.
//! - Wake-up: two pinned threads ping-pong through one futex word. The word says whose turn
//!   it is; a thread hands the turn over (store, `FUTEX_WAKE`) and blocks in `FUTEX_WAIT`
//!   until the turn comes back. A batch counts round trips (each is two hand-overs: two
//!   wake-ups of a thread that went to sleep, unless the turn came back before it slept).
//!   With both threads on one CPU a hand-over is a wake-up and a context switch; on two
//!   CPUs it is a cross-CPU wake-up (an IPI to a sleeping CPU, or to one polling in idle).

use std::hint::black_box;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use wirebench_model::limits::Batch;
use wirebench_sys::probe::{futex_wait, futex_wake, trivial_syscall};

/// The ping thread's turn.
const PING: u32 = 0;
/// The pong thread's turn.
const PONG: u32 = 1;
/// The pong thread is to exit.
const STOP: u32 = 2;
/// The pong thread failed and exited.
const FAILED: u32 = 3;

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
}

/// `n` trivial system calls; the time they took.
#[inline(never)]
fn syscalls(n: u64) -> Duration {
    let t0 = Instant::now();
    let mut sink = 0i64;
    for _ in 0..n {
        sink = sink.wrapping_add(i64::from(trivial_syscall()));
    }
    black_box(sink);
    t0.elapsed()
}

/// System call batches on the calling thread: `(calls per batch, batches)`.
pub fn syscall_batches(batches: u32, batch_time: Duration) -> (u64, Vec<Batch>) {
    // Calibrate on 1000 calls (after 1000 to warm up).
    let _ = syscalls(1000);
    let per_call_ns = (ns(syscalls(1000)) / 1000).max(1);
    let calls = (ns(batch_time) / per_call_ns).max(1000);
    let out = (0..batches)
        .map(|_| Batch {
            count: calls,
            elapsed_ns: ns(syscalls(calls)),
        })
        .collect();
    (calls, out)
}

/// Wait while `word` holds `value`.
fn wait_while(word: &AtomicU32, value: u32) -> io::Result<()> {
    while word.load(Ordering::Acquire) == value {
        futex_wait(word, value)?;
    }
    Ok(())
}

/// Hand the turn over: store `value`, wake the other thread.
fn hand_over(word: &AtomicU32, value: u32) -> io::Result<()> {
    word.store(value, Ordering::Release);
    futex_wake(word, 1).map(|_| ())
}

/// The pong side: answer every ping until told to stop.
fn pong(word: &AtomicU32) -> io::Result<()> {
    loop {
        match word.load(Ordering::Acquire) {
            PONG => hand_over(word, PING)?,
            STOP => return Ok(()),
            _ => futex_wait(word, PING)?,
        }
    }
}

/// The ping side: round trips for `time` (checked every 16), after `warmup` untimed ones.
fn ping_batch(word: &AtomicU32, time: Duration) -> io::Result<Batch> {
    let t0 = Instant::now();
    let mut n = 0u64;
    loop {
        for _ in 0..16 {
            // Only from the ping thread's own turn: a pong thread that failed said so.
            if word
                .compare_exchange(PING, PONG, Ordering::AcqRel, Ordering::Acquire)
                .is_err()
            {
                return Err(io::Error::other("the pong thread stopped"));
            }
            futex_wake(word, 1)?;
            wait_while(word, PONG)?;
        }
        n += 16;
        let e = t0.elapsed();
        if e >= time {
            return Ok(Batch {
                count: n,
                elapsed_ns: ns(e),
            });
        }
    }
}

/// Ping-pong batches between a thread pinned to `ping_cpu` and one pinned to `pong_cpu`
/// (the same CPU or two): each batch runs for about `batch_time` and counts round trips.
///
/// # Errors
///
/// Pinning or a futex call failed.
pub fn wakeup_batches(
    ping_cpu: usize,
    pong_cpu: usize,
    batches: u32,
    batch_time: Duration,
) -> io::Result<Vec<Batch>> {
    let word = AtomicU32::new(PING);
    std::thread::scope(|s| {
        let w = &word;
        let ponger = std::thread::Builder::new()
            .name("wb-pong".into())
            .spawn_scoped(s, move || {
                let r = wirebench_sys::thread::pin_current_thread(pong_cpu).and_then(|()| pong(w));
                if r.is_err() {
                    // Release the ping thread, which waits for its turn.
                    let _ = hand_over(w, FAILED);
                }
                r
            })?;
        let pinger = std::thread::Builder::new()
            .name("wb-ping".into())
            .spawn_scoped(s, move || {
                let run = || -> io::Result<Vec<Batch>> {
                    wirebench_sys::thread::pin_current_thread(ping_cpu)?;
                    // Warm up: untimed.
                    ping_batch(w, batch_time / 4)?;
                    (0..batches).map(|_| ping_batch(w, batch_time)).collect()
                };
                let out = run();
                // Always release the pong thread, whatever happened (its turn or not).
                let _ = hand_over(w, STOP);
                out
            })?;
        let out = pinger
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("ping thread panicked")));
        let pong_result = ponger
            .join()
            .unwrap_or_else(|_| Err(io::Error::other("pong thread panicked")));
        // The pong thread's error is the cause when both failed.
        pong_result?;
        out
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn syscall_batches_are_calibrated() {
        let (calls, b) = syscall_batches(3, Duration::from_millis(2));
        assert!(calls >= 1000);
        assert_eq!(b.len(), 3);
        assert!(b.iter().all(|b| b.count == calls && b.elapsed_ns > 0));
    }

    #[test]
    fn ping_pong_on_one_and_on_two_cpus() {
        let cpus = wirebench_sys::thread::current_thread_affinity().unwrap();
        let a = cpus[0];
        let b = *cpus.last().unwrap();
        for (x, y) in [(a, a), (a, b)] {
            let batches = wakeup_batches(x, y, 2, Duration::from_millis(5)).unwrap();
            assert_eq!(batches.len(), 2);
            for bt in batches {
                assert!(bt.count >= 16 && bt.count % 16 == 0);
                assert!(bt.elapsed_ns >= 5_000_000);
            }
        }
    }

    #[test]
    fn a_cpu_that_does_not_exist_is_an_error_not_a_hang() {
        assert!(wakeup_batches(0, 100_000, 1, Duration::from_millis(1)).is_err());
        assert!(wakeup_batches(100_000, 0, 1, Duration::from_millis(1)).is_err());
    }
}
