//! Bulk TCP transfer for many flows: the TCP_STREAM workload on a few epoll worker threads.
//!
//! [`run`] has the contract of the thread-per-flow engine and returns the same
//! [`EngineOutput`]: the same timeline (warm-up, window start, stop instant, receiver drain to
//! EOF bounded by `drain_limit`), the same per-flow [`FlowSide`] fields, the same interval
//! tiling, CPU snapshots at window start and at the stop instant, the same abort behaviour
//! and the same rate policy. See the [`crate::stream`] module docs for the rules; only the
//! threading differs. It is the same code, not a copy: the sampling thread runs the timeline
//! driver shared by every engine, and the counters, per-flow results and output are shared
//! with [`crate::stream`] (its crate-private `flowside` module).
//!
//! [`FlowSide`]: wirebench_model::side::FlowSide
//!
//! # Threading (neper's model)
//!
//! Instead of one thread per flow, `threads` worker threads each own one epoll set and a
//! share of the flows: flow index `i` (its position in the plans) goes to worker
//! `i % threads`. Sockets are non-blocking and registered level-triggered, `EPOLLOUT` for
//! sending flows and `EPOLLIN` for receiving ones. A ready flow moves at most
//! [`calls_per_turn`] messages before the worker turns to the next ready flow, so that the
//! flows of a worker share it round-robin and a round over them moves at most about
//! [`ROUND_BYTES`]; a sending flow's first turn is one write of its share of
//! [`FIRST_ROUND_BYTES`], so that every flow starts early in the test. Worker `w` is pinned as
//! [`Pinning::thread_cpu`]`(w)` says ([`StreamConfig::pin`]).
//! The sampling thread is the caller's, as in [`crate::stream`]. A worker with receiving
//! flows waits for events as [`StreamConfig::recv_wait`] asks (`auto`: zero-timeout
//! checks and naps on its own timer before a blocking `epoll_wait`; see the crate-private
//! `epwait` module) and reports its counts in [`StreamSide::worker_waits`].
//!
//! Each flow keeps its running byte total in its own cache-line-sized atomic, preallocated
//! for all flows before the workers start, written (a plain store) only by the worker that
//! owns the flow and read by the sampler at interval boundaries. No lock is taken per send,
//! receive or sample.
//!
//! # End of a flow
//!
//! At the stop instant a worker stops writing on its sending flows and shuts their write
//! side down, then waits (bounded by `drain_limit`) for the receiver's close so that
//! TCP_INFO shows every byte acknowledged. Receivers read until EOF, bounded by
//! `drain_limit` after the stop; their window ends at the arrival of the last byte. Each
//! flow's TCP_INFO, congestion control, path MTU and socket buffer sizes are read just
//! before its socket is closed. On abort, senders shut their write side down and every flow
//! ends at once, as in [`crate::stream`].
//!
//! # Limitations
//!
//! - **Copy path only.** Flows write and read with plain non-blocking `write(2)`/`read(2)`
//!   and report the copy path. Any other [`StreamConfig::send_path`] or
//!   [`StreamConfig::recv_path`] falls back to copy with the reason
//!   [`FallbackReason::EngineHasOnlyCopy`] and a warning. Payload verification
//!   ([`StreamConfig::verify`]) works.
//! - **No pacing.** This engine does not pace ([`crate::stream::choose_engine`] never picks
//!   it for a paced run). Called with a rate anyway, it runs the flows unpaced and says so in
//!   a warning (the run is not aborted).
//! - The caller raises `RLIMIT_NOFILE` for its sockets; the engine itself needs one more
//!   descriptor per worker (the epoll set).

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::OwnedFd;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use rustix::event::epoll;
use wirebench_model::abort::EngineKind;
use wirebench_model::side::{ByteInterval, PathUsed, RecvWaitStats, Role, StreamSide};
use wirebench_model::spec::{RecvPath, SendPath};
use wirebench_model::warning::{Cause, DataThread, FallbackReason, FlowError, Step, Warning};
use wirebench_sys::mem::PlacedBuf;

