//! UDP engine on 127.0.0.1: complete delivery at a paced rate, pacing smoothness, exact
//! accounting of hand-crafted datagrams, abort, transient send errors, unpaced sending and
//! plan validation.
//!
//! Tests that move traffic hold one lock, so that they do not compete for CPUs (timing and
//! socket-buffer overflows would otherwise depend on what else runs).

use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use socket2::SockRef;
use wirebench_engine::udp::{
    run, UdpConfig, UdpPlan, UdpPlanError, UdpRecvSocket, UdpSendFlow, UdpWire,
    MAX_CATCH_UP_DATAGRAMS,
};
use wirebench_engine::{Abort, EngineOutput, NullSink, Pinning, Sink, Timing};
use wirebench_model::abort::AbortReason;
use wirebench_model::side::Role;
use wirebench_model::spec::{CommonSpec, Direction, Limits, TestSpec, UdpStreamSpec, WorkloadSpec};
use wirebench_model::udp::{
    UdpFlowInterval, UdpInterval, UdpInvalidCounts, UdpRecvReport, UdpSendReport, UdpSide,
};
use wirebench_model::validate::{SpecError, SpecField, SpecProblem};
use wirebench_proto::udp::{
    DatagramHeader, DEFAULT_REORDER_WINDOW_SEQS, HEADER_BYTES, MAX_DATAGRAM_BYTES,
};

type UdpOutput = EngineOutput<UdpSide>;

use wirebench_testkit::serial as traffic_lock;

fn recv_socket() -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    // rmem_max permitting, so that a briefly descheduled receiver loses nothing.
    let _ = SockRef::from(&s).set_recv_buffer_size(4 << 20);
    s
}

fn send_socket(to: SocketAddr) -> UdpSocket {
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    s.connect(to).unwrap();
    s
}

fn config(
    datagram_bytes: usize,
    rate_bps: Option<u64>,
    warmup_ms: u64,
    duration_ms: u64,
) -> UdpConfig {
    UdpConfig {
        datagram_bytes,
        rate_bps,
        timing: Timing {
            warmup: Duration::from_millis(warmup_ms),
            duration: Duration::from_millis(duration_ms),
            interval: None,
            drain_limit: Duration::from_secs(1),
            pin: Pinning::default(),
            policy: None,
            buffer_offset: 0,
        },
        reorder_window_seqs: DEFAULT_REORDER_WINDOW_SEQS,
        wire: UdpWire::Native,
    }
}

fn receive_only(socket: UdpSocket, flows: Vec<u32>) -> UdpPlan {
    UdpPlan {
        senders: vec![],
        receivers: vec![UdpRecvSocket {
            flows,
            socket,
            peer: None,
        }],
    }
}

fn send_only(flow: u32, socket: UdpSocket) -> UdpPlan {
    UdpPlan {
        senders: vec![UdpSendFlow { flow, socket }],
        receivers: vec![],
    }
}

/// The sender report of `flow`.
fn sender(out: &UdpOutput, flow: u32) -> Option<&UdpSendReport> {
    out.data.senders.iter().find(|r| r.flow == flow)
}

/// The receiver report of `flow`.
fn receiver(out: &UdpOutput, flow: u32) -> Option<&UdpRecvReport> {
    out.data.receivers.iter().find(|r| r.flow == flow)
}

/// Sum of one flow's per-interval datagram counts for one role.
fn interval_sum(out: &UdpOutput, flow: u32, role: Role, f: fn(&UdpFlowInterval) -> u64) -> u64 {
    out.data
        .intervals
        .iter()
        .flat_map(|i| &i.flows)
        .filter(|x| x.flow == flow && x.role == role)
        .map(f)
        .sum()
}

/// Keeps every interval sample the engine reports live.
#[derive(Default)]
struct Collect(Vec<UdpInterval>);

impl Sink<UdpInterval> for Collect {
    fn interval(&mut self, s: &UdpInterval) {
        self.0.push(s.clone());
    }
}

/// Signals once, on the first interval after which `ready` holds for the counts so far
/// (datagrams per flow and role, summed over the samples).
struct SignalWhen {
    seen: HashMap<(u32, Role), u64>,
    ready: fn(&HashMap<(u32, Role), u64>) -> bool,
    tx: Option<mpsc::Sender<()>>,
}

impl SignalWhen {
    fn new(ready: fn(&HashMap<(u32, Role), u64>) -> bool) -> (SignalWhen, mpsc::Receiver<()>) {
        let (tx, rx) = mpsc::channel();
        let s = SignalWhen {
            seen: HashMap::new(),
            ready,
            tx: Some(tx),
        };
        (s, rx)
    }
}

