//! The analysis of `wirebench limits`: the probes' batches turned into figures, the loopback
//! ceiling read from its stream test, and a stream result's [`PhysicalContext`].
//!
//! # Figures
//!
//! Every figure is the [`Spread`] (min, median, mean, max over the batches; the median is
//! the figure) of one value per batch:
//! - bandwidth: `count / elapsed`, bytes per second (a copy batch counts the bytes copied,
//!   read once and written once; a checksum batch the bytes summed);
//! - system call: `elapsed / calls`, ns per call;
//! - wake-up: `elapsed / (2 × round trips)`, ns one way (half a round trip).
//!
//! # Physical context of a stream result
//!
//! With the limits of this boot, a completed stream result is compared with this machine's
//! copy bandwidth: payload = the receivers' bytes per second (each direction's
//! `receiver_throughput_bps / 8`, the mean over the completed runs); copies = per direction,
//! one for each end *on this machine* whose path copies the payload (send: `copy`, `uring`,
//! and `zerocopy`/`uring_zc` when most of their sends completed as copies, as over loopback;
//! receive: `copy`, `uring`, and `zerocopy` when it copied more bytes than it mapped; an end
//! that used several paths counts as copying if any of them does), weighted by the
//! directions' payloads. The client is on this machine; the server too when it is embedded
//! or shares the client's boot. The copy bandwidth is the limits' figure at the buffer size
//! nearest the message size (log scale): one thread for one flow in one direction, all
//! threads otherwise.

use wirebench_model::limits::{
    Batch, CrossCpuTransfer, Implausible, LimitsLoad, LimitsNote, LimitsResult, LimitsSamples,
    LoopbackCeiling, MemoryFigure, MemoryRow, MemorySamples, PhysicalContext, SamplerCost,
    SamplerCostSamples, SyscallCost, WakeupLatency, LIMITS_SCHEMA_VERSION,
};
use wirebench_model::profile::{ExpectedProfileCost, ProfileCost};
use wirebench_model::result::{iso8601_utc, RunResult, RunStatus};
use wirebench_model::side::{Environment, HostRole, ZeroCopyStats};
use wirebench_model::spec::{Direction, FlowDir, RecvPath, SendPath, WorkloadSpec};
use wirebench_stats::summary::{spread, Spread};

use super::{receiver_of, sender_of};

/// The spread of `per_batch(batch)` over the batches with time and count.
fn spread_of(batches: &[Batch], per_batch: impl Fn(&Batch) -> f64) -> Option<Spread> {
    let v: Vec<f64> = batches
        .iter()
        .filter(|b| b.elapsed_ns > 0 && b.count > 0)
        .map(per_batch)
        .collect();
    spread(&v)
}

/// Units per second of each batch.
pub fn per_second(batches: &[Batch]) -> Option<Spread> {
    spread_of(batches, |b| b.count as f64 / (b.elapsed_ns as f64 / 1e9))
}

/// Nanoseconds per unit of each batch, each unit being `parts` events.
pub fn ns_per(batches: &[Batch], parts: u64) -> Option<Spread> {
    spread_of(batches, |b| {
        b.elapsed_ns as f64 / (b.count as f64 * parts.max(1) as f64)
    })
}

/// The bandwidth row of one buffer size.
pub fn memory_row(m: &MemorySamples) -> MemoryRow {
    MemoryRow {
        buffer_bytes: m.buffer_bytes,
        copy_one_thread_bytes_per_s: per_second(&m.copy_one),
        copy_unlucky_bytes_per_s: per_second(&m.copy_unlucky),
        copy_all_threads_bytes_per_s: per_second(&m.copy_all),
        checksum_bytes_per_s: per_second(&m.checksum),
    }
}

/// The system call cost, if it was measured.
pub fn syscall_cost(s: &LimitsSamples) -> Option<SyscallCost> {
    Some(SyscallCost {
        syscall: s.syscall_name.clone(),
        syscall_ns: ns_per(&s.syscall, 1)?,
        calls_per_batch: s.syscall_calls_per_batch,
    })
}

/// The wake-up latency, if the same-CPU ping-pong was measured.
pub fn wakeup(s: &LimitsSamples) -> Option<WakeupLatency> {
    Some(WakeupLatency {
        mechanism: s.wakeup_mechanism.clone(),
        wakeup_same_cpu_ns: ns_per(&s.wakeup_same_cpu, 2)?,
        wakeup_cross_cpu_ns: ns_per(&s.wakeup_cross_cpu, 2),
        cpus: s.wakeup_cpus.clone(),
    })
}

