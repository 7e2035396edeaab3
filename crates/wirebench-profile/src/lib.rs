//! wirebench's CPU profile: where the CPUs a test uses spent its measurement window.
//!
//! The sampler itself (perf events, ring buffers) is `wirebench_sys::perf`; this crate adds
//! what has no `unsafe` in it:
//!
//! - [`kallsyms`]: kernel symbols from `/proc/kallsyms`;
//! - [`usersyms`]: user symbols of wirebench processes (the binary's ELF symbol table and
//!   each process' load bias);
//! - [`classify`]: the one classification table (symbol patterns and call-chain context
//!   rules) from a sample's frames to a [`ProfileCategory`], documented in docs/PROFILE.md;
//! - [`aggregate`]: the sink that classifies samples as they arrive and builds the bounded
//!   [`ProfileReport`];
//! - [`cost`]: the sampler-cost probe of `wirebench limits`;
//! - [`tick`]: the kernel's tick rate, which a sampling rate must not fall in step with.
//!
//! [`Profiler::open`] before the window (opens the events, loads the symbols),
//! [`Profiler::start`] at its start, [`RunningProfile::stop`] at its end. Where perf events
//! are not permitted or not supported, the typed [`ProfileUnavailable`] says why.

pub mod aggregate;
pub mod classify;
pub mod cost;
pub mod kallsyms;
pub mod tick;
pub mod usersyms;

use std::time::Instant;

pub use wirebench_model::profile::ProfileCategory;
use wirebench_model::profile::{ProfileReport, ProfileUnavailable};
use wirebench_stats::cpu::{parse_proc_stat, system_utilization, ProcStat};
use wirebench_sys::perf::{EventChoice, PerfError, Running, Sampler, SamplerConfig};

use crate::aggregate::{Aggregator, Symbols};

/// The deepest kernel call chain a profile records, frames (the sample's own address and
/// its callers). The classification decides from the sample's own symbol or, for the few
/// ambiguous ones, from the nearest callers: under a loopback transfer, chains cut to 6
/// frames classified every kernel sample as the whole chain (up to 127 frames) did
/// (`tests/ground_truth.rs`); 16 leaves a margin. Deeper frames cost the kernel's unwinder
/// and the ring at every sample and are not needed. User call chains are not recorded at
/// all: a user-mode sample is classified by its own address.
pub const CALLCHAIN_FRAMES: u16 = 16;

/// What to profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileConfig {
    /// The CPUs to sample.
    pub cpus: Vec<u32>,
    /// Samples per second per CPU.
    pub freq_hz: u32,
    /// Try the hardware `cycles` event first (falls back to `cpu-clock` without a PMU).
    pub prefer_cycles: bool,
}

impl ProfileConfig {
    /// `cpu-clock` at `freq_hz` on `cpus`.
    pub fn new(cpus: Vec<u32>, freq_hz: u32) -> Self {
        ProfileConfig {
            cpus,
            freq_hz,
            prefer_cycles: false,
        }
    }

    /// The sampler's settings of a profile: the event, the frequency, kernel call chains of
    /// at most [`CALLCHAIN_FRAMES`] and no user call chains.
    pub fn sampler_config(&self) -> SamplerConfig {
        SamplerConfig {
            freq_hz: self.freq_hz,
            event: if self.prefer_cycles {
                EventChoice::PreferCycles
            } else {
                EventChoice::CpuClock
            },
            max_stack: CALLCHAIN_FRAMES,
            user_callchain: false,
            ..SamplerConfig::cpu_clock(self.cpus.clone())
        }
    }
}

/// A profiler with its events open (disabled) and its symbols loaded.
#[derive(Debug)]
pub struct Profiler {
    sampler: Sampler,
    aggregator: Aggregator,
}

impl Profiler {
    /// Opens one event per CPU and loads the symbols.
    ///
    /// # Errors
    ///
    /// Why the events could not be opened.
    pub fn open(config: &ProfileConfig) -> Result<Profiler, ProfileUnavailable> {
        let sampler = Sampler::open(&config.sampler_config()).map_err(|e| unavailable(&e))?;
        let aggregator = Aggregator::new(Symbols::load(), sampler.cpus());
        Ok(Profiler {
            sampler,
            aggregator,
        })
    }

    /// Starts sampling.
    ///
    /// # Errors
    ///
    /// Why the events could not be enabled.
    pub fn start(self) -> Result<RunningProfile, ProfileUnavailable> {
        let started = proc_stat();
        let running = self
            .sampler
            .start(self.aggregator)
            .map_err(|e| unavailable(&e))?;
        Ok(RunningProfile {
            running,
            proc_stat: (started, None),
            disabled: false,
        })
    }
}

/// A profile being recorded.
#[derive(Debug)]
pub struct RunningProfile {
    running: Running<Aggregator>,
    /// `/proc/stat` just before sampling started, and just after it stopped: which share of
    /// each CPU's window was idle, to tell the unsampled time that was idle from the time
    /// that was busy.
    proc_stat: (Option<ProcStatAt>, Option<ProcStatAt>),
    /// Whether [`RunningProfile::disable`] ran.
    disabled: bool,
}

impl RunningProfile {
    /// Stops sampling now (the report is built by [`RunningProfile::stop`]).
    ///
    /// # Errors
    ///
    /// If the events could not be disabled.
    pub fn disable(&mut self) -> Result<(), ProfileUnavailable> {
        self.running.disable().map_err(|e| unavailable(&e))?;
        self.proc_stat.1 = proc_stat();
        self.disabled = true;
        Ok(())
    }

