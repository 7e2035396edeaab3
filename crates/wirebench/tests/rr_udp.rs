//! `wirebench rr`, `crr`, `rr --udp` and `udp` end to end: the real binary against its
//! embedded server or a `wirebench serve` process, checked against independent observers —
//! the kernel's TCP_INFO, the other end's counts, a link emulator's exact counters and delay,
//! an nftables drop counter, and a packet capture at the receiver's interface.

use std::collections::HashSet;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use wirebench_lab::emu::{Direction as EmuDir, EmuConfig, EmulatedPath};
use wirebench_lab::{Side, Testbed, ADDR_B, IF_B};
use wirebench_model::result::{RrSummary, RunResult, RunStatus, Summary, UdpSummary};
use wirebench_model::rr::RrCounts;
use wirebench_model::side::TcpInfoReport;
use wirebench_model::spec::{CloseMode, WorkloadKind};
use wirebench_model::validate::SpecField;
use wirebench_model::warning::Warning;
use wirebench_proto::udp::DatagramHeader;
use wirebench_report::print::text;

fn summary(r: &RunResult) -> &Summary {
    assert_eq!(r.status, RunStatus::Completed, "{r:#?}");
    r.runs[0].summary.as_ref().expect("summary")
}

fn rr(r: &RunResult) -> &RrSummary {
    summary(r).rr().expect("rr summary")
}

fn udp(r: &RunResult) -> &UdpSummary {
    summary(r).udp().expect("udp summary")
}

fn ok(args: &[&str]) -> RunResult {
    let ran = wb(args);
    assert_eq!(
        ran.code, 0,
        "stderr: {}\nstdout: {}",
        ran.stderr, ran.stdout
    );
    ran.json()
}

/// The client's TCP_INFO of a TCP RR flow.
fn client_tcp_info(r: &RunResult) -> TcpInfoReport {
    let c = r.runs[0].client.as_ref().unwrap();
    c.rr().unwrap().flows[0].tcp_info.clone().expect("tcp_info")
}

#[test]
fn tcp_rr_counts_match_the_server_and_the_kernel() {
    let _s = serial();
    let r = ok(&[
        "rr",
        "-t",
        "1",
        "-C",
        "cubic",
        "--request-size",
        "100",
        "--response-size",
        "200",
        "--json",
    ]);
    let s = rr(&r);
    assert_eq!(s.workload, WorkloadKind::Rr);
    assert!(s.transactions > 1000, "{s:?}");
    // Every transaction the server answered was read by the client, and vice versa.
    let server = s.server_total.expect("server counts");
    assert_eq!(s.client_total.transactions, server.transactions);
    // The latency histogram holds exactly the window's transactions.
    let l = s.latency.expect("latency");
    assert_eq!(l.count, s.transactions);
    assert!(l.min_ns <= l.p50_ns && l.p50_ns <= l.p99_ns && l.p99_ns <= l.max_ns);
    // A round trip on loopback crosses the stack twice: not below a microsecond.
    assert!(l.min_ns >= 1_000, "min round trip {} ns", l.min_ns);
    let tps = s.transactions as f64 / (s.window_ns as f64 / 1e9);
    assert!((s.transactions_per_s - tps).abs() < 1e-6 * tps);
    // The kernel's count of the client's bytes: the 24-byte data hello, every request, and
    // the SYN and FIN (1 each, when acknowledged).
    let ti = client_tcp_info(&r);
    let total = s.client_total.transactions;
    let acked = ti.bytes_acked.unwrap();
    let expect = 24 + total * 100;
    assert!(
        (expect..=expect + 2).contains(&acked),
        "bytes_acked {acked}, expected {expect}+0..2"
    );
    let received = ti.bytes_received.unwrap();
    assert!(
        (total * 200..=total * 200 + 1).contains(&received),
        "bytes_received {received}, expected {}+0..1",
        total * 200
    );
    // Service demand per transaction at both ends.
    let cpu = &summary(&r).cpu;
    assert_eq!(cpu.len(), 2);
    assert!(cpu
        .iter()
        .all(|c| c.threads_service_demand_us_per_tx.is_some()));
    assert_eq!(summary(&r).congestion, vec!["cubic".to_string()]);
}

