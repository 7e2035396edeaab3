//! A system-wide sampling profiler on `perf_event_open(2)`: one sampling event per CPU of a
//! given list (pid = -1, cpu = N), its ring buffer mapped and drained by a thread, every
//! sample handed to a caller's [`SampleSink`].
//!
//! - The event is the software `cpu-clock` (an hrtimer per CPU, period in ns) in frequency
//!   mode, or hardware `cycles` when asked ([`EventChoice::PreferCycles`]) and a PMU exists;
//!   [`Sampler::event`] says which was opened.
//! - Samples carry IP, pid/tid, a `CLOCK_MONOTONIC` time stamp, the CPU, the period and the
//!   kernel and user call chains (bounded depth); nothing is excluded (user, kernel, idle).
//! - Records other than samples are counted: `PERF_RECORD_LOST` (the kernel's count of
//!   records it dropped on a full ring) into [`DrainStats::lost`], throttling into
//!   [`DrainStats::throttled`]; others are skipped.
//! - System-wide events need root, `CAP_PERFMON` (or `CAP_SYS_ADMIN`) or
//!   `kernel.perf_event_paranoid` <= 0: a refusal is [`PerfError::Permission`] with those
//!   facts.
//!
//! Usage: [`Sampler::open`] (before the measurement window: opening and mapping take a few
//! ms), [`Sampler::start`] at the window's start (enables every event, then starts the drain
//! thread), [`Running::stop`] at its end (disables, drains what is left, joins).
//!
//! The drain thread ([`DRAIN_THREAD_NAME`]) runs on one of the sampled CPUs like any thread;
//! its own cost shows in the samples, under its thread id, which the sink is told as the
//! thread starts ([`SampleSink::on_drain_thread`]). The sampling interrupt's own cost is in
//! no sample: it lengthens whatever it interrupted.

mod attr;
mod error;
pub mod record;
mod ring;

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

pub use attr::{online_cpu_list, parse_cpu_list};
pub use error::{
    effective_capabilities, max_sample_rate_hz, paranoid_level, system_wide_permitted, EventKind,
    PerfError,
};
pub use record::{Frame, Record, Sample};
pub use ring::MAX_DATA_PAGES;

/// `PERF_EVENT_IOC_ENABLE` (`_IO('$', 0)`).
const PERF_EVENT_IOC_ENABLE: libc::c_ulong = 0x2400;
/// `PERF_EVENT_IOC_DISABLE` (`_IO('$', 1)`).
const PERF_EVENT_IOC_DISABLE: libc::c_ulong = 0x2401;

/// The default sampling frequency per CPU, Hz.
pub const DEFAULT_FREQ_HZ: u32 = 4000;
/// The default bound on call-chain depth (frames).
pub const DEFAULT_MAX_STACK: u16 = 64;
/// The default data pages per CPU (256 KiB with 4 KiB pages: about 0.2 s of samples with
/// 30-frame chains at 4 kHz; the drain thread empties it every 25 ms or at a quarter full).
pub const DEFAULT_DATA_PAGES: usize = 64;
/// The name of the drain thread (`/proc/<pid>/task/<tid>/comm`).
pub const DRAIN_THREAD_NAME: &str = "wb-perf-drain";
/// How long the drain thread waits for a ring to fill before it drains anyway.
const DRAIN_PERIOD: Duration = Duration::from_millis(25);

/// Which event to sample on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventChoice {
    /// The software `cpu-clock` event.
    CpuClock,
    /// Hardware `cycles` if the CPU has a usable PMU here, else `cpu-clock`.
    PreferCycles,
}

/// A sampler's settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplerConfig {
    /// The CPUs to sample (one event each).
    pub cpus: Vec<u32>,
    /// Samples per second per CPU.
    pub freq_hz: u32,
    /// The event.
    pub event: EventChoice,
    /// The deepest call chain recorded, frames (the kernel's `perf_event_max_stack` caps it).
    pub max_stack: u16,
    /// Ring data pages per CPU (rounded up to a power of two, at most [`MAX_DATA_PAGES`]).
    pub data_pages: usize,
    /// Record the user-space part of the call chains too (the kernel walks the user stack
    /// at every sample taken in a process; the user-mode sample's own address is always
    /// there).
    pub user_callchain: bool,
}

