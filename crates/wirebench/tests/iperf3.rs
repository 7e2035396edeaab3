//! `wirebench serve --iperf3` against Debian's stock iperf3 client (installed by .ci/run):
//! a matrix of client options in a namespace pair, checked against what the daemon recorded
//! (its engine's own counts), the TCP_INFO of its sockets and the receiving interface's
//! counters; two iperf3 clients at once; the daemon's policy; and hostile clients that speak
//! iperf3 badly, after which the daemon is back at its baseline and still serves.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::daemon::LocalDaemon;
use crate::common::*;
use crate::rr_udp::nft;
use wirebench_lab::{Side, Testbed};

/// iperf3 is there (CI requires it).
fn have_iperf3() -> bool {
    wirebench_sys::require::capability(
        "iperf3",
        wirebench_sys::require::command_works("iperf3", "--version"),
        "the iperf3 command (apt-get install iperf3)",
    )
}

/// The iperf3 frontend's address, from the daemon's log.
fn iperf3_addr(d: &LocalDaemon) -> SocketAddr {
    d.wait_log("serving iperf3 clients", 1, Duration::from_secs(5));
    d.log_text()
        .lines()
        .find(|l| l.contains("serving iperf3 clients"))
        .and_then(|l| l.split_whitespace().find_map(|w| w.strip_prefix("addr=")))
        .and_then(|a| a.parse().ok())
        .expect("the iperf3 address in the log")
}

/// Run `iperf3 -c ADDR -p PORT -J ARGS` (in `c`) and parse its JSON.
fn iperf3_json(mut c: Command, addr: SocketAddr, args: &[&str]) -> serde_json::Value {
    c.args([
        "-c",
        &addr.ip().to_string(),
        "-p",
        &addr.port().to_string(),
        "-J",
    ])
    .args(args)
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let out = c.output().expect("run iperf3");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "iperf3 {args:?} failed: {text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("iperf3 -J output ({e}): {text}"));
    // iperf3 -J exits 0 after some errors, which it reports in the JSON.
    assert!(j.get("error").is_none(), "iperf3 {args:?}: {}", j["error"]);
    j
}

