//! Request/response engine on 127.0.0.1, checked against independent ground truth: hand-made
//! servers and clients that count for themselves, fixed server delays, fixed drop patterns.
//!
//! The tests take a shared lock so that their timing figures do not disturb one another.

use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;
use std::time::{Duration, Instant};

use wirebench_engine::rr::{
    self, CrrClient, CrrClientFlow, CrrServer, CrrServerFlow, OpenLoop, Pacing, RrConfig, RrFlows,
    TcpRrClient, TcpRrFlow, TcpRrServer, UdpRrClient, UdpRrFlow, UdpRrServer,
    SERVER_IDLE_AFTER_STOP, UDP_SEQ_BYTES,
};
use wirebench_engine::{Abort, EngineOutput, NullSink, Sink, Timing};
use wirebench_model::abort::{AbortReason, EngineKind};
use wirebench_model::rr::{RrInterval, RrRole, RrSide};
use wirebench_model::spec::{
    CloseMode, CommonSpec, Limits, RrSpec, TestSpec, UdpRrSpec, WorkloadSpec, MAX_UDP_PAYLOAD_BYTES,
};
use wirebench_model::validate::{LimitName, SpecError, SpecField, SpecProblem};
use wirebench_model::warning::{Step, Warning};

type RrOutput = EngineOutput<RrSide>;

/// Below this share of its requested rate an open-loop flow is reported as behind (the
/// analysis' `OPEN_LOOP_BEHIND_FRACTION` in `wirebench-report`, which now raises the
/// warning the engine used to).
const OPEN_LOOP_BEHIND_FRACTION: f64 = 0.95;

use wirebench_testkit::net::loopback_pair as tcp_pair;
use wirebench_testkit::serial;

fn cfg(warmup_ms: u64, duration_ms: u64) -> RrConfig {
    RrConfig {
        timing: Timing {
            warmup: Duration::from_millis(warmup_ms),
            duration: Duration::from_millis(duration_ms),
            drain_limit: Duration::from_secs(1),
            ..Timing::default()
        },
        ..RrConfig::default()
    }
}

/// A TCP RR client end of one flow (flow 0) on `stream`.
fn tcp_client_end(stream: TcpStream, pacing: Pacing) -> RrFlows {
    RrFlows::TcpClient(TcpRrClient {
        flows: vec![TcpRrFlow { flow: 0, stream }],
        pacing,
        busy_poll: None,
    })
}

/// A TCP RR server end of one flow (flow 0) on `stream`.
fn tcp_server_end(stream: TcpStream) -> RrFlows {
    RrFlows::TcpServer(TcpRrServer {
        flows: vec![TcpRrFlow { flow: 0, stream }],
        busy_poll: None,
    })
}

/// A UDP RR client end of one flow (flow 0) on `socket`, a transaction lost after `timeout`.
fn udp_client_end(socket: UdpSocket, timeout: Duration) -> RrFlows {
    RrFlows::UdpClient(UdpRrClient {
        flows: vec![UdpRrFlow { flow: 0, socket }],
        timeout,
        busy_poll: None,
    })
}

/// A UDP RR server end of one flow (flow 0) on `socket`.
fn udp_server_end(socket: UdpSocket) -> RrFlows {
    RrFlows::UdpServer(UdpRrServer {
        flows: vec![UdpRrFlow { flow: 0, socket }],
        busy_poll: None,
    })
}

fn window_s(o: &RrOutput) -> f64 {
    o.data.window.len_ns() as f64 / 1e9
}

/// Window transactions per second of one flow: the engine returns counts, the rate is
/// computed here as the analysis does (window transactions / the client's window).
fn flow_achieved_per_s(o: &RrOutput, flow: usize) -> f64 {
    o.data.flows[flow].window.transactions as f64 / window_s(o)
}

#[derive(Default)]
struct Collect(Vec<RrInterval>);

impl Sink<RrInterval> for Collect {
    fn interval(&mut self, s: &RrInterval) {
        self.0.push(s.clone());
    }
}

/// Run a TCP RR client paced by `pacing` against the engine's own server on one connection
/// pair.
fn tcp_rr_both(c: &RrConfig, pacing: Pacing) -> (RrOutput, RrOutput, Vec<RrInterval>) {
    let (cs, ss) = tcp_pair();
    let abort = Abort::new();
    thread::scope(|sc| {
        let server = sc.spawn(|| rr::run(c, tcp_server_end(ss), &mut NullSink, &abort));
        let mut sink = Collect::default();
        let client = rr::run(c, tcp_client_end(cs, pacing), &mut sink, &abort);
        (client, server.join().unwrap(), sink.0)
    })
}

// ───────── (a) TCP RR 1/1 against the engine's server ─────────

#[test]
fn tcp_rr_client_and_server_agree() {
    let _g = serial();
    let mut c = cfg(100, 500);
    c.timing.interval = Some(Duration::from_millis(100));
    let (client, server, live) = tcp_rr_both(&c, Pacing::default());
    let (ct, st) = (client.data.total_sum(), server.data.total_sum());
    let lat = client.data.latency.unwrap();
    eprintln!(
        "TCP RR 1/1: client window {} total {}, server window {} total {}, {:.0} tr/s, \
         p50 {} ns p99 {} ns max {} ns",
        client.data.window_sum().transactions,
        ct.transactions,
        server.data.window_sum().transactions,
        st.transactions,
        client.data.window_sum().transactions as f64 / window_s(&client),
        lat.p50_ns,
        lat.p99_ns,
        lat.max_ns
    );
    assert!(client.aborted.is_none() && server.aborted.is_none());
    assert_eq!(client.data.flows[0].error, None);
    assert_eq!(server.data.flows[0].error, None);
    // The client reads every response it is owed after the stop before closing, so the totals
    // agree exactly (the ±burst of netperf does not apply).
    assert_eq!(ct.transactions, st.transactions);
    assert!(client.data.window_sum().transactions > 100);
    assert!(
        client.data.window_sum().transactions < ct.transactions,
        "warm-up excluded"
    );
    // Latencies recorded for exactly the window transactions.
    assert_eq!(lat.count, client.data.window_sum().transactions);
    assert!(lat.p50_ns < 1_000_000, "loopback p50 {} ns", lat.p50_ns);
    assert!(lat.min_ns > 0 && lat.min_ns <= lat.p50_ns && lat.p50_ns <= lat.max_ns);
    // Intervals tile the run: their transactions add up to the total, live and returned alike.
    let sum: u64 = client
        .data
        .intervals
        .iter()
        .map(|i| i.flows[0].transactions)
        .sum();
    assert_eq!(sum, ct.transactions);
    assert_eq!(live, client.data.intervals);
    assert!(client.data.intervals.len() >= 5);
    assert!(client.data.intervals[0].in_warmup && !client.data.intervals[2].in_warmup);
    for w in client.data.intervals.windows(2) {
        assert_eq!(w[0].span.end_ns, w[1].span.start_ns);
    }
    assert_eq!(client.data.role, RrRole::Client);
    assert_eq!(server.data.role, RrRole::Server);
    // The output no longer names its workload (the spec does). What identifies TCP RR in
    // it: no CRR close mode, TCP_INFO read from the flow's connection (TCP, not UDP), and
    // one thread for the one closed-loop flow.
    assert_eq!(client.data.close_mode, None);
    assert!(matches!(
        client.engine,
        EngineKind::ThreadPerFlow { threads: 1, .. }
    ));
    assert!(server.data.latency.is_none() && server.data.flows[0].latency.is_none());
    assert!(client.data.flows[0].tcp_info.is_some());
    // Interval round trips: exactly the intervals that completed transactions have them
    // (count and histogram are sampled together), ordered, and with one flow the merged
    // figures are the flow's; a server has none.
    for i in &client.data.intervals {
        let f = &i.flows[0];
        assert_eq!(f.rtt_p50_ns.is_some(), f.transactions > 0, "{i:?}");
        assert_eq!(f.rtt_p99_ns.is_some(), f.transactions > 0, "{i:?}");
        assert!(f.rtt_p50_ns <= f.rtt_p99_ns, "{i:?}");
        assert_eq!((i.rtt_p50_ns, i.rtt_p99_ns), (f.rtt_p50_ns, f.rtt_p99_ns));
    }
    assert!(server
        .data
        .intervals
        .iter()
        .all(|i| i.rtt_p50_ns.is_none() && i.flows[0].rtt_p50_ns.is_none()));
    // Addresses: each end's own is what the other end sees.
    let (c, s) = (&client.data.flows[0], &server.data.flows[0]);
    assert!(c.local.is_some() && c.peer.is_some(), "{c:?}");
    assert_eq!((&c.local, &c.peer), (&s.peer, &s.local));
}

