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
//!
//! One thread per flow; each keeps its running byte total in its own cache-line-sized atomic
//! (a plain store, no read-modify-write), which the sampling thread reads at interval
//! boundaries. No lock is taken per send or receive.
//!
//! # Data paths
//!
//! A sending flow moves the payload with [`StreamConfig::send_path`], a receiving flow with
//! [`StreamConfig::recv_path`] (see [`crate::paths`] for the payload, the paths and their
//! fallback to copy). Every path counts exactly the bytes the kernel accepted or delivered,
//! so the byte accounting, the intervals, pacing and the stop/drain behaviour are the same
//! for all of them. Senders whose path keeps sending after a call returns (io_uring) or
//! that owe completions (`MSG_ZEROCOPY`) settle them after the stop, before the orderly
//! close; the bytes that completed then count in the flow's total, not its window.

use std::io::Read;
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_proto::measure::{
    CpuReport, FlowInterval, FlowSide, IntervalSample, Role, TcpInfoReport,
};
use wirebench_proto::spec::{FlowDir, RecvPath, SendPath};

use crate::cpu::{self, CpuSnapshot};
use crate::paths::{Disabled, PathReport, Payload, Receiver, SendShared, Sender, Verifier};
use crate::util::{is_timeout, sleep_until};
use crate::Sink;
use wirebench_sys::thread::CpuTimes;

/// How often blocked socket calls wake up to look at the stop and abort flags.
const POLL_TIMEOUT: Duration = Duration::from_millis(100);

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

/// Parameters of a stream run.
#[derive(Debug, Clone)]
pub struct StreamConfig {
    /// Bytes per write/read call.
    pub msg_size_bytes: usize,
    /// Warm-up before the window opens.
    pub warmup: Duration,
    /// Measured duration.
    pub duration: Duration,
    /// Interval sampling period, if any.
    pub interval: Option<Duration>,
    /// How long receivers wait for EOF after the stop instant.
    pub drain_limit: Duration,
    /// Pin every data thread to this CPU.
    pub cpu: Option<usize>,
    /// Pace each sending flow to this many payload bits per second. Paced writes are cut to
    /// about a millisecond's worth of data (at most `msg_size_bytes`) so that the rate is
    /// smooth rather than one message-sized burst at a time.
    pub rate_bps: Option<u64>,
    /// Policy: abort the run if the receiving flows together take in data faster than this
    /// (bits per second, averaged since the start, with a quarter second plus 4 MiB of slack
    /// for bursts). The daemon sets it from its `max_rate_bps` limit.
    pub max_rx_bps: Option<u64>,
    /// How sending flows send. Pacing (`rate_bps`) works with every path.
    pub send_path: SendPath,
    /// How receiving flows receive.
    pub recv_path: RecvPath,
    /// Receivers check every byte against the shared seeded payload (senders then send it).
    /// Only meaningful with a receive path that delivers data ([`RecvPath::delivers_data`]).
    pub verify: bool,
}

/// Slack of the receive-rate policy: this much time at the limit, plus [`RX_SLACK_BYTES`].
const RX_SLACK: Duration = Duration::from_millis(250);
/// Fixed slack of the receive-rate policy, bytes (socket buffers drained at once).
const RX_SLACK_BYTES: u64 = 4 << 20;

/// Bytes a flow may have sent `elapsed` after its start at `rate_bps`.
fn paced_allowance(rate_bps: u64, elapsed: Duration) -> u64 {
    (u128::from(rate_bps) * elapsed.as_nanos() / 8_000_000_000).min(u128::from(u64::MAX)) as u64
}

/// Message size for a paced sender: about 1 ms of data at `rate_bps`, within [1, msg].
fn paced_chunk(rate_bps: u64, msg: usize) -> usize {
    ((rate_bps / 8_000) as usize).clamp(1, msg.max(1))
}