impl SamplerConfig {
    /// `cpu-clock` at [`DEFAULT_FREQ_HZ`] on `cpus`, default depth and ring size.
    pub fn cpu_clock(cpus: Vec<u32>) -> Self {
        SamplerConfig {
            cpus,
            freq_hz: DEFAULT_FREQ_HZ,
            event: EventChoice::CpuClock,
            max_stack: DEFAULT_MAX_STACK,
            data_pages: DEFAULT_DATA_PAGES,
            user_callchain: true,
        }
    }
}

/// Counts of what the drain saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainStats {
    /// Samples handed to the sink.
    pub samples: u64,
    /// Records the kernel reported lost (`PERF_RECORD_LOST`, summed).
    pub lost: u64,
    /// Throttle records (the kernel lowered the event's rate for a tick).
    pub throttled: u64,
    /// Records of other types, skipped.
    pub other: u64,
    /// Records that could not be parsed (never expected), skipped.
    pub malformed: u64,
    /// Bytes read from the rings.
    pub bytes: u64,
}

/// Where samples go: called on the drain thread for every sample, in ring order per CPU.
pub trait SampleSink: Send {
    /// One sample; its call chain is only borrowed for the call.
    fn sample(&mut self, sample: &Sample<'_>);

    /// Called once on the drain thread before its first sample, with its kernel thread id
    /// (the `tid` of the samples that show the sampler's own work). A sink that wraps
    /// another passes it on.
    fn on_drain_thread(&mut self, _tid: u32) {}
}

impl<F: FnMut(&Sample<'_>) + Send> SampleSink for F {
    fn sample(&mut self, sample: &Sample<'_>) {
        self(sample);
    }
}

/// One event per CPU with its ring, opened and disabled.
pub struct Sampler {
    event: EventKind,
    freq_hz: u32,
    cpus: Vec<u32>,
    events: Vec<(OwnedFd, ring::Ring)>,
    buf: Vec<u8>,
    stats: DrainStats,
}

impl std::fmt::Debug for Sampler {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sampler")
            .field("event", &self.event)
            .field("freq_hz", &self.freq_hz)
            .field("cpus", &self.cpus)
            .finish_non_exhaustive()
    }
}

impl Sampler {
    /// Opens (disabled) one event per CPU of `config.cpus` and maps its ring.
    ///
    /// # Errors
    ///
    /// The typed reason of the first CPU that failed (every event opened so far is closed).
    pub fn open(config: &SamplerConfig) -> Result<Sampler, PerfError> {
        if config.cpus.is_empty() || config.freq_hz == 0 {
            return Err(PerfError::InvalidConfig);
        }
        let event = match config.event {
            EventChoice::CpuClock => EventKind::CpuClock,
            EventChoice::PreferCycles => {
                match open_all(config, EventKind::Cycles) {
                    Ok(events) => return Ok(Sampler::new(config, EventKind::Cycles, events)),
                    Err(PerfError::UnsupportedEvent { .. }) => {}
                    Err(e) => return Err(e),
                }
                EventKind::CpuClock
            }
        };
        let events = open_all(config, event)?;
        Ok(Sampler::new(config, event, events))
    }

    fn new(config: &SamplerConfig, event: EventKind, events: Vec<(OwnedFd, ring::Ring)>) -> Self {
        Sampler {
            event,
            freq_hz: config.freq_hz,
            cpus: config.cpus.clone(),
            events,
            buf: Vec::new(),
            stats: DrainStats::default(),
        }
    }

    /// The event opened.
    pub fn event(&self) -> EventKind {
        self.event
    }

    /// The sampling frequency asked for, Hz per CPU.
    pub fn freq_hz(&self) -> u32 {
        self.freq_hz
    }

    /// The CPUs sampled.
    pub fn cpus(&self) -> &[u32] {
        &self.cpus
    }