use super::epwait::EpollWait;
use super::flowside::{drain_end_ns, socket_facts, FlowDone, PathReport, Run, Shared};
use super::{verify_counts, FlowPlan, StreamConfig};
use crate::abort::Abort;
use crate::buffers;
use crate::paths::{Payload, Verifier};
use crate::recvwait::rcvbuf_bytes;
use crate::threads::{spawn_data, started, DataThreads};
use crate::util::{is_timeout, ns_since};
#[cfg(doc)]
use crate::Pinning;
use crate::{EngineOutput, Sink};

/// Longest a worker sleeps in `epoll_wait`, and how often it looks at its flows' deadlines
/// (receiver drain limit, sender close wait) and at the abort flag.
pub const POLL_TIMEOUT: Duration = Duration::from_millis(50);

/// Most read or write calls one ready flow gets before the worker turns to the next one.
/// A call that moves less than a whole message ends the flow's turn early (its socket
/// buffer is full or empty). Fewer with many flows: see [`calls_per_turn`].
pub const CALLS_PER_EVENT: usize = 4;

/// Most bytes one round over a worker's flows should move (every flow's turn at most
/// [`calls_per_turn`] whole messages), so that each flow gets its first turn early in the
/// test. With 4 calls of 1 MiB for each of 500 flows a round was 2 GiB, longer than a 1.5 s
/// test: on loopback 271 of 1000 flows never got a turn and moved nothing (2-vCPU AMD EPYC,
/// 2026-11-29). 256 MiB keeps the full turn up to 64 flows of 1 MiB per worker (`-P 128`
/// on 2 workers), as before.
pub const ROUND_BYTES: u64 = 256 << 20;

/// Most bytes a worker's first round over its sending flows moves: every flow's first write
/// is capped at its share ([`first_turn_bytes`]). At the start every send buffer is empty and
/// takes a whole message, so without the cap the first round moved one message per flow
/// (500 MiB for 500 flows of 1 MiB) before the last flow wrote its first byte; on a loaded
/// 2-vCPU machine that took longer than a 1.5 s test, and a flow of 1000 moved nothing
/// (Intel Xeon VM, 2026-11-30, CI). Later rounds are short by themselves: a full send buffer
/// takes only what its receiver has read.
pub const FIRST_ROUND_BYTES: u64 = 64 << 20;

/// The smallest first write a sending flow gets ([`first_turn_bytes`]), above a first
/// congestion window of ten 1,460-byte segments.
pub const MIN_FIRST_TURN_BYTES: usize = 16 << 10;

/// The first write of each sending flow on a worker of `flows` flows moving `msg_bytes`
/// messages: its share of [`FIRST_ROUND_BYTES`], at least [`MIN_FIRST_TURN_BYTES`], at most
/// one message.
pub fn first_turn_bytes(flows: usize, msg_bytes: usize) -> usize {
    let share = FIRST_ROUND_BYTES / flows.max(1) as u64;
    let share = usize::try_from(share).unwrap_or(usize::MAX);
    share.max(MIN_FIRST_TURN_BYTES).min(msg_bytes.max(1))
}

/// The calls a flow's turn gets on a worker of `flows` flows moving `msg_bytes` messages:
/// [`CALLS_PER_EVENT`], fewer when a round of that many would move more than
/// [`ROUND_BYTES`], and at least one.
pub fn calls_per_turn(flows: usize, msg_bytes: usize) -> usize {
    let per_call = (flows.max(1) as u64).saturating_mul(msg_bytes.max(1) as u64);
    (ROUND_BYTES / per_call).clamp(1, CALLS_PER_EVENT as u64) as usize
}

/// Most events taken from the epoll set per `epoll_wait`.
const MAX_EVENTS: usize = 1024;

/// What every worker of a run shares, read-only.
struct Env<'a> {
    cfg: &'a StreamConfig,
    payload: &'a Payload,
}

