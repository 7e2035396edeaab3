//! The machine-limit probes of `wirebench limits`: memory copy and Internet-checksum
//! batches per buffer size ([`memory`]), system call and wake-up batches ([`probes`]), and
//! bytes crossing between two CPUs ([`transfer`]).
//!
//! Like every engine these count and time ([`Batch`]: units and nanoseconds); the figures
//! (rates, medians, spreads) are computed by `wirebench-report`'s analysis. The loopback TCP
//! ceiling is a stream test and runs through the `Runner`, not here.
//!
//! [`Batch`]: wirebench_model::limits::Batch

pub mod checksum;
pub mod memory;
pub mod probes;
pub mod transfer;

use std::time::Duration;

use wirebench_model::limits::{LimitsNote, LimitsSamples};

/// Smallest buffer size measured, bytes.
pub const MIN_BUFFER_BYTES: u64 = 32 * 1024;
/// Largest buffer size measured, bytes.
pub const MAX_BUFFER_BYTES: u64 = 256 * 1024 * 1024;

/// What the probes measure and for how long.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitsPlan {
    /// The memory probe.
    pub memory: memory::MemoryPlan,
    /// Batches of the system call and wake-up probes.
    pub probe_batches: u32,
    /// The time a system call or wake-up batch aims at.
    pub probe_batch_time: Duration,
}

impl LimitsPlan {
    /// The standard plan on `cpus` (the CPUs this process may run on): buffer sizes from
    /// [`MIN_BUFFER_BYTES`] to [`MAX_BUFFER_BYTES`] in ×2 steps (×4 down from the largest
    /// with `quick`), 5 batches of 4 ms per memory figure and 7 of 20 ms per probe (3, 2 ms,
    /// 5 and 10 ms with `quick`).
    pub fn standard(quick: bool, cpus: Vec<usize>, available_bytes: Option<u64>) -> LimitsPlan {
        let step = if quick { 4 } else { 2 };
        LimitsPlan {
            memory: memory::MemoryPlan {
                sizes: geometric(MIN_BUFFER_BYTES, MAX_BUFFER_BYTES, step),
                batches: if quick { 3 } else { 5 },
                batch_time: Duration::from_millis(if quick { 2 } else { 4 }),
                cpus,
                available_bytes,
            },
            probe_batches: if quick { 5 } else { 7 },
            probe_batch_time: Duration::from_millis(if quick { 10 } else { 20 }),
        }
    }
}

/// `hi, hi/step, hi/step², …` down to above `lo`, and `lo` itself, ascending: both ends and
/// every power-of-`step` fraction of `hi` (with ×4 from 256 MiB: 1 MiB is one of them).
pub fn geometric(lo: u64, hi: u64, step: u64) -> Vec<u64> {
    let mut v = Vec::new();
    let mut x = hi.max(lo);
    while x > lo {
        v.push(x);
        x /= step.max(2);
    }
    v.push(lo);
    v.reverse();
    v
}