    fn ioctl(fd: &OwnedFd, request: libc::c_ulong) -> Result<(), PerfError> {
        // SAFETY: `fd` is an open perf event; ENABLE/DISABLE take no argument (0).
        let rc = unsafe { libc::ioctl(fd.as_raw_fd(), request as _, 0) };
        if rc == -1 {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return Err(PerfError::Ioctl { errno });
        }
        Ok(())
    }

    /// Enables every event (sampling starts), staggered: CPU i's event is enabled
    /// i × period / CPUs after the first, so the CPUs' sampling timers (each on a fixed grid
    /// from its enable instant) fire evenly spread over the period instead of in lockstep.
    /// In lockstep, one CPU's sample lands while another CPU is inside its own sample
    /// handler, still holding whatever lock it was interrupted with: the profile then
    /// shows spinning that the sampler itself caused.
    ///
    /// # Errors
    ///
    /// [`PerfError::Ioctl`].
    pub fn enable(&self) -> Result<(), PerfError> {
        let n = self.events.len().max(1) as u64;
        let step_ns = 1_000_000_000 / u64::from(self.freq_hz.max(1)) / n;
        let t0 = monotonic_ns();
        for (i, (fd, _)) in self.events.iter().enumerate() {
            let due = t0 + step_ns * i as u64;
            while monotonic_ns() < due {
                std::hint::spin_loop();
            }
            Sampler::ioctl(fd, PERF_EVENT_IOC_ENABLE)?;
        }
        Ok(())
    }

    /// Disables every event (sampling stops; what is in the rings stays to be drained).
    ///
    /// # Errors
    ///
    /// [`PerfError::Ioctl`].
    pub fn disable(&self) -> Result<(), PerfError> {
        self.events
            .iter()
            .try_for_each(|(fd, _)| Sampler::ioctl(fd, PERF_EVENT_IOC_DISABLE))
    }

    /// Reads every ring once and hands each sample to `sink`.
    pub fn drain(&mut self, sink: &mut dyn SampleSink) {
        for (_, ring) in &mut self.events {
            self.buf.clear();
            let n = ring.read_available(&mut self.buf);
            self.stats.bytes += n as u64;
            parse_records(&self.buf, sink, &mut self.stats);
        }
    }

    /// What the drain has seen so far.
    pub fn stats(&self) -> DrainStats {
        self.stats
    }

    /// Waits up to `timeout` for a ring to pass its wake-up mark.
    fn wait(&self, timeout: Duration) {
        let mut fds: Vec<libc::pollfd> = self
            .events
            .iter()
            .map(|(fd, _)| libc::pollfd {
                fd: fd.as_fd().as_raw_fd(),
                events: libc::POLLIN,
                revents: 0,
            })
            .collect();
        let ms = libc::c_int::try_from(timeout.as_millis()).unwrap_or(libc::c_int::MAX);
        // SAFETY: `fds` is a live, writable array of `fds.len()` pollfd structs.
        unsafe {
            libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, ms);
        }
    }

    /// Enables the events and starts the drain thread, which hands samples to `sink` until
    /// [`Running::stop`]. Returns with sampling on.
    ///
    /// # Errors
    ///
    /// [`PerfError::Ioctl`] if the events cannot be enabled, [`PerfError::DrainThread`] if
    /// the thread cannot be spawned (the events are then disabled again).
    pub fn start<S: SampleSink + 'static>(self, sink: S) -> Result<Running<S>, PerfError> {
        // Duplicates of the events' descriptors stay with the caller, so that it can disable
        // the events at once (`Running::disable`) while the drain thread owns the rings.
        let control = self
            .events
            .iter()
            .map(|(fd, _)| fd.try_clone())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| PerfError::TooManyFiles {
                errno: e.raw_os_error().unwrap_or(0),
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let started_ns = monotonic_ns();
        self.enable()?;
        let flag = Arc::clone(&stop);
        let spawned = std::thread::Builder::new()
            .name(DRAIN_THREAD_NAME.into())
            .spawn(move || drain_loop(self, sink, &flag));
        match spawned {
            Ok(handle) => Ok(Running {
                handle,
                stop,
                control,
                started_ns,
                stopped_ns: None,
            }),
            Err(_) => {
                for fd in &control {
                    let _ = Sampler::ioctl(fd, PERF_EVENT_IOC_DISABLE);
                }
                Err(PerfError::DrainThread)
            }
        }
    }
}