#[test]
fn burst_keeps_n_in_flight_and_counts_still_match() {
    let _s = serial();
    let r = ok(&["rr", "-t", "1", "--burst", "8", "-P", "2", "--json"]);
    let s = rr(&r);
    assert_eq!(s.burst, 8);
    assert_eq!(s.per_flow.len(), 2);
    let server = s.server_total.unwrap();
    assert_eq!(s.client_total.transactions, server.transactions);
    assert_eq!(s.latency.unwrap().count, s.transactions);
    assert_eq!(
        s.per_flow.iter().map(|f| f.transactions).sum::<u64>(),
        s.transactions
    );
}

#[test]
fn open_loop_meets_its_schedule_and_reports_achieved_rate() {
    let _s = link_bound();
    let r = ok(&["rr", "-t", "2", "--rate", "2000", "--json"]);
    let s = rr(&r);
    let ol = s.open_loop.as_ref().expect("open loop");
    assert_eq!(ol.requested_per_s, 2000.0);
    // 4000 slots in the 2 s window. Never ahead of the schedule; and every slot is either
    // a completed transaction or reported missed (within 2 %: a slot or two at the edges).
    // A sender that kept up missed at most one; one descheduled on a loaded machine says
    // how many it missed instead of hiding them.
    assert!(ol.achieved_per_s < 2040.0, "achieved {}", ol.achieved_per_s);
    let accounted = ol.achieved_per_s * 2.0 + ol.missed_slots as f64;
    assert!(
        (accounted - 4000.0).abs() < 80.0,
        "achieved {} missed {}",
        ol.achieved_per_s,
        ol.missed_slots
    );
    if ol.missed_slots <= 1 {
        assert!(
            (ol.achieved_per_s - 2000.0).abs() < 40.0,
            "achieved {}",
            ol.achieved_per_s
        );
    }
    assert_eq!(s.latency.unwrap().count, s.transactions);
}

#[test]
fn crr_closes_orderly_by_default_and_abortively_on_request() {
    // Shared: close counts are exact; 100 transactions in 1 s holds on a busy host.
    let _s = shared();
    let r = ok(&["crr", "-t", "1", "--json"]);
    let s = rr(&r);
    assert_eq!(s.close_mode, Some(CloseMode::Orderly));
    let server: RrCounts = s.server_total.unwrap();
    assert!(s.client_total.transactions > 100);
    // The server saw a FIN for every connection the client completed, and no reset.
    assert_eq!(server.closes_orderly, s.client_total.transactions);
    assert_eq!(server.closes_reset, 0);
    assert_eq!(s.client_window.connect_errors + s.client_window.errors, 0);

    let r = ok(&["crr", "-t", "1", "--abortive-close", "--json"]);
    let s = rr(&r);
    assert_eq!(s.close_mode, Some(CloseMode::Abortive));
    let server = s.server_total.unwrap();
    assert_eq!(server.closes_reset, s.client_total.transactions);
    assert_eq!(server.closes_orderly, 0);
    let human = wb(&["crr", "-t", "0.5", "--abortive-close"]);
    assert!(human.stdout.contains("close (RST)"), "{}", human.stdout);
}

#[test]
fn udp_rr_on_loopback_loses_nothing() {
    let _s = serial();
    let r = ok(&[
        "rr",
        "--udp",
        "-t",
        "1",
        "--request-size",
        "64",
        "--response-size",
        "512",
        "--json",
    ]);
    let s = rr(&r);
    assert_eq!(s.workload, WorkloadKind::UdpRr);
    assert!(s.transactions > 1000);
    assert_eq!(s.client_window.lost, 0);
    assert_eq!(s.loss_pct, Some(0.0));
    assert_eq!(
        s.server_total.unwrap().transactions,
        s.client_total.transactions
    );
    // Without sizes, UDP RR uses the smallest datagrams that carry the sequence number.
    let r = ok(&["rr", "--udp", "-t", "0.3", "--json"]);
    let s = rr(&r);
    assert_eq!((s.request_size_bytes, s.response_size_bytes), (8, 8));
}