impl Env<'_> {
    /// The path a flow of `role` used: always copy, with the fallback reason if another
    /// path was asked for.
    fn path_report(&self, role: Role) -> PathReport {
        let (path, requested) = match role {
            Role::Sender => (
                PathUsed::Send(SendPath::Copy),
                PathUsed::Send(self.cfg.send_path),
            ),
            Role::Receiver => (
                PathUsed::Recv(RecvPath::Copy),
                PathUsed::Recv(self.cfg.recv_path),
            ),
        };
        PathReport {
            path,
            fallback: (requested != path).then_some((requested, FallbackReason::EngineHasOnlyCopy)),
            zerocopy: None,
        }
    }
}

/// Where a flow is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// A sender before the stop instant: writes when its socket is writable.
    Sending,
    /// A sender after the stop: write side shut down, waiting for the receiver's close.
    Closing { deadline: Instant },
    /// A receiver: reads until EOF.
    Receiving,
    /// Finished; its result is in `done`.
    Done,
}

/// One flow owned by a worker.
struct Flow<'p> {
    idx: usize,
    role: Role,
    stream: Option<TcpStream>,
    state: State,
    total: u64,
    last: Option<Instant>,
    error: Option<FlowError>,
    drain_truncated: bool,
    verifier: Option<Verifier<'p>>,
    done: Option<FlowDone>,
    /// Bytes it sends before it stops by itself (`u64::MAX` for none).
    budget: u64,
    /// Its data phase has ended and [`Shared::flow_finished`] has been told.
    counted: bool,
    /// A receiver: read calls made.
    recv_calls: u64,
    /// A receiver: its `SO_RCVBUF` as last read for the worker's wait.
    rcvbuf_known: u64,
}

/// One worker: an epoll set and its flows.
struct Worker<'a> {
    env: &'a Env<'a>,
    shared: &'a Shared,
    abort: &'a Abort,
    ep: OwnedFd,
    flows: Vec<Flow<'a>>,
    /// Flows not yet done.
    active: usize,
    /// Receive buffer (one message), shared by the worker's receiving flows.
    buf: PlacedBuf,
    /// How the worker waits, if it has receiving flows (else it blocks in `epoll_wait`).
    wait: Option<EpollWait>,
    /// Calls per flow's turn ([`calls_per_turn`] of its flows and message size).
    calls: usize,
    /// A sending flow's first turn: one write of at most this ([`first_turn_bytes`]).
    first_turn: usize,
}

impl<'a> Worker<'a> {
    fn counter(&self, idx: usize) -> &AtomicU64 {
        &self.shared.counters[idx].0
    }

    /// Flow `i`'s data phase has ended (once per flow).
    fn data_done(&mut self, i: usize) {
        let f = &mut self.flows[i];
        if !f.counted {
            f.counted = true;
            self.shared.flow_finished();
        }
    }

    /// Ends flow `i`: records its figures and closes its socket.
    fn finish(&mut self, i: usize) {
        self.data_done(i);
        let f = &mut self.flows[i];
        if f.state == State::Done {
            return;
        }
        let mut error = f.error.take();
        if let Some(v) = &f.verifier {
            if let (Some(at), None) = (v.first_error(), &error) {
                error = Some(FlowError {
                    step: Step::Verify,
                    cause: Cause::Mismatch {
                        mismatched_bytes: v.errors(),
                        first_offset: at,
                    },
                });
            }
        }
        let mut done = FlowDone::new(f.total, error, self.env.path_report(f.role));
        done.last_byte_ns = f.last.map(|t| ns_since(self.shared.start, t));
        done.drain_truncated = f.drain_truncated;
        done.verify = f.verifier.as_ref().map(verify_counts);
        if let Some(s) = f.stream.take() {
            let _ = epoll::delete(&self.ep, &s);
            done.socket = socket_facts(&s);
            self.shared.flow_closed(f.idx, &done.socket);
        }
        f.done = Some(done);
        f.state = State::Done;
        self.active -= 1;
    }