/// Opens `event` on every CPU of the config.
fn open_all(
    config: &SamplerConfig,
    event: EventKind,
) -> Result<Vec<(OwnedFd, ring::Ring)>, PerfError> {
    let data_pages = config
        .data_pages
        .clamp(1, MAX_DATA_PAGES)
        .next_power_of_two();
    let wakeup_bytes = u32::try_from(data_pages * ring::page_size() / 4).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(config.cpus.len());
    for &cpu in &config.cpus {
        let fd = attr::open_event(&attr::OpenParams {
            event,
            cpu,
            freq_hz: config.freq_hz,
            max_stack: config.max_stack,
            wakeup_bytes,
            user_callchain: config.user_callchain,
        })?;
        let ring = ring::Ring::map(fd.as_fd(), data_pages)?;
        debug_assert!(ring.data_size() > 0);
        out.push((fd, ring));
    }
    Ok(out)
}

/// Splits a span of ring bytes into records and dispatches them.
fn parse_records(mut bytes: &[u8], sink: &mut dyn SampleSink, stats: &mut DrainStats) {
    while let Some((_, _, size)) = record::header(bytes) {
        let size = usize::from(size);
        if size < record::HEADER_BYTES || size > bytes.len() {
            stats.malformed += 1;
            return;
        }
        match record::parse(&bytes[..size]) {
            Record::Sample(s) => {
                stats.samples += 1;
                sink.sample(&s);
            }
            Record::Lost { lost } => stats.lost += lost,
            Record::Throttle => stats.throttled += 1,
            Record::Other { .. } => stats.other += 1,
            Record::Malformed => stats.malformed += 1,
        }
        bytes = &bytes[size..];
    }
}

/// The drain thread's body: drain on every wake-up or period until told to stop (the events
/// are disabled by then), then drain what is left and hand everything back.
fn drain_loop<S: SampleSink>(mut sampler: Sampler, mut sink: S, stop: &AtomicBool) -> (Sampler, S) {
    sink.on_drain_thread(u32::try_from(crate::thread::current_thread_id()).unwrap_or(0));
    while !stop.load(Ordering::Acquire) {
        sampler.wait(DRAIN_PERIOD);
        sampler.drain(&mut sink);
    }
    sampler.drain(&mut sink);
    (sampler, sink)
}

/// A sampler whose events are enabled, drained by its thread.
#[derive(Debug)]
pub struct Running<S> {
    handle: JoinHandle<(Sampler, S)>,
    stop: Arc<AtomicBool>,
    /// Duplicates of the events' descriptors, to disable them from the caller's thread.
    control: Vec<OwnedFd>,
    started_ns: u64,
    stopped_ns: Option<u64>,
}

/// What a stopped sampler hands back.
#[derive(Debug)]
pub struct Finished<S> {
    /// The sink, with every sample.
    pub sink: S,
    /// What was recorded, and when.
    pub recording: Recording,
}

/// The facts of one recording.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recording {
    /// The event sampled.
    pub event: EventKind,
    /// The frequency asked for, Hz per CPU.
    pub freq_hz: u32,
    /// The CPUs sampled.
    pub cpus: Vec<u32>,
    /// What the drain saw (samples, lost records ...).
    pub stats: DrainStats,
    /// `CLOCK_MONOTONIC` just before the events were enabled, ns.
    pub started_ns: u64,
    /// `CLOCK_MONOTONIC` just after they were disabled, ns.
    pub stopped_ns: u64,
}

impl Recording {
    /// From enabling to disabling, ns.
    pub fn window_ns(&self) -> u64 {
        self.stopped_ns.saturating_sub(self.started_ns)
    }
}