/// `rr`, `crr` and `rr --udp` with two flows and `-i 0.5`: every interval that completed
/// transactions has its round-trip median and 99th percentile, in order; the merged median
/// of an interval lies between its flows' medians (the flows' histograms are merged, not
/// their percentiles averaged); the window's median lies among the medians of the intervals
/// (the same round trips cut in pieces; the interval histograms keep 2 digits, the window's
/// 3, and the last interval also holds the drain's few: 2 % slack); and each flow's
/// addresses agree between the ends (the client's own address is the server's peer, the
/// server's own the client's peer; CRR: the last connection's).
#[test]
fn interval_round_trips_and_flow_addresses_of_the_request_response_workloads() {
    // Shared: a median of merged samples lies between its parts' medians whatever the
    // load (the 2 % is the histograms' precision); addresses and counts are exact.
    let _s = shared();
    for args in [&["rr"][..], &["crr"][..], &["rr", "--udp"][..]] {
        let mut a = args.to_vec();
        // Four intervals and a partial fifth; a closed loop keeps a CPU busy however long
        // it runs, so no longer than that.
        a.extend(["-t", "1.1", "-i", "0.25", "-P", "2", "--json"]);
        let r = ok(&a);
        let s = rr(&r);
        let run = &r.runs[0];
        let client = run.client.as_ref().unwrap().rr().unwrap();
        let server = run.server.as_ref().unwrap().rr().unwrap();
        let p50 = s.latency.expect("latency").p50_ns;
        assert!(s.intervals.len() >= 4, "{args:?}: {:?}", s.intervals);
        for (row, raw) in s.intervals.iter().zip(&client.intervals) {
            assert_eq!(
                row.rtt_p50_ns.is_some(),
                row.transactions > 0,
                "{args:?} {row:?}"
            );
            assert!(row.rtt_p50_ns <= row.rtt_p99_ns, "{args:?} {row:?}");
            assert_eq!(
                (row.rtt_p50_ns, row.rtt_p99_ns),
                (raw.rtt_p50_ns, raw.rtt_p99_ns)
            );
            let flow_p50s: Vec<u64> = raw.flows.iter().filter_map(|f| f.rtt_p50_ns).collect();
            if let (Some(m), Some(lo), Some(hi)) = (
                row.rtt_p50_ns,
                flow_p50s.iter().min(),
                flow_p50s.iter().max(),
            ) {
                assert!(
                    *lo as f64 <= m as f64 * 1.01 && m as f64 <= *hi as f64 * 1.01,
                    "{args:?}: merged median {m} outside the flows' {flow_p50s:?}"
                );
            }
        }
        let medians: Vec<u64> = s
            .intervals
            .iter()
            .filter(|i| !i.in_warmup)
            .filter_map(|i| i.rtt_p50_ns)
            .collect();
        let (lo, hi) = (
            *medians.iter().min().unwrap(),
            *medians.iter().max().unwrap(),
        );
        eprintln!("{args:?}: window p50 {p50} ns, interval medians {medians:?}");
        assert!(
            lo as f64 <= p50 as f64 * 1.02 && p50 as f64 <= hi as f64 * 1.02,
            "{args:?}: window median {p50} outside the interval medians {lo}..{hi}"
        );
        for f in 0..2 {
            let (c, sv) = (&client.flows[f], &server.flows[f]);
            assert!(c.local.is_some() && c.peer.is_some(), "{args:?}: {c:?}");
            assert_eq!(
                (&c.local, &c.peer),
                (&sv.peer, &sv.local),
                "{args:?} flow {f}"
            );
        }
    }
    // The live lines say it too.
    let human = wb(&["rr", "-t", "1", "-i", "0.5"]);
    assert_eq!(human.code, 0, "{}", human.stderr);
    let live: Vec<&str> = human
        .stdout
        .lines()
        .filter(|l| l.starts_with('['))
        .collect();
    assert!(
        !live.is_empty() && live.iter().all(|l| l.contains("rtt p50 ")),
        "{}",
        human.stdout
    );
}