/// Per flow of the record's server report: (role, total bytes, window bytes, TCP_INFO
/// bytes_received, TCP_INFO bytes_acked).
fn server_flows(rec: &serde_json::Value) -> Vec<(String, u64, u64, u64, u64)> {
    rec["server"]["data"]["stream"]["flows"]
        .as_array()
        .expect("a stream report")
        .iter()
        .map(|f| {
            let ti = &f["socket"]["tcp_info"];
            (
                f["role"].as_str().unwrap().to_string(),
                f["total_bytes"].as_u64().unwrap(),
                f["window_bytes"].as_u64().unwrap(),
                ti["bytes_received"].as_u64().unwrap_or(0),
                ti["bytes_acked"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The cookie each data connection starts with.
const COOKIE: u64 = 37;

/// Stock iperf3 client options against `serve --iperf3` in a namespace pair (veth, MTU
/// 1500). For every case: the client exits 0 and the test is a completed record. Forward:
/// what iperf3 says it sent is, byte for byte, what the daemon's engine received, what the
/// kernel's TCP_INFO says arrived on those sockets (minus the cookie), and (payload of the
/// receiving interface's counters) within 1 %. Reverse: the daemon sent at least what the
/// client received (bytes still in flight at TEST_END are lost to the client, as with
/// iperf3's own server), and its sockets' TCP_INFO acked all of it.
#[test]
fn stock_iperf3_client_option_matrix_in_a_namespace_pair() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = shared();
    let tb = Testbed::pair(1500).expect("testbed");
    let mut c = tb.command(Side::B, BIN);
    c.args([
        "serve",
        "--bind",
        wirebench_lab::ADDR_B,
        "--allow-unauthenticated",
    ]);
    c.args(["--port", "5301", "--iperf3", "--iperf3-port", "5201"]);
    let d = LocalDaemon::start_cmd(c, &["--max-tests-per-peer", "2"]);
    let addr: SocketAddr = format!("{}:5201", wirebench_lab::ADDR_B).parse().unwrap();
    let cases: &[&[&str]] = &[
        &["-t", "1"],
        &["-t", "1", "-R"],
        &["-t", "1", "-P", "3", "-l", "64K", "-w", "1M"],
        &["-t", "1", "--bidir"],
        &["-n", "40M", "-C", "reno"],
        &["-t", "1", "-b", "200M", "--get-server-output"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let before = tb.counters(Side::B, "wbb").unwrap();
        let j = iperf3_json(tb.command(Side::A, "iperf3"), addr, args);
        let after = tb.counters(Side::B, "wbb").unwrap();
        let recs = d.wait_records(i + 1, Duration::from_secs(10));
        let rec = &recs[i];
        assert_eq!(rec["status"], "completed", "{args:?}: {rec}");
        assert!(rec["iperf3"]["client_version"].is_string(), "{rec}");
        let flows = server_flows(rec);
        let end = &j["end"];
        let client_sent: u64 = end["sum_sent"]["bytes"].as_u64().unwrap_or(0);
        let received: Vec<_> = flows.iter().filter(|f| f.0 == "receiver").collect();
        let sent: Vec<_> = flows.iter().filter(|f| f.0 == "sender").collect();
        let reverse = args.contains(&"-R");
        let bidir = args.contains(&"--bidir");
        if !reverse {
            let engine: u64 = received.iter().map(|f| f.1).sum();
            let kernel: u64 = received.iter().map(|f| f.3 - COOKIE).sum();
            let iperf3_sent = if bidir {
                end["sum_sent"]["bytes"].as_u64().unwrap()
            } else {
                client_sent
            };
            assert_eq!(engine, iperf3_sent, "{args:?}: engine vs iperf3's sender");
            assert_eq!(engine, kernel, "{args:?}: engine vs TCP_INFO");
            if !bidir {
                // veth: 14 (Ethernet) + 20 (IPv4) + 32 (TCP with timestamps) per packet;
                // the rest of what arrived is our payload, the cookies and the control bytes.
                let est = (after.rx_bytes - before.rx_bytes) as i64
                    - 66 * (after.rx_packets - before.rx_packets) as i64;
                let err = (est - engine as i64).abs() as f64 / engine as f64;
                assert!(
                    err < 0.01,
                    "{args:?}: wbb says {est} payload bytes, daemon {engine}"
                );
            }
            if let Some(gso) = j.get("server_output_text") {
                assert!(gso.as_str().unwrap().contains("wirebench"), "{gso}");
            }
        }
        if reverse || bidir {
            let server_sent: u64 = sent.iter().map(|f| f.1).sum();
            let acked: u64 = sent.iter().map(|f| f.4).sum();
            let client_got = if bidir {
                end["sum_received_bidir_reverse"]["bytes"].as_u64().unwrap()
            } else {
                end["sum_received"]["bytes"].as_u64().unwrap()
            };
            assert!(
                client_got <= server_sent && client_got > 0,
                "{args:?}: client received {client_got}, server sent {server_sent}"
            );
            assert!(
                acked >= client_got,
                "{args:?}: acked {acked} < {client_got}"
            );
        }
        if args.contains(&"-b") {
            // Paced at 200 Mbit/s: the receiver's rate within 5 % (the sender paces to the
            // byte schedule; the window holds 1 s of it).
            let bps = end["sum_received"]["bits_per_second"].as_f64().unwrap();
            assert!((bps - 200e6).abs() / 200e6 < 0.05, "{bps}");
        }
    }
}

/// Two stock iperf3 clients at once against one daemon (iperf3's own server refuses the
/// second): both complete, each with its own record, and their test windows overlap.
#[test]
fn two_iperf3_clients_at_once() {
    if !have_iperf3() {
        return;
    }
    let _g = shared();
    let d = LocalDaemon::start(&[
        "--iperf3",
        "--iperf3-port",
        "0",
        "--max-tests-per-peer",
        "2",
    ]);
    let addr = iperf3_addr(&d);
    let spawn = || {
        let mut c = Command::new("iperf3");
        c.args([
            "-c",
            "127.0.0.1",
            "-p",
            &addr.port().to_string(),
            "-t",
            "2",
            "-J",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        c.spawn().expect("iperf3")
    };
    let (a, b) = (spawn(), spawn());
    for child in [a, b] {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
    let recs = d.wait_records(2, Duration::from_secs(10));
    assert!(recs.iter().all(|r| r["status"] == "completed"), "{recs:?}");
    // Overlap: each started before the other ended.
    let (s0, e0) = (
        recs[0]["admitted_unix_ms"].as_u64().unwrap(),
        recs[0]["ended_unix_ms"].as_u64().unwrap(),
    );
    let (s1, e1) = (
        recs[1]["admitted_unix_ms"].as_u64().unwrap(),
        recs[1]["ended_unix_ms"].as_u64().unwrap(),
    );
    assert!(s0 < e1 && s1 < e0, "{recs:?}");
}

/// A relay in front of the daemon's iperf3 port for `conns` connections: each one accepted is
/// connected onward at once, in order (so the daemon accepts them in the client's order),
/// and the bytes copied both ways; the client's bytes on connection `held` (0 = the control
/// connection) wait `delay` before the first is passed on.
fn holding_relay(
    to: SocketAddr,
    conns: usize,
    held: usize,
    delay: Duration,
) -> (SocketAddr, std::thread::JoinHandle<()>) {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let at = l.local_addr().unwrap();
    // Every wait is bounded: the accepts by a deadline, the copies by a read timeout.
    l.set_nonblocking(true).unwrap();
    let h = std::thread::spawn(move || {
        let mut copies = Vec::new();
        let deadline = Instant::now() + Duration::from_secs(30);
        for i in 0..conns {
            let c = loop {
                match l.accept() {
                    Ok((c, _)) => break c,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                        assert!(
                            Instant::now() < deadline,
                            "relay: {i} of {conns} connections"
                        );
                        std::thread::sleep(Duration::from_millis(5));
                    }
                    Err(e) => panic!("relay accept: {e}"),
                }
            };
            c.set_nonblocking(false).unwrap();
            let u = TcpStream::connect(to).expect("relay connect");
            let (c2, u2) = (c.try_clone().unwrap(), u.try_clone().unwrap());
            let wait = if i == held { delay } else { Duration::ZERO };
            copies.push(std::thread::spawn(move || pipe(c, u, wait)));
            copies.push(std::thread::spawn(move || pipe(u2, c2, Duration::ZERO)));
        }
        for c in copies {
            let _ = c.join();
        }
    });
    (at, h)
}

/// Copy `from` into `to` after `wait`, then pass the end on; a side silent for 30 s ends
/// the copy too.
fn pipe(mut from: TcpStream, mut to: TcpStream, wait: Duration) {
    let _ = from.set_read_timeout(Some(Duration::from_secs(30)));
    std::thread::sleep(wait);
    let _ = std::io::copy(&mut from, &mut to);
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// A `--bidir` client's streams are numbered in the order the daemon accepted them, not in
/// the order their cookies were read (each on a thread of its own): through a relay that
/// holds back the first data stream's cookie for 300 ms, the second stream's arrives first,
/// and the daemon must still receive on the stream iperf3 sends on. (Numbered by arrival,
/// the daemon sent on iperf3's sending stream and read its receiving one: 0 bytes received.)
#[test]
fn bidir_streams_keep_their_directions_when_their_cookies_arrive_out_of_order() {
    if !have_iperf3() {
        return;
    }
    let _g = shared();
    let d = LocalDaemon::start(&["--iperf3", "--iperf3-port", "0"]);
    // The control connection, then the two data streams (-P 1 --bidir): hold the first.
    let (relay, relayed) = holding_relay(iperf3_addr(&d), 3, 1, Duration::from_millis(300));
    let j = iperf3_json(
        Command::new("iperf3"),
        relay,
        &["-t", "1", "--bidir", "-l", "64K"],
    );
    relayed.join().unwrap();
    let rec = &d.wait_records(1, Duration::from_secs(10))[0];
    assert_eq!(rec["status"], "completed", "{rec}");
    let flows = server_flows(rec);
    let received: u64 = flows
        .iter()
        .filter(|f| f.0 == "receiver")
        .map(|f| f.1)
        .sum();
    let sent: u64 = flows.iter().filter(|f| f.0 == "sender").map(|f| f.1).sum();
    let iperf3_sent = j["end"]["sum_sent"]["bytes"].as_u64().unwrap();
    let iperf3_got = j["end"]["sum_received_bidir_reverse"]["bytes"]
        .as_u64()
        .unwrap();
    assert!(iperf3_sent > 0, "{}", j["end"]);
    assert_eq!(
        received, iperf3_sent,
        "the daemon's receiver against iperf3's sender"
    );
    assert!(
        iperf3_got > 0 && iperf3_got <= sent,
        "iperf3 received {iperf3_got}, the daemon sent {sent}"
    );
}

/// The daemon's policy applies to iperf3 clients: past --max-tests the client is told the
/// server is busy; past --max-flows and --max-duration it is refused with iperf3's codes
/// (which the stock client prints), and RSA authentication is refused with a clear log line.
#[test]
fn iperf3_clients_meet_the_daemons_policy() {
    if !have_iperf3() {
        return;
    }
    let _g = shared();
    let d = LocalDaemon::start(&[
        "--iperf3",
        "--iperf3-port",
        "0",
        "--max-tests",
        "1",
        "--max-flows",
        "2",
        "--max-duration",
        "5",
    ]);
    let addr = iperf3_addr(&d);
    let port = addr.port().to_string();
    let run = |args: &[&str]| {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port])
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr),
        )
    };
    let (ok, text) = run(&["-t", "1", "-P", "3"]);
    assert!(!ok && text.contains("number of parallel streams"), "{text}");
    let (ok, text) = run(&["-t", "6"]);
    assert!(!ok, "{text}");
    // A running test holds the only slot: a second client is told the server is busy.
    let mut first = Command::new("iperf3")
        .args(["-c", "127.0.0.1", "-p", &port, "-t", "2"])
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    assert!(
        wait_engine(d.pid(), Duration::from_secs(5)),
        "the first test did not start"
    );
    let (ok, text) = run(&["-t", "1"]);
    assert!(!ok && text.contains("busy"), "{text}");
    assert!(first.wait().unwrap().success());
    assert!(
        d.log_text().contains("iperf3 test refused"),
        "{}",
        d.log_text()
    );
}

/// Connect to the iperf3 port and send a cookie (of `tag`).
fn raw_iperf3(addr: SocketAddr, tag: u8) -> TcpStream {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut cookie = [b'a' + tag % 26; 37];
    cookie[36] = 0;
    s.write_all(&cookie).unwrap();
    s
}

/// Read until EOF (or `within`); the bytes read.
fn read_to_close(s: &mut TcpStream, within: Duration) -> (Vec<u8>, bool) {
    s.set_read_timeout(Some(within)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 256];
    loop {
        match s.read(&mut buf) {
            Ok(0) => return (got, true),
            Ok(n) => got.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return (got, true),
            Err(_) => return (got, false),
        }
    }
}

/// Hostile iperf3 clients: a huge JSON length (CVE-2016-4303 / CVE-2023-38403 in iperf3),
/// a truncated cookie, parameters never sent, a data stream with a foreign cookie, and a
/// client that vanishes in every state (after the cookie, during stream creation, while
/// running, after TEST_END). Each is answered or closed within its deadline, the daemon
/// returns to its baseline (descriptors, threads, memory), and a stock client is served.
#[test]
fn hostile_iperf3_clients_leave_the_daemon_serving() {
    if !have_iperf3() {
        return;
    }
    let _g = shared_timed();
    let d = LocalDaemon::start(&[
        "--iperf3",
        "--iperf3-port",
        "0",
        "--handshake-timeout",
        "1",
        "--results-timeout",
        "1",
        "--max-tests-per-peer",
        "4",
    ]);
    let addr = iperf3_addr(&d);
    let base = d.settled_usage(Duration::from_secs(2));
    // Handshake deadline 1 s; allow for a loaded machine.
    let bound = Duration::from_secs(4);

    // A length prefix of 4 GiB - 1: refused with SERVER_ERROR 114 before any allocation.
    let mut s = raw_iperf3(addr, 0);
    s.write_all(&[0xff, 0xff, 0xff, 0xff]).unwrap();
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed, "not closed");
    assert_eq!(got, [0x09, 0xfe, 0, 0, 0, 114, 0, 0, 0, 0]);

    // A truncated cookie: closed at the handshake deadline, nothing sent.
    let mut s = TcpStream::connect(addr).unwrap();
    s.write_all(b"abcdefgh").unwrap();
    let t = Instant::now();
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got.is_empty() && t.elapsed() < bound, "{got:?}");

    // A cookie and no parameters: PARAM_EXCHANGE, then closed at the deadline.
    let mut s = raw_iperf3(addr, 1);
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got.first() == Some(&0x09), "{got:?}");

    // Parameters, then nothing: CREATE_STREAMS, then closed when no stream came.
    let mut s = raw_iperf3(addr, 2);
    let params = br#"{"tcp":true,"time":1,"parallel":2,"len":1000}"#;
    s.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    s.write_all(params).unwrap();
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got == [0x09, 0x0a], "{got:?}");

    // A running test; a data stream with the test's cookie after it started gets
    // ACCESS_DENIED; then the client vanishes mid-test (its control connection closes).
    let mut s = raw_iperf3(addr, 3);
    let params = br#"{"tcp":true,"time":3,"parallel":1,"len":1000}"#;
    s.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    s.write_all(params).unwrap();
    let mut b = [0u8; 2];
    s.set_read_timeout(Some(bound)).unwrap();
    s.read_exact(&mut b).unwrap();
    assert_eq!(b, [0x09, 0x0a]);
    let data = raw_iperf3(addr, 3);
    s.read_exact(&mut b).unwrap();
    assert_eq!(b, [0x01, 0x02], "TEST_START, TEST_RUNNING");
    let mut late = raw_iperf3(addr, 3);
    let (got, _) = read_to_close(&mut late, bound);
    assert_eq!(got, [0xff], "a stream of a running test is denied");
    drop(s);
    drop(data);

    // After TEST_END, the client never sends its results: closed at the results deadline.
    let mut s = raw_iperf3(addr, 4);
    s.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
    s.write_all(params).unwrap();
    s.read_exact(&mut b).unwrap();
    let data = raw_iperf3(addr, 4);
    s.read_exact(&mut b).unwrap();
    s.write_all(&[0x04]).unwrap();
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got == [0x0d], "{got:?}");
    drop(data);

    // Two records (the two admitted tests that started), neither completed.
    let recs = d.wait_records(3, Duration::from_secs(10));
    assert!(recs.iter().all(|r| r["status"] != "completed"), "{recs:?}");
    d.assert_back_to(base, Duration::from_secs(10), 4096);
    let j = iperf3_json(Command::new("iperf3"), addr, &["-t", "1"]);
    assert!(j["end"]["sum_received"]["bytes"].as_u64().unwrap() > 0);
}