/// What a stream run measured at this end.
#[derive(Debug, Clone)]
pub struct StreamOutput {
    /// Per flow, in the order given.
    pub flows: Vec<FlowSide>,
    /// Interval samples (also delivered to the sink as they happened).
    pub intervals: Vec<IntervalSample>,
    /// CPU over [window start, stop instant].
    pub cpu: Option<CpuReport>,
    /// Measurement problems.
    pub warnings: Vec<String>,
    /// Set if the run was aborted, with the reason.
    pub aborted: Option<String>,
}

#[repr(align(64))]
#[derive(Default)]
struct Counter(AtomicU64);

struct FlowDone {
    total_bytes: u64,
    last_byte_ns: Option<u64>,
    tcp_info: Option<TcpInfoReport>,
    congestion: Option<String>,
    pmtu_bytes: Option<u32>,
    sndbuf_bytes: Option<u32>,
    rcvbuf_bytes: Option<u32>,
    error: Option<String>,
    drain_truncated: bool,
    path: PathReport,
    verified_bytes: Option<u64>,
    verify_errors: Option<u64>,
}

impl FlowDone {
    fn new(total_bytes: u64, error: Option<String>, path: PathReport) -> FlowDone {
        FlowDone {
            total_bytes,
            last_byte_ns: None,
            tcp_info: None,
            congestion: None,
            pmtu_bytes: None,
            sndbuf_bytes: None,
            rcvbuf_bytes: None,
            error,
            drain_truncated: false,
            path,
            verified_bytes: None,
            verify_errors: None,
        }
    }
}

/// What every flow thread of a run shares, read-only.
struct FlowEnv<'a> {
    cfg: &'a StreamConfig,
    payload: &'a Payload,
    send_shared: &'a SendShared,
    disabled: &'a Disabled,
}

struct Shared {
    start: Instant,
    /// CPU time each flow thread recorded for itself just before exiting (by flow index).
    final_cpu: Vec<Mutex<Option<CpuTimes>>>,
    stop: AtomicBool,
    stop_at_ns: AtomicU64,
    counters: Vec<Counter>,
}

fn ns_since(start: Instant, t: Instant) -> u64 {
    t.saturating_duration_since(start).as_nanos() as u64
}

/// Convert the `-sys` TCP_INFO into the wire report.
pub fn tcp_info_report(i: &wirebench_sys::tcp::TcpInfo) -> TcpInfoReport {
    TcpInfoReport {
        retransmits_total: i.retransmits_total,
        rtt_us: i.rtt_us,
        rttvar_us: i.rttvar_us,
        min_rtt_us: i.min_rtt_us,
        snd_cwnd_segments: i.snd_cwnd_segments,
        snd_mss_bytes: i.snd_mss_bytes,
        rcv_mss_bytes: i.rcv_mss_bytes,
        pmtu_bytes: i.pmtu_bytes,
        delivery_rate_bps: i.delivery_rate_bytes_per_s.map(|b| b.saturating_mul(8)),
        bytes_acked: i.bytes_acked,
        bytes_received: i.bytes_received,
        rwnd_limited_us: i.rwnd_limited_us,
        sndbuf_limited_us: i.sndbuf_limited_us,
    }
}

fn socket_facts<F: AsFd>(s: &F, done: &mut FlowDone) {
    let sock = SockRef::from(s);
    done.sndbuf_bytes = sock.send_buffer_size().ok().map(|v| v as u32);
    done.rcvbuf_bytes = sock.recv_buffer_size().ok().map(|v| v as u32);
    done.congestion = wirebench_sys::tcp::congestion(s).ok();
    done.pmtu_bytes = wirebench_sys::tcp::ip_mtu(s).ok();
    done.tcp_info = wirebench_sys::tcp::tcp_info(s)
        .ok()
        .map(|i| tcp_info_report(&i));
}

