//! Many-flow stream engine on 127.0.0.1: both ends run the engine (a sender run and a
//! receiver run on their own threads) over loopback connection pairs made here.
//!
//! - 1000 flows: exact accounting per flow, every flow present, no errors, intervals tile.
//! - Abort: both ends return promptly and still agree on every flow's total.
//! - The server's rate policy aborts a receiving end that takes data in too fast.
//! - Fairness over 100 flows (printed; only "every flow moved data" is asserted).
//! - Other paths and a rate fall back to copy and unpaced, with warnings; verification.
//! - `#[ignore]`d: aggregate throughput of 1 flow vs 1000 flows.
//!
//! Tests that move traffic hold one lock, so that they do not compete for CPUs.

use std::collections::HashMap;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{mpsc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use wirebench_engine::stream::{many, FlowPlan, StreamConfig};
use wirebench_engine::{Abort, EngineOutput, NullSink, Pinning, RatePolicy, Sink, Timing};
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{ByteInterval, PathUsed, Role, StreamSide, VerifyCounts};
use wirebench_model::spec::{FlowDir, RecvPath, RecvWait, SendPath};
use wirebench_model::validate::LimitName;
use wirebench_model::warning::{FallbackReason, Warning};

type StreamOutput = EngineOutput<StreamSide>;

use wirebench_testkit::serial as traffic_lock;

/// Two descriptors per flow and some to spare.
fn raise_nofile(flows: usize) {
    let want = (2 * flows + 256) as u64;
    let got = wirebench_sys::process::raise_nofile_limit(want).unwrap();
    assert!(got >= want, "RLIMIT_NOFILE is {got}, {want} needed");
}

/// `n` loopback connections: (sender plans on the connecting side, receiver plans on the
/// accepting side), flow `i` on both. With `cubic`, both sockets of every pair use it.
fn pairs(n: usize, cubic: bool) -> (Vec<FlowPlan>, Vec<FlowPlan>) {
    raise_nofile(n);
    // A backlog for every connection (somaxconn permitting), and accepting while connecting:
    // a dropped SYN costs a second.
    let listener = Socket::new(Domain::IPV4, Type::STREAM, None).unwrap();
    listener
        .bind(&SocketAddr::from(([127, 0, 0, 1], 0)).into())
        .unwrap();
    listener.listen(n as i32 + 128).unwrap();
    let listener = TcpListener::from(listener);
    let addr = listener.local_addr().unwrap();
    let (clients, accepted) = thread::scope(|s| {
        let acc = s.spawn(|| {
            (0..n)
                .map(|_| listener.accept().unwrap().0)
                .collect::<Vec<_>>()
        });
        let clients: Vec<TcpStream> = (0..n).map(|_| TcpStream::connect(addr).unwrap()).collect();
        (clients, acc.join().unwrap())
    });
    let mut by_port: HashMap<u16, TcpStream> = accepted
        .into_iter()
        .map(|s| (s.peer_addr().unwrap().port(), s))
        .collect();
    let mut senders = Vec::with_capacity(n);
    let mut receivers = Vec::with_capacity(n);
    for (i, c) in clients.into_iter().enumerate() {
        let port = c.local_addr().unwrap().port();
        let a = by_port.remove(&port).expect("accepted socket of a client");
        if cubic {
            wirebench_sys::tcp::set_congestion(&c, "cubic").unwrap();
            wirebench_sys::tcp::set_congestion(&a, "cubic").unwrap();
        }
        senders.push(FlowPlan {
            flow: i as u32,
            dir: FlowDir::ClientToServer,
            role: Role::Sender,
            stream: c,
        });
        receivers.push(FlowPlan {
            flow: i as u32,
            dir: FlowDir::ClientToServer,
            role: Role::Receiver,
            stream: a,
        });
    }
    (senders, receivers)
}

fn config(warmup_ms: u64, duration_ms: u64, interval_ms: Option<u64>) -> StreamConfig {
    StreamConfig {
        send_size_bytes: 128 * 1024,
        recv_size_bytes: 128 * 1024,
        timing: Timing {
            warmup: Duration::from_millis(warmup_ms),
            duration: Duration::from_millis(duration_ms),
            interval: interval_ms.map(Duration::from_millis),
            drain_limit: Duration::from_secs(5),
            pin: Pinning::default(),
            policy: None,
            buffer_offset: 0,
        },
        rate_bps: None,
        send_path: SendPath::Copy,
        recv_path: RecvPath::Copy,
        recv_wait: RecvWait::Auto,
        verify: false,
        // These tests call the epoll engine directly with their worker count.
        threads: None,
        stop_after_bytes: None,
    }
}

/// Runs both ends with `threads` workers each, same config and the one abort handle.
fn run_both(cfg: &StreamConfig, threads: usize, n: usize) -> (StreamOutput, StreamOutput) {
    run_both_with(cfg, cfg, threads, n)
}

/// Runs the sending end with `tx_cfg` and the receiving end with `rx_cfg`, `threads` workers
/// each, sharing one abort handle.
fn run_both_with(
    tx_cfg: &StreamConfig,
    rx_cfg: &StreamConfig,
    threads: usize,
    n: usize,
) -> (StreamOutput, StreamOutput) {
    let t0 = Instant::now();
    let (snd, rcv) = pairs(n, false);
    let t1 = Instant::now();
    let abort = Abort::new();
    let out = thread::scope(|s| {
        let r = s.spawn(|| many::run(rx_cfg, threads, rcv, &mut NullSink, &abort));
        let t = many::run(tx_cfg, threads, snd, &mut NullSink, &abort);
        (t, r.join().unwrap())
    });
    eprintln!(
        "{n} flows: connected in {:?}, ran for {:?}",
        t1 - t0,
        t1.elapsed()
    );
    out
}

/// Every flow's total is the same at both ends; each end has every flow, in order.
fn assert_totals_match(snd: &StreamOutput, rcv: &StreamOutput, n: usize) {
    assert_eq!(snd.data.flows.len(), n);
    assert_eq!(rcv.data.flows.len(), n);
    for (i, (s, r)) in snd.data.flows.iter().zip(&rcv.data.flows).enumerate() {
        assert_eq!((s.flow, s.role), (i as u32, Role::Sender));
        assert_eq!((r.flow, r.role), (i as u32, Role::Receiver));
        assert_eq!(
            s.total_bytes, r.total_bytes,
            "flow {i}: sent {} received {}",
            s.total_bytes, r.total_bytes
        );
    }
}

/// Per flow, the interval bytes add up to the flow's total.
fn assert_intervals_tile(out: &StreamOutput) {
    let flows = &out.data.flows;
    let intervals = &out.data.intervals;
    let mut sums = vec![0u64; flows.len()];
    for s in intervals {
        assert_eq!(s.flows.len(), flows.len());
        for (i, f) in s.flows.iter().enumerate() {
            assert_eq!(f.flow, flows[i].flow);
            sums[i] += f.bytes;
        }
    }
    for (f, sum) in flows.iter().zip(sums) {
        assert_eq!(sum, f.total_bytes, "flow {}", f.flow);
    }
    for w in intervals.windows(2) {
        assert_eq!(w[0].span.end_ns, w[1].span.start_ns);
    }
}

/// The copy path of a flow's role.
fn copy_path(role: Role) -> PathUsed {
    match role {
        Role::Sender => PathUsed::Send(SendPath::Copy),
        Role::Receiver => PathUsed::Recv(RecvPath::Copy),
    }
}

#[test]
fn thousand_flows_account_exactly() {
    let _g = traffic_lock();
    let n = 1000;
    let cfg = config(200, 1000, Some(250));
    let (snd, rcv) = run_both(&cfg, 2, n);
    let sent: u64 = snd.data.flows.iter().map(|f| f.total_bytes).sum();
    let window: u64 = rcv.data.flows.iter().map(|f| f.window_bytes).sum();
    eprintln!(
        "{n} flows: {sent} bytes, {window} in the receive windows; warnings {:?} {:?}",
        snd.warnings, rcv.warnings
    );
    assert!(snd.aborted.is_none() && rcv.aborted.is_none());
    assert_totals_match(&snd, &rcv, n);
    for f in snd.data.flows.iter().chain(&rcv.data.flows) {
        assert_eq!(f.error, None, "flow {} {:?}", f.flow, f.role);
        assert_eq!(f.path, copy_path(f.role));
        assert_eq!(f.path_fallback, None);
        assert!(
            f.socket.tcp_info.is_some()
                && f.socket.sndbuf_bytes.is_some()
                && f.socket.rcvbuf_bytes.is_some()
        );
        assert!(f.window.end_ns >= f.window.start_ns);
    }
    assert!(sent > 0);
    assert_intervals_tile(&snd);
    assert_intervals_tile(&rcv);
    // (A starved sampler takes fewer samples; the final one is always there.)
    assert!(snd.data.intervals[0].in_warmup && rcv.data.intervals[0].in_warmup);
    assert!(snd.warnings.is_empty(), "{:?}", snd.warnings);
    assert!(rcv.warnings.is_empty(), "{:?}", rcv.warnings);
    assert!(snd.cpu.is_some() && rcv.cpu.is_some());
}

/// Aborts `abort` once the receive counters (summed from the samples) reach `expected`.
struct AbortWhenDrained<'a> {
    expected: &'a Mutex<Option<Vec<u64>>>,
    seen: Vec<u64>,
    abort: &'a Abort,
    aborted_at: &'a Mutex<Option<Instant>>,
}

