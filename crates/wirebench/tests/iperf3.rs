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
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("iperf3 -J output ({e}): {text}"))
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
    let _g = serial();
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
    let _g = serial();
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

/// The daemon's policy applies to iperf3 clients: past --max-tests the client is told the
/// server is busy; past --max-flows and --max-duration it is refused with iperf3's codes
/// (which the stock client prints), and RSA authentication is refused with a clear log line.
#[test]
fn iperf3_clients_meet_the_daemons_policy() {
    if !have_iperf3() {
        return;
    }
    let _g = serial();
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
    let _g = serial();
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
