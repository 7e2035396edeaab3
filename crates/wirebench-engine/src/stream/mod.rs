//! Bulk TCP transfer: the TCP_STREAM workload.
//!
//! # Timeline (on this end's monotonic clock, 0 = the call to [`run`])
//! ```text
//! 0 ──── warm-up ────┬──────────── duration ────────────┬── drain ──┐
//!                window start                        stop instant   last byte (EOF)
//! ```
//! - **Window start** = end of warm-up. Counters and CPU are snapshotted there.
//! - **Stop instant** = window start + duration. Senders stop writing and shut their side down;
//!   a sender's window ends here. CPU is snapshotted here on both roles.
//! - A receiver keeps reading until EOF (bytes that were in flight at the stop instant);
//!   its window ends at the arrival of the last byte, bounded by `drain_limit`.
//! - Interval samples tile `[0, end]`, the last one covering the drain. A rate policy
//!   ([`StreamConfig::policy`]) is checked by the timeline.
//!
//! # Engines
//!
//! [`run`] chooses how the flows run ([`choose_engine`]): a thread per flow (this module), or
//! a few epoll worker threads each owning a share of the flows ([`many`], neper's model).
//! The epoll engine has neither pacing nor the paths other than copy, so it runs only when
//! every flow copies and no rate is set: with the workers [`StreamConfig::threads`] asks for,
//! or without a request above [`MANY_FLOW_THRESHOLD`] flows with one worker per online CPU.
//! Both share the counters, the sampler and the output ([`flowside`]), so their figures mean
//! the same.
//!
//! Each flow keeps its running byte total in its own cache-line-sized atomic (a plain store,
//! no read-modify-write), which the sampling thread reads at interval boundaries. No lock is
//! taken per send or receive.
//!
//! # Data paths
//!
//! A sending flow moves the payload with [`StreamConfig::send_path`], a receiving flow with
//! [`StreamConfig::recv_path`] (see [`crate::paths`] for the payload, the paths and their
//! fallback to copy). Every path counts exactly the bytes the kernel accepted or delivered.
//! Senders whose path keeps sending after a call returns (io_uring) or that owe completions
//! (`MSG_ZEROCOPY`) settle them after the stop, before the orderly close; the bytes that
//! completed then count in the flow's total, not its window.
//!
//! # Pacing
//!
//! With [`StreamConfig::rate_bps`], byte `k` of a flow is due at `start + k × 8 / rate` (the
//! one schedule of the crate's `pace` module); a paced sender writes about a millisecond's
//! worth at a time (at most the send size), so the rate is smooth rather than one
//! message-sized burst at a time.

mod epwait;
pub(crate) mod flowside;
pub mod many;

use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::Ordering;
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wirebench_model::side::{ByteInterval, PathUsed, Role, StreamSide, VerifyCounts};
use wirebench_model::spec::{FlowDir, RecvPath, RecvWait, SendPath};
use wirebench_model::warning::{Cause, DataThread, EpollBlocker, FlowError, Step, Warning};

pub use flowside::{socket_facts, tcp_info_report};
use flowside::{FlowDone, Run, Shared};

use crate::abort::Abort;
use crate::buffers;
use crate::pace::Schedule;
use crate::paths::{Disabled, Payload, Receiver, SendShared, Sender, Verifier};
use crate::recvwait::Waiter;
use crate::threads::{spawn_data, started, DataThreads};
use crate::util::{is_timeout, ns_since};
use crate::{EngineOutput, Sink, Timing};

/// How often blocked socket calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

/// Flows at one end above which an unpaced copy-path stream runs on the epoll engine (the
/// model's rule, [`wirebench_model::spec::TestSpec::epoll_workers_bound`], which bounds the
/// spec's buffers by it).
pub const MANY_FLOW_THRESHOLD: usize = wirebench_model::spec::MANY_FLOW_THRESHOLD as usize;

/// One connected data socket and what to do with it.
#[derive(Debug)]
pub struct FlowPlan {
    /// Flow id.
    pub flow: u32,
    /// Which way its payload moves.
    pub dir: FlowDir,
    /// What this end does.
    pub role: Role,
    /// The connected socket (options already applied).
    pub stream: TcpStream,
}

/// Parameters of a stream run at one end.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Warm-up, duration, intervals, drain, pinning, policy and buffer placement.
    pub timing: Timing,
    /// Bytes per send call.
    pub send_size_bytes: usize,
    /// Bytes per receive call.
    pub recv_size_bytes: usize,
    /// Pace each sending flow to this many payload bits per second.
    pub rate_bps: Option<u64>,
    /// How sending flows send. Pacing works with every path.
    pub send_path: SendPath,
    /// How receiving flows receive.
    pub recv_path: RecvPath,
    /// How receiving flows wait for data (thread-per-flow engine; the epoll engine waits in
    /// `epoll_wait`).
    pub recv_wait: RecvWait,
    /// Receivers check every byte against the shared seeded payload (senders then send it).
    pub verify: bool,
    /// Epoll workers asked for (see the module docs); `None` lets the engine choose.
    pub threads: Option<u32>,
    /// Stop each direction after its sending flows here have handed this many payload bytes
    /// to the kernel, split over them by [`flow_budgets`]; `duration` is then an upper
    /// bound. The run ends when every flow at this end has finished.
    pub stop_after_bytes: Option<u64>,
}

