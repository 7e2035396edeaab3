//! The sampler-cost probe of `wirebench limits`: a fixed CPU-bound work loop on one pinned
//! CPU, run alone and with a profile sampling that CPU, in interleaved pairs (which runs
//! first alternates). The profile is the one `--profile` takes ([`Profiler`], with its
//! symbols and classification); its drain thread is started from the pinned thread, so it
//! runs on the same CPU and its work is part of the cost. Like an engine, this counts and
//! times ([`SamplerCostPair`]); the figures come from `wirebench-analysis`.
//!
//! Each run is measured in this process' CPU time (`getrusage`: the scheduler's exact
//! run time of all its threads, which on kernels without `CONFIG_IRQ_TIME_ACCOUNTING`
//! includes the interrupts taken while they ran), not in wall time: another process that
//! shares the CPU lengthens a run's wall time by however long it ran, and the sampled run,
//! with two threads on the CPU, won a larger share of it than the run alone (under three
//! concurrent builds, every pair ran *faster* sampled by wall time). The sampling
//! interrupts, the drain thread and the work loop's own slowdown are all CPU time of this
//! process; the other process' time is not.

use std::time::{Duration, Instant};

use wirebench_model::limits::{SamplerCostPair, SamplerCostSamples};
use wirebench_model::profile::ProfileUnavailable;

use crate::{ProfileConfig, Profiler};

/// Why the probe gave no pairs.
#[derive(Debug, Clone, PartialEq)]
pub enum CostProbeError {
    /// The profile could not be taken.
    Unavailable(ProfileUnavailable),
    /// The probe's thread could not be pinned to its CPU.
    Pin {
        /// The CPU.
        cpu: u32,
        /// The system's words.
        error: String,
    },
    /// The process' CPU time could not be read.
    CpuTime(String),
    /// The probe's thread panicked.
    Panicked,
}

/// The probe's sampling frequency, Hz: high, so that the cost stands well above the noise of
/// the loop's time (lowered to `kernel.perf_event_max_sample_rate` when that is lower).
pub const PROBE_FREQ_HZ: u32 = 4000;

/// Bytes of the work loop's buffer (in the L2 cache of any CPU this runs on).
const WORK_BYTES: usize = 64 * 1024;

/// One pass of the work loop over `buf`: integer arithmetic on every 8-byte word.
fn pass(buf: &[u64], acc: u64) -> u64 {
    buf.iter().fold(acc, |a, &w| {
        a.rotate_left(5).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ w
    })
}

/// Runs `passes` passes; the wall time they took, ns (for the calibration).
fn timed(buf: &[u64], passes: u64) -> u64 {
    let t0 = Instant::now();
    work(buf, passes);
    t0.elapsed().as_nanos() as u64
}

/// Runs `passes` passes.
fn work(buf: &[u64], passes: u64) {
    let mut acc = 0u64;
    for _ in 0..passes {
        acc = pass(std::hint::black_box(buf), acc);
    }
    std::hint::black_box(acc);
}

/// This process' CPU time so far, all threads, ns.
fn process_cpu_ns() -> Result<u64, CostProbeError> {
    wirebench_sys::thread::process_cpu_times()
        .map(|t| t.user_ns + t.system_ns)
        .map_err(|e| CostProbeError::CpuTime(e.to_string()))
}

/// Runs `passes` passes; this process' CPU time meanwhile, ns.
fn cpu_timed(buf: &[u64], passes: u64) -> Result<u64, CostProbeError> {
    let before = process_cpu_ns()?;
    work(buf, passes);
    Ok(process_cpu_ns()?.saturating_sub(before))
}

/// The sampled half of a pair: the work loop with a profile of `cpu` on; this process' CPU
/// time meanwhile and the samples taken (and lost).
fn sampled(buf: &[u64], passes: u64, cpu: u32, freq_hz: u32) -> Result<(u64, u64), CostProbeError> {
    let profiler = Profiler::open(&ProfileConfig::new(vec![cpu], freq_hz))
        .map_err(CostProbeError::Unavailable)?;
    let running = profiler.start().map_err(CostProbeError::Unavailable)?;
    let ns = cpu_timed(buf, passes)?;
    let report = running.stop().map_err(CostProbeError::Unavailable)?;
    Ok((ns, report.samples + report.lost_samples))
}

/// Measures `pairs` pairs of the work loop (each run about `work` long) alone and sampled at
/// `freq_hz` (at most `kernel.perf_event_max_sample_rate`), on a thread pinned to `cpu`, in
/// this process' CPU time.
///
/// # Errors
///
/// Why the thread could not be pinned, the profile could not be taken (perf events not
/// permitted, ...) or the CPU time could not be read.
pub fn probe(
    cpu: u32,
    freq_hz: u32,
    pairs: u32,
    work: Duration,
) -> Result<SamplerCostSamples, CostProbeError> {
    let freq_hz = wirebench_sys::perf::max_sample_rate_hz()
        .map_or(freq_hz, |max| freq_hz.min(max))
        .max(1);
    // Fails early, before the calibration, when perf events cannot be opened.
    Profiler::open(&ProfileConfig::new(vec![cpu], freq_hz)).map_err(CostProbeError::Unavailable)?;
    std::thread::scope(|s| {
        s.spawn(|| {
            wirebench_sys::thread::pin_current_thread(cpu as usize).map_err(|e| {
                CostProbeError::Pin {
                    cpu,
                    error: e.to_string(),
                }
            })?;
            let buf: Vec<u64> = (0..(WORK_BYTES / 8) as u64).collect();
            // Calibration: passes for `work`, from a run of about a tenth of it.
            let mut passes = 16u64;
            while timed(&buf, passes) < work.as_nanos() as u64 / 10 {
                passes *= 2;
            }
            let per_pass = timed(&buf, passes) as f64 / passes as f64;
            let passes = ((work.as_nanos() as f64 / per_pass.max(1.0)) as u64).max(1);
            let mut out = Vec::with_capacity(pairs as usize);
            for i in 0..pairs {
                let (alone_cpu_ns, (sampled_cpu_ns, samples)) = if i % 2 == 0 {
                    let a = cpu_timed(&buf, passes)?;
                    (a, sampled(&buf, passes, cpu, freq_hz)?)
                } else {
                    let s = sampled(&buf, passes, cpu, freq_hz)?;
                    (cpu_timed(&buf, passes)?, s)
                };
                out.push(SamplerCostPair {
                    alone_cpu_ns,
                    sampled_cpu_ns,
                    samples,
                });
            }
            Ok(SamplerCostSamples {
                cpu,
                freq_hz,
                pairs: out,
                attempt: 1,
            })
        })
        .join()
        .unwrap_or(Err(CostProbeError::Panicked))
    })
}