    /// A sender's turn: write up to `calls` messages; a flow's first turn is one write of at
    /// most `first_turn` bytes.
    fn send(&mut self, i: usize) {
        let msg = self.env.cfg.send_size_bytes.max(1);
        let payload = self.env.payload;
        for _ in 0..self.calls {
            let f = &mut self.flows[i];
            let left = f.budget - f.total;
            if left == 0 {
                // Its whole budget is sent: FIN, then wait for the receiver's close.
                f.last = Some(Instant::now());
                self.data_done(i);
                return self.begin_close(i);
            }
            let Some(s) = f.stream.as_ref() else { return };
            let first = f.total == 0;
            let cap = if first { self.first_turn } else { msg };
            let len = usize::try_from(left).map_or(cap, |l| l.min(cap));
            let res = (&*s).write(payload.window(f.total, len));
            match res {
                Ok(0) => {
                    f.error = Some(FlowError::os(Step::Send, &io::ErrorKind::WriteZero.into()));
                    return self.finish(i);
                }
                Ok(n) => {
                    f.total += n as u64;
                    let (idx, total, budget) = (f.idx, f.total, f.budget);
                    self.counter(idx).store(total, Ordering::Relaxed);
                    if total == budget {
                        continue;
                    }
                    if first || n < len {
                        return;
                    }
                }
                Err(e) if is_timeout(&e) => return,
                Err(e) => {
                    f.error = Some(FlowError::os(Step::Send, &e));
                    return self.finish(i);
                }
            }
            if self.shared.stop.load(Ordering::Relaxed) {
                return;
            }
        }
    }

    /// A receiver's turn: read up to `calls` messages.
    fn recv(&mut self, i: usize) {
        for _ in 0..self.calls {
            let f = &mut self.flows[i];
            let Some(s) = f.stream.as_ref() else { return };
            let res = (&*s).read(&mut self.buf);
            f.recv_calls += 1;
            if let Some(w) = self.wait.as_mut() {
                w.received(f.recv_calls, &mut f.rcvbuf_known, || rcvbuf_bytes(s));
            }
            match res {
                Ok(0) => return self.finish(i),
                Ok(n) => {
                    f.total += n as u64;
                    f.last = Some(Instant::now());
                    if let Some(v) = f.verifier.as_mut() {
                        v.check(&self.buf[..n]);
                    }
                    let (idx, total) = (f.idx, f.total);
                    self.counter(idx).store(total, Ordering::Relaxed);
                    if n < self.buf.len() {
                        return;
                    }
                }
                Err(e) if is_timeout(&e) => return,
                Err(e) => {
                    f.error = Some(FlowError::os(Step::Receive, &e));
                    return self.finish(i);
                }
            }
        }
    }

    /// A closing sender's turn: read (and drop) until the receiver's EOF.
    fn close_wait(&mut self, i: usize) {
        let mut sink = [0u8; 512];
        for _ in 0..CALLS_PER_EVENT {
            let Some(s) = self.flows[i].stream.as_ref() else {
                return;
            };
            match (&*s).read(&mut sink) {
                Ok(0) => return self.finish(i),
                Ok(_) => {}
                Err(e) if is_timeout(&e) => return,
                Err(_) => return self.finish(i),
            }
        }
    }

    /// The stop instant for a sender: FIN after the last byte, then wait for the close.
    fn begin_close(&mut self, i: usize) {
        let deadline = Instant::now() + self.env.cfg.timing.drain_limit;
        let f = &mut self.flows[i];
        let Some(s) = f.stream.as_ref() else { return };
        let _ = s.shutdown(Shutdown::Write);
        let res = epoll::modify(
            &self.ep,
            s,
            epoll::EventData::new_u64(i as u64),
            epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
        );
        f.state = State::Closing { deadline };
        if res.is_err() {
            self.finish(i);
        }
    }

    /// Abort: senders shut their write side down, every flow ends now.
    fn abort_all(&mut self) {
        for i in 0..self.flows.len() {
            let f = &self.flows[i];
            if f.state == State::Sending && f.error.is_none() {
                if let Some(s) = &f.stream {
                    let _ = s.shutdown(Shutdown::Write);
                }
            }
            self.finish(i);
        }
    }