/// Each flow's share of [`StreamConfig::stop_after_bytes`], by flow index: the sending flows
/// of one direction, in flow-id order, split the count evenly and the first ones take the
/// remainder; receiving flows (and every flow without a count) get `u64::MAX`.
pub fn flow_budgets(stop_after_bytes: Option<u64>, flows: &[(u32, FlowDir, Role)]) -> Vec<u64> {
    let mut out = vec![u64::MAX; flows.len()];
    let Some(n) = stop_after_bytes else {
        return out;
    };
    for dir in [FlowDir::ClientToServer, FlowDir::ServerToClient] {
        let mut senders: Vec<(u32, usize)> = flows
            .iter()
            .enumerate()
            .filter(|(_, f)| f.1 == dir && f.2 == Role::Sender)
            .map(|(i, f)| (f.0, i))
            .collect();
        senders.sort_unstable();
        let k = senders.len() as u64;
        for (rank, &(_, i)) in senders.iter().enumerate() {
            out[i] = n / k + u64::from((rank as u64) < n % k);
        }
    }
    out
}

/// Which engine runs a stream end, and what to tell the user about the choice.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineChoice {
    /// `Some(workers)` for the epoll engine, `None` for a thread per flow.
    pub epoll_workers: Option<usize>,
    /// Why a worker count asked for was ignored.
    pub note: Option<Warning>,
}

/// The engine for `flows` flows at this end under `cfg` (see the module docs).
pub fn choose_engine(cfg: &StreamConfig, flows: usize) -> EngineChoice {
    let blocker = if cfg.rate_bps.is_some() {
        Some(EpollBlocker::Paced)
    } else if cfg.send_path != SendPath::Copy || cfg.recv_path != RecvPath::Copy {
        Some(EpollBlocker::Paths {
            send: cfg.send_path,
            recv: cfg.recv_path,
        })
    } else {
        None
    };
    let flows = flows.max(1);
    let (epoll_workers, note) = match (cfg.threads, blocker) {
        (Some(t), Some(blocker)) => (
            None,
            Some(Warning::ThreadsIgnored {
                threads: t,
                blocker,
                flows: flows as u32,
            }),
        ),
        (Some(t), None) => (Some((t as usize).clamp(1, flows)), None),
        (None, Some(_)) => (None, None),
        (None, None) if flows > MANY_FLOW_THRESHOLD => (
            Some(
                std::thread::available_parallelism()
                    .map_or(2, |n| n.get())
                    .min(wirebench_model::spec::MAX_THREADS as usize)
                    .min(flows),
            ),
            None,
        ),
        (None, None) => (None, None),
    };
    EngineChoice {
        epoll_workers,
        note,
    }
}

/// Run a stream test over `plans` on the engine [`choose_engine`] picks. Blocks until every
/// flow has finished (or the abort fired and the flows noticed it, within about 100 ms).
pub fn run(
    cfg: &StreamConfig,
    plans: Vec<FlowPlan>,
    sink: &mut dyn Sink<ByteInterval>,
    abort: &Abort,
) -> EngineOutput<StreamSide> {
    let choice = choose_engine(cfg, plans.len());
    let mut out = match choice.epoll_workers {
        Some(workers) => many::run(cfg, workers, plans, sink, abort),
        None => run_threads(cfg, plans, sink, abort),
    };
    if let Some(note) = choice.note {
        out.warnings.insert(0, note);
    }
    out
}

/// Message size for a paced sender: about 1 ms of data at `rate_bps`, within [1, msg].
fn paced_chunk(rate_bps: u64, msg: usize) -> usize {
    ((rate_bps / 8_000) as usize).clamp(1, msg.max(1))
}

/// What every flow thread of a run shares, read-only.
struct FlowEnv<'a> {
    cfg: &'a StreamConfig,
    payload: &'a Payload,
    send_shared: &'a SendShared,
    disabled: &'a Disabled,
}