// ───────── hand-made TCP servers ─────────

/// A hand-made server's threads and the responses it wrote.
struct HandServer {
    answered: Arc<AtomicU64>,
    threads: Vec<thread::JoinHandle<()>>,
}

impl HandServer {
    /// Wait until the server has finished (its client closed the connection) and return
    /// how many responses it wrote.
    fn join(self) -> u64 {
        for t in self.threads {
            t.join().unwrap();
        }
        self.answered.load(Ordering::SeqCst)
    }
}

/// A server that answers every request 2 ms after it arrived, with unlimited concurrency (a
/// delay line: one thread reads, one writes), counting the responses it wrote.
fn delay_line_server(s: TcpStream, req: usize, resp: usize, delay: Duration) -> HandServer {
    let answered = Arc::new(AtomicU64::new(0));
    let count = answered.clone();
    let (tx, rx) = mpsc::channel::<Instant>();
    s.set_nodelay(true).unwrap();
    let mut w = s.try_clone().unwrap();
    let reader = thread::spawn(move || {
        let mut r = s;
        let mut buf = vec![0u8; req];
        while r.read_exact(&mut buf).is_ok() {
            let _ = tx.send(Instant::now() + delay);
        }
        // tx dropped: the writer finishes the queue, then closes.
    });
    let writer = thread::spawn(move || {
        let out = vec![7u8; resp];
        for due in rx {
            let now = Instant::now();
            if due > now {
                thread::sleep(due - now);
            }
            if w.write_all(&out).is_err() {
                return;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
        let _ = w.shutdown(std::net::Shutdown::Write);
    });
    HandServer {
        answered,
        threads: vec![reader, writer],
    }
}

/// A server that serves one request at a time and sleeps `service` before each response
/// (capacity ≈ 1 / service), counting responses.
fn sequential_server(s: TcpStream, req: usize, resp: usize, service: Duration) -> HandServer {
    let answered = Arc::new(AtomicU64::new(0));
    let count = answered.clone();
    s.set_nodelay(true).unwrap();
    let server = thread::spawn(move || {
        let mut s = s;
        let mut buf = vec![0u8; req];
        let out = vec![7u8; resp];
        while s.read_exact(&mut buf).is_ok() {
            thread::sleep(service);
            if s.write_all(&out).is_err() {
                return;
            }
            count.fetch_add(1, Ordering::SeqCst);
        }
    });
    HandServer {
        answered,
        threads: vec![server],
    }
}

fn tcp_client(c: &RrConfig, pacing: Pacing, stream: TcpStream) -> RrOutput {
    rr::run(
        c,
        tcp_client_end(stream, pacing),
        &mut NullSink,
        &Abort::new(),
    )
}

// ───────── (b) a 2 ms server ─────────

#[test]
fn tcp_rr_slow_server_latency_and_rate() {
    let _g = serial();
    let (cs, ss) = tcp_pair();
    let (client_addr, server_addr) = (cs.local_addr().unwrap(), cs.peer_addr().unwrap());
    let server = delay_line_server(ss, 1, 1, Duration::from_millis(2));
    let mut c = cfg(50, 600);
    c.timing.interval = Some(Duration::from_millis(100));
    let out = tcp_client(&c, Pacing::default(), cs);
    let lat = out.data.latency.unwrap();
    let w = out.data.window_sum().transactions;
    let tps = w as f64 / window_s(&out);
    let expected_tps = 1e9 / lat.mean_ns;
    eprintln!(
        "2 ms server: {w} window transactions, {tps:.1} tr/s, 1/mean RTT {expected_tps:.1}/s, \
         p50 {} ns, p99 {} ns",
        lat.p50_ns, lat.p99_ns
    );
    assert!(
        lat.p50_ns >= 2_000_000 && lat.p50_ns < 4_000_000,
        "p50 {}",
        lat.p50_ns
    );
    assert!(
        lat.min_ns >= 2_000_000,
        "no response before the server's delay"
    );
    // One transaction at a time: rate = 1 / RTT (less the client's own time between a
    // response and the next request).
    assert!(
        (tps / expected_tps - 1.0).abs() < 0.1,
        "tps {tps} vs 1/RTT {expected_tps}"
    );
    // Ground truth from the server's own count, once it has written its last response (its
    // threads end after the client's close).
    assert_eq!(out.data.total_sum().transactions, server.join());
    // Every round trip waited for the server's 2 ms, so does every interval's median; the
    // window's median lies between the medians of the intervals inside the window (within
    // the interval histograms' 1 %).
    let inside: Vec<u64> = out
        .data
        .intervals
        .iter()
        .filter(|i| !i.in_warmup && i.span.end_ns <= out.data.window.end_ns)
        .filter_map(|i| i.rtt_p50_ns)
        .collect();
    eprintln!("2 ms server: interval medians {inside:?} ns");
    assert!(inside.len() >= 3, "{:?}", out.data.intervals);
    for i in &out.data.intervals {
        if let (Some(p50), Some(p99)) = (i.rtt_p50_ns, i.rtt_p99_ns) {
            assert!(p50 >= 2_000_000 && p50 <= p99, "{i:?}");
        }
    }
    let (lo, hi) = (inside.iter().min().unwrap(), inside.iter().max().unwrap());
    assert!(
        *lo as f64 <= lat.p50_ns as f64 * 1.01 && lat.p50_ns as f64 <= *hi as f64 * 1.01,
        "window p50 {} outside the interval medians {lo}..{hi}",
        lat.p50_ns
    );
    // The addresses are the connection's, as the test's own socket saw them.
    let f = &out.data.flows[0];
    assert_eq!(f.local, Some(client_addr.to_string()));
    assert_eq!(f.peer, Some(server_addr.to_string()));
}

// ───────── (c) burst 4 against the 2 ms server ─────────

#[test]
fn tcp_rr_burst_multiplies_transactions() {
    let _g = serial();
    // Burst 1 and burst 4 run at the same time, each against its own 2 ms delay line, so
    // that both see the same machine (this box is shared; a stall hits both alike).
    let run = |burst: u32| {
        let (cs, ss) = tcp_pair();
        let server = delay_line_server(ss, 1, 1, Duration::from_millis(2));
        let out = tcp_client(&cfg(50, 500), Pacing::Closed { burst }, cs);
        assert_eq!(out.data.total_sum().transactions, server.join());
        assert_eq!(out.data.flows[0].error, None);
        out
    };
    let (one, four) = thread::scope(|sc| {
        let one = sc.spawn(|| run(1));
        let four = run(4);
        (one.join().unwrap(), four)
    });
    let rate = |o: &RrOutput| o.data.window_sum().transactions as f64 / window_s(o);
    let (t1, t4) = (rate(&one), rate(&four));
    let ratio = t4 / t1;
    // Little's law: transactions in flight = rate × mean latency, which must be the burst.
    let in_flight = |o: &RrOutput| rate(o) * o.data.latency.unwrap().mean_ns / 1e9;
    eprintln!(
        "burst 1: {t1:.1} tr/s p50 {} ns, in flight {:.2}; burst 4: {t4:.1} tr/s p50 {} ns, \
         in flight {:.2}; ratio {ratio:.2}",
        one.data.latency.unwrap().p50_ns,
        in_flight(&one),
        four.data.latency.unwrap().p50_ns,
        in_flight(&four)
    );
    assert!(ratio > 3.5 && ratio < 4.5, "ratio {ratio}");
    assert!((in_flight(&one) - 1.0).abs() < 0.1);
    assert!((in_flight(&four) - 4.0).abs() < 0.4);
    // Each transaction still takes one 2 ms round trip.
    let p50 = four.data.latency.unwrap().p50_ns;
    assert!((2_000_000..4_000_000).contains(&p50), "burst p50 {p50}");
}

// ───────── (d) open loop ─────────

/// Slots of a `per_s` schedule (slot `k` due at `k / per_s` after the start) due before
/// `ns`: the slot count the engine reports for a window `[0, ns]`.
fn slots_before(ns: u64, per_s: u64) -> u64 {
    (u128::from(ns) * u128::from(per_s)).div_ceil(1_000_000_000) as u64
}

#[test]
fn open_loop_overload_shows_queueing_latency() {
    let _g = wirebench_testkit::link_bound();
    let (cs, ss) = tcp_pair();
    // Capacity ≈ 1 / 2 ms ≈ 480/s; ask for 1000/s.
    let server = sequential_server(ss, 1, 1, Duration::from_millis(2));
    let pacing = Pacing::Open(OpenLoop {
        per_s: 1000,
        max_outstanding: 1000,
    });
    let out = tcp_client(&cfg(0, 600), pacing, cs);
    let ol = out.data.flows[0].open_loop.unwrap();
    let lat = out.data.latency.unwrap();
    let achieved_per_s = flow_achieved_per_s(&out, 0);
    eprintln!(
        "open loop 1000/s vs 2 ms server: achieved {achieved_per_s:.1}/s, p50 {} ns, p99 {} ns, \
         max {} ns, sent {}, missed {}, peak outstanding {}; warnings {:?}",
        lat.p50_ns,
        lat.p99_ns,
        lat.max_ns,
        ol.sent_total,
        ol.missed_slots,
        ol.peak_outstanding,
        out.warnings
    );
    // The requested rate is no longer echoed in the output; the slots the engine scheduled
    // in the window (which opens at 0 without a warm-up) show it ran at exactly 1000/s.
    assert_eq!(out.data.window.start_ns, 0);
    assert_eq!(
        ol.slots_in_window,
        slots_before(out.data.window.end_ns, 1000)
    );
    assert!(achieved_per_s < 600.0, "achieved {achieved_per_s}");
    // Latency from the scheduled send time keeps the queue in view: far beyond 2 ms.
    assert!(lat.p50_ns > 50_000_000, "p50 {}", lat.p50_ns);
    assert!(lat.max_ns > 150_000_000, "max {}", lat.max_ns);
    // The "open loop achieved ... of ... requested" warning is the analysis' now: the run was
    // not aborted and the flow achieved less than 95 % of its requested rate.
    assert!(out.aborted.is_none());
    assert!(
        achieved_per_s < OPEN_LOOP_BEHIND_FRACTION * 1000.0,
        "achieved {achieved_per_s}"
    );
    // The cap was never reached, so the sender only waited for its schedule.
    assert!(ol.peak_outstanding < 1000);
    assert!(ol.missed_slots < 20, "missed {}", ol.missed_slots);
    assert_eq!(out.data.total_sum().transactions, server.join());
    assert_eq!(out.data.total_sum().transactions, ol.sent_total);
}

#[test]
fn open_loop_cap_counts_missed_slots() {
    let _g = serial();
    let (cs, ss) = tcp_pair();
    let server = sequential_server(ss, 1, 1, Duration::from_millis(2));
    let pacing = Pacing::Open(OpenLoop {
        per_s: 1000,
        max_outstanding: 20,
    });
    let out = tcp_client(&cfg(0, 500), pacing, cs);
    let ol = out.data.flows[0].open_loop.unwrap();
    let lat = out.data.latency.unwrap();
    eprintln!(
        "open loop capped at 20: sent {}, missed {} of ~500 slots, peak {}, p50 {} ns, max {} ns",
        ol.sent_total, ol.missed_slots, ol.peak_outstanding, lat.p50_ns, lat.max_ns
    );
    assert_eq!(ol.peak_outstanding, 20);
    // Slots due before the stop: ~500; only ~240 could be served.
    assert!(ol.missed_slots > 150, "missed {}", ol.missed_slots);
    // Every slot due before the stop instant was either sent or missed.
    let due = (out.data.window.end_ns as f64 * 1000.0 / 1e9).ceil() as u64;
    assert_eq!(ol.sent_total + ol.missed_slots, due);
    // Delayed requests keep their scheduled time: latency still grows with the backlog.
    assert!(lat.max_ns > 100_000_000, "max {}", lat.max_ns);
    assert_eq!(out.data.total_sum().transactions, server.join());
}

#[test]
fn open_loop_low_rate_is_achieved() {
    let _g = wirebench_testkit::link_bound();
    let pacing = Pacing::Open(OpenLoop {
        per_s: 200,
        max_outstanding: 100,
    });
    let (client, server, _) = tcp_rr_both(&cfg(100, 1000), pacing);
    let ol = client.data.flows[0].open_loop.unwrap();
    let lat = client.data.latency.unwrap();
    let achieved_per_s = flow_achieved_per_s(&client, 0);
    eprintln!(
        "open loop 200/s: achieved {achieved_per_s:.2}/s ({} in window, {} slots), p50 {} ns, \
         p99 {} ns",
        client.data.window_sum().transactions,
        ol.slots_in_window,
        lat.p50_ns,
        lat.p99_ns
    );
    assert!(
        (achieved_per_s / 200.0 - 1.0).abs() < 0.05,
        "achieved {achieved_per_s}"
    );
    assert!(ol.missed_slots <= 1);
    assert!(lat.p50_ns < 2_000_000, "p50 {}", lat.p50_ns);
    assert!(client.warnings.is_empty(), "{:?}", client.warnings);
    // Nor would the analysis warn that the flow fell behind (its warning, once the engine's).
    assert!(achieved_per_s >= OPEN_LOOP_BEHIND_FRACTION * 200.0);
    assert_eq!(
        client.data.total_sum().transactions,
        server.data.total_sum().transactions
    );
}

// ───────── (e) CRR ─────────

#[derive(Default)]
struct CloseSeen {
    orderly: AtomicU64,
    reset: AtomicU64,
    other: AtomicU64,
}

/// Hand-made CRR server: accept, read the request, write the response, then see how the
/// client closes: `read` → Ok(0) (FIN) or ECONNRESET (RST).
fn crr_hand_server(
    stop: Arc<AtomicBool>,
    req: usize,
    resp: usize,
) -> (SocketAddr, Arc<CloseSeen>, thread::JoinHandle<()>) {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let seen = Arc::new(CloseSeen::default());
    let seen2 = seen.clone();
    let h = thread::spawn(move || {
        let (mut buf, out) = (vec![0u8; req], vec![1u8; resp]);
        while !stop.load(Ordering::SeqCst) {
            let mut s = match l.accept() {
                Ok((s, _)) => s,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    thread::sleep(Duration::from_micros(100));
                    continue;
                }
                Err(_) => continue,
            };
            s.set_nonblocking(false).unwrap();
            s.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
            if s.read_exact(&mut buf).is_err() || s.write_all(&out).is_err() {
                seen2.other.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let mut b = [0u8; 1];
            match s.read(&mut b) {
                Ok(0) => seen2.orderly.fetch_add(1, Ordering::SeqCst),
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => {
                    seen2.reset.fetch_add(1, Ordering::SeqCst)
                }
                _ => seen2.other.fetch_add(1, Ordering::SeqCst),
            };
        }
    });
    (addr, seen, h)
}

fn crr_client_run(c: &RrConfig, close_mode: CloseMode, addr: SocketAddr) -> RrOutput {
    rr::run(
        c,
        RrFlows::CrrClient(CrrClient {
            flows: vec![CrrClientFlow {
                flow: 0,
                connect: Box::new(move || {
                    TcpStream::connect_timeout(&addr, Duration::from_secs(1))
                }),
            }],
            close_mode,
            ..CrrClient::default()
        }),
        &mut NullSink,
        &Abort::new(),
    )
}

#[test]
fn crr_close_modes_seen_by_a_hand_made_server() {
    let _g = serial();
    for mode in [CloseMode::Orderly, CloseMode::Abortive] {
        let stop = Arc::new(AtomicBool::new(false));
        let (addr, seen, h) = crr_hand_server(stop.clone(), 10, 20);
        let c = RrConfig {
            request_size_bytes: 10,
            response_size_bytes: 20,
            ..cfg(0, 300)
        };
        let out = crr_client_run(&c, mode, addr);
        let t = out.data.total_sum();
        // Let the server see the last close: wait until it has classified as many closes as
        // the client made connections (bounded; the counts are checked exactly below).
        let connections = t.transactions + t.errors;
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline
            && seen.orderly.load(Ordering::SeqCst)
                + seen.reset.load(Ordering::SeqCst)
                + seen.other.load(Ordering::SeqCst)
                < connections
        {
            thread::sleep(Duration::from_millis(1));
        }
        stop.store(true, Ordering::SeqCst);
        h.join().unwrap();
        let (orderly, reset, other) = (
            seen.orderly.load(Ordering::SeqCst),
            seen.reset.load(Ordering::SeqCst),
            seen.other.load(Ordering::SeqCst),
        );
        eprintln!(
            "CRR {mode:?}: {} transactions ({:.0}/s), p50 {} ns; server saw {orderly} FIN, \
             {reset} RST, {other} other",
            t.transactions,
            out.data.window_sum().transactions as f64 / window_s(&out),
            out.data.latency.unwrap().p50_ns
        );
        assert_eq!(out.data.close_mode, Some(mode));
        assert!(t.transactions > 20);
        assert_eq!((t.errors, t.connect_errors, other), (0, 0, 0));
        match mode {
            CloseMode::Orderly => assert_eq!((orderly, reset), (t.transactions, 0)),
            CloseMode::Abortive => assert_eq!((orderly, reset), (0, t.transactions)),
        }
    }
}

#[test]
fn crr_client_against_engine_server() {
    let _g = serial();
    for mode in [CloseMode::Orderly, CloseMode::Abortive] {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        l.set_nonblocking(true).unwrap();
        let (tx, rx) = mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stop2 = stop.clone();
        // The "daemon": accept and hand the connections to the engine.
        let acceptor = thread::spawn(move || {
            while !stop2.load(Ordering::SeqCst) {
                match l.accept() {
                    Ok((s, _)) => {
                        let _ = tx.send(s);
                    }
                    Err(_) => thread::sleep(Duration::from_micros(50)),
                }
            }
        });
        let c = cfg(50, 300);
        let abort = Abort::new();
        let (client, server) = thread::scope(|sc| {
            let server = sc.spawn(|| {
                rr::run(
                    &c,
                    RrFlows::CrrServer(CrrServer {
                        flows: vec![CrrServerFlow {
                            flow: 0,
                            accepted: rx,
                        }],
                        ..CrrServer::default()
                    }),
                    &mut NullSink,
                    &abort,
                )
            });
            let client = crr_client_run(&c, mode, addr);
            stop.store(true, Ordering::SeqCst);
            acceptor.join().unwrap();
            (client, server.join().unwrap())
        });
        let (ct, st) = (client.data.total_sum(), server.data.total_sum());
        eprintln!(
            "CRR {mode:?} engine↔engine: client {} server {} (FIN {}, RST {}), p50 {} ns",
            ct.transactions,
            st.transactions,
            st.closes_orderly,
            st.closes_reset,
            client.data.latency.unwrap().p50_ns
        );
        assert_eq!(ct.transactions, st.transactions);
        assert_eq!((ct.errors, st.errors), (0, 0));
        assert!(ct.transactions > 20);
        match mode {
            CloseMode::Orderly => {
                assert_eq!((st.closes_orderly, st.closes_reset), (st.transactions, 0))
            }
            CloseMode::Abortive => {
                assert_eq!((st.closes_orderly, st.closes_reset), (0, st.transactions))
            }
        }
        assert_eq!(server.data.close_mode, None);
        // The last connection's addresses at both ends. Orderly: the server reads them
        // before the client's FIN can have closed the socket, so both ends name the same
        // last connection; abortive: a RST may beat the server's read (it keeps the one
        // before), so only the listening side is certain.
        let (c, s) = (&client.data.flows[0], &server.data.flows[0]);
        assert_eq!(c.peer, Some(addr.to_string()), "{c:?}");
        assert_eq!(s.local, Some(addr.to_string()), "{s:?}");
        assert!(c.local.is_some() && s.peer.is_some());
        if mode == CloseMode::Orderly {
            assert_eq!(c.local, s.peer);
        }
    }
}

#[test]
fn crr_connect_errors_are_counted_and_the_test_goes_on() {
    let _g = serial();
    // A port with nobody listening: bind, note the address, close.
    let addr = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let out = crr_client_run(&cfg(0, 200), CloseMode::Orderly, addr);
    let t = out.data.total_sum();
    eprintln!(
        "CRR to a closed port: {} connect errors in 200 ms",
        t.connect_errors
    );
    assert_eq!(t.transactions, 0);
    assert!(t.connect_errors > 10);
    assert_eq!(t.errors, 0);
    // "flow 0: <n> connects failed, the last with: <error>"
    assert!(
        out.warnings.iter().any(|w| matches!(
            w,
            Warning::RepeatedErrors {
                flow: 0,
                step: Step::Connect,
                count,
                ..
            } if *count == t.connect_errors
        )),
        "{:?}",
        out.warnings
    );
}

// ───────── (f) UDP RR ─────────

struct UdpHand {
    addr: SocketAddr,
    answered: Arc<AtomicU64>,
    dropped: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
    handle: thread::JoinHandle<()>,
}

/// A hand-made UDP server: echoes the 8-byte sequence number in a response of `resp` bytes;
/// drops every `drop_every`-th request (1-based, 0 = never); answers the request with
/// sequence number `delay_seq` only after `delay` (from another thread).
fn udp_hand_server(
    resp: usize,
    drop_every: u64,
    delay_seq: Option<u64>,
    delay: Duration,
) -> UdpHand {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = s.local_addr().unwrap();
    s.set_read_timeout(Some(Duration::from_millis(20))).unwrap();
    let answered = Arc::new(AtomicU64::new(0));
    let dropped = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (a, d, st) = (answered.clone(), dropped.clone(), stop.clone());
    let handle = thread::spawn(move || {
        let mut buf = [0u8; 2048];
        let mut n_req = 0u64;
        while !st.load(Ordering::SeqCst) {
            let Ok((n, peer)) = s.recv_from(&mut buf) else {
                continue;
            };
            assert!(n >= 8);
            n_req += 1;
            if drop_every > 0 && n_req.is_multiple_of(drop_every) {
                d.fetch_add(1, Ordering::SeqCst);
                continue;
            }
            let mut out = vec![0u8; resp];
            out[..8].copy_from_slice(&buf[..8]);
            let seq = u64::from_be_bytes(buf[..8].try_into().unwrap());
            if Some(seq) == delay_seq {
                let s2 = s.try_clone().unwrap();
                let a2 = a.clone();
                thread::spawn(move || {
                    thread::sleep(delay);
                    s2.send_to(&out, peer).unwrap();
                    a2.fetch_add(1, Ordering::SeqCst);
                });
                continue;
            }
            s.send_to(&out, peer).unwrap();
            a.fetch_add(1, Ordering::SeqCst);
        }
    });
    UdpHand {
        addr,
        answered,
        dropped,
        stop,
        handle,
    }
}

/// A UDP RR client of one flow against `addr`, a transaction lost after `timeout`.
fn udp_client_run(
    (c, timeout): (&RrConfig, Duration),
    addr: SocketAddr,
    sink: &mut dyn Sink<RrInterval>,
    abort: &Abort,
) -> RrOutput {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(addr).unwrap();
    rr::run(c, udp_client_end(s, timeout), sink, abort)
}

/// A UDP RR run's configuration (16-byte requests, 32-byte responses) and the client's
/// timeout.
fn udp_cfg(duration_ms: u64, timeout_ms: u64) -> (RrConfig, Duration) {
    let c = RrConfig {
        request_size_bytes: 16,
        response_size_bytes: 32,
        ..cfg(0, duration_ms)
    };
    (c, Duration::from_millis(timeout_ms))
}

#[test]
fn udp_rr_lost_equals_the_dropped_requests() {
    let _g = serial();
    let srv = udp_hand_server(32, 10, None, Duration::ZERO);
    let (mut c, timeout) = udp_cfg(500, 50);
    c.timing.interval = Some(Duration::from_millis(100));
    let out = udp_client_run((&c, timeout), srv.addr, &mut NullSink, &Abort::new());
    srv.stop.store(true, Ordering::SeqCst);
    srv.handle.join().unwrap();
    let t = out.data.total_sum();
    let (answered, dropped) = (
        srv.answered.load(Ordering::SeqCst),
        srv.dropped.load(Ordering::SeqCst),
    );
    eprintln!(
        "UDP RR, every 10th dropped: {} transactions, {} lost, {} late; server answered \
         {answered}, dropped {dropped}; p50 {} ns",
        t.transactions,
        t.lost,
        t.late,
        out.data.latency.unwrap().p50_ns
    );
    // Every request reached the server: each one is a transaction or lost.
    assert_eq!(t.transactions + t.lost, answered + dropped);
    // Lost = the dropped requests + those answered only after the timeout, which come back
    // as late. On a quiet machine late = 0 and lost = dropped exactly; a scheduling stall
    // longer than the timeout (this box is shared) shows up as lost + late, not as a miscount.
    assert_eq!(t.lost - t.late, dropped);
    assert_eq!((t.garbage, t.errors), (0, 0));
    // The test went on past the losses: ~50 ms per loss, µs otherwise.
    assert!(dropped >= 5, "dropped {dropped}");
    assert!(t.transactions >= 9 * dropped);
    let lat = out.data.latency.unwrap();
    assert_eq!(lat.count, out.data.window_sum().transactions);
    assert!(lat.max_ns < 50_000_000, "no latency beyond the timeout");
    // Per interval: the losses add up; a lost transaction has no round trip, so the
    // intervals' percentiles stay below the timeout too (within the histograms' 1 %).
    let iv = &out.data.intervals;
    assert_eq!(iv.iter().map(|i| i.flows[0].lost).sum::<u64>(), t.lost);
    for i in iv {
        assert_eq!(i.rtt_p50_ns.is_some(), i.flows[0].transactions > 0, "{i:?}");
        assert!(i.rtt_p99_ns.is_none_or(|p| p < 50_500_000), "{i:?}");
    }
    // The client's socket is connected to the server's.
    assert_eq!(out.data.flows[0].peer, Some(srv.addr.to_string()));
    assert!(out.data.flows[0].local.is_some());
}

#[test]
fn udp_rr_late_response_is_not_taken_for_the_current_one() {
    let _g = serial();
    // Request 5 is answered 60 ms later; the client's timeout is 20 ms.
    let srv = udp_hand_server(32, 0, Some(5), Duration::from_millis(60));
    let (c, timeout) = udp_cfg(400, 20);
    let out = udp_client_run((&c, timeout), srv.addr, &mut NullSink, &Abort::new());
    srv.stop.store(true, Ordering::SeqCst);
    srv.handle.join().unwrap();
    let t = out.data.total_sum();
    eprintln!(
        "UDP RR, one response 60 ms late: {} transactions, {} lost, {} late, max {} ns",
        t.transactions,
        t.lost,
        t.late,
        out.data.latency.unwrap().max_ns
    );
    let answered = srv.answered.load(Ordering::SeqCst);
    // Had the late response been taken for the current request, every later response would
    // have been one request off (no late count, and garbage or a shifted pairing).
    assert_eq!(t.garbage, 0);
    assert!(t.late >= 1 && t.lost >= 1);
    // Nothing was dropped: every timed-out request was answered later. Quiet machine:
    // exactly (1, 1); a scheduling stall beyond 20 ms adds equal amounts to both.
    assert_eq!(t.lost, t.late);
    assert_eq!(t.transactions + t.lost, answered);
    assert!(t.transactions > 100);
}

// ───────── (g) UDP server: garbage ─────────

#[test]
fn udp_server_counts_garbage_and_answers_the_rest() {
    let _g = serial();
    let ss = UdpSocket::bind("127.0.0.1:0").unwrap();
    let addr = ss.local_addr().unwrap();
    let (c, timeout) = udp_cfg(400, 100);
    let abort = Abort::new();
    let (server, client, hand_answers) = thread::scope(|sc| {
        let server = sc.spawn(|| rr::run(&c, udp_server_end(ss), &mut NullSink, &abort));
        // A hand-made client: garbage of every kind, then 5 well-formed requests.
        let raw = UdpSocket::bind("127.0.0.1:0").unwrap();
        raw.connect(addr).unwrap();
        raw.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        for len in [0usize, 1, 7, 15, 17, 1000] {
            raw.send(&vec![0xAB; len]).unwrap();
        }
        let mut answers = Vec::new();
        for seq in 100u64..105 {
            let mut req = [0u8; 16];
            req[..8].copy_from_slice(&seq.to_be_bytes());
            raw.send(&req).unwrap();
            let mut buf = [0u8; 64];
            let n = raw.recv(&mut buf).unwrap();
            answers.push((n, u64::from_be_bytes(buf[..8].try_into().unwrap())));
        }
        // And the engine's client alongside.
        let client = udp_client_run((&c, timeout), addr, &mut NullSink, &abort);
        (server.join().unwrap(), client, answers)
    });
    let (st, ct) = (server.data.total_sum(), client.data.total_sum());
    eprintln!(
        "UDP server: {} transactions, {} garbage; engine client {} transactions, {} lost",
        st.transactions, st.garbage, ct.transactions, ct.lost
    );
    assert_eq!(st.garbage, 6);
    assert_eq!(
        hand_answers,
        (100u64..105).map(|s| (32, s)).collect::<Vec<_>>()
    );
    // Every request of the engine's client was answered: in time (a transaction) or, after
    // a stall longer than the 100 ms timeout on this shared box, too late (lost).
    assert_eq!(st.transactions, 5 + ct.transactions + ct.lost);
    assert_eq!(ct.garbage, 0);
    assert!(ct.late <= ct.lost && ct.lost * 1000 < ct.transactions);
    assert!(ct.transactions > 100);
    assert_eq!(server.data.flows[0].error, None);
}

/// The flows that block without a receive timeout (a TCP RR client and server, a UDP RR
/// server) read with none set while they run — a timeout arms a kernel timer on every read
/// that blocks — and the waker still ends them: the UDP server (i) once nothing has arrived
/// for [`SERVER_IDLE_AFTER_STOP`] past its stop instant and not before, (ii) soon after its
/// caller says the client has finished. A UDP client keeps its timeout: it is the loss
/// timeout of its transactions. The options are read from duplicates of the sockets while
/// the flows run.
#[test]
fn blocking_flows_read_without_a_timeout_and_the_waker_ends_them() {
    let _g = wirebench_testkit::shared();
    // TCP: both ends' sockets, read 150 ms into a 400 ms run.
    let (cs, ss) = tcp_pair();
    let (cd, sd) = (cs.try_clone().unwrap(), ss.try_clone().unwrap());
    let c = cfg(0, 400);
    let abort = Abort::new();
    let (timeouts, client, server) = thread::scope(|sc| {
        let server = sc.spawn(|| rr::run(&c, tcp_server_end(ss), &mut NullSink, &abort));
        let client = sc.spawn(|| {
            rr::run(
                &c,
                tcp_client_end(cs, Pacing::default()),
                &mut NullSink,
                &abort,
            )
        });
        thread::sleep(Duration::from_millis(150));
        let t = (cd.read_timeout().unwrap(), sd.read_timeout().unwrap());
        (t, client.join().unwrap(), server.join().unwrap())
    });
    assert_eq!(
        timeouts,
        (None, None),
        "TCP client's and server's SO_RCVTIMEO while running"
    );
    let (ct, st) = (client.data.total_sum(), server.data.total_sum());
    assert!(
        ct.transactions > 0 && ct.transactions == st.transactions,
        "{ct:?} {st:?}"
    );
    assert_eq!(
        (
            client.data.flows[0].error.as_ref(),
            server.data.flows[0].error.as_ref()
        ),
        (None, None)
    );

    // UDP: an engine client against an engine server, each ended two ways.
    for peer_finishes in [false, true] {
        let ss = UdpSocket::bind("127.0.0.1:0").unwrap();
        let (addr, sd) = (ss.local_addr().unwrap(), ss.try_clone().unwrap());
        // The client runs 100 ms, the server 300: the client has finished before the
        // server's stop instant, so only the peer rule can end the server before its stop
        // instant + SERVER_IDLE_AFTER_STOP.
        let (c, timeout) = udp_cfg(300, 200);
        let (cc, _) = udp_cfg(100, 200);
        let (server_abort, client_abort) = (Abort::new(), Abort::new());
        let started = Instant::now();
        let (server_timeout, client_timeout, server, server_ended, client) = thread::scope(|sc| {
            let server = sc.spawn(|| {
                let out = rr::run(&c, udp_server_end(ss), &mut NullSink, &server_abort);
                (out, started.elapsed())
            });
            let cs = UdpSocket::bind("127.0.0.1:0").unwrap();
            cs.connect(addr).unwrap();
            let cd = cs.try_clone().unwrap();
            let client = sc.spawn(|| {
                rr::run(
                    &cc,
                    udp_client_end(cs, timeout),
                    &mut NullSink,
                    &client_abort,
                )
            });
            thread::sleep(Duration::from_millis(150));
            let t = (sd.read_timeout().unwrap(), cd.read_timeout().unwrap());
            let client = client.join().unwrap();
            if peer_finishes {
                server_abort.peer_finished();
            }
            let (server, ended) = server.join().unwrap();
            (t.0, t.1, server, ended, client)
        });
        assert_eq!(
            server_timeout, None,
            "UDP server's SO_RCVTIMEO while running"
        );
        assert!(
            client_timeout.is_some_and(|t| t <= timeout),
            "UDP client's SO_RCVTIMEO {client_timeout:?}: at most its loss timeout {timeout:?}"
        );
        let (ct, st) = (client.data.total_sum(), server.data.total_sum());
        eprintln!(
            "UDP, peer finishes: {peer_finishes}: server ended {:.0} ms after the start; \
             client {} transactions, {} lost; server {}",
            server_ended.as_secs_f64() * 1e3,
            ct.transactions,
            ct.lost,
            st.transactions
        );
        assert!(
            ct.transactions > 0 && st.transactions >= ct.transactions,
            "{ct:?} {st:?}"
        );
        assert_eq!(st.transactions, ct.transactions + ct.lost, "{ct:?} {st:?}");
        assert_eq!(server.data.flows[0].error, None);
        assert_eq!(
            server.aborted, None,
            "the server ended by its end rules, not an abort"
        );
        let stop = c.timing.duration;
        if peer_finishes {
            // Noticed at its stop instant, within the waker's period (1 ms from then on) and
            // 200 ms of a busy machine's delay; the idle rule could not have ended it before
            // 250 ms past the stop instant.
            assert!(
                server_ended < stop + Duration::from_millis(200),
                "the server ended {server_ended:?} after its start although the client had finished"
            );
        } else {
            assert!(
                server_ended >= stop + SERVER_IDLE_AFTER_STOP,
                "the server ended {server_ended:?} after its start: before being idle for \
                 {SERVER_IDLE_AFTER_STOP:?} past its stop instant"
            );
            assert!(
                server_ended < stop + c.timing.drain_limit + Duration::from_secs(1),
                "{server_ended:?}"
            );
        }
    }
}

// ───────── (h) abort ─────────

/// Signals once, on the first interval that ends at or after `at_ns` on the engine's clock.
struct SignalAt {
    at_ns: u64,
    tx: Option<mpsc::Sender<()>>,
}

impl Sink<RrInterval> for SignalAt {
    fn interval(&mut self, s: &RrInterval) {
        if s.span.end_ns >= self.at_ns {
            if let Some(tx) = self.tx.take() {
                let _ = tx.send(());
            }
        }
    }
}

#[test]
fn abort_is_honoured_by_every_workload() {
    let _g = wirebench_testkit::link_bound();
    // A UDP client's timeout and a CRR transaction's longest wait on its peer.
    let (udp_timeout, peer_timeout) = (Duration::from_secs(5), Duration::from_secs(10));
    let long = RrConfig {
        request_size_bytes: 8,
        response_size_bytes: 8,
        // Intervals only to learn, from the engine's own sampler, that 200 ms of the run
        // have passed.
        timing: Timing {
            interval: Some(Duration::from_millis(50)),
            drain_limit: Duration::from_secs(10),
            ..cfg(0, 10_000).timing
        },
    };
    let check = |name: &str, f: &dyn Fn(&Abort, &mut dyn Sink<RrInterval>) -> RrOutput| {
        let abort = Abort::new();
        let t0 = Instant::now();
        let out = thread::scope(|sc| {
            let (tx, rx) = mpsc::channel::<()>();
            let abort = &abort;
            // Aborted from another thread once the run's sampler has passed 200 ms (the
            // sink is dropped when the run returns, so the waiter cannot hang).
            sc.spawn(move || {
                if rx.recv().is_ok() {
                    abort.abort(AbortReason::Interrupted);
                }
            });
            let mut sink = SignalAt {
                at_ns: 200_000_000,
                tx: Some(tx),
            };
            let out = f(abort, &mut sink);
            drop(sink);
            out
        });
        let took = t0.elapsed();
        eprintln!(
            "abort {name}: returned after {took:?}, aborted {:?}",
            out.aborted
        );
        assert!(out.aborted.is_some(), "{name}");
        assert_eq!(out.aborted, Some(AbortReason::Interrupted), "{name}");
        assert!(took < Duration::from_millis(600), "{name} took {took:?}");
        assert!(out.data.window.end_ns < 400_000_000);
    };

    // TCP RR, closed loop, against the engine's server (both ends share the abort handle).
    check("tcp rr", &|abort, sink| {
        let (cs, ss) = tcp_pair();
        thread::scope(|sc| {
            let srv = sc.spawn(|| rr::run(&long, tcp_server_end(ss), &mut NullSink, abort));
            let out = rr::run(&long, tcp_client_end(cs, Pacing::default()), sink, abort);
            assert!(srv.join().unwrap().aborted.is_some());
            out
        })
    });
    // TCP RR client waiting on a server that never answers.
    check("tcp rr, silent server", &|abort, sink| {
        let (cs, _ss) = tcp_pair();
        rr::run(&long, tcp_client_end(cs, Pacing::default()), sink, abort)
    });
    // Open loop against a silent server (sender at the cap, receiver waiting).
    check("open loop, silent server", &|abort, sink| {
        let (cs, _ss) = tcp_pair();
        let pacing = Pacing::Open(OpenLoop {
            per_s: 1000,
            max_outstanding: 10,
        });
        rr::run(&long, tcp_client_end(cs, pacing), sink, abort)
    });
    // CRR against a server that accepts but never answers (10 s peer timeout).
    check("crr, silent server", &|abort, sink| {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = l.local_addr().unwrap();
        let flows = RrFlows::CrrClient(CrrClient {
            flows: vec![CrrClientFlow {
                flow: 0,
                connect: Box::new(move || TcpStream::connect(addr)),
            }],
            peer_timeout,
            ..CrrClient::default()
        });
        rr::run(&long, flows, sink, abort)
    });
    // CRR server whose channel stays open.
    check("crr server", &|abort, sink| {
        let (_tx, rx) = mpsc::channel();
        let flows = RrFlows::CrrServer(CrrServer {
            flows: vec![CrrServerFlow {
                flow: 0,
                accepted: rx,
            }],
            peer_timeout,
        });
        rr::run(&long, flows, sink, abort)
    });
    // UDP client with a 5 s timeout against a socket that never answers.
    check("udp, silent server", &|abort, sink| {
        let silent = UdpSocket::bind("127.0.0.1:0").unwrap();
        udp_client_run(
            (&long, udp_timeout),
            silent.local_addr().unwrap(),
            sink,
            abort,
        )
    });
    check("udp server", &|abort, sink| {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        rr::run(&long, udp_server_end(s), sink, abort)
    });
}

#[test]
fn multiple_flows_are_counted_separately_and_merged() {
    let _g = serial();
    let pairs: Vec<(TcpStream, TcpStream)> = (0..3).map(|_| tcp_pair()).collect();
    let (cs, ss): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
    let c = cfg(50, 300);
    let abort = Abort::new();
    let (client, server) = thread::scope(|sc| {
        let srv = sc.spawn(|| {
            rr::run(
                &c,
                RrFlows::TcpServer(TcpRrServer {
                    flows: ss
                        .into_iter()
                        .enumerate()
                        .map(|(i, stream)| TcpRrFlow {
                            flow: i as u32,
                            stream,
                        })
                        .collect(),
                    busy_poll: None,
                }),
                &mut NullSink,
                &abort,
            )
        });
        let cl = rr::run(
            &c,
            RrFlows::TcpClient(TcpRrClient {
                flows: cs
                    .into_iter()
                    .enumerate()
                    .map(|(i, stream)| TcpRrFlow {
                        flow: i as u32,
                        stream,
                    })
                    .collect(),
                ..TcpRrClient::default()
            }),
            &mut NullSink,
            &abort,
        );
        (cl, srv.join().unwrap())
    });
    assert_eq!(client.data.flows.len(), 3);
    for (cf, sf) in client.data.flows.iter().zip(&server.data.flows) {
        assert_eq!(cf.flow, sf.flow);
        assert_eq!(cf.total.transactions, sf.total.transactions);
        assert!(cf.window.transactions > 10);
        assert_eq!(cf.latency.unwrap().count, cf.window.transactions);
    }
    let merged = client.data.latency.unwrap();
    assert_eq!(merged.count, client.data.window_sum().transactions);
    assert_eq!(
        merged.max_ns,
        client
            .data
            .flows
            .iter()
            .map(|f| f.latency.unwrap().max_ns)
            .max()
            .unwrap()
    );
    assert!(client.cpu.is_some(), "{:?}", client.warnings);
}

/// The engine no longer validates its parameters: a spec is validated once, before any
/// engine runs ([`TestSpec::validate`]). The refusals this test made of the engine are the
/// validation's now, with the same typed detail.
#[test]
fn invalid_configs_are_typed_errors() {
    // UDP RR with 1-byte requests: too small for the 8-byte sequence number.
    let udp = TestSpec {
        common: CommonSpec {
            duration_ms: 100,
            ..CommonSpec::default()
        },
        workload: WorkloadSpec::UdpRr(UdpRrSpec {
            request_size_bytes: 1,
            response_size_bytes: 1,
            ..UdpRrSpec::default()
        }),
    };
    let err = udp.validate(&Limits::default()).unwrap_err();
    assert_eq!(
        err,
        SpecError {
            field: SpecField::RequestSizeBytes,
            problem: SpecProblem::OutOfRange {
                value: 1,
                min: UDP_SEQ_BYTES as u64,
                max: MAX_UDP_PAYLOAD_BYTES.into(),
                limit: None,
            },
        },
        "{err}"
    );
    // The message names the 8-byte minimum.
    assert!(err.to_string().contains("allowed 8..="), "{err}");
    // No flows.
    let none = TestSpec {
        common: CommonSpec {
            flows: 0,
            duration_ms: 100,
            ..CommonSpec::default()
        },
        workload: WorkloadSpec::Rr(RrSpec::default()),
    };
    let err = none.validate(&Limits::default()).unwrap_err();
    assert_eq!(
        err,
        SpecError {
            field: SpecField::Flows,
            problem: SpecProblem::OutOfRange {
                value: 0,
                min: 1,
                max: Limits::default().max_flows.into(),
                limit: Some(LimitName::MaxFlows),
            },
        },
        "{err}"
    );
}

// ───────── the rate policy ─────────

/// The server's `--max-rate` policy is enforced on request/response too: a server end with a
/// 1 Mbit/s limit, answering 64 KiB responses to a closed-loop client (far above the limit),
/// aborts with `limit_exceeded` naming the limit long before its stop instant; the client
/// ends with the same reason through the shared abort handle.
#[test]
fn max_rate_policy_aborts_an_rr_run() {
    let _g = serial();
    let client_cfg = RrConfig {
        response_size_bytes: 64 * 1024,
        ..cfg(0, 10_000)
    };
    let mut server_cfg = client_cfg.clone();
    server_cfg.timing.policy = Some(wirebench_engine::RatePolicy::new(1_000_000));
    let (cs, ss) = tcp_pair();
    let abort = Abort::new();
    let t0 = Instant::now();
    let (client, server) = thread::scope(|sc| {
        let server = sc.spawn(|| rr::run(&server_cfg, tcp_server_end(ss), &mut NullSink, &abort));
        let client = rr::run(
            &client_cfg,
            tcp_client_end(cs, Pacing::default()),
            &mut NullSink,
            &abort,
        );
        (client, server.join().unwrap())
    });
    let took = t0.elapsed();
    let reason = server.aborted.clone().expect("the server end aborted");
    match &reason {
        AbortReason::LimitExceeded {
            limit,
            observed_bps,
            max_bps,
        } => {
            assert_eq!(*limit, LimitName::MaxRate);
            assert_eq!(*max_bps, 1_000_000);
            assert!(*observed_bps > *max_bps, "{observed_bps}");
        }
        other => panic!("not a limit: {other:?}"),
    }
    assert_eq!(client.aborted, Some(reason));
    assert!(took < Duration::from_secs(5), "{took:?}");
    assert!(server.data.flows[0].total.transactions > 0);
}