#[test]
fn udp_stream_forward_reverse_bidir_exact_on_loopback() {
    let _s = serial();
    for dir in [&[][..], &["-R"][..], &["--bidir"][..]] {
        let mut args = vec!["udp", "-t", "1", "-b", "50M", "-l", "1200", "--json"];
        args.extend_from_slice(dir);
        let r = ok(&args);
        let u = udp(&r);
        assert_eq!(u.directions.len(), if dir == ["--bidir"] { 2 } else { 1 });
        for d in &u.directions {
            // Loopback loses nothing in the path. A loaded machine may overflow a receive
            // socket (or the sender's queue refuses a send): every lost datagram must be
            // one the kernel counted there, exactly.
            let l = &d.loss;
            assert_eq!(l.lost_in_path, 0, "{dir:?} {l:?}");
            assert_eq!(
                l.total_lost,
                l.refused_at_sender
                    + l.dropped_at_receiving_sockets
                        .expect("socket overflows read")
                    + l.dropped_by_receiving_host.expect("host drops read"),
                "{dir:?} {l:?}"
            );
            assert_eq!(
                d.counts.window_lost,
                d.counts.window_sent as i64 - d.counts.window_received as i64
            );
            assert!(d.counts.window_lost >= 0 && d.counts.window_lost <= d.counts.total_lost);
            assert_eq!(
                l.total_lost as i64,
                d.counts.total_lost + d.counts.send_refused as i64
            );
            assert_eq!(d.counts.duplicate + d.counts.late, 0);
            assert_eq!(d.invalid_datagrams, 0);
            assert_eq!(d.receiver_bytes, d.counts.window_received * 1200);
            // Paced at 50 Mbit/s: 1 s of 1200-byte datagrams is 5208 of them — unless the
            // sender was descheduled past its catch-up allowance, which it reports (and the
            // summary warns about) instead of bursting. Within the allowance it may be up to
            // MAX_CATCH_UP_DATAGRAMS behind at either edge of the window (behind at the start:
            // the overdue ones leave inside it; behind at the end: the window closes first;
            // CI saw 5204 with no reset), plus a slot at each edge.
            let expect = 50e6 / (1200.0 * 8.0);
            let got = d.counts.window_sent as f64;
            let slack = wirebench_engine::udp::MAX_CATCH_UP_DATAGRAMS as f64 + 2.0;
            if d.counts.pacing_resets == 0 {
                assert!(
                    (got - expect).abs() <= slack,
                    "{dir:?}: sent {got}, expected {expect} ± {slack}"
                );
            } else {
                // Behind schedule (a loaded machine): never ahead of it, and said so.
                assert!(got <= expect + slack && got > 0.0, "{dir:?}: {d:?}");
                let warnings = &summary(&r).warnings;
                assert!(
                    warnings.iter().any(|w| matches!(
                        w.warning,
                        Warning::PacingFellBehind { dir: wd, resets } if wd == d.dir && resets > 0
                    )),
                    "{dir:?}: {warnings:?}"
                );
                assert!(
                    warnings
                        .iter()
                        .map(text::noted)
                        .any(|w| w.contains("fell behind")),
                    "{dir:?}: {warnings:?}"
                );
            }
        }
    }
}

/// The live lines of a UDP test name each interval's loss and jitter (on loopback, nothing
/// is lost unless a socket overflowed, which the attribution would show).
#[test]
fn udp_live_lines_show_interval_loss_and_jitter() {
    let _s = link_bound();
    let ran = wb(&["udp", "-t", "1", "-i", "0.5", "-b", "10M"]);
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let live: Vec<&str> = ran.stdout.lines().filter(|l| l.starts_with('[')).collect();
    assert!(live.len() >= 2, "{}", ran.stdout);
    for l in &live {
        assert!(l.contains(" lost ") && l.contains(" jitter "), "{l}");
    }
}

#[test]
fn bad_rr_and_udp_input_is_refused_with_the_field() {
    let _shared = crate::common::shared();
    for (args, field) in [
        (
            &["rr", "--udp", "--request-size", "4", "--json"][..],
            SpecField::RequestSizeBytes,
        ),
        (&["udp", "-l", "10", "--json"][..], SpecField::DatagramBytes),
        (
            &["rr", "--burst", "2", "--rate", "100", "--json"][..],
            SpecField::Burst,
        ),
        (&["rr", "--burst", "0", "--json"][..], SpecField::Burst),
    ] {
        let ran = wb(args);
        assert_eq!(ran.code, 2, "{args:?}: {}", ran.stderr);
        let r = ran.json();
        assert_eq!(
            r.error.as_ref().and_then(|e| e.field),
            Some(field),
            "{args:?}: {:?}",
            r.error
        );
    }
}

