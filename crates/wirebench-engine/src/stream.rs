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
//! - Interval samples tile `[0, end]`, the last one covering the drain. The policy
//!   [`StreamConfig::max_rx_bps`] is checked every 100 ms.
//!
//! The caller's thread is the sampling thread; it runs the timeline driver shared by every
//! engine (the crate-private `timeline` module), and the per-flow bookkeeping is shared with
//! [`crate::many`] (the crate-private `flowside` module).
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
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use wirebench_proto::measure::{CpuReport, FlowSide, IntervalSample, Role, TcpInfoReport};
use wirebench_proto::spec::{FlowDir, RecvPath, SendPath};

use crate::flowside::{paced_allowance, socket_facts, FlowDone, Run, Shared};
use crate::paths::{Disabled, Payload, Receiver, SendShared, Sender, Verifier};
use crate::timeline::{spawn_data, started, DataThreads};
use crate::util::{is_timeout, ns_since};
use crate::Sink;

/// How often blocked socket calls wake up to look at the stop and abort flags, and how often
/// the [`StreamConfig::max_rx_bps`] policy is checked.
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
    /// Without [`StreamConfig::cpu`]: pin data thread `i` (the flow's thread, or the `i`-th
    /// worker of [`crate::many`]) to `pin_cpus[i % len]`. Empty: no round-robin pinning.
    pub pin_cpus: Vec<usize>,
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

impl StreamConfig {
    /// The CPU data thread `slot` is pinned to, if any: [`StreamConfig::cpu`], else the
    /// round-robin choice from [`StreamConfig::pin_cpus`].
    pub fn thread_cpu(&self, slot: usize) -> Option<usize> {
        self.cpu.or_else(|| {
            (!self.pin_cpus.is_empty()).then(|| self.pin_cpus[slot % self.pin_cpus.len()])
        })
    }
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

/// What every flow thread of a run shares, read-only.
struct FlowEnv<'a> {
    cfg: &'a StreamConfig,
    payload: &'a Payload,
    send_shared: &'a SendShared,
    disabled: &'a Disabled,
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

/// Run a stream test over `plans`. Blocks until every flow has finished (or the abort flag is
/// set and the flows noticed it, within about 100 ms).
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
    // One data thread per flow: thread slot = flow index.
    let shared = Shared::new(Instant::now(), n, n);
    let mut run = Run::new(cfg, POLL_TIMEOUT, &shared, &plans);
    let (tid_tx, tid_rx) = mpsc::channel::<(usize, i32)>();
    thread::scope(|scope| {
        let mut handles = Vec::with_capacity(n);
        for (idx, plan) in plans.into_iter().enumerate() {
            let _ = plan.stream.set_read_timeout(Some(POLL_TIMEOUT));
            let _ = plan.stream.set_write_timeout(Some(POLL_TIMEOUT));
            let (shared, env) = (&shared, &env);
            let name = format!("wb-flow-{}", plan.flow);
            let h = spawn_data(
                scope,
                name,
                &shared.final_cpu,
                idx,
                tid_tx.clone(),
                cfg.thread_cpu(idx),
                move || match plan.role {
                    Role::Sender => run_sender(plan.stream, idx, env, shared, abort),
                    Role::Receiver => run_receiver(plan.stream, idx, env, shared, abort),
                },
            );
            handles.push(started(h, format_args!("flow {idx}"), &mut run.warnings));
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