/// The packet counts of an nftables listing's counters, in order.
pub(crate) fn nft_counts(listing: &str) -> Vec<u64> {
    listing
        .split("counter packets ")
        .skip(1)
        .filter_map(|s| s.split_whitespace().next()?.parse().ok())
        .collect()
}

/// `RcvbufErrors` of `side`'s namespace (/proc/net/snmp): datagrams its UDP sockets dropped
/// for a full receive buffer.
fn udp_rcvbuf_errors(tb: &Testbed, side: Side) -> u64 {
    let snmp = tb.exec(side, &["cat", "/proc/net/snmp"]).unwrap();
    let mut udp = snmp.lines().filter(|l| l.starts_with("Udp: "));
    let (names, values) = (udp.next().unwrap(), udp.next().unwrap());
    let at = names
        .split_whitespace()
        .position(|n| n == "RcvbufErrors")
        .unwrap();
    values.split_whitespace().nth(at).unwrap().parse().unwrap()
}

/// The UDP report of a record's server end.
fn server_udp(rec: &serde_json::Value) -> &serde_json::Value {
    let u = &rec["server"]["data"]["udp_stream"];
    assert!(u.is_object(), "no UDP report: {rec}");
    u
}

fn sum_u64(v: &serde_json::Value, key: &str) -> u64 {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x[key].as_u64().unwrap_or(0))
        .sum()
}