impl Sink<UdpInterval> for SignalWhen {
    fn interval(&mut self, s: &UdpInterval) {
        for f in &s.flows {
            *self.seen.entry((f.flow, f.role)).or_default() += f.datagrams;
        }
        if (self.ready)(&self.seen) {
            if let Some(tx) = self.tx.take() {
                let _ = tx.send(());
            }
        }
    }
}

/// Runs `plan` on another thread, aborts it from this one as soon as its sink has
/// signalled, and returns its output and how long it took to return after the abort.
fn run_and_abort(
    cfg: &UdpConfig,
    plan: UdpPlan,
    mut sink: SignalWhen,
    signal: mpsc::Receiver<()>,
) -> (UdpOutput, Duration) {
    let abort = &Abort::new();
    thread::scope(|s| {
        let h = s.spawn(move || {
            let out = run(cfg, plan, &mut sink, abort).unwrap();
            let returned = Instant::now();
            drop(sink);
            (out, returned)
        });
        // The sink is dropped when the run returns, so this cannot hang.
        signal
            .recv()
            .expect("the run reached the state to abort in");
        let t = Instant::now();
        abort.abort(AbortReason::Interrupted);
        let (out, returned) = h.join().unwrap();
        (out, returned - t)
    })
}

/// (a) Two ends, as in a real test: a sender run and a receiver run on their own threads
/// (their start instants differ slightly). 50 Mbit/s for 1 s after a 200 ms warm-up.
#[test]
fn paced_flow_arrives_complete_at_the_requested_rate() {
    let _g = wirebench_testkit::link_bound();
    let rate = 50_000_000u64;
    let mut cfg = config(1200, Some(rate), 200, 1000);
    cfg.timing.interval = Some(Duration::from_millis(250));
    let rx = recv_socket();
    let tx = send_socket(rx.local_addr().unwrap());
    let (rx_addr, tx_addr) = (rx.local_addr().unwrap(), tx.local_addr().unwrap());
    let abort = Abort::new();
    let t0 = Instant::now();
    let (snd, snd_live, rcv, rcv_live) = thread::scope(|s| {
        let r = s.spawn(|| {
            let mut live = Collect::default();
            let out = run(&cfg, receive_only(rx, vec![0]), &mut live, &abort).unwrap();
            (out, live.0)
        });
        let mut live = Collect::default();
        let t = run(&cfg, send_only(0, tx), &mut live, &abort).unwrap();
        let (r, r_live) = r.join().unwrap();
        (t, live.0, r, r_live)
    });
    let elapsed = t0.elapsed();
    let tx = sender(&snd, 0).unwrap();
    let rx = receiver(&rcv, 0).unwrap();
    let secs = cfg.timing.duration.as_secs_f64();
    let achieved_bps = tx.window_bytes_sent as f64 * 8.0 / secs;
    let received_bps = rx.window_bytes_received as f64 * 8.0 / secs;
    eprintln!(
        "sent {} ({} in window, {} errors, {} pacing resets), received {} ({} in window), \
         late {} dup {} too_old {}, jitter {:.1} us; window rate sent {:.3} Mbit/s, \
         received {:.3} Mbit/s; run took {:?}; warnings {:?} {:?}",
        tx.datagrams_sent,
        tx.window_datagrams_sent,
        tx.send_errors,
        tx.pacing_resets,
        rx.datagrams_received,
        rx.window_datagrams_received,
        rx.late,
        rx.duplicate,
        rx.too_old,
        rx.jitter_ns / 1e3,
        achieved_bps / 1e6,
        received_bps / 1e6,
        elapsed,
        snd.warnings,
        rcv.warnings,
    );
    assert!(snd.aborted.is_none() && rcv.aborted.is_none());
    assert_eq!(tx.error, None);
    assert_eq!(rx.error, None);
    assert_eq!(tx.send_errors, 0);
    assert_eq!(
        rx.datagrams_received, tx.datagrams_sent,
        "loopback lost datagrams"
    );
    assert_eq!(rx.bytes_received, tx.bytes_sent);
    assert_eq!(rx.window_datagrams_received, tx.window_datagrams_sent);
    assert_eq!(rx.window_bytes_received, tx.window_bytes_sent);
    assert_eq!(rx.highest_seq, Some(tx.datagrams_sent - 1));
    assert_eq!((rx.late, rx.duplicate, rx.too_old), (0, 0, 0));
    assert_eq!(rcv.data.sockets[0].invalid, UdpInvalidCounts::default());
    // The whole test (warm-up included) is paced from the start instant too.
    let total_bps =
        tx.bytes_sent as f64 * 8.0 / (cfg.timing.warmup + cfg.timing.duration).as_secs_f64();
    if tx.pacing_resets == 0 {
        assert!(
            (achieved_bps / rate as f64 - 1.0).abs() < 0.05,
            "achieved {achieved_bps} bit/s for {rate}"
        );
        assert!((total_bps / rate as f64 - 1.0).abs() < 0.05, "{total_bps}");
    } else {
        // Descheduled past its catch-up allowance (a loaded machine): the sender skipped
        // ahead instead of bursting, and says how often. It is never ahead of the schedule.
        assert!(
            achieved_bps <= rate as f64 * 1.05 && achieved_bps > 0.0,
            "achieved {achieved_bps} bit/s for {rate} with {} resets",
            tx.pacing_resets
        );
        assert!(total_bps <= rate as f64 * 1.05, "{total_bps}");
    }
    assert!(
        rx.jitter_ns.is_finite() && rx.jitter_ns < 1e6,
        "{}",
        rx.jitter_ns
    );
    // Intervals tile the run: their counts add up to the totals, at both ends. (The byte and
    // datagram counts of an interval are one sample now; what the sink got live is what the
    // run returned, index for index.)
    assert_eq!(snd_live, snd.data.intervals);
    assert_eq!(rcv_live, rcv.data.intervals);
    assert!(snd.data.intervals.len() >= 5);
    assert_eq!(
        interval_sum(&snd, 0, Role::Sender, |x| x.datagrams),
        tx.datagrams_sent
    );
    assert_eq!(
        interval_sum(&snd, 0, Role::Sender, |x| x.bytes),
        tx.bytes_sent
    );
    assert_eq!(
        interval_sum(&rcv, 0, Role::Receiver, |x| x.datagrams),
        rx.datagrams_received
    );
    let sink_bytes: u64 = rcv_live
        .iter()
        .flat_map(|i| &i.flows)
        .map(|f| f.bytes)
        .sum();
    assert_eq!(sink_bytes, rx.bytes_received);
    assert!(snd.data.intervals[0].in_warmup && !snd.data.intervals[1].in_warmup);
    // Every sequence number the sender used arrived: the intervals cover them all and lose
    // none; each interval that had datagrams carries the jitter so far.
    assert_eq!(
        interval_sum(&rcv, 0, Role::Receiver, |x| x.expected),
        tx.datagrams_sent
    );
    assert_eq!(interval_sum(&rcv, 0, Role::Receiver, |x| x.lost), 0);
    let mut seen = 0;
    for i in &rcv.data.intervals {
        seen += i.flows[0].datagrams;
        assert_eq!(i.flows[0].jitter_ns.is_some(), seen > 0, "{i:?}");
    }
    assert!(snd
        .data
        .intervals
        .iter()
        .all(|i| i.flows[0].jitter_ns.is_none()));
    // Both ends name the sockets the test made.
    assert_eq!(
        (tx.local.clone(), tx.peer.clone()),
        (Some(tx_addr.to_string()), Some(rx_addr.to_string()))
    );
    assert_eq!(rx.local, Some(rx_addr.to_string()));
    // The receiver's drain ended on quiet, well before drain_limit.
    assert!(rcv.warnings.is_empty(), "{:?}", rcv.warnings);
    assert!(elapsed < Duration::from_millis(1800), "{elapsed:?}");
}

