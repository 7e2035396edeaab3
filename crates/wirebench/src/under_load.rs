//! `wirebench rr --under-load N`: latency under load, flent's RRUL idea built in.
//!
//! The request/response test runs twice through its own [`Runner`]: first alone (idle),
//! then beside a stream test of N flows per direction on the same path (loaded). The load
//! runs through a second runner on a thread: it starts [`LEAD`] before the loaded test (its
//! ramp-up is not measured) and is asked to last [`TAIL`] longer, so the loaded window is
//! covered by the load from end to end. Against a remote daemon the two tests run at once
//! from one client as one admission group (`admission_group` in both specs): the daemon counts
//! them as one test against its per-peer cap, and their flows together against its
//! `--max-flows`; without `-H` each runner starts its own embedded server.
//!
//! The result is the loaded test's RunResult with `under_load` holding the idle result,
//! the load's result and the summary (`wirebench-report`'s under-load analysis).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirebench_model::error::{ErrorInfo, ErrorKind};
use wirebench_model::result::{RunResult, RunStatus, UnderLoad};
use wirebench_model::spec::{
    CallSizes, CommonSpec, Direction, StreamShape, StreamSpec, TcpOptions, TestSpec, WorkloadSpec,
};
use wirebench_net::runner::{failed_result, Observer, Quiet, Runner, RunnerConfig};

use crate::args::{LoadDirArg, RrArgs};
use crate::specs::client_limits;

/// How long the load runs before the loaded test starts.
pub const LEAD: Duration = Duration::from_secs(1);

/// How much longer than the loaded test the load is asked to run.
pub const TAIL: Duration = Duration::from_millis(1500);

/// What load to put beside the test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadPlan {
    /// Stream flows per direction (0: no load, a plain test).
    pub flows: u32,
    /// The load's direction.
    pub direction: Direction,
    /// Pace each load flow to this rate, bits per second.
    pub rate_bps: Option<u64>,
}

impl LoadPlan {
    /// The plan the rr flags ask for, if any load.
    pub fn of(a: &RrArgs) -> Option<LoadPlan> {
        let flows = a.under_load.filter(|&n| n > 0)?;
        Some(LoadPlan {
            flows,
            direction: match a.load_direction {
                LoadDirArg::Forward => Direction::Forward,
                LoadDirArg::Reverse => Direction::Reverse,
                LoadDirArg::Bidir => Direction::Bidir,
            },
            rate_bps: a.load_rate,
        })
    }

    /// The stream spec of the load beside `rr` (same congestion control, socket buffers
    /// and DSCP as the test; long enough to cover it), validated.
    pub fn load_spec(&self, rr: &TestSpec) -> Result<TestSpec, ErrorInfo> {
        let c = &rr.common;
        let tcp = rr.tcp().cloned().unwrap_or_default();
        let shape = StreamShape {
            flows: self.flows,
            direction: self.direction,
            rate_bps: self.rate_bps,
            ..StreamShape::default()
        };
        let spec = TestSpec {
            common: CommonSpec {
                flows: self.flows,
                duration_ms: c.warmup_ms + c.duration_ms + (LEAD + TAIL).as_millis() as u64,
                window_bytes: c.window_bytes,
                tos: c.tos,
                ..CommonSpec::default()
            },
            // A copying sender: the receive call is the message too.
            workload: WorkloadSpec::Stream(StreamSpec {
                tcp: TcpOptions {
                    nodelay: false,
                    ..tcp
                },
                ..StreamSpec::new(shape, CallSizes::default())
            }),
        };
        spec.validate(&client_limits()).map_err(|e| {
            let mut info = ErrorInfo::new(ErrorKind::Usage, format!("--under-load: the load: {e}"));
            info.field = Some(e.field);
            info
        })?;
        Ok(spec)
    }
}

/// Sleep `d`, waking every 20 ms for `interrupt`; false if it was set.
fn sleep_unless(d: Duration, interrupt: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    while Instant::now() < end {
        if interrupt.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20).min(end - Instant::now()));
    }
    !interrupt.load(Ordering::Relaxed)
}

/// Measure `spec` idle, then beside `load`; the loaded result with `under_load` filled.
pub fn measure(
    cfg: &RunnerConfig,
    interrupt: &Arc<AtomicBool>,
    spec: &TestSpec,
    load: LoadPlan,
    obs: &mut dyn Observer,
) -> RunResult {
    let mut load_spec = match load.load_spec(spec) {
        Ok(s) => s,
        Err(e) => return failed_result(Some(spec.clone()), None, false, e),
    };
    // The load and the loaded test are one measurement: a daemon admits them as one group,
    // so its default of one test per peer lets them run together.
    let group = Some(rand::random::<u64>());
    load_spec.common.admission_group = group;
    let mut loaded_spec = spec.clone();
    loaded_spec.common.admission_group = group;
    let mut rr_runner = Runner::new(cfg.clone(), Arc::clone(interrupt));
    let idle = rr_runner.run(spec, &mut Quiet);
    if idle.status != RunStatus::Completed {
        return idle;
    }
    let mut load_runner = Runner::new(cfg.clone(), Arc::clone(interrupt));
    let (loaded, load_result) = std::thread::scope(|s| {
        let h = s.spawn(|| load_runner.run(&load_spec, &mut Quiet));
        let loaded = if sleep_unless(LEAD, interrupt) {
            rr_runner.run(&loaded_spec, obs)
        } else {
            failed_result(
                Some(loaded_spec.clone()),
                None,
                false,
                ErrorInfo::new(ErrorKind::Interrupted, "interrupted before the loaded test"),
            )
        };
        // The load has no reason to outlive the test: a remote daemon ends it at its
        // duration; the flag is set only by a signal.
        let load_result = h.join().unwrap_or_else(|_| {
            failed_result(
                Some(load_spec.clone()),
                None,
                false,
                ErrorInfo::new(ErrorKind::Internal, "the load's thread panicked"),
            )
        });
        (loaded, load_result)
    });
    let mut out = loaded;
    let summary = wirebench_analysis::under_load::summary(&idle, &out, &load_result);
    if load_result.status != RunStatus::Completed && out.status == RunStatus::Completed {
        // Latency "under load" without the load is not that: say so.
        let why = load_result.error.as_ref().map_or_else(
            || format!("{:?}", load_result.status),
            |e| e.message.clone(),
        );
        out.status = RunStatus::Failed;
        out.error = Some(ErrorInfo::new(
            load_result
                .error
                .as_ref()
                .map_or(ErrorKind::Internal, |e| e.kind),
            format!("the load (--under-load) did not complete: {why}"),
        ));
    }
    out.under_load = Some(Box::new(UnderLoad {
        load_flows: load.flows,
        load_direction: load.direction,
        lead_ms: LEAD.as_millis() as u64,
        idle,
        load: load_result,
        summary,
    }));
    out
}