impl Sink<ByteInterval> for AbortWhenDrained<'_> {
    fn interval(&mut self, s: &ByteInterval) {
        self.seen.resize(s.flows.len(), 0);
        for (i, f) in s.flows.iter().enumerate() {
            self.seen[i] += f.bytes;
        }
        let expected = self.expected.lock().unwrap();
        if expected.as_ref() == Some(&self.seen) && !self.abort.is_set() {
            *self.aborted_at.lock().unwrap() = Some(Instant::now());
            self.abort.abort(AbortReason::Interrupted);
        }
    }
}

/// Signals once, on the first interval that ends at or after `at_ns` on the engine's clock.
struct SignalAt {
    at_ns: u64,
    tx: Option<mpsc::Sender<()>>,
}

impl Sink<ByteInterval> for SignalAt {
    fn interval(&mut self, s: &ByteInterval) {
        if s.span.end_ns >= self.at_ns {
            if let Some(tx) = self.tx.take() {
                let _ = tx.send(());
            }
        }
    }
}

/// The sender end is aborted after 300 ms of a 1 s run: it stops, sends FIN and returns.
/// The receiver end reads to EOF; once its samples show every sent byte, it is aborted too.
/// Both return well within a second of their abort, marked aborted, with equal totals.
/// (The receiver end's run is 5 s long, so that even on a slow host its abort comes before
/// its own stop instant.)
#[test]
fn abort_returns_promptly_with_equal_totals() {
    let _g = traffic_lock();
    let n = 8;
    let cfg = config(0, 1000, Some(20));
    let rx_cfg = StreamConfig {
        timing: Timing {
            duration: Duration::from_secs(5),
            ..cfg.timing.clone()
        },
        ..cfg.clone()
    };
    let (snd_plans, rcv_plans) = pairs(n, false);
    let abort_tx = Abort::new();
    let abort_rx = Abort::new();
    let expected = Mutex::new(None);
    let rx_aborted_at = Mutex::new(None);
    let t0 = Instant::now();
    let (snd, tx_return, tx_aborted_at, rcv, rx_return) = thread::scope(|s| {
        let r = s.spawn(|| {
            let mut sink = AbortWhenDrained {
                expected: &expected,
                seen: Vec::new(),
                abort: &abort_rx,
                aborted_at: &rx_aborted_at,
            };
            let out = many::run(&rx_cfg, 2, rcv_plans, &mut sink, &abort_rx);
            (out, Instant::now())
        });
        // The sender end's abort comes from another thread once the sender end's own clock
        // has passed 300 ms (its sampler says so), not after a sleep of ours.
        let (sig_tx, sig_rx) = mpsc::channel();
        let abort_tx = &abort_tx;
        let aborter = s.spawn(move || {
            sig_rx.recv().ok().map(|()| {
                let at = Instant::now();
                abort_tx.abort(AbortReason::Interrupted);
                at
            })
        });
        let mut signal = SignalAt {
            at_ns: 300_000_000,
            tx: Some(sig_tx),
        };
        let snd = many::run(&cfg, 2, snd_plans, &mut signal, abort_tx);
        let tx_return = Instant::now();
        drop(signal);
        let tx_aborted_at = aborter.join().unwrap();
        *expected.lock().unwrap() = Some(snd.data.flows.iter().map(|f| f.total_bytes).collect());
        let (rcv, rx_return) = r.join().unwrap();
        (snd, tx_return, tx_aborted_at, rcv, rx_return)
    });
    let tx_aborted_at = tx_aborted_at.expect("sender end aborted (300 ms passed in its run)");
    let tx_after_abort = tx_return - tx_aborted_at;
    let rx_aborted_at = rx_aborted_at.lock().unwrap().expect("receiver end aborted");
    let rx_after_abort = rx_return - rx_aborted_at;
    eprintln!(
        "sender end aborted {:?} after the start and returned {tx_after_abort:?} after its \
         abort, receiver end {rx_after_abort:?} after its abort ({:?} after the start); totals \
         {:?}",
        tx_aborted_at - t0,
        rx_return - t0,
        snd.data
            .flows
            .iter()
            .map(|f| f.total_bytes)
            .collect::<Vec<_>>()
    );
    assert_eq!(snd.aborted, Some(AbortReason::Interrupted));
    assert_eq!(rcv.aborted, Some(AbortReason::Interrupted));
    assert!(
        tx_after_abort < Duration::from_secs(1),
        "{tx_after_abort:?}"
    );
    assert!(
        rx_after_abort < Duration::from_secs(1),
        "{rx_after_abort:?}"
    );
    assert_totals_match(&snd, &rcv, n);
    for f in snd.data.flows.iter().chain(&rcv.data.flows) {
        assert_eq!(f.error, None, "flow {} {:?}", f.flow, f.role);
        assert!(f.total_bytes > 0);
    }
    assert_intervals_tile(&snd);
    assert_intervals_tile(&rcv);
}