    /// Deadlines: receivers past the drain limit, closing senders past their wait.
    fn check_deadlines(&mut self, now: Instant) {
        let stop_ns = self.shared.stop_at_ns.load(Ordering::Relaxed);
        let drain_end_ns = drain_end_ns(stop_ns, self.env.cfg.timing.drain_limit);
        let now_ns = ns_since(self.shared.start, now);
        for i in 0..self.flows.len() {
            match self.flows[i].state {
                State::Receiving if now_ns > drain_end_ns => {
                    self.flows[i].drain_truncated = true;
                    self.finish(i);
                }
                State::Closing { deadline } if now >= deadline => self.finish(i),
                _ => {}
            }
        }
    }

    /// Waits for events into `events`: the worker's [`EpollWait`] if it has one, else
    /// `epoll_wait` at most `timeout`.
    fn wait_for(
        &mut self,
        events: &mut Vec<epoll::Event>,
        timeout: &rustix::event::Timespec,
        stopped: bool,
    ) -> rustix::io::Result<usize> {
        match self.wait.as_mut() {
            Some(w) => w.wait(&self.ep, events, timeout, stopped),
            None => {
                events.clear();
                epoll::wait(
                    &self.ep,
                    rustix::buffer::spare_capacity(events),
                    Some(timeout),
                )
            }
        }
    }

    /// The event loop. Returns when every flow is done or on abort.
    fn run(&mut self) {
        let mut events: Vec<epoll::Event> =
            Vec::with_capacity(self.flows.len().clamp(1, MAX_EVENTS));
        let timeout = rustix::event::Timespec {
            tv_sec: 0,
            tv_nsec: POLL_TIMEOUT.as_nanos() as _,
        };
        let mut stopped = false;
        let mut next_scan = Instant::now() + POLL_TIMEOUT;
        while self.active > 0 {
            if self.abort.is_set() {
                self.abort_all();
                break;
            }
            if !stopped && self.shared.stop.load(Ordering::Relaxed) {
                stopped = true;
                for i in 0..self.flows.len() {
                    if self.flows[i].state == State::Sending {
                        self.begin_close(i);
                    }
                }
                next_scan = Instant::now();
            }
            match self.wait_for(&mut events, &timeout, stopped) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => {}
                Err(e) => {
                    let e = io::Error::from(e);
                    for f in &mut self.flows {
                        f.error
                            .get_or_insert_with(|| FlowError::os(Step::Epoll, &e));
                    }
                    self.abort_all();
                    break;
                }
            }
            for ev in &events {
                let i = ev.data.u64() as usize;
                match self.flows.get(i).map(|f| f.state) {
                    Some(State::Sending) => {
                        if !self.shared.stop.load(Ordering::Relaxed) {
                            self.send(i);
                        }
                    }
                    Some(State::Receiving) => self.recv(i),
                    Some(State::Closing { .. }) => self.close_wait(i),
                    Some(State::Done) | None => {}
                }
            }
            if stopped {
                let now = Instant::now();
                if now >= next_scan {
                    self.check_deadlines(now);
                    next_scan = now + POLL_TIMEOUT;
                }
            }
        }
    }
}

/// What a worker leaves: (flow index, result) per flow, and how it waited if it had
/// receiving flows.
type WorkerDone = (Vec<(usize, FlowDone)>, Option<RecvWaitStats>);

