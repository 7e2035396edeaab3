//! `wirebench limits [--json] [--refresh] [--quick]`: this machine's physical limits, cached
//! per boot.
//!
//! The probes run in `wirebench-engine` (memory copy and checksum per buffer size, system
//! call, wake-ups), the loopback ceiling is a short stream test through the [`Runner`]
//! against the embedded server, and `wirebench-report` turns the batches into the
//! [`LimitsResult`]. The result is cached in the state directory (`$WIREBENCH_STATE_DIR`,
//! else [`crate::limits_cache::DEFAULT_STATE_DIR`]) as `limits-<boot id>.json`, written atomically; the next
//! `wirebench limits` of the same boot prints it instead of measuring, unless `--refresh`.
//! Stream tests read it (never measure it) to put their throughput in context
//! ([`cached_for_this_boot`]), and their verdicts say when and under what load it was
//! measured.
//!
//! Each measurement records how busy other work kept the machine (`/proc/stat` less this
//! process's own CPU time, [`LimitsLoad`]); one taken on a busy machine is cached marked
//! so. A memory figure far below the next larger buffer size's (a smaller buffer sits in a
//! nearer cache, so that cannot be the machine) is measured again, and one that stays so is
//! kept flagged with its likely cause ([`Implausible`]).

use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

use clap::Args;
use wirebench_analysis::limits::{
    implausible_figures, limits_result, loopback_ceiling, memory_row, LimitsRun,
};
use wirebench_model::limits::{
    Implausible, ImplausibleCause, LimitsLoad, LimitsResult, LimitsSamples, LoopbackCeiling,
    BUSY_OTHER_PCT,
};
use wirebench_model::spec::{
    CallSizes, CommonSpec, StreamShape, StreamSpec, TestSpec, WorkloadSpec,
};
use wirebench_net::runner::{unix_ms, Quiet, Runner, RunnerConfig, Target};
use wirebench_report::print::limits::{human, Provenance};

use crate::limits_cache::{
    cache_path, cached_for_this_boot, state_dir_from_env, this_boot_id, STATE_DIR_ENV,
};
use crate::output::write_atomically;
use crate::{EXIT_FAILED, EXIT_OK};

/// `wirebench limits`.
#[derive(Debug, Args)]
pub struct LimitsArgs {
    /// Print the LimitsResult document as JSON.
    #[arg(long)]
    pub json: bool,
    /// Measure again even if this boot's limits are cached.
    #[arg(long)]
    pub refresh: bool,
    /// Fewer buffer sizes, fewer and shorter batches (about 3 s instead of about 8).
    #[arg(long)]
    pub quick: bool,
}

/// The loopback ceiling: a stream test of `duration` after `warmup` against the embedded
/// server, with `wirebench stream`'s defaults otherwise (one flow, 1 MiB calls, copy paths,
/// the host's congestion control).
fn loopback(duration: Duration, warmup: Duration) -> Result<LoopbackCeiling, String> {
    let spec = loopback_spec(duration, warmup);
    let mut cfg = RunnerConfig::new(Target::Embedded(std::net::Ipv4Addr::LOCALHOST.into()));
    cfg.embedded_limits = crate::specs::client_limits();
    let mut runner = Runner::new(cfg, Arc::new(AtomicBool::new(false)));
    loopback_ceiling(&runner.run(&spec, &mut Quiet))
}

/// The loopback ceiling's test: one forward flow of `wirebench stream`'s default calls.
fn loopback_spec(duration: Duration, warmup: Duration) -> TestSpec {
    TestSpec {
        common: CommonSpec {
            duration_ms: duration.as_millis() as u64,
            warmup_ms: warmup.as_millis() as u64,
            ..CommonSpec::default()
        },
        workload: WorkloadSpec::Stream(StreamSpec::new(
            StreamShape::default(),
            CallSizes::default(),
        )),
    }
}

/// The machine's CPU counters and this process's CPU time at one instant, to tell other
/// processes' work from the measurement's own.
struct LoadMark {
    stat: Option<wirebench_stats::cpu::ProcStat>,
    own_ns: Option<u64>,
    at: Instant,
}