/// (b) Pacing smoothness: a raw receiver records every datagram's arrival time and header
/// send time. Send times never show a burst beyond the bounded catch-up; arrival times, which
/// include the receiver's scheduling noise, are smooth in the typical case.
#[test]
fn pacing_is_smooth() {
    let _g = traffic_lock();
    // 20 Mbit/s of 1000-byte datagrams: one every 400 us, 2.5 per ms.
    let rate = 20_000_000u64;
    let cfg = config(1000, Some(rate), 0, 600);
    let gap_ns = cfg.gap_ns().unwrap();
    assert_eq!(gap_ns, 400_000);
    let rx = recv_socket();
    rx.set_read_timeout(Some(Duration::from_millis(20)))
        .unwrap();
    let tx = send_socket(rx.local_addr().unwrap());
    let abort = Abort::new();
    let done = AtomicBool::new(false);
    let (out, seen) = thread::scope(|s| {
        let r = s.spawn(|| {
            let mut seen: Vec<(Instant, u64)> = Vec::with_capacity(4096);
            let mut buf = [0u8; 2048];
            let deadline = Instant::now() + Duration::from_secs(3);
            while Instant::now() < deadline {
                match rx.recv(&mut buf) {
                    Ok(n) => {
                        let h = DatagramHeader::parse(&buf[..n]).unwrap();
                        seen.push((Instant::now(), h.send_ns));
                    }
                    Err(_) if done.load(Ordering::Relaxed) => break,
                    Err(_) => {}
                }
            }
            seen
        });
        let out = run(&cfg, send_only(3, tx), &mut NullSink, &abort).unwrap();
        done.store(true, Ordering::Relaxed);
        (out, r.join().unwrap())
    });
    let tx = sender(&out, 3).unwrap();
    assert_eq!(seen.len() as u64, tx.datagrams_sent);
    let expected_per_ms = 1e6 / gap_ns as f64;

    let buckets = |times: &[u64]| -> Vec<u32> {
        let last = times.iter().copied().max().unwrap_or(0);
        let mut b = vec![0u32; (last / 1_000_000 + 1) as usize];
        for t in times {
            b[(t / 1_000_000) as usize] += 1;
        }
        b
    };
    let stats = |b: &[u32]| -> (u32, f64) {
        let max = *b.iter().max().unwrap();
        let over = b
            .iter()
            .filter(|&&c| f64::from(c) > 2.0 * expected_per_ms)
            .count();
        (max, over as f64 / b.len() as f64)
    };
    // Sender side: the header's send times (taken just before each send).
    let send_times: Vec<u64> = seen.iter().map(|s| s.1).collect();
    let (send_max, send_over) = stats(&buckets(&send_times));
    // Receiver side: arrival times.
    let t0 = seen[0].0;
    let arrivals: Vec<u64> = seen.iter().map(|s| (s.0 - t0).as_nanos() as u64).collect();
    let (arr_max, arr_over) = stats(&buckets(&arrivals));
    let mut gaps: Vec<u64> = arrivals.windows(2).map(|w| w[1] - w[0]).collect();
    gaps.sort_unstable();
    let median_gap = gaps[gaps.len() / 2];
    let short_gaps = gaps.iter().filter(|&&g| g < gap_ns / 4).count() as f64 / gaps.len() as f64;
    eprintln!(
        "{} datagrams, {} pacing resets; expected {expected_per_ms} per ms; send-time buckets: \
         max {send_max}, {:.2}% over 2x; arrival buckets: max {arr_max}, {:.2}% over 2x; \
         median arrival gap {median_gap} ns, {:.2}% of gaps < gap/4",
        seen.len(),
        tx.pacing_resets,
        send_over * 100.0,
        arr_over * 100.0,
        short_gaps * 100.0
    );
    let ceil = expected_per_ms.ceil() as u32;
    // Send times, as carried in the headers the receiver read: by construction no 1 ms holds
    // more than the regular datagrams plus one catch-up burst (MAX_CATCH_UP_DATAGRAMS + 1).
    assert!(
        send_max <= ceil + MAX_CATCH_UP_DATAGRAMS as u32 + 1,
        "{send_max}"
    );
    // Catch-up bursts are exceptions (a loaded host), not the rule.
    assert!(send_over < 0.1, "{send_over}");
    // Arrival times add the receiver's own wake-up delays (unbounded on a loaded host), so
    // they are checked statistically: the typical gap is the configured one, and nearly every
    // 1 ms bucket holds at most twice the expected count. (A sender that bursts, e.g. a 10 ms
    // quantum at a time, fails both.)
    assert!(
        (median_gap as f64 / gap_ns as f64 - 1.0).abs() < 0.1,
        "median gap {median_gap}"
    );
    assert!(arr_over < 0.1, "{arr_over}");
}

