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
//!   [`ProfileReport`].
//!
//! [`Profiler::open`] before the window (opens the events, loads the symbols),
//! [`Profiler::start`] at its start, [`RunningProfile::stop`] at its end. Where perf events
//! are not permitted or not supported, the typed [`ProfileUnavailable`] says why.

pub mod aggregate;
pub mod classify;
pub mod kallsyms;
pub mod usersyms;

pub use wirebench_model::profile::ProfileCategory;
use wirebench_model::profile::{ProfileReport, ProfileUnavailable};
use wirebench_sys::perf::{EventChoice, PerfError, Running, Sampler, SamplerConfig};

use crate::aggregate::{Aggregator, Symbols};

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
        let sampler = Sampler::open(&SamplerConfig {
            freq_hz: config.freq_hz,
            event: if config.prefer_cycles {
                EventChoice::PreferCycles
            } else {
                EventChoice::CpuClock
            },
            ..SamplerConfig::cpu_clock(config.cpus.clone())
        })
        .map_err(|e| unavailable(&e))?;
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
        let running = self
            .sampler
            .start(self.aggregator)
            .map_err(|e| unavailable(&e))?;
        Ok(RunningProfile { running })
    }
}

/// A profile being recorded.
#[derive(Debug)]
pub struct RunningProfile {
    running: Running<Aggregator>,
}

impl RunningProfile {
    /// Stops sampling and builds the report.
    ///
    /// # Errors
    ///
    /// If the drain thread failed or the events could not be disabled.
    pub fn stop(self) -> Result<ProfileReport, ProfileUnavailable> {
        let finished = self.running.stop().map_err(|e| unavailable(&e))?;
        Ok(finished.sink.into_report(&finished.recording))
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