/// The cross-CPU transfer, if it was measured.
pub fn transfer(s: &LimitsSamples) -> Option<CrossCpuTransfer> {
    let (&from_cpu, &to_cpu) = (s.transfer_cpus.first()?, s.transfer_cpus.get(1)?);
    Some(CrossCpuTransfer {
        from_cpu,
        to_cpu,
        ring_bytes: s.transfer_ring_chunk_bytes.0,
        chunk_bytes: s.transfer_ring_chunk_bytes.1,
        bytes_per_s: per_second(&s.transfer)?,
    })
}

/// The loopback ceiling from its stream test's result, or why there is none.
///
/// # Errors
///
/// The test did not complete (its error, or its status), or has no stream figures.
pub fn loopback_ceiling(r: &RunResult) -> Result<LoopbackCeiling, String> {
    if r.status != RunStatus::Completed {
        return Err(r.error.as_ref().map_or_else(
            || format!("the stream test ended {:?}", r.status).to_lowercase(),
            |e| e.message.clone(),
        ));
    }
    let spec = r.spec.as_ref().ok_or("the stream test has no spec")?;
    let WorkloadSpec::Stream(st) = &spec.workload else {
        return Err("not a stream test".into());
    };
    let summary = r
        .runs
        .last()
        .and_then(|run| run.summary.as_ref())
        .ok_or("the stream test has no summary")?;
    let stream = summary
        .stream()
        .ok_or("the stream test has no stream figures")?;
    let d = stream
        .directions
        .first()
        .ok_or("the stream test has no direction")?;
    Ok(LoopbackCeiling {
        throughput_bps: d.receiver_throughput_bps,
        congestion: summary.congestion.first().cloned(),
        flows: spec.common.flows,
        msg_bytes: st.send_size_bytes,
        duration_ms: spec.common.duration_ms,
        warmup_ms: spec.common.warmup_ms,
        retransmits: d.retransmits,
    })
}

/// When and how a limits measurement ran.
#[derive(Debug, Clone)]
pub struct LimitsRun<'a> {
    /// Start, Unix milliseconds.
    pub started_unix_ms: u64,
    /// Length, milliseconds.
    pub duration_ms: u64,
    /// `--quick`.
    pub quick: bool,
    /// The 1-minute load average at the start.
    pub load_average_1m: Option<f64>,
    /// How busy other work kept the machine meanwhile.
    pub load: Option<LimitsLoad>,
    /// Memory figures that stayed implausible after they were measured again.
    pub implausible: Vec<Implausible>,
    /// The host (boot id, CPU model, kernel, CPUs).
    pub env: &'a Environment,
    /// The sampler-cost probe's pairs, or why it did not run.
    pub sampler: Result<SamplerCostSamples, String>,
}

/// The [`LimitsResult`] of a measurement: its probes' figures and the loopback ceiling (or
/// the reason it has none, as a note).
pub fn limits_result(
    run: &LimitsRun<'_>,
    samples: &LimitsSamples,
    loopback: Result<LoopbackCeiling, String>,
) -> LimitsResult {
    let mut notes = samples.notes.clone();
    let loopback = loopback
        .map_err(|error| {
            notes.push(LimitsNote::ProbeFailed {
                probe: "loopback".into(),
                error,
            })
        })
        .ok();
    let sampler = match &run.sampler {
        Ok(samples) => sampler_cost(samples).or_else(|| {
            notes.push(LimitsNote::ProbeFailed {
                probe: "sampler".into(),
                error: "no pair of runs gave a figure (the sampler took no sample)".into(),
            });
            None
        }),
        Err(error) => {
            notes.push(LimitsNote::ProbeFailed {
                probe: "sampler".into(),
                error: error.clone(),
            });
            None
        }
    };
    if run.env.boot_id.is_none() {
        notes.push(LimitsNote::NoBootId);
    }
    LimitsResult {
        schema_version: LIMITS_SCHEMA_VERSION,
        kind: "limits".into(),
        tool: run.env.software.clone(),
        started_unix_ms: run.started_unix_ms,
        started_utc: iso8601_utc(run.started_unix_ms),
        duration_ms: run.duration_ms,
        boot_id: run.env.boot_id.clone(),
        hostname: run.env.hostname.clone(),
        cpu_model: run.env.cpu_model.clone(),
        cpus: run
            .env
            .cpus_online
            .unwrap_or(samples.cpus_used.len() as u32),
        cpus_used: samples.cpus_used.clone(),
        kernel: run.env.kernel_release.clone(),
        load_average_1m: run.load_average_1m,
        load: run.load.clone(),
        quick: run.quick,
        memory: samples.memory.iter().map(memory_row).collect(),
        syscall: syscall_cost(samples),
        wakeup: wakeup(samples),
        transfer: transfer(samples),
        loopback,
        notes,
        implausible: run.implausible.clone(),
        sampler,
    }
}