/// (c) Hand-crafted datagrams from raw sockets into a receiver that serves flows 1 and 2 on
/// one shared socket: every count equals the injected ground truth.
#[test]
fn injected_datagrams_are_classified_exactly() {
    let _g = traffic_lock();
    let rx = recv_socket();
    let to = rx.local_addr().unwrap();
    let a = send_socket(to);
    let b = send_socket(to);
    const MS: u64 = 1_000_000;
    let dgram = |flow: u32, seq: u64, send_ns: u64, len: usize| {
        let mut v = vec![0x77u8; len];
        DatagramHeader { flow, seq, send_ns }.write(&mut v).unwrap();
        v
    };
    // Receiver window for the sender: warm-up 50 ms, duration 200 ms → [50 ms, 250 ms).
    let mut cfg = config(100, None, 50, 200);
    cfg.reorder_window_seqs = 64;
    cfg.timing.interval = Some(Duration::from_millis(100));
    // Flow 1, 100-byte datagrams: seq < 5 sent in the warm-up, the rest in the window.
    //   0 1 2 5 | 4 3 (late) | 3 (dup) | 7 | 200 | 10 (too old: 200 − 10 ≥ 64) | 199 (late) | 200 (dup)
    let flow1 = [0u64, 1, 2, 5, 4, 3, 3, 7, 200, 10, 199, 200];
    // Flow 2, 300-byte datagrams, all sent after the window: 0 2 | 1 (late) | 1 0 (dup)
    let flow2 = [0u64, 2, 1, 1, 0];
    let mut garbage: Vec<Vec<u8>> = vec![
        vec![],                                              // too short (empty)
        b"WBU1x".to_vec(),                                   // too short
        dgram(1, 1000, 0, 100)[..HEADER_BYTES - 1].to_vec(), // too short by one byte
        vec![0u8; 100],                                      // bad magic
        dgram(9, 0, 100 * MS, 100),                          // foreign flow
        dgram(3, 4, 100 * MS, 64),                           // foreign flow
    ];
    let mut noise: Vec<u8> = (0..64u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 7) as u8)
        .collect();
    noise[0] = 0; // random bytes, certainly not "WBU1"
    garbage.push(noise);
    let mut g = garbage.iter();
    let mut f2 = flow2.iter();
    for (i, &seq) in flow1.iter().enumerate() {
        let send_ns = if seq < 5 { 10 * MS } else { 100 * MS };
        a.send(&dgram(1, seq, send_ns, 100)).unwrap();
        if let Some(&s2) = f2.next() {
            b.send(&dgram(2, s2, 300 * MS, 300)).unwrap();
        }
        if i % 2 == 0 {
            if let Some(x) = g.next() {
                a.send(x).unwrap();
            }
        }
    }
    for x in g {
        b.send(x).unwrap();
    }
    // Everything is queued in the receive socket; the run reads it all within its window.
    let abort = Abort::new();
    let out = run(&cfg, receive_only(rx, vec![2, 1]), &mut NullSink, &abort).unwrap();
    assert!(out.aborted.is_none());
    assert_eq!(
        out.data.sockets[0].invalid,
        UdpInvalidCounts {
            too_short: 3,
            bad_magic: 2,
            foreign_flow: 2,
            foreign_source: 0,
        }
    );
    assert_eq!(out.data.sockets[0].invalid.total(), 7);
    assert_eq!(out.data.sockets[0].flows, vec![2, 1]);
    assert_eq!(
        out.data
            .receivers
            .iter()
            .map(|r| r.flow)
            .collect::<Vec<_>>(),
        vec![2, 1]
    );

    let r1 = receiver(&out, 1).unwrap();
    assert_eq!(
        (r1.in_order, r1.late, r1.duplicate, r1.too_old),
        (6, 3, 2, 1)
    );
    assert_eq!(r1.datagrams_received, 9);
    assert_eq!(r1.bytes_received, 900);
    assert_eq!(r1.highest_seq, Some(200));
    assert_eq!(r1.reorder_window_seqs, 64);
    // In the window (sent at 100 ms): 5, 7, 200, 199 (10 was too old, 3 and 4 were warm-up).
    assert_eq!(r1.window_datagrams_received, 4);
    assert_eq!(r1.window_bytes_received, 400);
    assert!(r1.window_first_arrival_ns <= r1.window_last_arrival_ns);
    assert!(r1.jitter_ns.is_finite());

    let r2 = receiver(&out, 2).unwrap();
    assert_eq!(
        (r2.in_order, r2.late, r2.duplicate, r2.too_old),
        (2, 1, 2, 0)
    );
    assert_eq!(r2.datagrams_received, 3);
    assert_eq!(r2.bytes_received, 900);
    assert_eq!(r2.window_datagrams_received, 0);
    assert_eq!(r2.window_first_arrival_ns, None);
    // Interval counts add up to the same figures.
    assert_eq!(interval_sum(&out, 1, Role::Receiver, |x| x.datagrams), 9);
    assert_eq!(interval_sum(&out, 1, Role::Receiver, |x| x.late), 3);
    assert_eq!(interval_sum(&out, 1, Role::Receiver, |x| x.duplicate), 2);
    assert_eq!(interval_sum(&out, 2, Role::Receiver, |x| x.bytes), 900);
    assert_eq!(interval_sum(&out, 2, Role::Receiver, |x| x.duplicate), 2);
    // Sequence numbers covered: 0..=200 and 0..=2. Lost per interval: the increase of what
    // is missing below the highest (the engine's counter; clamped at 0 where late datagrams
    // filled more than new gaps opened), so the intervals' sum is the final 201 − 9 = 192
    // missing numbers of flow 1, plus at most its 3 late ones if an interval edge fell
    // between a gap and its filling; flow 2 lost nothing.
    assert_eq!(interval_sum(&out, 1, Role::Receiver, |x| x.expected), 201);
    assert_eq!(interval_sum(&out, 2, Role::Receiver, |x| x.expected), 3);
    let lost1 = interval_sum(&out, 1, Role::Receiver, |x| x.lost);
    assert!((192..=192 + 3).contains(&lost1), "flow 1 lost {lost1}");
    assert_eq!(interval_sum(&out, 2, Role::Receiver, |x| x.lost), 0);
    // The jitter of the last interval is the report's, rounded to the ns.
    let last = out.data.intervals.last().unwrap();
    let j1 = last.flows.iter().find(|f| f.flow == 1).unwrap().jitter_ns;
    assert_eq!(j1, Some(r1.jitter_ns.round() as u64));
    assert_eq!(out.data.intervals[0].flows[0].role, Role::Receiver);
    // An unconnected socket accepting any source: its address, no peer.
    assert_eq!(r1.local, Some(to.to_string()));
    assert_eq!(
        (r1.peer.clone(), r2.local.clone()),
        (None, r1.local.clone())
    );
}