/// A receiving end under the server's rate policy of 8 Mbit/s over loopback exceeds it (plus
/// its 4 MiB of slack) at once: it aborts with "limit exceeded" well before its 10 s stop,
/// sets the abort handle (shared with the sending end here), and both ends return promptly.
///
/// The policy now counts every byte an end moves (sent or received), so only the receiving
/// end (the server here) carries it; before, it counted received bytes only and an end with
/// no receiving flows was exempt by construction. The sending end has no policy: the reason
/// it reports is the receiving end's, carried by the shared handle (the first reason wins).
#[test]
fn max_rate_policy_aborts_the_run() {
    let _g = traffic_lock();
    let n = 4;
    let tx_cfg = config(0, 10_000, Some(100));
    let rx_cfg = StreamConfig {
        timing: Timing {
            policy: Some(RatePolicy::new(8_000_000)),
            ..tx_cfg.timing.clone()
        },
        ..tx_cfg.clone()
    };
    let t0 = Instant::now();
    let (snd, rcv) = run_both_with(&tx_cfg, &rx_cfg, 2, n);
    let took = t0.elapsed();
    let reason = rcv.aborted.clone().expect("receiving end aborted");
    eprintln!(
        "receiving end aborted: {reason:?}; sending end {:?}",
        snd.aborted
    );
    // "limit exceeded: data arrived at <observed> above the server's max_rate_bps of 8000000"
    match &reason {
        AbortReason::LimitExceeded {
            limit,
            observed_bps,
            max_bps,
        } => {
            assert_eq!(*limit, LimitName::MaxRate, "{reason:?}");
            assert_eq!(*max_bps, 8_000_000, "{reason:?}");
            assert!(*observed_bps > *max_bps, "{reason:?}");
        }
        other => panic!("not a limit exceeded: {other:?}"),
    }
    // Aborted by the shared handle; having no policy of its own, the sending end reports the
    // receiving end's reason, not one of its own.
    let snd_reason = snd.aborted.clone().expect("sending end aborted");
    assert!(tx_cfg.timing.policy.is_none());
    assert_eq!(snd_reason, reason);
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert_intervals_tile(&snd);
    assert_intervals_tile(&rcv);
}