fn run_sender(
    s: TcpStream,
    idx: usize,
    env: &FlowEnv<'_>,
    shared: &Shared,
    abort: &Abort,
) -> FlowDone {
    let cfg = env.cfg;
    let msg = cfg.send_size_bytes.max(1);
    let (mut tx, fallback) = Sender::setup(
        cfg.send_path,
        &s,
        env.payload,
        msg,
        env.send_shared,
        env.disabled,
    );
    let mut total: u64 = 0;
    let mut error = None;
    let counter = &shared.counters[idx].0;
    let schedule = cfg.rate_bps.map(|r| Schedule::bits(Instant::now(), r, 8));
    let chunk = cfg.rate_bps.map_or(msg, |r| paced_chunk(r, msg));
    let budget = shared.budget[idx];
    let stop = || shared.stop.load(Ordering::Relaxed) || abort.is_set();
    let mut sent_budget_at = None;
    while !stop() {
        let left = budget - total;
        if left == 0 {
            sent_budget_at = Some(Instant::now());
            break;
        }
        if let Some(due) = schedule.as_ref().and_then(|sch| sch.due(total)) {
            // Ahead of schedule: wait (bounded, so that stop and abort are seen).
            if !crate::pace::wait_until(due, Duration::ZERO, &stop) {
                break;
            }
        }
        let len = usize::try_from(left).map_or(chunk, |l| l.min(chunk));
        match tx.send(
            &s,
            env.payload,
            total,
            len,
            Sender::queue_limit(len, schedule.is_some(), left),
            POLL_TIMEOUT,
        ) {
            Ok(n) => {
                total += n as u64;
                counter.store(total, Ordering::Relaxed);
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                error = Some(FlowError::os(Step::Send, &e));
                break;
            }
        }
    }
    shared.flow_finished();
    if !abort.is_set() {
        // Sends still in flight (io_uring) complete before the close; their bytes count in
        // the total (after the stop, so not in the window).
        let (extra, err) = tx.finish(&s, cfg.timing.drain_limit);
        if extra > 0 {
            total += extra;
            counter.store(total, Ordering::Relaxed);
        }
        if error.is_none() {
            error = err;
        }
    }
    if error.is_none() {
        // Orderly end: FIN after the last byte, then wait (bounded) for the receiver to read
        // everything and close, so that TCP_INFO below shows every byte acknowledged.
        let _ = s.shutdown(Shutdown::Write);
        let deadline = Instant::now() + cfg.timing.drain_limit;
        let mut sink = [0u8; 512];
        while Instant::now() < deadline && !abort.is_set() {
            match (&s).read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
        }
        // MSG_ZEROCOPY notifications of the last sends arrive once their data is freed.
        if !abort.is_set() {
            let (_, err) = tx.finish(&s, cfg.timing.drain_limit);
            error = err;
        }
    }
    let mut path = tx.report();
    path.fallback = fallback.map(|f| (PathUsed::Send(cfg.send_path), f));
    let mut done = FlowDone::new(total, error, path);
    done.last_byte_ns = sent_budget_at.map(|t| ns_since(shared.start, t));
    drop(tx);
    done.socket = socket_facts(&s);
    shared.flow_closed(idx, &done.socket);
    done
}

fn run_receiver(
    s: TcpStream,
    idx: usize,
    env: &FlowEnv<'_>,
    shared: &Shared,
    abort: &Abort,
) -> FlowDone {
    let cfg = env.cfg;
    let msg = cfg.recv_size_bytes.max(1);
    let (mut rx, fallback) = Receiver::setup(cfg.recv_path, &s, msg, env.disabled);
    let mut buf = buffers::zeroed(msg, cfg.timing.buffer_offset);
    // Verification needs the data in user space: only on the paths that deliver it.
    let delivers = !matches!(rx, Receiver::Discard | Receiver::Splice(_));
    let mut verifier = (cfg.verify && delivers).then(|| Verifier::new(env.payload.block()));
    let mut total: u64 = 0;
    let mut last = None;
    let mut error = None;
    let mut drain_truncated = false;
    let counter = &shared.counters[idx].0;
    // TCP_ZEROCOPY_RECEIVE maps whole pages only when much is queued: sleep until a whole
    // message is. The other paths wake for what has arrived: a 1 MiB low-water mark cost a
    // copying 1 MiB stream ~13 % on an Intel Xeon VM (loopback and veth, split CPUs,
    // 2026-11-27; docs/bench/2026-11-27-intel-xeon-recv-size-lowat.md).
    if cfg.recv_path == RecvPath::Zerocopy {
        let _ = wirebench_sys::tcp::set_rcvlowat(&s, msg.min(1 << 20) as u32);
    }
    let mut waiter = Waiter::new(cfg.recv_wait, rx.path(), msg);
    loop {
        if abort.is_set() {
            break;
        }
        if let Some(w) = waiter.as_mut() {
            w.wait(&s);
        }
        match rx.recv(&s, &mut buf, verifier.as_mut(), POLL_TIMEOUT) {
            Ok(0) => break,
            Ok(n) => {
                total += n as u64;
                counter.store(total, Ordering::Relaxed);
                last = Some(Instant::now());
            }
            Err(e) if is_timeout(&e) => {
                if shared.stop.load(Ordering::Relaxed) {
                    let stop_ns = shared.stop_at_ns.load(Ordering::Relaxed);
                    let now_ns = ns_since(shared.start, Instant::now());
                    if now_ns > flowside::drain_end_ns(stop_ns, cfg.timing.drain_limit) {
                        drain_truncated = true;
                        break;
                    }
                }
            }
            Err(e) => {
                error = Some(FlowError::os(Step::Receive, &e));
                break;
            }
        }
    }
    shared.flow_finished();
    let mut path = rx.report();
    path.fallback = fallback.map(|f| (PathUsed::Recv(cfg.recv_path), f));
    drop(rx);
    let mut done = FlowDone::new(total, error, path);
    done.last_byte_ns = last.map(|t| ns_since(shared.start, t));
    done.drain_truncated = drain_truncated;
    done.verify = verifier.as_ref().map(verify_counts);
    done.recv_wait = waiter.as_ref().map(Waiter::stats);
    if let Some(v) = &verifier {
        if let (Some(at), None) = (v.first_error(), &done.error) {
            done.error = Some(FlowError {
                step: Step::Verify,
                cause: Cause::Mismatch {
                    mismatched_bytes: v.errors(),
                    first_offset: at,
                },
            });
        }
    }
    done.socket = socket_facts(&s);
    shared.flow_closed(idx, &done.socket);
    done
}