/// (d) Abort during warm-up: a sender sleeping on a 10 s gap, a paced sender, a receiver
/// with traffic and one without, all return within the bound.
#[test]
fn abort_is_honoured_quickly() {
    let _g = traffic_lock();
    let rx = recv_socket();
    let idle = recv_socket();
    let to = rx.local_addr().unwrap();
    let slow = send_socket(to);
    let fast = send_socket(to);
    let plan = UdpPlan {
        senders: vec![
            UdpSendFlow {
                flow: 0,
                socket: slow,
            },
            UdpSendFlow {
                flow: 1,
                socket: fast,
            },
        ],
        receivers: vec![
            UdpRecvSocket {
                flows: vec![0, 1],
                socket: rx,
                peer: None,
            },
            UdpRecvSocket {
                flows: vec![7],
                socket: idle,
                peer: None,
            },
        ],
    };
    // Flow 0: 1200 bytes at 1 kbit/s = one datagram per 9.6 s. Flow 1 shares the rate, so it
    // is slow too; a third thread sends nothing at all (idle socket).
    let mut cfg = config(1200, Some(1_000), 1000, 10_000);
    cfg.timing.interval = Some(Duration::from_millis(50));
    // Abort once datagram 0 of each flow has been sent and received (the samples show it),
    // so that every thread is in its steady state: two senders sleeping on their gap, a
    // receiver with traffic waiting for more, the idle one.
    let (sink, signal) = SignalWhen::new(|seen| {
        [0, 1].iter().all(|&f| {
            seen.get(&(f, Role::Sender)).is_some_and(|&n| n >= 1)
                && seen.get(&(f, Role::Receiver)).is_some_and(|&n| n >= 1)
        })
    });
    let (out, latency) = run_and_abort(&cfg, plan, sink, signal);
    eprintln!(
        "run returned {latency:?} after the abort; aborted = {:?}",
        out.aborted
    );
    assert!(latency < Duration::from_millis(150), "{latency:?}");
    assert_eq!(out.aborted, Some(AbortReason::Interrupted));
    // Datagram 0 of each flow left at time 0, nothing since.
    for f in [0, 1] {
        let s = sender(&out, f).unwrap();
        assert_eq!(s.datagrams_sent, 1);
        assert!(s.window.end_ns < 1_000_000_000, "{}", s.window.end_ns);
    }
    assert_eq!(out.data.receivers.len(), 3);
    assert!(out.data.receivers.iter().all(|r| r.error.is_none()));
}