/// The sampler's cost from the probe's pairs: per pair, the sampled run's extra CPU time
/// over the samples taken while the probe ran (ns per sample) and over the run alone (% slowdown); their spreads, and
/// the median CPU time alone. A pair with no sample or no time is left out; `None` without pairs.
/// A pair may come out negative (the run alone was the one another process slowed): it is
/// kept, so that the median is not biased upward.
pub fn sampler_cost(s: &SamplerCostSamples) -> Option<SamplerCost> {
    let pairs: Vec<_> = s
        .pairs
        .iter()
        .filter(|p| p.samples > 0 && p.alone_cpu_ns > 0 && p.sampled_cpu_ns > 0)
        .collect();
    let extra = |p: &&wirebench_model::limits::SamplerCostPair| {
        p.sampled_cpu_ns as f64 - p.alone_cpu_ns as f64
    };
    // The samples that fell while the probe's own threads ran: at most their CPU time × the
    // rate (the CPU clock fires once per 1/rate of the CPU's time). On a CPU shared with
    // another process, the profile's other samples fell in that process' time, and their
    // interrupts were charged to it, not to the probe.
    let own_samples = |p: &&wirebench_model::limits::SamplerCostPair| {
        (p.sampled_cpu_ns as f64 * f64::from(s.freq_hz) / 1e9).min(p.samples as f64)
    };
    let per_sample: Vec<f64> = pairs.iter().map(|p| extra(p) / own_samples(p)).collect();
    let pct: Vec<f64> = pairs
        .iter()
        .map(|p| extra(p) / p.alone_cpu_ns as f64 * 100.0)
        .collect();
    let alone: Vec<f64> = pairs.iter().map(|p| p.alone_cpu_ns as f64).collect();
    let ns_per_sample = spread(&per_sample)?;
    Some(SamplerCost {
        cpu: s.cpu,
        freq_hz: s.freq_hz,
        work_ns: spread(&alone)?.median as u64,
        resolved: ns_per_sample.min > 0.0,
        ns_per_sample,
        cost_pct: spread(&pct)?,
        attempts: s.attempt,
    })
}

/// A profiled result's rate and expected cost: the limits' median cost per sample × the
/// rate, as a share of one CPU (per sampled CPU); not measured without limits or without
/// their sampler figure. A negative median (the probe could not tell the cost from noise)
/// is reported as 0.
pub fn profile_cost(freq_hz: u32, limits: Option<&LimitsResult>) -> ProfileCost {
    let expected = limits.and_then(|l| {
        let c = l.sampler.as_ref()?;
        let ns = c.ns_per_sample.median.max(0.0);
        Some(ExpectedProfileCost {
            ns_per_sample: ns,
            cpu_pct: ns * f64::from(freq_hz) / 1e9 * 100.0,
            limits_started_utc: l.started_utc.clone(),
            probe_freq_hz: c.freq_hz,
            probe_cost_pct: c.cost_pct.median,
            unresolved: !c.resolved,
        })
    });
    ProfileCost { freq_hz, expected }
}

/// A copy or checksum figure below this fraction of the next larger buffer size's is
/// implausible: a smaller buffer sits in a nearer cache, so its bandwidth is at least the
/// larger one's (the smallest size measured, 32 KiB, is far above where a call's fixed cost
/// would show).
pub const IMPLAUSIBLE_FRACTION: f64 = 0.5;

/// The figures of `memory` (ascending by buffer size) below [`IMPLAUSIBLE_FRACTION`] of the
/// same figure at a larger buffer size: (buffer size, figure, its median, the largest median
/// at a larger size).
pub fn implausible_figures(memory: &[MemoryRow]) -> Vec<(u64, MemoryFigure, f64, f64)> {
    let figure = |r: &MemoryRow, f: MemoryFigure| match f {
        MemoryFigure::CopyOneThread => r.copy_one_thread_bytes_per_s.map(|s| s.median),
        MemoryFigure::CopyAllThreads => r.copy_all_threads_bytes_per_s.map(|s| s.median),
        MemoryFigure::Checksum => r.checksum_bytes_per_s.map(|s| s.median),
    };
    let mut out = Vec::new();
    for (i, row) in memory.iter().enumerate() {
        for f in [
            MemoryFigure::CopyOneThread,
            MemoryFigure::CopyAllThreads,
            MemoryFigure::Checksum,
        ] {
            let larger = memory[i + 1..]
                .iter()
                .filter_map(|r| figure(r, f))
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
            if let (Some(small), Some(large)) = (figure(row, f), larger) {
                if small < IMPLAUSIBLE_FRACTION * large {
                    out.push((row.buffer_bytes, f, small, large));
                }
            }
        }
    }
    out
}