/// UDP ports of `pid`'s sockets, from /proc (an outside view of the daemon).
fn udp_ports_of(pid: u32) -> Vec<u16> {
    let inodes: HashSet<String> = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
                .filter_map(|l| {
                    let s = l.to_string_lossy().into_owned();
                    Some(s.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
                })
                .collect()
        })
        .unwrap_or_default();
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/udp")).unwrap_or_default();
    table
        .lines()
        .skip(1)
        .filter_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let inode = f.get(9)?;
            if !inodes.contains(*inode) {
                return None;
            }
            u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()
        })
        .collect()
}

#[test]
fn garbage_datagrams_at_the_receiver_are_counted_as_invalid() {
    let _s = link_bound();
    let d = LocalDaemon::start(&[]);
    let port = d.addr.port().to_string();
    let client = std::thread::spawn(move || {
        wb(&[
            "udp",
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-t",
            "2",
            "-b",
            "20M",
            "--json",
        ])
    });
    // Find the daemon's UDP data socket once the test has set it up.
    let deadline = Instant::now() + Duration::from_secs(3);
    let target = loop {
        if let Some(p) = udp_ports_of(d.pid()).first() {
            break SocketAddr::from(([127, 0, 0, 1], *p));
        }
        assert!(Instant::now() < deadline, "no UDP socket appeared");
        std::thread::sleep(Duration::from_millis(10));
    };
    // The UDP setup reads its hellos from that socket; garbage is sent once the engine's
    // receiver runs, i.e. the setup is over.
    assert!(
        wait_engine(d.pid(), Duration::from_secs(5)),
        "the daemon's UDP engine did not start"
    );
    let s = UdpSocket::bind("127.0.0.1:0").unwrap();
    let valid = |flow: u32, seq: u64| {
        let mut b = vec![0u8; 200];
        b[..24].copy_from_slice(
            &DatagramHeader {
                flow,
                seq,
                send_ns: 1,
            }
            .to_bytes(),
        );
        b
    };
    let mut garbage: Vec<Vec<u8>> = Vec::new();
    garbage.extend((0..5).map(|i| vec![0xAB; i * 4])); // shorter than the header
    garbage.extend((0..7).map(|_| vec![0x55; 200])); // bad magic
    garbage.extend((0..3).map(|i| valid(99, i))); // well-formed, unknown flow
    garbage.extend((0..4).map(|i| valid(0, i))); // flow 0, but not from the client
    for g in &garbage {
        s.send_to(g, target).unwrap();
    }
    let ran = client.join().unwrap();
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.json();
    let u = udp(&r);
    let d0 = &u.directions[0];
    // Every garbage datagram is counted, none pollutes the flow.
    assert_eq!(d0.invalid_datagrams, garbage.len() as u64, "{d0:?}");
    let server = r.runs[0].server.as_ref().unwrap().udp().unwrap();
    let inv = server.sockets[0].invalid;
    // None came from the client's address, so none was even parsed: all are foreign-source
    // (content classes — short, bad magic, unknown flow — are the engine's unit tests).
    assert_eq!(inv.foreign_source, garbage.len() as u64, "{inv:?}");
    assert_eq!(d0.counts.total_lost, 0);
    assert_eq!(d0.counts.duplicate, 0);
    assert_eq!(d0.counts.window_received, d0.counts.window_sent);
}

// ---------------------------------------------------------------------------------------
// Ground truth on a path between namespaces.