/// Stock iperf3 UDP clients (`-u -b 100M -l 1400 -t 1`) against `serve --iperf3` in a
/// namespace pair, forward, reverse, and forward through an nftables rule that drops 2 % of
/// the datagrams at random. Every datagram is accounted for where it went:
/// - on the receiving namespace's input hook, an nftables counter sees each of the test's
///   datagrams (UDP length 1408) once, and the receiving veth's `rx_packets` counts each
///   packet that reached that hook (plus at most a few link-layer ones, ARP);
/// - forward: what the iperf3 client says it sent = what reached B's input hook = dropped
///   by the rule + dropped at the daemon's socket (SO_RXQ_OVFL) or by the host (SNMP) +
///   received by the daemon's engine; and the loss the iperf3 client prints (from the
///   daemon's results) is exactly the rule's count plus those socket/host drops (0 on an
///   unloaded machine), its byte count the engine's;
/// - reverse: what the daemon's engine sent is what reached A's input hook, the client saw
///   every sequence number it used, and what the client counts lost is what its own socket
///   dropped (A's `RcvbufErrors`; 0 unless the client fell behind).
#[test]
fn stock_iperf3_udp_clients_in_a_namespace_pair() {
    if !have_iperf3() {
        return;
    }
    require_netns();
    let _g = shared();
    let tb = Testbed::pair(1500).expect("testbed");
    let mut c = tb.command(Side::B, BIN);
    c.args([
        "serve",
        "--bind",
        wirebench_lab::ADDR_B,
        "--allow-unauthenticated",
    ]);
    c.args(["--port", "5301", "--iperf3", "--iperf3-port", "5201"]);
    let d = LocalDaemon::start_cmd(c, &[]);
    let addr: SocketAddr = format!("{}:5201", wirebench_lab::ADDR_B).parse().unwrap();
    let udp = ["-u", "-b", "100M", "-l", "1400", "-t", "1"];
    let cases: &[(&[&str], u32)] = &[(&[], 0), (&["-R"], 0), (&[], 20)];
    for (i, (extra, per_mille)) in cases.iter().enumerate() {
        let reverse = extra.contains(&"-R");
        let (rx_side, rx_if) = if reverse {
            (Side::A, wirebench_lab::IF_A)
        } else {
            (Side::B, wirebench_lab::IF_B)
        };
        // The interface's counters are read before the table exists and after its counters
        // are listed, so that every packet the hook counts was counted by the interface in
        // that span too (a stray packet of the previous case between the two reads, counted
        // by the hook and not by the interface, once failed this, 8,941 against 8,940).
        let before = tb.counters(rx_side, rx_if).unwrap();
        // A fresh table: count every packet reaching input, the test's datagrams, and drop
        // `per_mille` of them at random.
        nft(
            &tb,
            rx_side,
            &format!(
                "table inet wbiu\ndelete table inet wbiu\ntable inet wbiu {{\n chain input {{\n  \
                 type filter hook input priority 0;\n  counter\n  udp length 1408 counter\n  \
                 udp length 1408 numgen random mod 1000 < {per_mille} counter drop\n }}\n}}\n"
            ),
        );
        let args: Vec<&str> = udp.iter().chain(extra.iter()).copied().collect();
        let drops_before = udp_rcvbuf_errors(&tb, Side::A);
        let j = iperf3_json(tb.command(Side::A, "iperf3"), addr, &args);
        let client_socket_drops = udp_rcvbuf_errors(&tb, Side::A) - drops_before;
        let counts = nft_counts(&nft(&tb, rx_side, "list table inet wbiu\n"));
        let after = tb.counters(rx_side, rx_if).unwrap();
        let [all_input, datagrams, dropped] = counts[..] else {
            panic!("nft counters: {counts:?}")
        };
        let recs = d.wait_records(i + 1, Duration::from_secs(10));
        let rec = &recs[i];
        assert_eq!(rec["status"], "completed", "{args:?}: {rec}");
        let u = server_udp(rec);
        let end = &j["end"];
        let rx_packets = after.rx_packets - before.rx_packets;
        eprintln!(
            "iperf3 {args:?}: nft input {all_input}, datagrams {datagrams}, dropped {dropped}; \
             {rx_if} rx_packets {rx_packets}; A's socket drops {client_socket_drops}; \
             sum_sent {}; sum_received {}; server {} {}",
            end["sum_sent"], end["sum_received"], u["receivers"], u["senders"]
        );
        // The interface also counts what the IPv4 input hook never sees: ARP, and the IPv6
        // router solicitations, MLD reports and neighbour discovery a new veth sends in its
        // first seconds (5 such packets were seen once under load; 16 bounds them).
        assert!(
            rx_packets >= all_input && rx_packets - all_input <= 16,
            "{args:?}: {rx_if} received {rx_packets} packets, the input hook saw {all_input}"
        );
        assert_eq!(dropped > 0, *per_mille > 0, "{args:?}: dropped {dropped}");
        let got = &end["sum_received"];
        if reverse {
            // The daemon's engine paces with bounded catch-up: on a loaded machine it may
            // send fewer than 100 Mbit/s' worth, and says so (`pacing_resets`).
            let sent = sum_u64(&u["senders"], "datagrams_sent");
            let refused = sum_u64(&u["senders"], "send_refused");
            assert!(sent > 1000, "{args:?}: sent {sent}");
            assert_eq!(sent, datagrams, "{args:?}: daemon sent vs A's input hook");
            assert_eq!(refused, 0, "{args:?}");
            // The client saw every number the daemon used (the last one arrived), and what it
            // counts lost is what its own socket dropped (A's RcvbufErrors).
            assert_eq!(got["packets"].as_u64(), Some(sent), "{args:?}");
            assert_eq!(
                got["lost_packets"].as_u64(),
                Some(client_socket_drops),
                "{args:?}"
            );
            assert_eq!(
                end["sum_sent"]["bytes"].as_u64(),
                Some(sum_u64(&u["senders"], "bytes_sent")),
                "{args:?}: the client's sender line is the daemon's"
            );
            continue;
        }
        let client_sent = end["sum_sent"]["packets"].as_u64().unwrap();
        assert!(client_sent > 1000, "{args:?}: sent {client_sent}");
        assert_eq!(
            rec["iperf3"]["client_udp"][0]["packets"].as_u64(),
            Some(client_sent),
            "{args:?}: the record keeps the client's figures"
        );
        let received = sum_u64(&u["receivers"], "datagrams_received");
        let socket_drops = sum_u64(&u["sockets"], "rcvbuf_drops");
        let host = &u["host_drops"];
        let host_other =
            host["in_errors"].as_u64().unwrap() - host["rcvbuf_errors"].as_u64().unwrap();
        assert_eq!(
            client_sent, datagrams,
            "{args:?}: client sent vs B's input hook"
        );
        assert_eq!(
            datagrams,
            dropped + socket_drops + host_other + received,
            "{args:?}: where the datagrams went"
        );
        assert_eq!(
            got["lost_packets"].as_u64(),
            Some(dropped + socket_drops + host_other),
            "{args:?}: the loss iperf3 prints"
        );
        assert_eq!(got["packets"].as_u64(), Some(client_sent), "{args:?}");
        assert_eq!(
            got["bytes"].as_u64(),
            Some(sum_u64(&u["receivers"], "bytes_received")),
            "{args:?}"
        );
        assert_eq!(got["bytes"].as_u64(), Some(received * 1400), "{args:?}");
        let jitter_ms = got["jitter_ms"].as_f64().unwrap();
        let engine_ms = u["receivers"][0]["jitter_ns"].as_f64().unwrap() / 1e6;
        assert!(
            (jitter_ms - engine_ms).abs() < 1e-6,
            "{jitter_ms} vs {engine_ms}"
        );
    }
}