/// Receive-window bytes over 100 flows: min/median/max and Jain's index, printed.
#[test]
fn hundred_flows_all_move_data() {
    let _g = traffic_lock();
    let n = 100;
    let cfg = config(200, 1000, None);
    let (snd, rcv) = run_both(&cfg, 2, n);
    assert!(snd.aborted.is_none() && rcv.aborted.is_none());
    assert_totals_match(&snd, &rcv, n);
    let mut bytes: Vec<u64> = rcv.data.flows.iter().map(|f| f.window_bytes).collect();
    bytes.sort_unstable();
    let values: Vec<f64> = bytes.iter().map(|&b| b as f64).collect();
    let jain = wirebench_stats::summary::jain_index(&values);
    eprintln!(
        "{n} flows, receive window bytes: min {} median {} max {}; Jain's index {jain:?}",
        bytes[0],
        bytes[n / 2],
        bytes[n - 1]
    );
    for f in &rcv.data.flows {
        assert!(
            f.window_bytes > 0,
            "flow {} moved nothing in its window: total {} window {}..{} ns; sender {:?}",
            f.flow,
            f.total_bytes,
            f.window.start_ns,
            f.window.end_ns,
            snd.data.flows[f.flow as usize]
        );
        assert_eq!(f.error, None);
    }
}