/// A verifier's counts.
pub(crate) fn verify_counts(v: &Verifier<'_>) -> VerifyCounts {
    VerifyCounts {
        verified_bytes: v.verified_bytes(),
        mismatched_bytes: v.errors(),
    }
}

/// Run a stream test over `plans` with one thread per flow.
fn run_threads(
    cfg: &StreamConfig,
    plans: Vec<FlowPlan>,
    sink: &mut dyn Sink<ByteInterval>,
    abort: &Abort,
) -> EngineOutput<StreamSide> {
    let n = plans.len();
    let payload = Payload::new(
        cfg.send_size_bytes.max(cfg.recv_size_bytes).max(1),
        cfg.verify,
        cfg.timing.buffer_offset,
    );
    let disabled = Disabled::from_env();
    let senders = plans.iter().any(|p| p.role == Role::Sender);
    let send_shared = SendShared::new(cfg.send_path, &payload, senders, &disabled);
    let env = FlowEnv {
        cfg,
        payload: &payload,
        send_shared: &send_shared,
        disabled: &disabled,
    };
    // One data thread per flow: thread slot = flow index.
    let shared = Shared::for_plans(Instant::now(), cfg, &plans, n);
    let engine = cfg.timing.pin.thread_per_flow(n);
    let mut run = Run::new(cfg, &shared, &plans, engine, n);
    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (idx, plan) in plans.into_iter().enumerate() {
            let _ = plan.stream.set_read_timeout(Some(POLL_TIMEOUT));
            let _ = plan.stream.set_write_timeout(Some(POLL_TIMEOUT));
            let (shared, env) = (&shared, &env);
            let flow = plan.flow;
            let h = spawn_data(
                scope,
                format!("wb-flow-{flow}"),
                &shared.final_cpu,
                idx,
                tid_tx.clone(),
                cfg.timing.pin.thread_cpu(idx),
                move || match plan.role {
                    Role::Sender => run_sender(plan.stream, idx, env, shared, abort),
                    Role::Receiver => run_receiver(plan.stream, idx, env, shared, abort),
                },
            );
            handles.push(started(h, DataThread::Flow(flow), &mut run.warnings));
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        run.finish(&threads, sink, abort, || {
            handles
                .into_iter()
                .map(|h| {
                    let (mut done, pin_err) = h?.join().ok()?;
                    if let Some(e) = pin_err {
                        done.pin_failed(&e);
                    }
                    Some(done)
                })
                .collect()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn budgets_split_each_direction_in_flow_id_order() {
        use FlowDir::{ClientToServer as C2S, ServerToClient as S2C};
        // Flows given out of id order; flow 9 receives (no budget).
        let flows = [
            (4, C2S, Role::Sender),
            (1, C2S, Role::Sender),
            (2, C2S, Role::Sender),
            (7, S2C, Role::Sender),
            (9, S2C, Role::Receiver),
        ];
        let b = flow_budgets(Some(11), &flows);
        // 11 over 3 flows: ids 1 and 2 take 4, id 4 takes 3; the one S2C sender takes all.
        assert_eq!(b, vec![3, 4, 4, 11, u64::MAX]);
        assert_eq!(b[..3].iter().sum::<u64>(), 11);
        assert_eq!(flow_budgets(None, &flows), vec![u64::MAX; 5]);
    }
}