/// Hostile iperf3 UDP clients: one that never sends the connect datagram, and one whose
/// connect datagram comes from another address than its control connection (it is never
/// answered: the daemon sends nothing to a third address). Each test ends at the handshake
/// deadline, the daemon returns to its baseline, and a stock UDP client is served after.
#[test]
fn hostile_iperf3_udp_clients_leave_the_daemon_serving() {
    if !have_iperf3() {
        return;
    }
    let _g = shared_timed();
    let d = LocalDaemon::start(&[
        "--iperf3",
        "--iperf3-port",
        "0",
        "--handshake-timeout",
        "1",
        "--max-tests-per-peer",
        "4",
    ]);
    let addr = iperf3_addr(&d);
    let base = d.settled_usage(Duration::from_secs(2));
    let bound = Duration::from_secs(4);
    let params = br#"{"udp":true,"time":1,"parallel":1,"len":1400,"bandwidth":1000000}"#;
    let start = |tag| {
        let mut s = raw_iperf3(addr, tag);
        s.write_all(&(params.len() as u32).to_be_bytes()).unwrap();
        s.write_all(params).unwrap();
        let mut b = [0u8; 2];
        s.set_read_timeout(Some(bound)).unwrap();
        s.read_exact(&mut b).unwrap();
        assert_eq!(b, [0x09, 0x0a], "PARAM_EXCHANGE, CREATE_STREAMS");
        s
    };

    // No connect datagram: closed at the handshake deadline.
    let mut s = start(5);
    let t = Instant::now();
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got.is_empty() && t.elapsed() < bound, "{got:?}");

    // A connect datagram from 127.0.0.2 for a control connection from 127.0.0.1: never
    // answered; the test ends at the deadline.
    let mut s = start(6);
    let u = std::net::UdpSocket::bind("127.0.0.2:0").unwrap();
    u.connect(addr).unwrap();
    u.send(b"9876").unwrap();
    u.set_read_timeout(Some(Duration::from_millis(1500)))
        .unwrap();
    let mut buf = [0u8; 16];
    assert!(u.recv(&mut buf).is_err(), "a foreign address was answered");
    let (got, closed) = read_to_close(&mut s, bound);
    assert!(closed && got.is_empty(), "{got:?}");

    let recs = d.wait_records(2, Duration::from_secs(10));
    assert!(recs.iter().all(|r| r["status"] != "completed"), "{recs:?}");
    assert_eq!(
        recs[1]["iperf3"]["udp_setup_foreign_datagrams"].as_u64(),
        Some(1),
        "{}",
        recs[1]
    );
    d.assert_back_to(base, Duration::from_secs(10), 4096);
    let j = iperf3_json(
        Command::new("iperf3"),
        addr,
        &["-u", "-b", "10M", "-l", "1400", "-t", "1"],
    );
    let got = &j["end"]["sum_received"];
    assert!(got["packets"].as_u64().unwrap() > 800, "{got}");
    assert_eq!(got["lost_packets"].as_u64(), Some(0), "{got}");
}