    /// Stops sampling (if [`RunningProfile::disable`] did not) and builds the report.
    ///
    /// # Errors
    ///
    /// If the drain thread failed or the events could not be disabled.
    pub fn stop(mut self) -> Result<ProfileReport, ProfileUnavailable> {
        if !self.disabled {
            self.disable()?;
        }
        let idle = match &self.proc_stat {
            (Some((before, t0)), Some((after, t1))) => {
                let window_ns =
                    u64::try_from(t1.duration_since(*t0).as_nanos()).unwrap_or(u64::MAX);
                system_utilization(before, after, window_ns).ok().map(|u| {
                    u.per_cpu
                        .iter()
                        .map(|(cpu, b)| (*cpu, b.idle_pct))
                        .collect::<Vec<_>>()
                })
            }
            _ => None,
        };
        let finished = self.running.stop().map_err(|e| unavailable(&e))?;
        Ok(finished
            .sink
            .into_report(&finished.recording, idle.as_deref()))
    }
}

/// A `/proc/stat` snapshot and when it was read.
type ProcStatAt = (ProcStat, Instant);

/// `/proc/stat` now, if it can be read and parsed, and when.
fn proc_stat() -> Option<ProcStatAt> {
    let at = Instant::now();
    wirebench_sys::host::read_proc_stat()
        .ok()
        .and_then(|t| parse_proc_stat(&t).ok())
        .map(|s| (s, at))
}

/// A profile following a measurement window: prepared before it (events opened, symbols
/// loaded), started as it opens, stopped as it closes, reported after the run.
#[derive(Debug)]
pub enum WindowProfile {
    /// Ready to start.
    Ready(Box<Profiler>),
    /// Sampling.
    Running(Box<RunningProfile>),
    /// Sampling stopped at the window's close; the report is built at the end.
    Closed(Box<RunningProfile>),
    /// No profile, and why.
    Unavailable(ProfileUnavailable),
}

impl WindowProfile {
    /// Opens a profiler of `freq_hz` on the CPUs an end uses: `pinned` alone if its data
    /// threads are pinned there, else every CPU this thread may run on.
    pub fn prepare(freq_hz: u32, pinned: Option<usize>) -> WindowProfile {
        let cpus = match pinned {
            Some(cpu) => vec![cpu as u32],
            None => end_cpus(),
        };
        match Profiler::open(&ProfileConfig::new(cpus, freq_hz)) {
            Ok(p) => WindowProfile::Ready(Box::new(p)),
            Err(e) => WindowProfile::Unavailable(e),
        }
    }

    /// The window opened: start sampling.
    pub fn opened(&mut self) {
        let state = std::mem::replace(
            self,
            WindowProfile::Unavailable(ProfileUnavailable::NoWindow),
        );
        *self = match state {
            WindowProfile::Ready(p) => match p.start() {
                Ok(r) => WindowProfile::Running(Box::new(r)),
                Err(e) => WindowProfile::Unavailable(e),
            },
            other => other,
        };
    }

    /// The window is closing: stop sampling (cheap; the report comes from
    /// [`WindowProfile::finish`]).
    pub fn closed(&mut self) {
        let state = std::mem::replace(
            self,
            WindowProfile::Unavailable(ProfileUnavailable::NoWindow),
        );
        *self = match state {
            WindowProfile::Running(mut r) => match r.disable() {
                Ok(()) => WindowProfile::Closed(r),
                Err(e) => WindowProfile::Unavailable(e),
            },
            other => other,
        };
    }

    /// The report, or why there is none (a window that never opened is
    /// [`ProfileUnavailable::NoWindow`]).
    ///
    /// # Errors
    ///
    /// Why there is no profile.
    pub fn finish(self) -> Result<ProfileReport, ProfileUnavailable> {
        match self {
            WindowProfile::Running(r) | WindowProfile::Closed(r) => r.stop(),
            WindowProfile::Ready(_) => Err(ProfileUnavailable::NoWindow),
            WindowProfile::Unavailable(e) => Err(e),
        }
    }
}

/// The CPUs this thread may run on (its affinity), else every online CPU.
fn end_cpus() -> Vec<u32> {
    let mine: Vec<u32> = wirebench_sys::thread::current_thread_affinity()
        .unwrap_or_default()
        .into_iter()
        .filter_map(|c| u32::try_from(c).ok())
        .collect();
    if mine.is_empty() {
        wirebench_sys::perf::online_cpu_list().unwrap_or_else(|_| vec![0])
    } else {
        mine
    }
}

/// The model's reason for a sampler error.
pub fn unavailable(e: &PerfError) -> ProfileUnavailable {
    match e {
        PerfError::Permission {
            paranoid,
            cap_perfmon,
            cap_sys_admin,
            ..
        } => ProfileUnavailable::NotPermitted {
            paranoid: *paranoid,
            cap_perfmon: *cap_perfmon,
            cap_sys_admin: *cap_sys_admin,
        },
        PerfError::UnsupportedEvent { .. } => ProfileUnavailable::UnsupportedEvent,
        PerfError::FrequencyTooHigh { max_hz, .. } => {
            ProfileUnavailable::FrequencyTooHigh { max_hz: *max_hz }
        }
        PerfError::TooManyFiles { .. } => ProfileUnavailable::TooManyFiles,
        other => ProfileUnavailable::Failed {
            detail: other.to_string(),
        },
    }
}