impl LoadMark {
    fn now() -> LoadMark {
        LoadMark {
            stat: wirebench_sys::host::read_proc_stat()
                .ok()
                .and_then(|t| wirebench_stats::cpu::parse_proc_stat(&t).ok()),
            own_ns: wirebench_sys::thread::process_cpu_times()
                .ok()
                .map(|t| t.user_ns + t.system_ns),
            at: Instant::now(),
        }
    }

    /// Other work's share of all CPUs from `self` to `later`, percent: the machine's busy
    /// time (`/proc/stat`) less this process's own CPU time; and the share of it the
    /// hypervisor took (steal).
    fn other_busy_pct(&self, later: &LoadMark) -> Option<(f64, f64)> {
        let (b, a) = (self.stat.as_ref()?, later.stat.as_ref()?);
        let window_ns = later.at.duration_since(self.at).as_nanos();
        let u = wirebench_stats::cpu::system_utilization(
            b,
            a,
            u64::try_from(window_ns).unwrap_or(u64::MAX),
        )
        .ok()?;
        let own_ns = later.own_ns?.saturating_sub(self.own_ns?) as f64;
        let all_ns = window_ns as f64 * f64::from(u.cpus);
        let other = (u.total.busy_pct - own_ns / all_ns * 100.0).max(0.0);
        (all_ns > 0.0).then_some((other, u.total.steal_pct.min(other)))
    }
}

/// Measure everything (with a progress bar on a terminal unless `json`).
fn measure(quick: bool, json: bool) -> LimitsResult {
    let started = unix_ms();
    let t0 = Instant::now();
    let mark = LoadMark::now();
    let load_average_1m = wirebench_sys::host::load_average_1m();
    let cpus = wirebench_sys::thread::current_thread_affinity()
        .ok()
        .filter(|c| !c.is_empty())
        .unwrap_or_else(|| (0..wirebench_sys::thread::online_cpus() as usize).collect());
    let plan = wirebench_engine::limits::LimitsPlan::standard(
        quick,
        cpus,
        wirebench_sys::host::mem_available_bytes(),
    );
    let expected = Duration::from_secs(if quick { 4 } else { 10 });
    let bar = crate::progress::TimeBar::start(expected, !json, "measuring this machine's limits");
    let mut samples = wirebench_engine::limits::measure(&plan, &mut |p| {
        tracing::debug!("limits: {p} probe");
    });
    remeasure_implausible(&plan.memory, &mut samples);
    let sampler = sampler_cost(plan.memory.cpus.first().copied().unwrap_or(0), quick);
    let (secs, warm) = if quick { (500, 100) } else { (1000, 250) };
    let ceiling = loopback(Duration::from_millis(secs), Duration::from_millis(warm));
    drop(bar);
    let load = mark
        .other_busy_pct(&LoadMark::now())
        .map(|(other, steal)| LimitsLoad {
            load_average_1m_end: wirebench_sys::host::load_average_1m(),
            other_busy_pct: other,
            steal_pct: Some(steal),
            busy: other >= BUSY_OTHER_PCT,
        });
    let rows: Vec<_> = samples.memory.iter().map(memory_row).collect();
    let cause = if load.as_ref().is_some_and(|l| l.busy) {
        ImplausibleCause::Contention
    } else {
        ImplausibleCause::Placement
    };
    let implausible = implausible_figures(&rows)
        .into_iter()
        .map(|(buffer_bytes, figure, bytes_per_s, larger)| Implausible {
            buffer_bytes,
            figure,
            bytes_per_s,
            larger_buffer_bytes_per_s: larger,
            cause,
        })
        .collect();
    let env = wirebench_engine::env::probe(None);
    let run = LimitsRun {
        started_unix_ms: started,
        duration_ms: t0.elapsed().as_millis() as u64,
        quick,
        load_average_1m,
        load,
        implausible,
        env: &env,
        sampler,
    };
    limits_result(&run, &samples, ceiling)
}