fn run_sender(
    s: TcpStream,
    idx: usize,
    env: &FlowEnv<'_>,
    shared: &Shared,
    abort: &AtomicBool,
) -> FlowDone {
    let cfg = env.cfg;
    let msg = cfg.msg_size_bytes.max(1);
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
    let rate_bps = cfg.rate_bps;
    let chunk = match rate_bps {
        Some(r) => paced_chunk(r, msg),
        None => msg,
    };
    let paced_from = Instant::now();
    while !shared.stop.load(Ordering::Relaxed) && !abort.load(Ordering::Relaxed) {
        if let Some(r) = rate_bps {
            // Ahead of schedule: wait (bounded, so that stop and abort are seen) until the
            // allowance covers what was already sent.
            let allowed = paced_allowance(r, paced_from.elapsed());
            if total >= allowed {
                let ahead_ns = (u128::from(total - allowed + chunk as u64) * 8_000_000_000
                    / u128::from(r.max(1)))
                .min(100_000_000) as u64;
                thread::sleep(Duration::from_nanos(ahead_ns.max(20_000)));
                continue;
            }
        }
        match tx.send(
            &s,
            env.payload,
            total,
            chunk,
            rate_bps.is_some(),
            POLL_TIMEOUT,
        ) {
            Ok(n) => {
                total += n as u64;
                counter.store(total, Ordering::Relaxed);
            }
            Err(e) if is_timeout(&e) => {}
            Err(e) => {
                error = Some(format!("send failed: {e}"));
                break;
            }
        }
    }
    if !abort.load(Ordering::Relaxed) {
        // Sends still in flight (io_uring) complete before the close; their bytes count in
        // the total (after the stop, so not in the window).
        let (extra, err) = tx.finish(&s, cfg.drain_limit);
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
        let deadline = Instant::now() + cfg.drain_limit;
        let mut sink = [0u8; 512];
        while Instant::now() < deadline && !abort.load(Ordering::Relaxed) {
            match (&s).read(&mut sink) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if is_timeout(&e) => {}
                Err(_) => break,
            }
        }
        // MSG_ZEROCOPY notifications of the last sends arrive once their data is freed.
        if !abort.load(Ordering::Relaxed) {
            let (_, err) = tx.finish(&s, cfg.drain_limit);
            error = err;
        }
    }
    let mut path = tx.report();
    path.fallback = fallback;
    let mut done = FlowDone::new(total, error, path);
    drop(tx);
    socket_facts(&s, &mut done);
    done
}

fn run_receiver(
    s: TcpStream,
    idx: usize,
    env: &FlowEnv<'_>,
    shared: &Shared,
    abort: &AtomicBool,
) -> FlowDone {
    let cfg = env.cfg;
    let msg = cfg.msg_size_bytes.max(1);
    let drain_limit = cfg.drain_limit;
    let (mut rx, fallback) = Receiver::setup(cfg.recv_path, &s, msg, env.disabled);
    let mut buf = vec![0u8; msg];
    // Verification needs the data in user space: only on the paths that deliver it.
    let delivers = !matches!(rx, Receiver::Discard | Receiver::Splice(_));
    let mut verifier = (cfg.verify && delivers).then(|| Verifier::new(env.payload.block()));
    let mut total: u64 = 0;
    let mut last = None;
    let mut error = None;
    let mut drain_truncated = false;
    let counter = &shared.counters[idx].0;
    // Sleep until a whole message is queued rather than waking for every segment batch.
    let _ = wirebench_sys::tcp::set_rcvlowat(&s, msg.min(1 << 20) as u32);
    loop {
        if abort.load(Ordering::Relaxed) {
            break;
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
                    if now_ns > stop_ns.saturating_add(drain_limit.as_nanos() as u64) {
                        drain_truncated = true;
                        break;
                    }
                }
            }
            Err(e) => {
                error = Some(format!("receive failed: {e}"));
                break;
            }
        }
    }
    let mut path = rx.report();
    path.fallback = fallback;
    drop(rx);
    if let Some(v) = &verifier {
        if let (Some(at), None) = (v.first_error(), &error) {
            error = Some(format!(
                "payload verification failed: {} byte(s) differ, the first at stream offset {at}",
                v.errors()
            ));
        }
    }
    let mut done = FlowDone::new(total, error, path);
    done.last_byte_ns = last.map(|t| ns_since(shared.start, t));
    done.drain_truncated = drain_truncated;
    done.verified_bytes = verifier.as_ref().map(Verifier::verified_bytes);
    done.verify_errors = verifier.as_ref().map(Verifier::errors);
    socket_facts(&s, &mut done);
    done
}