/// Sets a worker's flows up and runs them.
fn run_worker<'a>(
    plans: Vec<(usize, FlowPlan)>,
    env: &'a Env<'a>,
    shared: &'a Shared,
    abort: &'a Abort,
) -> WorkerDone {
    let msg = env.cfg.recv_size_bytes.max(1);
    let ep = match epoll::create(epoll::CreateFlags::CLOEXEC) {
        Ok(ep) => ep,
        Err(e) => {
            let e = FlowError::os(Step::Epoll, &io::Error::from(e));
            let done = plans
                .into_iter()
                .map(|(idx, plan)| {
                    let mut done = FlowDone::new(0, Some(e.clone()), env.path_report(plan.role));
                    done.socket = socket_facts(&plan.stream);
                    shared.flow_closed(idx, &done.socket);
                    (idx, done)
                })
                .collect();
            return (done, None);
        }
    };
    let mut w = Worker {
        env,
        shared,
        abort,
        ep,
        flows: Vec::with_capacity(plans.len()),
        active: 0,
        buf: buffers::zeroed(0, 0),
        wait: None,
        calls: calls_per_turn(
            plans.len(),
            env.cfg.send_size_bytes.max(env.cfg.recv_size_bytes),
        ),
        first_turn: first_turn_bytes(plans.len(), env.cfg.send_size_bytes),
    };
    let mut setup_errors = Vec::new();
    for (i, (idx, plan)) in plans.into_iter().enumerate() {
        let s = plan.stream;
        let (state, flags) = match plan.role {
            Role::Sender => (State::Sending, epoll::EventFlags::OUT),
            Role::Receiver => {
                // No SO_RCVLOWAT: a low-water mark of one message cost throughput (-P
                // 10000: 27 Gbit/s with it, 33 without; -P 1000: 45 and 48; Intel Xeon VM,
                // loopback, split CPUs, 2026-11-27), as it did for `stream`'s threads.
                (
                    State::Receiving,
                    epoll::EventFlags::IN | epoll::EventFlags::RDHUP,
                )
            }
        };
        let rcvbuf_known = match plan.role {
            Role::Receiver => {
                let b = rcvbuf_bytes(&s);
                w.wait
                    .get_or_insert_with(|| EpollWait::new(env.cfg.recv_wait, msg))
                    .add_buffer(b);
                b
            }
            Role::Sender => 0,
        };
        let verifier = (plan.role == Role::Receiver && env.cfg.verify)
            .then(|| Verifier::new(env.payload.block()));
        let res = s.set_nonblocking(true).and_then(|()| {
            epoll::add(&w.ep, &s, epoll::EventData::new_u64(i as u64), flags)
                .map_err(io::Error::from)
        });
        if let Err(e) = res {
            setup_errors.push((i, FlowError::os(Step::Epoll, &e)));
        }
        w.flows.push(Flow {
            idx,
            role: plan.role,
            stream: Some(s),
            state,
            total: 0,
            last: None,
            error: None,
            drain_truncated: false,
            verifier,
            done: None,
            budget: shared.budget[idx],
            counted: false,
            recv_calls: 0,
            rcvbuf_known,
        });
        w.active += 1;
    }
    if w.flows.iter().any(|f| f.role == Role::Receiver) {
        w.buf = buffers::zeroed(msg, env.cfg.timing.buffer_offset);
    }
    for (i, e) in setup_errors {
        w.flows[i].error.get_or_insert(e);
        w.finish(i);
    }
    w.run();
    let waited = w.wait.as_ref().map(EpollWait::stats);
    let done = w
        .flows
        .into_iter()
        .filter_map(|f| f.done.map(|d| (f.idx, d)))
        .collect();
    (done, waited)
}