impl<S> Running<S> {
    /// `CLOCK_MONOTONIC` just before the events were enabled, ns.
    pub fn started_ns(&self) -> u64 {
        self.started_ns
    }

    /// Disables the events now (sampling stops; the drain thread keeps running until
    /// [`Running::stop`]). Idempotent; cheap enough for a measurement window's edge.
    ///
    /// # Errors
    ///
    /// [`PerfError::Ioctl`] if an event could not be disabled.
    pub fn disable(&mut self) -> Result<(), PerfError> {
        if self.stopped_ns.is_some() {
            return Ok(());
        }
        let res = self
            .control
            .iter()
            .try_for_each(|fd| Sampler::ioctl(fd, PERF_EVENT_IOC_DISABLE));
        self.stopped_ns = Some(monotonic_ns());
        res
    }

    /// Stops sampling (disables the events unless [`Running::disable`] did), lets the drain
    /// thread read what is left, and returns the sink.
    ///
    /// # Errors
    ///
    /// [`PerfError::DrainThread`] if the drain thread panicked (the sink is lost),
    /// [`PerfError::Ioctl`] if the events could not be disabled.
    pub fn stop(mut self) -> Result<Finished<S>, PerfError> {
        let disabled = self.disable();
        self.stop.store(true, Ordering::Release);
        let (sampler, sink) = self.handle.join().map_err(|_| PerfError::DrainThread)?;
        disabled?;
        Ok(Finished {
            sink,
            recording: Recording {
                event: sampler.event,
                freq_hz: sampler.freq_hz,
                cpus: sampler.cpus.clone(),
                stats: sampler.stats,
                started_ns: self.started_ns,
                stopped_ns: self.stopped_ns.unwrap_or_else(monotonic_ns),
            },
        })
    }
}

/// `CLOCK_MONOTONIC` now, ns (the clock of the samples' time stamps and of
/// `std::time::Instant` on Linux).
pub fn monotonic_ns() -> u64 {
    // SAFETY: `timespec` is plain integers; all-zero is a valid value.
    let mut ts: libc::timespec = unsafe { std::mem::zeroed() };
    // SAFETY: `ts` is a valid, writable timespec; CLOCK_MONOTONIC always exists on Linux.
    unsafe {
        libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts);
    }
    let s = u64::try_from(ts.tv_sec).unwrap_or(0);
    let ns = u64::try_from(ts.tv_nsec).unwrap_or(0);
    s.saturating_mul(1_000_000_000).saturating_add(ns)
}

#[cfg(test)]
mod tests {
    use super::record::tests::sample_bytes;
    use super::*;

    #[test]
    fn record_stream_dispatch_counts_every_type() {
        let mut bytes = sample_bytes(1, 0x10, 1, 0, &[record::PERF_CONTEXT_KERNEL, 0x10]);
        let mut lost = Vec::new();
        lost.extend_from_slice(&record::PERF_RECORD_LOST.to_ne_bytes());
        lost.extend_from_slice(&0u16.to_ne_bytes());
        lost.extend_from_slice(&24u16.to_ne_bytes());
        lost.extend_from_slice(&0u64.to_ne_bytes());
        lost.extend_from_slice(&5u64.to_ne_bytes());
        bytes.extend_from_slice(&lost);
        bytes.extend(sample_bytes(
            2,
            0x20,
            2,
            1,
            &[record::PERF_CONTEXT_USER, 0x20],
        ));
        let mut seen = Vec::new();
        let mut stats = DrainStats::default();
        parse_records(
            &bytes,
            &mut |s: &Sample<'_>| seen.push((s.pid, s.cpu)),
            &mut stats,
        );
        assert_eq!(seen, vec![(1, 0), (2, 1)]);
        assert_eq!((stats.samples, stats.lost, stats.malformed), (2, 5, 0));
        // A record claiming more bytes than there are stops the span, counted.
        let mut stats = DrainStats::default();
        parse_records(
            &bytes[..bytes.len() - 8],
            &mut |_: &Sample<'_>| {},
            &mut stats,
        );
        assert_eq!((stats.samples, stats.lost, stats.malformed), (1, 5, 1));
    }
}