/// Paths other than copy fall back to copy with a reason and a warning; a rate is ignored
/// with a warning; verification checks every byte.
#[test]
fn other_paths_and_rate_fall_back_with_warnings() {
    let _g = traffic_lock();
    let mut cfg = config(0, 300, None);
    cfg.send_path = SendPath::Zerocopy;
    cfg.recv_path = RecvPath::Discard;
    cfg.rate_bps = Some(1_000_000);
    cfg.verify = true;
    let (snd, rcv) = run_both(&cfg, 2, 3);
    eprintln!("warnings {:?} {:?}", snd.warnings, rcv.warnings);
    assert!(snd.aborted.is_none() && rcv.aborted.is_none());
    assert_totals_match(&snd, &rcv, 3);
    for f in snd.data.flows.iter().chain(&rcv.data.flows) {
        assert_eq!(f.error, None);
        assert_eq!(f.path, copy_path(f.role));
        // "...; used copy": the engine has only the copy path.
        assert_eq!(f.path_fallback, Some(FallbackReason::EngineHasOnlyCopy));
    }
    for f in &rcv.data.flows {
        assert_eq!(
            f.verify,
            Some(VerifyCounts {
                verified_bytes: f.total_bytes,
                mismatched_bytes: 0,
            })
        );
        assert!(f.total_bytes > 0);
    }
    assert_eq!(snd.warnings.len(), 2, "{:?}", snd.warnings);
    // "rate_bps 1000000 ignored"
    assert!(snd.warnings.contains(&Warning::PacingUnsupported {
        rate_bps: 1_000_000
    }));
    // "flows 0, 1, 2: send path zerocopy could not be set up"
    assert!(snd.warnings.contains(&Warning::PathFallback {
        flows: vec![0, 1, 2],
        requested: PathUsed::Send(SendPath::Zerocopy),
        reason: FallbackReason::EngineHasOnlyCopy,
    }));
    assert_eq!(rcv.warnings.len(), 1, "{:?}", rcv.warnings);
    // "flows 0, 1, 2: receive path discard could not be set up"
    assert_eq!(
        rcv.warnings[0],
        Warning::PathFallback {
            flows: vec![0, 1, 2],
            requested: PathUsed::Recv(RecvPath::Discard),
            reason: FallbackReason::EngineHasOnlyCopy,
        }
    );
}

/// Aggregate receive rate of one 3 s run (after a 500 ms warm-up), Gbit/s.
fn aggregate_gbps(n: usize) -> f64 {
    let mut cfg = config(500, 3000, None);
    cfg.timing.drain_limit = Duration::from_secs(10);
    let (snd, rcv) = pairs(n, true);
    let abort = Abort::new();
    let (snd, rcv) = thread::scope(|s| {
        let r = s.spawn(|| many::run(&cfg, 2, rcv, &mut NullSink, &abort));
        let t = many::run(&cfg, 2, snd, &mut NullSink, &abort);
        (t, r.join().unwrap())
    });
    assert_totals_match(&snd, &rcv, n);
    assert!(rcv.data.flows.iter().all(|f| f.error.is_none()));
    assert_eq!(
        rcv.data.flows[0].socket.congestion.as_deref(),
        Some("cubic")
    );
    // The engine returns counts; the rate is computed here from the window bytes and the
    // span of the receive windows.
    let bytes: u64 = rcv.data.flows.iter().map(|f| f.window_bytes).sum();
    let start = rcv
        .data
        .flows
        .iter()
        .map(|f| f.window.start_ns)
        .min()
        .unwrap();
    let end = rcv
        .data
        .flows
        .iter()
        .map(|f| f.window.end_ns)
        .max()
        .unwrap();
    bytes as f64 * 8.0 / (end - start) as f64
}