/// "flow 3" or "flows 0, 1, 2".
fn flow_list(flows: &[u32]) -> String {
    match flows {
        [one] => format!("flow {one}"),
        _ => {
            let ids: Vec<String> = flows.iter().map(u32::to_string).collect();
            format!("flows {}", ids.join(", "))
        }
    }
}

fn sample(
    shared: &Shared,
    flows: &[(u32, Role)],
    prev: &mut [u64],
    index: u32,
    start_ns: u64,
    end_ns: u64,
    warmup_ns: u64,
) -> IntervalSample {
    let mut out = Vec::with_capacity(flows.len());
    for (i, &(flow, role)) in flows.iter().enumerate() {
        let now = shared.counters[i].0.load(Ordering::Relaxed);
        out.push(FlowInterval {
            flow,
            role,
            bytes: now.saturating_sub(prev[i]),
        });
        prev[i] = now;
    }
    IntervalSample {
        index,
        start_ns,
        end_ns,
        in_warmup: start_ns < warmup_ns,
        flows: out,
    }
}

/// Run a stream test over `plans`. Blocks until every flow has finished (or the abort flag is
/// set and the flows noticed it, within about [`POLL_TIMEOUT`]).
pub fn run(
    cfg: &StreamConfig,
    plans: Vec<FlowPlan>,
    sink: &mut dyn Sink,
    abort: &AtomicBool,
) -> StreamOutput {
    let msg = cfg.msg_size_bytes.max(1);
    let n = plans.len();
    let payload = Payload::new(msg, cfg.verify);
    let disabled = Disabled::from_env();
    let senders = plans.iter().any(|p| p.role == Role::Sender);
    let send_shared = SendShared::new(cfg.send_path, &payload, senders, &disabled);
    let env = FlowEnv {
        cfg,
        payload: &payload,
        send_shared: &send_shared,
        disabled: &disabled,
    };
    let start = Instant::now();
    let shared = Shared {
        start,
        stop: AtomicBool::new(false),
        stop_at_ns: AtomicU64::new(u64::MAX),
        counters: (0..n).map(|_| Counter::default()).collect(),
        final_cpu: (0..n).map(|_| Mutex::new(None)).collect(),
    };
    let meta: Vec<(u32, Role, FlowDir)> = plans.iter().map(|p| (p.flow, p.role, p.dir)).collect();
    let roles: Vec<(u32, Role)> = meta.iter().map(|m| (m.0, m.1)).collect();
    let warmup_ns = cfg.warmup.as_nanos() as u64;
    let mut warnings = Vec::new();

    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    let before_threads = CpuSnapshot::take(0, &[], &|_| None);
    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (idx, plan) in plans.into_iter().enumerate() {
            let _ = plan.stream.set_read_timeout(Some(POLL_TIMEOUT));
            let _ = plan.stream.set_write_timeout(Some(POLL_TIMEOUT));
            let (shared, env, tid_tx) = (&shared, &env, tid_tx.clone());
            let cpu = cfg.cpu;
            let h = thread::Builder::new()
                .name(format!("wb-flow-{}", plan.flow))
                .spawn_scoped(scope, move || {
                    let pin_err =
                        cpu.and_then(|c| wirebench_sys::thread::pin_current_thread(c).err());
                    let tid = wirebench_sys::thread::current_thread_id();
                    let _ = tid_tx.send((idx, tid));
                    drop(tid_tx);
                    let mut done = match plan.role {
                        Role::Sender => run_sender(plan.stream, idx, env, shared, abort),
                        Role::Receiver => run_receiver(plan.stream, idx, env, shared, abort),
                    };
                    if let Some(e) = pin_err {
                        done.error
                            .get_or_insert(format!("could not pin to CPU: {e}"));
                    }
                    // Leave this thread's CPU time behind: its /proc entry goes with it.
                    if let Ok(t) = wirebench_sys::thread::thread_cpu_times(tid) {
                        if let Ok(mut slot) = shared.final_cpu[idx].lock() {
                            *slot = Some(t);
                        }
                    }
                    done
                });
            match h {
                Ok(h) => handles.push(Some(h)),
                Err(e) => {
                    warnings.push(format!("flow {idx}: could not start its thread: {e}"));
                    handles.push(None);
                }
            }
        }
        drop(tid_tx);
        // (flow index, thread id), ordered by flow index.
        let mut tids: Vec<(usize, i32)> = tid_rx.iter().collect();
        tids.sort_unstable();
        let (tid_flows, tids): (Vec<usize>, Vec<i32>) = tids.into_iter().unzip();
        let exited = |i: usize| {
            let flow = *tid_flows.get(i)?;
            *shared.final_cpu[flow].lock().ok()?
        };

        // Sampling loop on the calling thread.
        let mut prev = vec![0u64; n];
        let mut intervals = Vec::new();
        let mut aborted = None;
        let window_start_at = start + cfg.warmup;
        let stop_at = window_start_at + cfg.duration;
        let mut next_interval = cfg.interval.map(|i| start + i);
        let mut interval_start_ns = 0u64;
        let mut cpu_before = (warmup_ns == 0).then_some(before_threads);
        let mut window_start_bytes = vec![0u64; n];
        let mut window_start_ns = 0u64;
        let receivers: Vec<usize> = (0..n).filter(|&i| roles[i].1 == Role::Receiver).collect();
        let mut next_policy = cfg.max_rx_bps.map(|_| start + POLL_TIMEOUT);
        loop {
            let mut next = stop_at;
            if let Some(t) = next_policy {
                next = next.min(t);
            }
            if cpu_before.is_none() {
                next = next.min(window_start_at);
            }
            if let Some(t) = next_interval {
                next = next.min(t);
            }
            if !sleep_until(next, abort) {
                aborted = Some("aborted".to_string());
                break;
            }
            let now = Instant::now();
            let now_ns = ns_since(start, now);
            if let (Some(t), Some(max)) = (next_policy, cfg.max_rx_bps) {
                if now >= t {
                    let got: u64 = receivers
                        .iter()
                        .map(|&i| shared.counters[i].0.load(Ordering::Relaxed))
                        .sum();
                    let allowed =
                        paced_allowance(max, now - start + RX_SLACK).saturating_add(RX_SLACK_BYTES);
                    if got > allowed {
                        aborted = Some(format!(
                            "limit exceeded: data arrived at {} bit/s on average, above the \
                             server's max_rate_bps of {max}",
                            u128::from(got) * 8_000_000_000 / now_ns.max(1) as u128
                        ));
                        abort.store(true, Ordering::Relaxed);
                        break;
                    }
                    next_policy = Some(t + POLL_TIMEOUT);
                }
            }
            if cpu_before.is_none() && now >= window_start_at {
                for (i, c) in shared.counters.iter().enumerate() {
                    window_start_bytes[i] = c.0.load(Ordering::Relaxed);
                }
                window_start_ns = now_ns;
                cpu_before = Some(CpuSnapshot::take(now_ns, &tids, &exited));
            }
            if let Some(t) = next_interval {
                if now >= t && now < stop_at {
                    let s = sample(
                        &shared,
                        &roles,
                        &mut prev,
                        intervals.len() as u32,
                        interval_start_ns,
                        now_ns,
                        warmup_ns,
                    );
                    sink.interval(&s);
                    intervals.push(s);
                    interval_start_ns = now_ns;
                    next_interval = cfg.interval.map(|i| t + i);
                }
            }
            if now >= stop_at {
                break;
            }
        }
        // The stop instant (or the abort instant). CPU is read before the flows are told to
        // stop: a sender can finish its orderly close and exit within microseconds, and an
        // exited thread's CPU time can no longer be read.
        let stop_ns = ns_since(start, Instant::now());
        let cpu_after = CpuSnapshot::take(stop_ns, &tids, &exited);
        let stop_bytes: Vec<u64> = shared
            .counters
            .iter()
            .map(|c| c.0.load(Ordering::Relaxed))
            .collect();
        shared.stop_at_ns.store(stop_ns, Ordering::Relaxed);
        shared.stop.store(true, Ordering::Relaxed);
        let cpu_before =
            cpu_before.unwrap_or_else(|| CpuSnapshot::take(window_start_ns, &tids, &exited));

        let results: Vec<Option<FlowDone>> = handles
            .into_iter()
            .map(|h| h.and_then(|h| h.join().ok()))
            .collect();
        if aborted.is_none() && abort.load(Ordering::Relaxed) {
            aborted = Some("aborted while draining".to_string());
        }
        let end_ns = ns_since(start, Instant::now());
        if cfg.interval.is_some() {
            let s = sample(
                &shared,
                &roles,
                &mut prev,
                intervals.len() as u32,
                interval_start_ns,
                end_ns,
                warmup_ns,
            );
            sink.interval(&s);
            intervals.push(s);
        }

        let mut flows = Vec::with_capacity(n);
        let mut fallbacks: std::collections::BTreeMap<String, Vec<u32>> = Default::default();
        for (i, (flow, role, dir)) in meta.into_iter().enumerate() {
            let done = results[i].as_ref();
            let total = done
                .map(|d| d.total_bytes)
                .unwrap_or_else(|| shared.counters[i].0.load(Ordering::Relaxed));
            let (window_bytes, window_end_ns) = match role {
                Role::Sender => (stop_bytes[i].saturating_sub(window_start_bytes[i]), stop_ns),
                Role::Receiver => {
                    let last = done.and_then(|d| d.last_byte_ns).unwrap_or(window_start_ns);
                    (
                        total.saturating_sub(window_start_bytes[i]),
                        last.max(window_start_ns),
                    )
                }
            };
            if let Some(reason) = done.and_then(|d| d.path.fallback.as_deref()) {
                fallbacks.entry(reason.to_string()).or_default().push(flow);
            }
            if done.is_some_and(|d| d.drain_truncated) {
                warnings.push(format!(
                    "flow {flow}: no EOF within {} ms after the stop; its receive window was cut there",
                    cfg.drain_limit.as_millis()
                ));
            }
            flows.push(FlowSide {
                flow,
                dir,
                role,
                total_bytes: total,
                window_bytes,
                window_start_ns,
                window_end_ns,
                sndbuf_bytes: done.and_then(|d| d.sndbuf_bytes),
                rcvbuf_bytes: done.and_then(|d| d.rcvbuf_bytes),
                congestion: done.and_then(|d| d.congestion.clone()),
                pmtu_bytes: done.and_then(|d| d.pmtu_bytes),
                tcp_info: done.and_then(|d| d.tcp_info.clone()),
                error: match done {
                    Some(d) => d.error.clone(),
                    None => Some("flow thread failed".into()),
                },
                path: done.map(|d| d.path.path.to_string()),
                path_fallback: done.and_then(|d| d.path.fallback.clone()),
                zerocopy: done.and_then(|d| d.path.zerocopy.clone()),
                verified_bytes: done.and_then(|d| d.verified_bytes),
                verify_errors: done.and_then(|d| d.verify_errors),
            });
        }
        for (reason, flows) in fallbacks {
            warnings.push(format!("{}: {reason}", flow_list(&flows)));
        }
        let cpu = match cpu::report(&cpu_before, &cpu_after) {
            Ok(c) => Some(c),
            Err(e) => {
                warnings.push(e);
                None
            }
        };
        StreamOutput {
            flows,
            intervals,
            cpu,
            warnings,
            aborted,
        }
    })
}