/// Copies a sending end on `path` makes of each payload byte (`zc`: the direction's
/// zero-copy accounting).
fn send_copies(path: SendPath, zc: Option<&ZeroCopyStats>) -> u32 {
    match path {
        SendPath::Copy | SendPath::Uring => 1,
        SendPath::Sendfile | SendPath::Splice => 0,
        SendPath::Zerocopy | SendPath::UringZc => {
            u32::from(zc.is_some_and(|z| z.sends_completed_copied > z.sends_completed_zerocopy))
        }
    }
}

/// Copies a receiving end on `path` makes of each payload byte.
fn recv_copies(path: RecvPath, zc: Option<&ZeroCopyStats>) -> u32 {
    match path {
        RecvPath::Copy | RecvPath::Uring => 1,
        RecvPath::Discard | RecvPath::Splice => 0,
        RecvPath::Zerocopy => u32::from(zc.is_some_and(|z| z.bytes_copied > z.bytes_mapped)),
    }
}

/// The mean over the completed runs of each direction's receiver payload, bytes per second,
/// and the copies on this machine per payload byte of that direction.
fn directions(r: &RunResult, spec: (SendPath, RecvPath)) -> Vec<(f64, u32)> {
    let server_here = r.embedded_server
        || r.runs
            .iter()
            .filter_map(|run| run.summary.as_ref())
            .any(|s| s.same_host);
    let here = |h: HostRole| h == HostRole::Client || server_here;
    let completed: Vec<_> = r
        .runs
        .iter()
        .filter(|run| run.status == RunStatus::Completed)
        .filter_map(|run| run.summary.as_ref()?.stream())
        .collect();
    let mut out = Vec::new();
    for dir in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let rows: Vec<_> = completed
            .iter()
            .filter_map(|s| s.directions.iter().find(|d| d.dir == dir))
            .collect();
        let Some(last) = rows.last() else { continue };
        let payload = rows
            .iter()
            .map(|d| d.receiver_throughput_bps / 8.0)
            .sum::<f64>()
            / rows.len() as f64;
        let zc = last.zerocopy.as_ref();
        let send = if last.send_paths.is_empty() {
            send_copies(spec.0, zc)
        } else {
            last.send_paths
                .iter()
                .map(|&p| send_copies(p, zc))
                .max()
                .unwrap_or(0)
        };
        let recv = if last.recv_paths.is_empty() {
            recv_copies(spec.1, zc)
        } else {
            last.recv_paths
                .iter()
                .map(|&p| recv_copies(p, zc))
                .max()
                .unwrap_or(0)
        };
        let copies =
            u32::from(here(sender_of(dir))) * send + u32::from(here(receiver_of(dir))) * recv;
        out.push((payload, copies));
    }
    out
}

/// The physical context of a stream result against `limits` (see the module docs); `None`
/// for another workload, a result without a completed run, limits without a boot id or
/// without a copy figure.
pub fn physical_context(r: &RunResult, limits: &LimitsResult) -> Option<PhysicalContext> {
    let boot_id = limits.boot_id.clone()?;
    let spec = r.spec.as_ref()?;
    let WorkloadSpec::Stream(st) = &spec.workload else {
        return None;
    };
    let dirs = directions(r, (st.send_path, st.recv_path));
    let payload: f64 = dirs.iter().map(|d| d.0).sum();
    if dirs.is_empty() || !payload.is_finite() {
        return None;
    }
    let copied: f64 = dirs.iter().map(|&(p, c)| p * f64::from(c)).sum();
    let msg_bytes = u64::from(st.send_size_bytes);
    let row = limits.nearest_row(msg_bytes)?;
    let one_flow = spec.common.flows == 1 && st.direction != Direction::Bidir;
    let (copy_threads, copy) = match (&row.copy_all_threads_bytes_per_s, one_flow) {
        (Some(all), false) => (limits.cpus_used.len().max(1) as u32, all.median),
        _ => (1, row.copy_one_thread_bytes_per_s.as_ref()?.median),
    };
    if copy <= 0.0 {
        return None;
    }
    Some(PhysicalContext {
        limits_started_unix_ms: limits.started_unix_ms,
        limits_started_utc: limits.started_utc.clone(),
        boot_id,
        msg_bytes,
        buffer_bytes: row.buffer_bytes,
        copy_threads,
        copy_bytes_per_s: copy,
        payload_bytes_per_s: payload,
        copies_per_byte: if payload > 0.0 { copied / payload } else { 0.0 },
        copied_bytes_per_s: copied,
        copy_bandwidth_pct: copied / copy * 100.0,
    })
}