/// 1 flow vs 1000 flows on loopback (cubic), two workers per end, median of 3 runs each
/// (interleaved, so that slow phases of a noisy host hit both alike). Run with
/// `cargo test --release -p wirebench-engine --test main many:: -- --ignored --nocapture`.
#[test]
#[ignore = "measurement, about 30 s"]
fn one_vs_thousand_flows_throughput() {
    let _g = traffic_lock();
    let counts = [1usize, 1000];
    let mut runs = [Vec::new(), Vec::new()];
    for _ in 0..3 {
        for (k, &n) in counts.iter().enumerate() {
            runs[k].push(aggregate_gbps(n));
        }
    }
    let mut medians = Vec::new();
    for (runs, n) in runs.iter_mut().zip(counts) {
        eprintln!("{n} flow(s): runs {runs:.2?} Gbit/s");
        runs.sort_by(f64::total_cmp);
        medians.push(runs[1]);
    }
    eprintln!(
        "median aggregate receive rate: 1 flow {:.2} Gbit/s, 1000 flows {:.2} Gbit/s \
         ({:.1}% of one flow)",
        medians[0],
        medians[1],
        100.0 * medians[1] / medians[0]
    );
}

/// The kernel's allowed-CPU list of every live thread of this process whose name starts
/// with `prefix` (from /proc/self/task/*/comm and .../status `Cpus_allowed_list`).
fn affinity_of_threads(prefix: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return found;
    };
    for t in tasks.flatten() {
        let comm = std::fs::read_to_string(t.path().join("comm")).unwrap_or_default();
        let comm = comm.trim().to_string();
        if !comm.starts_with(prefix) {
            continue;
        }
        let status = std::fs::read_to_string(t.path().join("status")).unwrap_or_default();
        if let Some(l) = status.lines().find(|l| l.starts_with("Cpus_allowed_list:")) {
            found.push((comm, l["Cpus_allowed_list:".len()..].trim().to_string()));
        }
    }
    found.sort();
    found
}

/// Signals once, on the first interval sample.
struct SignalFirst(Option<mpsc::Sender<()>>);

impl Sink<ByteInterval> for SignalFirst {
    fn interval(&mut self, _s: &ByteInterval) {
        if let Some(tx) = self.0.take() {
            let _ = tx.send(());
        }
    }
}

/// Round-robin pinning: with the round-robin list [c0, c1] and 3 workers per end, the kernel
/// says worker w may run only on `list[w % 2]` (read from /proc while the run is going).
#[test]
fn workers_are_pinned_round_robin() {
    let _g = traffic_lock();
    let allowed = wirebench_sys::thread::current_thread_affinity().unwrap();
    // Reversed, so that the pinning differs from the natural order.
    let pins: Vec<usize> = allowed.iter().rev().copied().collect();
    // Intervals only to learn that both ends' samplers run, i.e. that every worker has
    // pinned itself and registered (the timeline starts after that).
    let mut cfg = config(0, 1500, Some(50));
    cfg.timing.pin = Pinning {
        cpu: None,
        round_robin: pins.clone(),
    };
    let (snd, rcv) = pairs(6, false);
    let abort = Abort::new();
    let (cfg, abort) = (&cfg, &abort);
    let (seen, outs) = thread::scope(|s| {
        let (tx, started) = mpsc::channel();
        let (tx_r, tx_t) = (tx.clone(), tx);
        let r = s.spawn(move || many::run(cfg, 3, rcv, &mut SignalFirst(Some(tx_r)), abort));
        let t = s.spawn(move || many::run(cfg, 3, snd, &mut SignalFirst(Some(tx_t)), abort));
        // Both ends sampling (their sinks are dropped, and the channel closed, when they
        // return, so this cannot hang).
        for _ in 0..2 {
            started.recv().expect("both ends take an interval sample");
        }
        let seen = affinity_of_threads("wb-many-");
        (seen, (t.join().unwrap(), r.join().unwrap()))
    });
    assert_totals_match(&outs.0, &outs.1, 6);
    // Both ends' workers 0, 1, 2 (each name twice).
    assert_eq!(seen.len(), 6, "{seen:?}");
    for (name, list) in &seen {
        let w: usize = name["wb-many-".len()..].parse().unwrap();
        assert_eq!(list, &pins[w % pins.len()].to_string(), "{name}: {seen:?}");
    }
    for f in outs.0.data.flows.iter().chain(&outs.1.data.flows) {
        assert_eq!(f.error, None, "flow {}", f.flow);
    }
}