/// Run every probe of `plan` (memory, then the system call, the wake-ups, the transfer), each on
/// threads pinned to the plan's CPUs; `step` is called with the name of each probe as it
/// starts.
pub fn measure(plan: &LimitsPlan, step: &mut dyn FnMut(&str)) -> LimitsSamples {
    let cpus = &plan.memory.cpus;
    let mut out = LimitsSamples {
        cpus_used: cpus.iter().map(|&c| c as u32).collect(),
        syscall_name: wirebench_sys::probe::TRIVIAL_SYSCALL.into(),
        wakeup_mechanism: "futex".into(),
        ..LimitsSamples::default()
    };
    step("memory");
    let (memory, notes) = memory::measure(&plan.memory);
    out.memory = memory;
    out.notes = notes;
    let (Some(&first), Some(&last)) = (cpus.first(), cpus.last()) else {
        return out;
    };
    step("syscall");
    let (n, t) = (plan.probe_batches, plan.probe_batch_time);
    let syscall = std::thread::Builder::new()
        .name("wb-syscall".into())
        .spawn(move || {
            wirebench_sys::thread::pin_current_thread(first)?;
            Ok::<_, std::io::Error>(probes::syscall_batches(n, t))
        })
        .and_then(|h| {
            h.join()
                .unwrap_or_else(|_| Err(std::io::Error::other("panicked")))
        });
    match syscall {
        Ok((calls, batches)) => {
            out.syscall_calls_per_batch = calls;
            out.syscall = batches;
        }
        Err(e) => out.notes.push(failed("syscall", &e)),
    }
    step("wakeup");
    out.wakeup_cpus = vec![first as u32];
    match probes::wakeup_batches(first, first, n, t) {
        Ok(b) => out.wakeup_same_cpu = b,
        Err(e) => out.notes.push(failed("wakeup", &e)),
    }
    if last == first {
        out.notes.push(LimitsNote::SingleCpu);
    } else {
        out.wakeup_cpus.push(last as u32);
        match probes::wakeup_batches(first, last, n, t) {
            Ok(b) => out.wakeup_cross_cpu = b,
            Err(e) => out.notes.push(failed("wakeup", &e)),
        }
        step("transfer");
        out.transfer_ring_chunk_bytes = (transfer::RING_BYTES as u64, transfer::CHUNK_BYTES as u64);
        // Longer batches than the other probes': the state they show can last seconds.
        match transfer::transfer_batches(first, last, n, t * TRANSFER_BATCH_FACTOR) {
            Ok(b) => {
                out.transfer = b;
                out.transfer_cpus = vec![first as u32, last as u32];
            }
            Err(e) => out.notes.push(failed("transfer", &e)),
        }
    }
    out
}

/// The transfer probe's batches are this many times the other probes' batch time.
const TRANSFER_BATCH_FACTOR: u32 = 5;

fn failed(probe: &str, e: &std::io::Error) -> LimitsNote {
    LimitsNote::ProbeFailed {
        probe: probe.into(),
        error: e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes() {
        let v = geometric(MIN_BUFFER_BYTES, MAX_BUFFER_BYTES, 2);
        assert_eq!(v.len(), 14);
        assert_eq!(v[0], 32 * 1024);
        assert!(v.contains(&(1 << 20)));
        assert_eq!(*v.last().unwrap(), 256 << 20);
        let q = geometric(MIN_BUFFER_BYTES, MAX_BUFFER_BYTES, 4);
        let (k, m) = (1 << 10, 1 << 20);
        assert_eq!(
            q,
            [32 * k, 64 * k, 256 * k, m, 4 * m, 16 * m, 64 * m, 256 * m]
        );
        assert_eq!(geometric(4, 4, 2), vec![4]);
        assert_eq!(geometric(3, 10, 2), vec![3, 5, 10]);
    }

    #[test]
    fn a_small_plan_measures_everything() {
        let cpus = wirebench_sys::thread::current_thread_affinity().unwrap();
        let mut plan = LimitsPlan::standard(true, cpus.clone(), None);
        plan.memory.sizes = vec![64 * 1024];
        plan.memory.batches = 2;
        plan.probe_batches = 2;
        plan.probe_batch_time = Duration::from_millis(2);
        let mut steps = Vec::new();
        let s = measure(&plan, &mut |p| steps.push(p.to_string()));
        let two = cpus.len() > 1;
        let want: &[&str] = if two {
            &["memory", "syscall", "wakeup", "transfer"]
        } else {
            &["memory", "syscall", "wakeup"]
        };
        assert_eq!(steps, want);
        assert_eq!(s.transfer.len(), if two { 2 } else { 0 });
        assert_eq!(s.memory.len(), 1);
        assert_eq!(s.syscall.len(), 2);
        assert_eq!(s.wakeup_same_cpu.len(), 2);
        assert_eq!(s.wakeup_cross_cpu.len(), if cpus.len() > 1 { 2 } else { 0 });
        assert_eq!(s.cpus_used.len(), cpus.len());
    }
}