#[test]
fn rr_latency_over_a_1ms_each_way_path() {
    require_netns();
    let _s = link_bound();
    let (path, d) = delayed_path_with_daemon(Duration::from_millis(1));
    let port = d.addr.port().to_string();
    let mut c = path.command(Side::A, BIN);
    c.args(["rr", "-H", ADDR_B, "-p", &port, "-t", "2", "--json"]);
    let out = c.output().unwrap();
    let r: RunResult = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let l = rr(&r).latency.unwrap();
    eprintln!(
        "rr over 1 ms + 1 ms: p50 {} µs, min {} µs, p99 {} µs, {} transactions",
        l.p50_ns / 1000,
        l.min_ns / 1000,
        l.p99_ns / 1000,
        l.count
    );
    // An independent observer on the same path, under the same load: a plain TCP
    // ping-pong of 1-byte messages written here, 300 round trips, its median.
    let probe_p50_ns = ping_pong_p50_ns(&path, 300);
    eprintln!(
        "independent ping-pong over the same path: p50 {} µs",
        probe_p50_ns / 1000
    );
    // Never below the two emulated milliseconds; the median within 10 % (+ 100 µs for the
    // two stacks' extra work per transaction) of what the plain ping-pong sees, whatever the
    // machine's load does to the forwarder.
    assert!(l.min_ns >= 2_000_000, "min {} ns", l.min_ns);
    assert!(probe_p50_ns >= 2_000_000, "probe p50 {probe_p50_ns} ns");
    assert!(
        l.p50_ns as f64 <= probe_p50_ns as f64 * 1.10 + 100_000.0,
        "p50 {} ns against the probe's {probe_p50_ns} ns",
        l.p50_ns
    );
    // One at a time, each at least 2 ms: at most 1000 in the 2 s window (fewer when the
    // machine is loaded; the count is not a performance assertion).
    assert!((1..=1000).contains(&l.count), "count {}", l.count);
}