/// (d') Abort an unpaced sender and its receiver in the window.
#[test]
fn abort_stops_unpaced_traffic() {
    let _g = traffic_lock();
    let rx = recv_socket();
    let tx = send_socket(rx.local_addr().unwrap());
    let plan = UdpPlan {
        senders: vec![UdpSendFlow {
            flow: 4,
            socket: tx,
        }],
        receivers: vec![UdpRecvSocket {
            flows: vec![4],
            socket: rx,
            peer: None,
        }],
    };
    let mut cfg = config(1400, None, 0, 10_000);
    // Intervals only to see the traffic flowing before the abort.
    cfg.timing.interval = Some(Duration::from_millis(20));
    let (sink, signal) = SignalWhen::new(|seen| {
        seen.get(&(4, Role::Sender)).is_some_and(|&n| n > 0)
            && seen.get(&(4, Role::Receiver)).is_some_and(|&n| n > 0)
    });
    let (out, latency) = run_and_abort(&cfg, plan, sink, signal);
    eprintln!(
        "unpaced: returned {latency:?} after the abort; sent {} received {}",
        out.data.senders[0].datagrams_sent, out.data.receivers[0].datagrams_received
    );
    assert!(latency < Duration::from_millis(150), "{latency:?}");
    assert!(out.aborted.is_some());
    assert_eq!(out.aborted, Some(AbortReason::Interrupted));
    assert!(out.data.senders[0].datagrams_sent > 0);
    assert!(out.data.senders[0].window.end_ns < 1_000_000_000);
}