/// Run a stream test over `plans` on `threads` epoll worker threads (at least one, at most
/// one per flow); flow `i` of `plans` is served by worker `i % threads`.
///
/// Same contract and output as [`crate::stream::run`] (see the module docs for the
/// differences: copy path only, no pacing). Blocks until every flow has finished, or the
/// abort fired and the workers noticed it (within about [`POLL_TIMEOUT`]).
pub fn run(
    cfg: &StreamConfig,
    threads: usize,
    plans: Vec<FlowPlan>,
    sink: &mut dyn Sink<ByteInterval>,
    abort: &Abort,
) -> EngineOutput<StreamSide> {
    let n = plans.len();
    let threads = threads.clamp(1, n.max(1));
    let payload = Payload::new(
        cfg.send_size_bytes.max(cfg.recv_size_bytes).max(1),
        cfg.verify,
        cfg.timing.buffer_offset,
    );
    let env = Env {
        cfg,
        payload: &payload,
    };
    // One data thread per worker: thread slot = worker index.
    let shared = Shared::for_plans(Instant::now(), cfg, &plans, threads);
    let engine = EngineKind::Epoll {
        workers: threads as u32,
        placement: cfg.timing.pin.placement(threads),
    };
    let mut run = Run::new(cfg, &shared, &plans, engine, threads);
    if let Some(rate_bps) = cfg.rate_bps {
        if run.meta.iter().any(|m| m.1 == Role::Sender) {
            run.warnings.push(Warning::PacingUnsupported { rate_bps });
        }
    }

    // The workers' shares of the flows, by flow index.
    let mut shares: Vec<Vec<(usize, FlowPlan)>> = (0..threads).map(|_| Vec::new()).collect();
    for (idx, plan) in plans.into_iter().enumerate() {
        shares[idx % threads].push((idx, plan));
    }

    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let mut worker_waits = Vec::new();
    let mut out = thread::scope(|scope| {
        let mut handles = Vec::with_capacity(threads);
        for (w, share) in shares.into_iter().enumerate() {
            let (shared, env) = (&shared, &env);
            let h = spawn_data(
                scope,
                format!("wb-many-{w}"),
                &shared.final_cpu,
                w,
                tid_tx.clone(),
                cfg.timing.pin.thread_cpu(w),
                move || run_worker(share, env, shared, abort),
            );
            handles.push(started(h, DataThread::Worker(w as u32), &mut run.warnings));
        }
        let threads = DataThreads::collect(tid_tx, &tid_rx, &shared.final_cpu);
        run.finish(&threads, sink, abort, || {
            let mut results: Vec<Option<FlowDone>> = (0..n).map(|_| None).collect();
            for h in handles.into_iter().flatten() {
                if let Ok(((done, waited), pin_err)) = h.join() {
                    worker_waits.extend(waited);
                    for (idx, mut d) in done {
                        // Every flow of the worker reports it, unless it has an error of its own.
                        if let Some(e) = &pin_err {
                            d.pin_failed(e);
                        }
                        results[idx] = Some(d);
                    }
                }
            }
            results
        })
    });
    out.data.worker_waits = worker_waits;
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_round_over_many_flows_is_one_call_each() {
        // 500 flows of 1 MiB messages (1000 flows on 2 workers): one call each.
        assert_eq!(calls_per_turn(500, 1 << 20), 1);
        // A few flows keep the full turn.
        assert_eq!(calls_per_turn(4, 1 << 20), CALLS_PER_EVENT);
        assert_eq!(calls_per_turn(64, 1 << 20), CALLS_PER_EVENT);
        assert_eq!(calls_per_turn(500, 128 << 10), CALLS_PER_EVENT);
        // In between: as many as fit in a round.
        assert_eq!(calls_per_turn(128, 1 << 20), 2);
        assert_eq!(calls_per_turn(0, 0), CALLS_PER_EVENT);
    }

    #[test]
    fn a_first_round_over_many_flows_moves_a_share_each() {
        // 512 flows of 1 MiB messages: 128 KiB each, 64 MiB in all; 500 flows (1000 on 2
        // workers): 131 KiB each, never more than 64 MiB in all.
        assert_eq!(first_turn_bytes(512, 1 << 20), 128 << 10);
        assert_eq!(first_turn_bytes(500, 1 << 20), 134_217);
        assert!(500 * first_turn_bytes(500, 1 << 20) as u64 <= FIRST_ROUND_BYTES);
        // A few flows: one whole message, never more.
        assert_eq!(first_turn_bytes(1, 1 << 20), 1 << 20);
        assert_eq!(first_turn_bytes(64, 1 << 20), 1 << 20);
        assert_eq!(first_turn_bytes(4, 100), 100);
        // 10,000 flows on one worker: the floor, 160 MiB in all.
        assert_eq!(first_turn_bytes(10_000, 256 << 10), MIN_FIRST_TURN_BYTES);
        // Messages below the floor stay whole; nothing is zero.
        assert_eq!(first_turn_bytes(10_000, 4096), 4096);
        assert_eq!(first_turn_bytes(0, 0), 1);
    }
}