/// Run an nftables script in `side`'s namespace; its output.
pub(crate) fn nft(tb: &Testbed, side: Side, script: &str) -> String {
    let out = tb
        .command(side, "nft")
        .args(["-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut ch| {
            use std::io::Write;
            ch.stdin.take().unwrap().write_all(script.as_bytes())?;
            ch.wait_with_output()
        })
        .expect("nft");
    assert!(
        out.status.success(),
        "nft: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Where every sequence number of the nftables test went, checked against the intervals:
/// the receiver's intervals count, per interval, the numbers covered and those missing below
/// the highest one seen (no reordering here, so nothing is clamped and their sum is exactly
/// what is missing at the end); the numbers the sender used after the last one that arrived
/// are in no interval (the tail); the sender's numbers are those it sent, those its kernel
/// refused and those whose send failed. So
/// `Σ interval lost + tail − send_errors = total_sent + send_refused − total_received`, the
/// loss the attribution splits into refused, socket, host and path drops.
fn check_interval_loss(r: &RunResult) {
    let run = &r.runs[0];
    let snd = &run.client.as_ref().unwrap().udp().unwrap().senders[0];
    let server = run.server.as_ref().unwrap().udp().unwrap();
    let rcv = &server.receivers[0];
    let iv: Vec<_> = server
        .intervals
        .iter()
        .flat_map(|i| &i.flows)
        .filter(|f| f.flow == 0 && f.role == wirebench_model::side::Role::Receiver)
        .collect();
    assert!(iv.len() >= 6, "{} receiver intervals", iv.len());
    let sum = |f: fn(&&wirebench_model::udp::UdpFlowInterval) -> u64| iv.iter().map(f).sum::<u64>();
    let seq_end = rcv.highest_seq.map_or(0, |h| h + 1);
    assert_eq!(rcv.late, 0);
    assert_eq!(sum(|f| f.datagrams), rcv.datagrams_received);
    assert_eq!(sum(|f| f.expected), seq_end);
    let interval_lost = sum(|f| f.lost);
    assert_eq!(interval_lost, seq_end - rcv.datagrams_received);
    let used = snd.datagrams_sent + snd.send_refused + snd.send_errors;
    let tail = used - seq_end;
    let l = &udp(r).directions[0].loss;
    eprintln!(
        "intervals: {} covered, {interval_lost} lost; tail {tail}; total lost {}",
        seq_end, l.total_lost
    );
    assert_eq!(interval_lost + tail - snd.send_errors, l.total_lost);
    // The summary's interval rows are the same figures, with the loss percentage.
    let rows = &udp(r).intervals;
    assert_eq!(rows.iter().map(|i| i.lost).sum::<u64>(), interval_lost);
    for i in rows.iter().filter(|i| i.expected > 0) {
        let pct = i.lost as f64 / i.expected as f64 * 100.0;
        assert!((i.loss_pct - pct).abs() < 1e-9, "{i:?}");
        assert!(i.jitter_max_ns.is_some(), "{i:?}");
    }
    // Both ends name the flow's sockets alike: the sender's own address is the source the
    // receiver accepted, and the other way round.
    assert!(snd.local.is_some() && rcv.local.is_some());
    assert_eq!((&snd.local, &snd.peer), (&rcv.peer, &rcv.local));
    assert!(snd.peer.as_deref().is_some_and(|p| p.starts_with(ADDR_B)));
}

#[test]
fn udp_loss_equals_an_nftables_random_drop_exactly() {
    require_netns();
    let _s = link_bound();
    let tb = Testbed::pair(1500).unwrap();
    // Drop 2% of the test's 1000-byte datagrams (UDP length 1008) arriving at B, at random,
    // and count what was dropped. The UDP setup hello (24 bytes) is never dropped.
    nft(
        &tb,
        Side::B,
        "table inet wbloss {\n chain input {\n  type filter hook input priority 0;\n  \
         udp length 1008 numgen random mod 1000 < 20 counter drop\n }\n}\n",
    );
    let mut c = tb.command(Side::B, BIN);
    c.args(["serve", "--bind", ADDR_B, "--allow-unauthenticated"]);
    let d = LocalDaemon::start_cmd(c, &["--port", "0"]);
    let port = d.addr.port().to_string();
    let ran = wb_in(
        &tb,
        Side::A,
        &[
            "udp", "-H", ADDR_B, "-p", &port, "-t", "3", "-b", "40M", "-l", "1000", "-i", "0.5",
            "--json",
        ],
    );
    assert_eq!(ran.code, 0, "{}", ran.stderr);
    let r = ran.json();
    let dir = &udp(&r).directions[0];
    let listing = nft(&tb, Side::B, "list table inet wbloss\n");
    let dropped: u64 = listing
        .split("counter packets ")
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .expect("nft counter");
    let c = &dir.counts;
    eprintln!(
        "udp 40 Mbit/s, 2% nft drop: sent {} received {} lost {} (window {}/{}), nft dropped {}",
        c.total_sent, c.total_received, c.total_lost, c.window_sent, c.window_received, dropped
    );
    // Exact, on a loaded machine too: every lost datagram is accounted where it went. The
    // nftables drop is the path's loss; the receiving socket's overflows (SO_RXQ_OVFL,
    // /proc/net/udp) and the host's other drops (/proc/net/snmp) are the rest.
    let l = &dir.loss;
    eprintln!("loss attribution: {l:?}");
    assert_eq!(l.lost_in_path, dropped, "{l:?}");
    let sockets = l
        .dropped_at_receiving_sockets
        .expect("socket overflows read");
    let host = l.dropped_by_receiving_host.expect("host drops read");
    assert_eq!(
        l.total_lost,
        l.refused_at_sender + sockets + host + l.lost_in_path,
        "{l:?}"
    );
    assert_eq!(l.total_lost as i64, c.total_lost + c.send_refused as i64);
    assert_eq!(
        c.window_lost,
        c.window_sent as i64 - c.window_received as i64
    );
    // And 2% within four standard deviations of a binomial draw.
    let n = c.total_sent as f64;
    let sd = (n * 0.02 * 0.98).sqrt();
    assert!(
        (dropped as f64 - 0.02 * n).abs() <= 4.0 * sd,
        "dropped {dropped} of {n}"
    );
    assert_eq!(c.duplicate + c.late, 0);
    check_interval_loss(&r);
}

/// What a packet capture on B's interface saw of the test's datagrams.
#[derive(Debug, Default)]
struct Capture {
    distinct: u64,
    duplicate: u64,
    late: u64,
    /// Frames the capture socket itself dropped (PACKET_STATISTICS `tp_drops`): a capture
    /// thread starved on a loaded machine misses frames the receiver got.
    dropped: u64,
}

/// Capture the UDP stream datagrams (magic `WBU1`) arriving on B's interface for `secs`,
/// classifying them by sequence number (late = below the highest seen, not seen before).
/// Returns once the capture socket is open: a test started before would send datagrams the
/// capture cannot see.
fn capture(
    path: &EmulatedPath,
    secs: u64,
) -> std::thread::JoinHandle<Result<Capture, wirebench_lab::LabError>> {
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let handle = path.spawn_in(Side::B, move || {
        use wirebench_sys::packet::{ifindex, PacketSocket};
        let sock = PacketSocket::open(ifindex(IF_B).unwrap()).unwrap();
        sock.set_recv_buffer(8 << 20).unwrap();
        let _ = ready_tx.send(());
        let mut seen = HashSet::new();
        let mut highest: Option<u64> = None;
        let mut cap = Capture::default();
        let mut buf = vec![0u8; 2048];
        let end = Instant::now() + Duration::from_secs(secs);
        while Instant::now() < end {
            let Ok(Some(meta)) = sock.recv_timeout(&mut buf, Duration::from_millis(50)) else {
                continue;
            };
            if meta.outgoing() || meta.len < 14 + 20 + 8 + 24 {
                continue;
            }
            let ip = &buf[14..];
            if ip[9] != 17 {
                continue;
            }
            let ihl = usize::from(ip[0] & 0x0f) * 4;
            let payload = &ip[ihl + 8..];
            let Ok(h) = DatagramHeader::parse(payload) else {
                continue;
            };
            if !seen.insert((h.flow, h.seq)) {
                cap.duplicate += 1;
                continue;
            }
            cap.distinct += 1;
            match highest {
                Some(m) if h.seq < m => cap.late += 1,
                _ => highest = Some(h.seq),
            }
        }
        cap.dropped = sock.statistics().map_or(0, |s| u64::from(s.drops));
        cap
    });
    ready_rx
        .recv_timeout(Duration::from_secs(10))
        .expect("the capture socket did not open within 10 s");
    handle
}

#[test]
fn udp_duplicates_and_reordering_match_a_capture_and_the_emulator() {
    require_netns();
    let _s = link_bound();
    let impaired = EmuConfig {
        dup: 0.02,
        reorder: 0.02,
        reorder_gap: Duration::from_millis(3),
        seed: 42,
        ..EmuConfig::default()
    };
    let path = EmulatedPath::new(1500, impaired, EmuConfig::default()).unwrap();
    let mut c = path.command(Side::B, BIN);
    c.args(["serve", "--bind", ADDR_B, "--allow-unauthenticated"]);
    let d = LocalDaemon::start_cmd(c, &["--port", "0"]);
    let port = d.addr.port().to_string();
    let cap = capture(&path, 5);
    let before = path.counters(EmuDir::AToB);
    let mut cmd = path.command(Side::A, BIN);
    cmd.args([
        "udp", "-H", ADDR_B, "-p", &port, "-t", "2", "-b", "20M", "-l", "1000", "--json",
    ]);
    let out = cmd.output().unwrap();
    let r: RunResult = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stderr)));
    let cap = cap.join().unwrap().unwrap();
    let after = path.counters(EmuDir::AToB);
    let c = &udp(&r).directions[0].counts;
    eprintln!(
        "udp with 2% dup + 2% reorder: wirebench received {} dup {} late {}; capture distinct {} \
         dup {} late {} dropped {}; emulator duplicated {} held back {}",
        c.total_received,
        c.duplicate,
        c.late,
        cap.distinct,
        cap.duplicate,
        cap.late,
        cap.dropped,
        after.duplicated - before.duplicated,
        after.reordered - before.reordered
    );
    // The receiver's counts equal the capture's, one for one, unless the capture socket
    // dropped frames itself (then it saw fewer, by at most what it dropped).
    if cap.dropped == 0 {
        assert_eq!(c.total_received, cap.distinct);
        assert_eq!(c.duplicate, cap.duplicate);
        assert_eq!(c.late, cap.late);
    } else {
        eprintln!("the capture socket dropped {} frames", cap.dropped);
        assert!(c.total_received >= cap.distinct);
        assert!(c.total_received - cap.distinct <= cap.dropped, "{cap:?}");
    }
    assert_eq!(c.total_lost, 0);
    // Every duplicate the capture saw was made by the emulator (which also duplicates the
    // odd control-connection segment), and there were some of each.
    assert!(cap.duplicate > 0 && cap.late > 0);
    assert!(cap.duplicate <= after.duplicated - before.duplicated);
}