/// An unpaced flow sends as fast as it can; whatever the receiver got is consistent.
#[test]
fn unpaced_flow_counts_are_consistent() {
    let _g = traffic_lock();
    let rx = recv_socket();
    let tx = send_socket(rx.local_addr().unwrap());
    let plan = UdpPlan {
        senders: vec![UdpSendFlow {
            flow: 0,
            socket: tx,
        }],
        receivers: vec![UdpRecvSocket {
            flows: vec![0],
            socket: rx,
            peer: None,
        }],
    };
    let mut cfg = config(8000, None, 50, 250);
    cfg.timing.interval = Some(Duration::from_millis(100));
    let abort = Abort::new();
    let out = run(&cfg, plan, &mut NullSink, &abort).unwrap();
    let s = sender(&out, 0).unwrap();
    let r = receiver(&out, 0).unwrap();
    eprintln!(
        "unpaced 8000-byte datagrams: sent {} ({:.0} Mbit/s in window), received {} ({:.2}% lost), \
         send errors {}, refused {}",
        s.datagrams_sent,
        s.window_bytes_sent as f64 * 8.0 / 0.25 / 1e6,
        r.datagrams_received,
        100.0 * (s.datagrams_sent - r.datagrams_received) as f64 / s.datagrams_sent as f64,
        s.send_errors,
        s.send_refused
    );
    assert_eq!(s.target_rate_bps, None);
    assert_eq!(s.pacing_resets, 0);
    assert!(s.datagrams_sent > 100);
    assert!(r.datagrams_received > 0 && r.datagrams_received <= s.datagrams_sent);
    assert!(r.window_datagrams_received <= s.window_datagrams_sent);
    assert_eq!(r.datagrams_received, r.in_order + r.late);
    assert_eq!(r.duplicate, 0);
    assert_eq!(r.bytes_received, r.datagrams_received * 8000);
    assert_eq!(
        interval_sum(&out, 0, Role::Sender, |x| x.datagrams),
        s.datagrams_sent
    );
    assert_eq!(
        interval_sum(&out, 0, Role::Receiver, |x| x.datagrams),
        r.datagrams_received
    );
}

/// Sending to a closed port: ICMP port unreachable makes later sends fail with ECONNREFUSED;
/// they are counted and the flow carries on.
#[test]
fn connection_refused_is_counted_and_sending_continues() {
    let _g = traffic_lock();
    let closed = {
        let s = UdpSocket::bind("127.0.0.1:0").unwrap();
        s.local_addr().unwrap()
    };
    let tx = send_socket(closed);
    let cfg = config(500, Some(4_000_000), 0, 200);
    let abort = Abort::new();
    let out = run(&cfg, send_only(0, tx), &mut NullSink, &abort).unwrap();
    let s = sender(&out, 0).unwrap();
    eprintln!(
        "closed port: sent {} send errors {} refused {}",
        s.datagrams_sent, s.send_errors, s.send_refused
    );
    assert_eq!(s.error, None);
    assert!(s.send_errors > 0);
    assert!(s.datagrams_sent > 0);
    // Every due datagram was either sent or counted as failed: 1000 per s for 0.2 s (a few
    // fewer if the pacer had to drop slots on a loaded host). Sends the kernel refused
    // (ENOBUFS), once part of `send_errors`, are counted apart in `send_refused` now.
    let tried = s.datagrams_sent + s.send_errors + s.send_refused;
    assert!((150..=201).contains(&tried), "{tried}");
}

/// A UDP stream spec with `datagram_bytes` and `rate_bps`, the other settings defaults.
fn udp_spec(datagram_bytes: usize, rate_bps: Option<u64>) -> TestSpec {
    TestSpec {
        common: CommonSpec::default(),
        workload: WorkloadSpec::UdpStream(UdpStreamSpec {
            direction: Direction::Forward,
            datagram_bytes: datagram_bytes as u32,
            rate_bps,
        }),
    }
}