/// The sampler-cost probe on `cpu`: 5 pairs of 100 ms runs (3 of 50 ms with `quick`) at
/// [`wirebench_profile::cost::PROBE_FREQ_HZ`], run again while it does not resolve the cost
/// (some pair showed none), up to [`SAMPLER_PROBE_ATTEMPTS`] times; or why it gave nothing,
/// in words.
fn sampler_cost(
    cpu: usize,
    quick: bool,
) -> Result<wirebench_model::limits::SamplerCostSamples, String> {
    use wirebench_model::limits::SAMPLER_PROBE_ATTEMPTS;
    use wirebench_profile::cost::{probe, CostProbeError, PROBE_FREQ_HZ};
    let (pairs, work) = if quick { (3, 50) } else { (5, 100) };
    let cpu = u32::try_from(cpu).unwrap_or(0);
    let mut attempt = 1;
    loop {
        let mut s =
            probe(cpu, PROBE_FREQ_HZ, pairs, Duration::from_millis(work)).map_err(|e| match e {
                CostProbeError::Unavailable(u) => wirebench_report::print::profile_unavailable(&u),
                CostProbeError::Pin { cpu, error } => {
                    format!("cannot pin a thread to CPU {cpu}: {error}")
                }
                CostProbeError::CpuTime(e) => format!("cannot read this process' CPU time: {e}"),
                CostProbeError::Panicked => "the probe's thread panicked".into(),
            })?;
        s.attempt = attempt;
        let resolved = wirebench_analysis::limits::sampler_cost(&s).is_some_and(|c| c.resolved);
        if resolved || attempt >= SAMPLER_PROBE_ATTEMPTS {
            return Ok(s);
        }
        tracing::info!(
            "limits: the sampler's cost was not resolved (attempt {attempt}): measuring again"
        );
        attempt += 1;
    }
}

/// Measure again, once, the buffer sizes whose memory figures are implausible (far below
/// the next larger size's): a batch that another process interrupted, or a placement of the
/// buffers that the next measurement does not repeat. The new samples replace the old.
fn remeasure_implausible(
    plan: &wirebench_engine::limits::memory::MemoryPlan,
    samples: &mut LimitsSamples,
) {
    let rows: Vec<_> = samples.memory.iter().map(memory_row).collect();
    let mut sizes: Vec<u64> = implausible_figures(&rows)
        .into_iter()
        .map(|(b, ..)| b)
        .collect();
    sizes.dedup();
    if sizes.is_empty() {
        return;
    }
    tracing::info!("limits: measuring {sizes:?} again (below the next larger size's bandwidth)");
    let again = wirebench_engine::limits::memory::MemoryPlan {
        sizes,
        ..plan.clone()
    };
    let (memory, _) = wirebench_engine::limits::memory::measure(&again);
    for m in memory {
        if let Some(old) = samples
            .memory
            .iter_mut()
            .find(|o| o.buffer_bytes == m.buffer_bytes)
        {
            *old = m;
        }
    }
}

/// Store `l` in this boot's cache file: its path, or why it was not stored.
fn store(l: &LimitsResult) -> Result<String, String> {
    let boot = l
        .boot_id
        .as_deref()
        .filter(|b| this_boot_id().as_deref() == Some(*b))
        .ok_or("this boot's id could not be read")?;
    let dir = state_dir_from_env();
    std::fs::create_dir_all(&dir).map_err(|e| {
        format!(
            "cannot create {}: {e} (set {STATE_DIR_ENV} to a writable directory)",
            dir.display()
        )
    })?;
    let path = cache_path(&dir, boot);
    let doc = serde_json::to_string_pretty(l).map_err(|e| e.to_string())? + "\n";
    write_atomically(&path, doc.as_bytes())
        .map_err(|e| format!("{e:#} (set {STATE_DIR_ENV} to a writable directory)"))?;
    Ok(path.display().to_string())
}

/// `wirebench limits`; the exit code.
pub fn run(a: &LimitsArgs) -> i32 {
    let (limits, from) = match cached_for_this_boot().filter(|_| !a.refresh) {
        Some((path, l)) => (
            l,
            Provenance::Cached {
                path: path.display().to_string(),
            },
        ),
        None => {
            let l = measure(a.quick, a.json);
            let stored = store(&l);
            (l, Provenance::Measured { stored })
        }
    };
    if a.json {
        if let Provenance::Measured { stored: Err(e) } = &from {
            eprintln!("wirebench limits: not cached: {e}");
        }
        match serde_json::to_string_pretty(&limits) {
            Ok(s) => println!("{s}"),
            Err(e) => {
                eprintln!("wirebench limits: cannot encode the result: {e}");
                return EXIT_FAILED;
            }
        }
    } else {
        print!("{}", human(&limits, &from));
    }
    EXIT_OK
}