/// IPv6, both ways, on loopback (`::1`): a stock iperf3 client against `serve --iperf3
/// --bind ::1` (TCP and UDP: what the client says it sent is what the daemon's record says
/// it received), and `stream --iperf3` / `udp --iperf3` against `iperf3 -s -B ::1` (the
/// server's counts, from its own `-J` output, are this end's: every byte, every datagram
/// received or counted lost).
#[test]
fn iperf3_over_ipv6_both_ways() {
    if !have_iperf3() {
        return;
    }
    let _g = shared_timed();
    // A stock client against the daemon.
    let d = LocalDaemon::start(&["--bind", "::1", "--iperf3", "--iperf3-port", "0"]);
    let addr = iperf3_addr(&d);
    assert!(addr.is_ipv6(), "{addr}");
    let tcp = iperf3_json(Command::new("iperf3"), addr, &["-t", "1"]);
    let udp = iperf3_json(
        Command::new("iperf3"),
        addr,
        &["-t", "1", "-u", "-b", "50M", "-l", "1400"],
    );
    let recs = d.wait_records(2, Duration::from_secs(10));
    assert!(recs.iter().all(|r| r["status"] == "completed"), "{recs:?}");
    for r in &recs {
        let peer = r["peer"].as_str().unwrap_or_default();
        assert!(peer.starts_with("[::1]:"), "the peer over IPv6: {r}");
    }
    let sent = tcp["end"]["sum_sent"]["bytes"].as_u64().unwrap();
    let received: u64 = server_flows(&recs[0]).iter().map(|f| f.1).sum();
    assert_eq!(
        received, sent,
        "TCP: iperf3 sent {sent}, the daemon received {received}"
    );
    // UDP: the daemon's received datagrams and the loss it told the client (which the
    // client prints) cover no more than the client sent (datagrams after the last one the
    // daemon saw are in neither).
    let udp_sent = udp["end"]["sum"]["packets"].as_u64().unwrap();
    let udp_lost = udp["end"]["sum"]["lost_packets"].as_u64().unwrap();
    let got = sum_u64(&server_udp(&recs[1])["receivers"], "datagrams_received");
    assert!(
        got > 0 && got + udp_lost <= udp_sent,
        "UDP: sent {udp_sent}, received {got}, lost {udp_lost}"
    );
    drop(d);

    // wirebench's client against a stock server, TCP then UDP.
    let server = |port: &str| {
        let mut c = Command::new("iperf3");
        c.args(["-s", "-B", "::1", "-p", port, "-1", "-J"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let g = Guarded::spawn(&mut c);
        let until = std::time::Instant::now() + Duration::from_secs(10);
        while !std::process::Command::new("ss")
            .args(["-Hltn", "sport", "=", &format!(":{port}")])
            .output()
            .map(|o| !o.stdout.is_empty())
            .unwrap_or(false)
        {
            assert!(
                std::time::Instant::now() < until,
                "iperf3 -s did not listen"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        g
    };
    let s = server("5331");
    let ran = wb(&[
        "stream", "--iperf3", "-H", "::1", "-p", "5331", "-t", "1", "-J",
    ]);
    let out = s.wait_with_output();
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let r: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    assert_eq!(r["runs"][0]["iperf3"]["address"], "[::1]:5331");
    let srv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let theirs = srv["end"]["sum_received"]["bytes"].as_u64().unwrap();
    let d0 = &r["runs"][0]["summary"]["workload"]["stream"]["directions"][0];
    assert_eq!(d0["receiver_total_bytes"].as_u64(), Some(theirs), "{d0}");
    let ours = d0["sender_total_bytes"].as_u64().unwrap();
    assert!(
        theirs > 0 && theirs <= ours,
        "sent {ours}, iperf3 read {theirs}"
    );

    let s = server("5332");
    let ran = wb(&[
        "udp", "--iperf3", "-H", "::1", "-p", "5332", "-t", "1", "-b", "50M", "-J",
    ]);
    let out = s.wait_with_output();
    assert_eq!(ran.code, 0, "{}\n{}", ran.stdout, ran.stderr);
    let r: serde_json::Value = serde_json::from_str(&ran.stdout).unwrap();
    let srv: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rec = &r["runs"][0]["iperf3"]["reconciliation"][0]["udp"];
    let stream = &srv["end"]["streams"][0]["udp"];
    let sent = rec["sent_datagrams"].as_u64().unwrap();
    assert!(sent > 4000, "50 Mbit/s for 1 s: {rec}");
    // The server's own output: its highest sequence number and lost count are what the
    // results exchange said, and every datagram sent is received, lost, or after the last.
    assert_eq!(
        stream["packets"].as_u64().unwrap() - stream["lost_packets"].as_u64().unwrap(),
        rec["received_datagrams"].as_u64().unwrap(),
        "{stream} vs {rec}"
    );
}