#[test]
fn bad_plans_are_refused() {
    let abort = Abort::new();
    let rx = || recv_socket();
    let to = rx().local_addr().unwrap();
    let e = |cfg: &UdpConfig, plan| run(cfg, plan, &mut NullSink, &abort).unwrap_err();

    // Datagram sizes and rates are checked once, by the spec's validation (the engine no
    // longer re-validates them): the same refusals, from there.
    let small = udp_spec(HEADER_BYTES - 1, None).validate(&Limits::default());
    assert_eq!(
        small,
        Err(SpecError {
            field: SpecField::DatagramBytes,
            problem: SpecProblem::OutOfRange {
                value: 23,
                min: HEADER_BYTES as u64,
                max: MAX_DATAGRAM_BYTES as u64,
                limit: None,
            },
        })
    );
    // The message names the 24-byte minimum (the header).
    let msg = small.unwrap_err().to_string();
    assert!(msg.contains("allowed 24..="), "{msg}");
    let big = udp_spec(65_508, None).validate(&Limits::default());
    assert!(
        matches!(
            big,
            Err(SpecError {
                field: SpecField::DatagramBytes,
                problem: SpecProblem::OutOfRange { value: 65_508, .. },
            })
        ),
        "{big:?}"
    );
    let zero_rate = udp_spec(100, Some(0)).validate(&Limits::default());
    assert!(
        matches!(
            zero_rate,
            Err(SpecError {
                field: SpecField::RateBps,
                problem: SpecProblem::OutOfRange { value: 0, .. },
            })
        ),
        "{zero_rate:?}"
    );
    assert_eq!(
        udp_spec(HEADER_BYTES, None).validate(&Limits::default()),
        Ok(())
    );

    let ok = config(HEADER_BYTES, None, 0, 10);
    let unconnected = UdpSocket::bind("127.0.0.1:0").unwrap();
    assert!(matches!(
        e(&ok, send_only(5, unconnected)),
        UdpPlanError::NotConnected { flow: 5, .. }
    ));
    let plan = UdpPlan {
        senders: vec![
            UdpSendFlow {
                flow: 1,
                socket: send_socket(to),
            },
            UdpSendFlow {
                flow: 1,
                socket: send_socket(to),
            },
        ],
        receivers: vec![],
    };
    assert_eq!(e(&ok, plan), UdpPlanError::DuplicateSendFlow(1));
    let plan = UdpPlan {
        senders: vec![],
        receivers: vec![
            UdpRecvSocket {
                flows: vec![1, 2],
                socket: rx(),
                peer: None,
            },
            UdpRecvSocket {
                flows: vec![2],
                socket: rx(),
                peer: None,
            },
        ],
    };
    assert_eq!(e(&ok, plan), UdpPlanError::DuplicateRecvFlow(2));
    assert_eq!(
        e(&ok, receive_only(rx(), vec![])),
        UdpPlanError::EmptyRecvSocket(0)
    );
}

#[test]
fn config_helpers() {
    let mut c = config(1250, Some(10_000_000), 2000, 10_000);
    assert_eq!(c.gap_ns(), Some(1_000_000));
    assert_eq!(c.drain_quiet(), Duration::from_millis(100));
    c.rate_bps = Some(10_000);
    assert_eq!(c.gap_ns(), Some(1_000_000_000));
    assert_eq!(
        c.drain_quiet(),
        Duration::from_secs(1),
        "capped by drain_limit"
    );
    let w = c.sender_window();
    assert_eq!((w.start_ns, w.end_ns), (2_000_000_000, 12_000_000_000));
    c.rate_bps = None;
    assert_eq!(c.gap_ns(), None);
    assert_eq!(c.drain_quiet(), Duration::from_millis(100));
}

/// The server's `--max-rate` policy is enforced on UDP too: an unpaced flow far above an
/// 8 Mbit/s limit is aborted with `limit_exceeded` naming the limit, well before its stop
/// instant, and the figures it had are kept.
#[test]
fn max_rate_policy_aborts_a_udp_run() {
    let _g = traffic_lock();
    let rx = recv_socket();
    let tx = send_socket(rx.local_addr().unwrap());
    let plan = UdpPlan {
        senders: vec![UdpSendFlow {
            flow: 0,
            socket: tx,
        }],
        receivers: vec![UdpRecvSocket {
            flows: vec![0],
            socket: rx,
            peer: None,
        }],
    };
    let mut cfg = config(8000, None, 0, 10_000);
    cfg.timing.policy = Some(wirebench_engine::RatePolicy::new(8_000_000));
    let t0 = Instant::now();
    let out = run(&cfg, plan, &mut NullSink, &Abort::new()).unwrap();
    let took = t0.elapsed();
    match out.aborted.as_ref().expect("aborted by the policy") {
        AbortReason::LimitExceeded {
            limit,
            observed_bps,
            max_bps,
        } => {
            assert_eq!(*limit, wirebench_model::validate::LimitName::MaxRate);
            assert_eq!(*max_bps, 8_000_000);
            assert!(*observed_bps > *max_bps, "{observed_bps}");
        }
        other => panic!("not a limit: {other:?}"),
    }
    // 10 s asked; the policy (checked every 100 ms, 250 ms + 4 MiB of slack) stops it in
    // well under that even on a loaded machine.
    assert!(took < Duration::from_secs(5), "{took:?}");
    let s = sender(&out, 0).unwrap();
    assert!(s.datagrams_sent > 0);
}
