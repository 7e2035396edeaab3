//! Hardening, round 2 (docs/ROBUSTNESS.md, "Beyond the cases"): one test per behaviour. Each test
//! observes a real daemon (or the real client) from outside — its memory, descriptors and
//! threads in /proc, its log, its records file, the datagrams that reach a socket, the exit
//! code and output of the client — and would fail without the fix it covers.
//!
//! Every wait is bounded; every process, mount and namespace a test makes is removed by a
//! guard, also when the test fails.

use crate::common;
use std::io::{self, Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::common::daemon::{assert_legit_served_quickly, connect_from, legit, LocalDaemon, Raw};
use crate::common::spec::stream_spec;
use crate::common::{wait_engine, Guarded, TempDir, BIN};
use wirebench_model::abort::AbortReason;
use wirebench_model::side::{HostRole, SideData, SideReport, SideStatus};
use wirebench_model::spec::{Direction, Limits, TestSpec, UdpRrSpec, UdpStreamSpec, WorkloadSpec};
use wirebench_proto::data::{DataHello, Token, CONTROL_PREAMBLE};
use wirebench_proto::frame::{encode, FrameDecoder, ABSOLUTE_MAX_FRAME_BYTES};
use wirebench_proto::message::{
    AbortMsg, BusyScope, ErrorCode, ErrorMsg, Hello, Message, TestRequest, Welcome,
    PROTOCOL_VERSION,
};
use wirebench_proto::session::results_frame_cap;
use wirebench_proto::udpsetup;

/// The daemon's own log line for a recorded test (peer text may contain "test finished").
const FINISHED: &str = "daemon::records: test finished";

/// Text a hostile peer sends: a forged log line after a newline, a carriage return, terminal
/// escapes (clear screen, set the window title), a bell and a NUL.
const HOSTILE: &str =
    "\nFORGED INFO test finished test_id=1 status=Completed\r\x1b[2J\x1b]0;pwned\x07\0";

// ---------------------------------------------------------------------------------------
// Helpers: processes, a control-protocol client that never panics, guards.
// ---------------------------------------------------------------------------------------

/// What a bounded run of a command produced.
struct Out {
    code: Option<i32>,
    stdout: Vec<u8>,
    stderr: Vec<u8>,
    took: Duration,
}

impl Out {
    fn stdout(&self) -> String {
        String::from_utf8_lossy(&self.stdout).into_owned()
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr).into_owned()
    }

    fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not JSON ({e}):\n{}\nstderr:\n{}",
                self.stdout(),
                self.stderr()
            )
        })
    }
}

/// A process the test started, its output collected on threads (so that it never blocks on
/// a full pipe); killed by its PID on drop.
struct Running {
    child: Guarded,
    out: Option<JoinHandle<Vec<u8>>>,
    err: Option<JoinHandle<Vec<u8>>>,
    started: Instant,
}

fn collect(mut r: impl Read + Send + 'static) -> JoinHandle<Vec<u8>> {
    thread::spawn(move || {
        let mut v = Vec::new();
        let _ = r.read_to_end(&mut v);
        v
    })
}

impl Running {
    fn spawn(mut c: Command) -> Running {
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let started = Instant::now();
        let mut child = Guarded::spawn(&mut c);
        let out = collect(child.child().stdout.take().expect("piped stdout"));
        let err = collect(child.child().stderr.take().expect("piped stderr"));
        Running {
            child,
            out: Some(out),
            err: Some(err),
            started,
        }
    }

    fn id(&self) -> u32 {
        self.child.id()
    }

    /// Wait for it to exit, at most `within`; on timeout it is killed and the test fails.
    fn finish(mut self, within: Duration) -> Out {
        let t = Instant::now();
        let status = loop {
            if let Some(st) = self.child.child().try_wait().expect("try_wait") {
                break Some(st);
            }
            if t.elapsed() > within {
                break None;
            }
            thread::sleep(Duration::from_millis(20));
        };
        let took = self.started.elapsed();
        if status.is_none() {
            let _ = self.child.child().kill();
            let _ = self.child.child().wait();
        }
        let stdout = self
            .out
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let stderr = self
            .err
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let out = Out {
            code: status.and_then(|s| s.code()),
            stdout,
            stderr,
            took,
        };
        assert!(
            status.is_some(),
            "the process did not exit within {within:?}; stdout:\n{}\nstderr:\n{}",
            out.stdout(),
            out.stderr()
        );
        out
    }
}

/// Run `c` to its end, at most `within`.
fn run_bounded(c: Command, within: Duration) -> Out {
    Running::spawn(c).finish(within)
}

/// `wirebench ARGS`, at most `within`.
fn wb_bounded(args: &[&str], within: Duration) -> Out {
    let mut c = Command::new(BIN);
    c.args(args);
    run_bounded(c, within)
}

/// A tmpfs of a given size mounted on a fresh directory; unmounted and removed on drop.
struct Tmpfs {
    dir: TempDir,
    mounted: bool,
}

impl Tmpfs {
    /// Mount; `None` if this process cannot mount (not root).
    fn mount(size: &str) -> Option<Tmpfs> {
        let dir = TempDir::new("tmpfs");
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(&dir.0)
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(Tmpfs { dir, mounted: true })
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        if self.mounted {
            let umount = |lazy: bool| {
                let mut c = Command::new("umount");
                if lazy {
                    c.arg("-l");
                }
                c.arg(&self.dir.0)
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success())
            };
            if !umount(false) {
                let _ = umount(true);
            }
        }
    }
}

/// A data connection of the test with `token`: its hello sent.
fn data_conn(addr: SocketAddr, token: Token, flow: u32) -> io::Result<TcpStream> {
    let mut s = connect_from(addr, None)?;
    s.write_all(&DataHello { token, flow }.encode())?;
    Ok(s)
}

/// A stream spec: `flows` forward flows of `duration_ms`, 16 KiB calls, intervals of
/// `interval_ms`.
fn spec_16k(flows: u32, duration_ms: u64, interval_ms: Option<u64>) -> TestSpec {
    stream_spec(duration_ms, |c, st| {
        c.flows = flows;
        c.interval_ms = interval_ms;
        st.send_size_bytes = 16 * 1024;
        st.recv_size_bytes = 16 * 1024;
    })
}

/// A `results` frame (header included) whose payload is exactly `payload_len` bytes: the
/// client report `template` (taken from a real test's record) with `env.software` padded.
/// Returns the frame and the padding length.
fn results_frame(template: &serde_json::Value, payload_len: usize) -> (Vec<u8>, usize) {
    let mut rep: SideReport = serde_json::from_value(template.clone())
        .unwrap_or_else(|e| panic!("a record's client report ({e}): {template}"));
    assert_eq!(rep.host, HostRole::Client);
    rep.env.software.clear();
    let empty = encode(&Message::Results(Box::new(rep.clone()))).len() - 4;
    assert!(payload_len > empty);
    let pad = payload_len - empty;
    rep.env.software = "x".repeat(pad);
    let f = encode(&Message::Results(Box::new(rep)));
    assert_eq!(f.len(), payload_len + 4);
    (f, pad)
}

/// Open every data connection of the admitted test and wait for `ready`.
fn open_all(
    c: &mut Raw,
    addr: SocketAddr,
    spec: &TestSpec,
    token: Token,
) -> Result<Vec<TcpStream>, String> {
    let mut data = Vec::new();
    for flow in 0..spec.setup_connections() {
        data.push(
            data_conn(addr, token, flow).map_err(|e| format!("data connection {flow}: {e}"))?,
        );
    }
    match c.recv_where(Duration::from_secs(30), |m| matches!(m, Message::Ready(_))) {
        Some(Message::Ready(_)) => Ok(data),
        other => Err(format!("expected ready, got {other:?}")),
    }
}

/// Stop the running test (`abort`), wait for the server's results, say `bye`.
fn abort_and_bye(c: &mut Raw) -> Result<(), String> {
    c.try_send(&Message::Abort(AbortMsg {
        reason: AbortReason::Interrupted,
    }))
    .map_err(|e| format!("sending abort: {e}"))?;
    match c.recv_where(Duration::from_secs(30), |m| {
        matches!(m, Message::Results(_))
    }) {
        Some(Message::Results(_)) => {}
        other => return Err(format!("expected the server's results, got {other:?}")),
    }
    c.try_send(&Message::Bye(Default::default()))
        .map_err(|e| format!("sending bye: {e}"))?;
    if c.closed_within(Duration::from_secs(10)).is_none() {
        return Err("the server did not close after bye".into());
    }
    Ok(())
}

/// One test in which the client, once the engines run, sends `frame` (its results) and then
/// aborts. Returns the test id.
fn peer_results_then_abort(addr: SocketAddr, spec: &TestSpec, frame: &[u8]) -> Result<u64, String> {
    let mut c = Raw::try_connect(addr, None).map_err(|e| format!("connect: {e}"))?;
    let (id, token) = c.admit(spec)?;
    let data = open_all(&mut c, addr, spec, token)?;
    c.try_send(&Message::Start(Default::default()))
        .map_err(|e| format!("sending start: {e}"))?;
    c.s.write_all(frame)
        .map_err(|e| format!("sending results: {e}"))?;
    abort_and_bye(&mut c).map_err(|e| format!("test {id}: {e}"))?;
    drop(data);
    Ok(id)
}

/// The complete lines of a records file (each must be a JSON object with a `test_id`), and
/// the bytes after its last newline.
fn strict_records(path: &Path) -> (Vec<serde_json::Value>, Vec<u8>) {
    let bytes = std::fs::read(path).unwrap_or_default();
    let whole = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut recs = Vec::new();
    let lines = bytes[..whole.saturating_sub(1)].split(|&b| b == b'\n');
    for (i, line) in lines.enumerate().take_while(|_| whole > 0) {
        let v: serde_json::Value = serde_json::from_slice(line).unwrap_or_else(|e| {
            panic!(
                "line {} of {} is not JSON ({e}): {:?}…",
                i + 1,
                path.display(),
                String::from_utf8_lossy(&line[..line.len().min(200)])
            )
        });
        assert!(v["test_id"].is_u64(), "line {}: no test_id", i + 1);
        recs.push(v);
    }
    (recs, bytes[whole..].to_vec())
}

/// Poll until the records file at `path` holds at least `n` complete lines (each one JSON);
/// them.
fn wait_strict(path: &Path, n: usize, within: Duration) -> Vec<serde_json::Value> {
    let t = Instant::now();
    loop {
        let (recs, _) = strict_records(path);
        if recs.len() >= n {
            return recs;
        }
        assert!(
            t.elapsed() < within,
            "only {} of {n} records in {} after {within:?}",
            recs.len(),
            path.display()
        );
        thread::sleep(Duration::from_millis(20));
    }
}

fn loopback(last: u8) -> IpAddr {
    IpAddr::V4(Ipv4Addr::new(127, 0, 0, last))
}

/// A fake server on loopback: accepts one control connection (within 30 s), reads its
/// preamble, and hands it and the listener to `script`; its answer comes back on join.
fn fake_server<T: Send + 'static>(
    script: impl FnOnce(&TcpListener, &mut Raw) -> T + Send + 'static,
) -> (SocketAddr, JoinHandle<Option<T>>) {
    let l = TcpListener::bind("127.0.0.1:0").expect("bind fake server");
    let addr = l.local_addr().unwrap();
    l.set_nonblocking(true).unwrap();
    let h = thread::spawn(move || {
        let s = accept_within(&l, Duration::from_secs(30))?;
        let mut c = Raw::from_stream(s);
        let mut pre = [0u8; 4];
        c.s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
        c.s.read_exact(&mut pre).ok()?;
        (pre == CONTROL_PREAMBLE).then(|| script(&l, &mut c))
    });
    (addr, h)
}

/// A connection accepted on the non-blocking `l` within `within`.
fn accept_within(l: &TcpListener, within: Duration) -> Option<TcpStream> {
    let t = Instant::now();
    loop {
        match l.accept() {
            Ok((s, _)) => {
                s.set_nonblocking(false).ok()?;
                return Some(s);
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(_) => return None,
        }
        if t.elapsed() > within {
            return None;
        }
        thread::sleep(Duration::from_millis(10));
    }
}

/// A welcome a fake server may send.
fn welcome(software: &str, identity: &str, auth_required: bool) -> Message {
    Message::Welcome(Welcome {
        version: PROTOCOL_VERSION,
        software: software.into(),
        limits: Limits::default(),
        nonce: "ab".repeat(32),
        server_identity: identity.into(),
        auth_required,
    })
}

/// Bytes that must never reach a log or a terminal raw: ESC, BEL, NUL, CR.
fn raw_controls(b: &[u8]) -> Vec<u8> {
    b.iter()
        .copied()
        .filter(|c| matches!(c, 0x1b | 0x07 | 0x00 | b'\r'))
        .collect()
}

// ---------------------------------------------------------------------------------------
// 1. Memory held for the peer; the results allowance follows the elapsed time.
// ---------------------------------------------------------------------------------------

/// Ten tests whose client sends a `results` frame exactly as large as the daemon allows
/// (12.4 MB each: 512 flows, intervals of 100 ms, room for TCP_INFO samples) and then aborts
/// leave the daemon within 32 MB of its baseline (its descriptors and threads back to it
/// too), although each record on disk carries the whole padded report. Then a `results` frame announcing what a test of
/// the declared length (30 s) could carry, sent right after the start, is refused at its
/// header.
#[test]
fn memory_held_for_the_peer_is_bounded_and_results_follow_elapsed_time() {
    let _shared = crate::common::shared_timed();
    let _ = wirebench_sys::process::raise_nofile_limit(8192);
    const FLOWS: u32 = 512;
    // Eleven records of one frame each must fit the records file before it rotates.
    let d = LocalDaemon::start(&[
        "--max-flows",
        "512",
        "--idle-timeout",
        "5",
        "--records-max-size",
        "268435456",
    ]);
    let base = d.baseline();
    let spec = spec_16k(FLOWS, 30_000, Some(100));
    // What the daemon allows at any time once the engines run (the allowance only grows).
    let cap = results_frame_cap(&spec, Duration::ZERO) as usize;
    assert!(
        cap * 10 > 48 << 20,
        "ten frames of {cap} bytes are not enough to show a leak"
    );
    let template = wait_strict(&d.records_path, 1, Duration::from_secs(10))[0]["client"].clone();
    let (frame, pad) = results_frame(&template, cap);
    let mut peak_kb = 0;
    for i in 0..10 {
        let finished = d.log_count(FINISHED);
        peer_results_then_abort(d.addr, &spec, &frame)
            .unwrap_or_else(|e| panic!("test {i}: {e}\nlog:\n{}", d.log_text()));
        d.wait_log(FINISHED, finished + 1, Duration::from_secs(30));
        peak_kb = peak_kb.max(d.usage().rss_kb);
    }
    d.assert_back_to(base, Duration::from_secs(20), 32 * 1024);
    eprintln!(
        "memory held for the peer: baseline {} kB, peak seen {peak_kb} kB, after {} kB",
        base.rss_kb,
        d.usage().rss_kb
    );
    // The daemon took each frame whole: the records on disk carry every padding byte.
    let recs = wait_strict(&d.records_path, 11, Duration::from_secs(30));
    assert_eq!(recs.len(), 11, "one record per test");
    for r in &recs[1..] {
        assert_eq!(r["status"], "aborted", "{}", r["status"]);
        let sw = r["client"]["env"]["software"].as_str().map_or(0, str::len);
        assert_eq!(sw, pad, "the peer's report was not recorded whole");
    }

    // The allowance: what the declared 30 s could carry, announced right after the start.
    let mut c = Raw::try_connect(d.addr, None).unwrap();
    let (id, token) = c.admit(&spec).unwrap();
    let data = open_all(&mut c, d.addr, &spec, token).unwrap();
    c.try_send(&Message::Start(Default::default())).unwrap();
    let started = Instant::now();
    let declared = results_frame_cap(
        &spec,
        Duration::from_millis(spec.common.duration_ms + spec.common.warmup_ms),
    );
    // The server started its clock after our start left: its allowance now is at most this.
    let honest_now = results_frame_cap(&spec, started.elapsed() + Duration::from_secs(5));
    assert!(
        u64::from(declared) > 2 * u64::from(honest_now) && declared < ABSOLUTE_MAX_FRAME_BYTES,
        "declared {declared}, honest now {honest_now}"
    );
    c.s.write_all(&declared.to_be_bytes()).unwrap();
    c.s.write_all(b"{\"results\":").unwrap();
    match c.recv_where(Duration::from_secs(10), |_| false) {
        Some(Message::Error(e)) => {
            assert_eq!(e.code, ErrorCode::BadFrame, "{}", e.message);
            assert!(e.message.contains("above the cap"), "{}", e.message);
        }
        other => panic!(
            "a {declared}-byte results frame right after the start (allowance at most \
             {honest_now}) was not refused: {other:?}"
        ),
    }
    assert!(
        c.closed_within(Duration::from_secs(10)).is_some(),
        "not closed after the refusal"
    );
    drop(data);
    let recs = wait_strict(&d.records_path, 12, Duration::from_secs(30));
    let last = &recs[11];
    assert_eq!(last["test_id"], id);
    assert_eq!(last["status"], "failed", "{}", last["reason"]);
    assert_legit_served_quickly(d.addr);
}

// ---------------------------------------------------------------------------------------
// 2. UDP reflection.
// ---------------------------------------------------------------------------------------

fn udp_specs() -> Vec<(&'static str, TestSpec)> {
    let mut rev = TestSpec::new(WorkloadSpec::UdpStream(UdpStreamSpec {
        direction: Direction::Reverse,
        ..UdpStreamSpec::default()
    }));
    rev.common.duration_ms = 4000;
    let mut rr = TestSpec::new(WorkloadSpec::UdpRr(UdpRrSpec::default()));
    rr.common.duration_ms = 4000;
    vec![("reverse UDP stream", rev), ("UDP_RR", rr)]
}

/// The server's UDP port, from the setup connection.
fn read_port(tcp: &mut TcpStream) -> u16 {
    tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut m = [0u8; udpsetup::SETUP_MSG_BYTES];
    tcp.read_exact(&mut m).expect("the server's UDP port");
    udpsetup::decode_port(&m).expect("a port message")
}

/// Datagrams that reach `sock` within `within`.
fn drain(sock: &UdpSocket, within: Duration) -> usize {
    let until = Instant::now() + within;
    let mut buf = [0u8; 65536];
    let mut n = 0;
    while let Some(left) = until.checked_duration_since(Instant::now()) {
        if left.is_zero() {
            break;
        }
        sock.set_read_timeout(Some(left)).unwrap();
        match sock.recv_from(&mut buf) {
            Ok(_) => n += 1,
            Err(_) => break,
        }
    }
    n
}

/// A UDP hello with the right token and flow, from 127.0.0.55 while the control connection
/// comes from 127.0.0.1, for a reverse UDP stream and a UDP_RR test: alone, it never
/// completes the setup (the setup fails at its deadline); before the control host's own
/// hello, it is ignored and the test's datagrams go to the control host only. Requests from
/// 127.0.0.55 before (queued while the setup ends) and during the UDP_RR test get no answer. Not one datagram reaches 127.0.0.55, and
/// the daemon serves a legitimate client afterwards.
#[test]
fn a_udp_hello_from_a_third_host_gets_nothing() {
    let _shared = crate::common::shared_timed();
    let d = LocalDaemon::start(&["--handshake-timeout", "2", "--idle-timeout", "3"]);
    let third = UdpSocket::bind("127.0.0.55:0").expect("bind 127.0.0.55");
    let mut reached_third = 0;
    for (name, spec) in udp_specs() {
        // Only the third host says hello.
        let mut c = Raw::try_connect(d.addr, None).unwrap();
        let (_, token) = c.admit(&spec).unwrap();
        let mut tcp = data_conn(d.addr, token, 0).unwrap();
        let server_udp = SocketAddr::new(d.addr.ip(), read_port(&mut tcp));
        let hello = udpsetup::hello(token, 0);
        let t = Instant::now();
        // Past the setup's 2 s deadline.
        while t.elapsed() < Duration::from_millis(3500) {
            third.send_to(&hello, server_udp).unwrap();
            reached_third += drain(&third, Duration::from_millis(100));
        }
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut ack = [0u8; udpsetup::SETUP_MSG_BYTES];
        let got = tcp.read(&mut ack);
        assert!(
            matches!(got, Ok(0) | Err(_)),
            "{name}: the setup connection got {got:?} ({ack:?}) after a third host's hello"
        );
        assert!(
            c.closed_within(Duration::from_secs(5)).is_some(),
            "{name}: the control connection stayed open"
        );

        // The third host's hello first, then the control host's: the test runs.
        let mut c = Raw::try_connect(d.addr, None).unwrap();
        let (_, token) = c.admit(&spec).unwrap();
        let mut tcp = data_conn(d.addr, token, 0).unwrap();
        let server_udp = SocketAddr::new(d.addr.ip(), read_port(&mut tcp));
        let hello = udpsetup::hello(token, 0);
        for _ in 0..3 {
            third.send_to(&hello, server_udp).unwrap();
        }
        let mine = UdpSocket::bind("127.0.0.1:0").unwrap();
        let mut ack = [0u8; udpsetup::SETUP_MSG_BYTES];
        let mut got = 0;
        tcp.set_read_timeout(Some(Duration::from_millis(200)))
            .unwrap();
        let t = Instant::now();
        while got < ack.len() {
            assert!(t.elapsed() < Duration::from_secs(10), "{name}: no ack");
            mine.send_to(&hello, server_udp).unwrap();
            match tcp.read(&mut ack[got..]) {
                Ok(0) => panic!("{name}: the server closed the setup connection"),
                Ok(n) => got += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut
                    ) => {}
                Err(e) => panic!("{name}: {e}"),
            }
        }
        udpsetup::decode_ack(&ack).expect("an ack");
        // Requests from the third host between the setup and the start: they wait in the
        // server's socket until its engine runs.
        for seq in 0..5u64 {
            third
                .send_to(&(2_000_000 + seq).to_be_bytes(), server_udp)
                .unwrap();
        }
        match c.recv_where(Duration::from_secs(10), |m| matches!(m, Message::Ready(_))) {
            Some(Message::Ready(_)) => {}
            other => panic!("{name}: expected ready, got {other:?}"),
        }
        c.try_send(&Message::Start(Default::default())).unwrap();
        let rr = matches!(spec.workload, WorkloadSpec::UdpRr(_));
        let mut mine_got = 0;
        let mut seq = 0u64;
        let t = Instant::now();
        while t.elapsed() < Duration::from_millis(1500) {
            if rr {
                seq += 1;
                mine.send_to(&seq.to_be_bytes(), server_udp).unwrap();
                third
                    .send_to(&(1_000_000 + seq).to_be_bytes(), server_udp)
                    .unwrap();
            }
            mine_got += drain(&mine, Duration::from_millis(20));
            reached_third += drain(&third, Duration::from_millis(20));
        }
        assert!(mine_got > 0, "{name}: the control host got no datagram");
        abort_and_bye(&mut c).unwrap_or_else(|e| panic!("{name}: {e}"));
        reached_third += drain(&third, Duration::from_secs(1));
        drop(tcp);
    }
    assert_eq!(
        reached_third, 0,
        "the daemon sent datagrams to a host that only sent a UDP hello"
    );
    let recs = wait_strict(&d.records_path, 4, Duration::from_secs(20));
    let statuses: Vec<&str> = recs
        .iter()
        .map(|r| r["status"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(statuses, ["failed", "aborted", "failed", "aborted"]);
    assert_legit_served_quickly(d.addr);
}

// ---------------------------------------------------------------------------------------
// 3. The records file.
// ---------------------------------------------------------------------------------------

/// Fill the file system of `dir` with a file until it refuses to grow.
fn fill(path: &Path) {
    let mut f = std::fs::File::create(path).expect("filler");
    let block = [0u8; 1024];
    for _ in 0..1024 {
        if f.write_all(&block).and_then(|()| f.sync_data()).is_err() {
            return;
        }
    }
    panic!("{} did not fill up", path.display());
}

/// A legitimate 100 ms test, served to completion; a `busy` for this peer (its previous
/// test's slot is freed just after the client has left) is retried for up to 10 s.
fn served(addr: SocketAddr) {
    use wirebench_net::client::{self, ClientConfig, Outcome};
    let t = Instant::now();
    loop {
        let cfg = ClientConfig::new(addr, common::daemon::short_spec(100));
        match client::run(&cfg, &AtomicBool::new(false), &mut |_| {}) {
            Ok(run) => {
                assert_eq!(run.outcome, Outcome::Completed);
                return;
            }
            Err(wirebench_net::NetError::Session(
                wirebench_proto::session::SessionError::Busy(b),
            )) if b.scope == BusyScope::Peer && t.elapsed() < Duration::from_secs(10) => {
                thread::sleep(Duration::from_millis(10));
            }
            Err(e) => panic!("a legitimate client was not served: {e}"),
        }
    }
}

/// Wait until the file at `path` has not changed for 300 ms and ends with a newline (or is
/// empty): the record being written (the daemon logs `test finished` just before it
/// writes) is on disk or rolled back.
fn settle(path: &Path) {
    let look = || {
        let b = std::fs::read(path).unwrap_or_default();
        (b.len(), b.last().copied())
    };
    let t = Instant::now();
    let mut last = look();
    let mut since = Instant::now();
    loop {
        thread::sleep(Duration::from_millis(20));
        let now = look();
        if now != last {
            last = now;
            since = Instant::now();
        } else if since.elapsed() >= Duration::from_millis(300)
            && matches!(now.1, None | Some(b'\n'))
        {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(15),
            "{} did not settle: {last:?}",
            path.display()
        );
    }
}

/// On a 64 KiB tmpfs that fills up, then gets space back: every line of the records file
/// parses as JSON (no glued or half line), the daemon serves every client meanwhile, and it
/// logs the failure once and the recovery once.
#[test]
fn records_stay_whole_lines_on_a_full_disk_and_resume_when_space_returns() {
    let _shared = crate::common::shared_timed();
    let Some(fs) = Tmpfs::mount("64k") else {
        assert!(!wirebench_sys::require::capability(
            "tmpfs",
            false,
            "mount -t tmpfs failed (root needed)"
        ));
        return;
    };
    let path = fs.path("records.jsonl");
    let ballast = fs.path("ballast");
    std::fs::write(&ballast, vec![0u8; 24 * 1024]).unwrap();
    let d = LocalDaemon::start_exact(&["--records", path.to_str().unwrap()]);
    const FAILING: &str = "cannot append test records";
    const BACK: &str = "the records file works again";
    let mut tests = 0;
    let mut one = |d: &LocalDaemon| {
        served(d.addr);
        tests += 1;
        d.wait_log(FINISHED, tests, Duration::from_secs(10));
        settle(&path);
    };
    // Records fill the rest.
    for n in 0.. {
        assert!(
            n < 40,
            "40 records did not fill 40 KiB; log:\n{}",
            d.log_text()
        );
        one(&d);
        if d.log_count(FAILING) > 0 {
            break;
        }
    }
    let (before, tail) = strict_records(&path);
    assert!(
        tail.is_empty(),
        "half a line after a failed write: {tail:?}"
    );
    assert!(before.len() >= 2, "{} records fit", before.len());
    // Whatever room is left is taken: every later write (a record needs a page) fails.
    let filler = fs.path("filler");
    fill(&filler);
    for _ in 0..3 {
        one(&d);
    }
    let (during, tail) = strict_records(&path);
    assert!(tail.is_empty(), "half a line after failed writes: {tail:?}");
    assert_eq!(during, before, "the records changed on a full disk");
    assert_eq!(d.log_count(FAILING), 1, "log:\n{}", d.log_text());
    assert_eq!(d.log_count(BACK), 0, "log:\n{}", d.log_text());
    // Space comes back.
    std::fs::remove_file(&filler).unwrap();
    std::fs::remove_file(&ballast).unwrap();
    one(&d);
    let (recs, tail) = strict_records(&path);
    assert!(tail.is_empty(), "{tail:?}");
    assert_eq!(
        recs.len(),
        before.len() + 1,
        "one record appended after recovery"
    );
    assert_eq!(recs[..before.len()], before[..]);
    assert_eq!(recs.last().unwrap()["status"], "completed");
    let ids: std::collections::HashSet<u64> = recs
        .iter()
        .map(|r| r["test_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), recs.len());
    assert_eq!(d.log_count(FAILING), 1, "log:\n{}", d.log_text());
    assert_eq!(d.log_count(BACK), 1, "log:\n{}", d.log_text());
    assert_legit_served_quickly(d.addr);
}

/// SIGKILL while two clients keep producing ~6 MB records: every complete line parses; a
/// restarted daemon moves a torn tail to FILE.torn and appends whole lines. (Should the
/// kill fall between two writes, the tail a kill mid-write leaves is made by hand: half of
/// the last line.)
#[test]
fn a_torn_records_tail_after_sigkill_is_moved_aside_on_restart() {
    let _shared = crate::common::shared_timed();
    let dir = TempDir::new("kill");
    let path = dir.join("records.jsonl");
    let p = path.to_str().unwrap().to_string();
    let _ = wirebench_sys::process::raise_nofile_limit(8192);
    // No rotation here, by either daemon (the default rotates at 64 MiB, about ten of these
    // records, and more than four may be written before the kill): a rotation between
    // counting four records and the kill, or at the restarted daemon's first record, would
    // leave a fresh file.
    let mut d = LocalDaemon::start_exact(&[
        "--records",
        &p,
        "--records-max-size",
        "1G",
        "--max-tests-per-peer",
        "4",
        "--max-flows",
        "512",
        "--max-conns-per-source",
        "4096",
    ]);
    legit(d.addr);
    let template = wait_strict(&path, 1, Duration::from_secs(10))[0]["client"].clone();
    // Records of ~6 MB: the client's report as large as allowed for 512 flows.
    let spec = spec_16k(512, 40_000, Some(100));
    let (frame, _) = results_frame(&template, results_frame_cap(&spec, Duration::ZERO) as usize);
    let frame = Arc::new(frame);
    let stop = Arc::new(AtomicBool::new(false));
    let loops: Vec<JoinHandle<usize>> = (0..2)
        .map(|_| {
            let (addr, spec, frame, stop) =
                (d.addr, spec.clone(), Arc::clone(&frame), Arc::clone(&stop));
            thread::spawn(move || {
                let mut n = 0;
                while !stop.load(Ordering::Relaxed) {
                    // Refused (the other writer holds the peer's slot, or the daemon is
                    // being killed): try again shortly, until told to stop.
                    match peer_results_then_abort(addr, &spec, &frame) {
                        Ok(_) => n += 1,
                        Err(_) => thread::sleep(Duration::from_millis(20)),
                    }
                }
                n
            })
        })
        .collect();
    let newlines = |p: &Path| {
        std::fs::read(p)
            .map(|b| b.iter().filter(|&&c| c == b'\n').count())
            .unwrap_or(0)
    };
    let t = Instant::now();
    while newlines(&path) < 4 {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "no four records in 60 s; log:\n{}",
            d.log_text()
        );
        thread::sleep(Duration::from_millis(20));
    }
    // Kill as soon as the file grows: a write is under way.
    let size = |p: &Path| std::fs::metadata(p).map(|m| m.len()).unwrap_or(0);
    let mut last = size(&path);
    let t = Instant::now();
    loop {
        let now = size(&path);
        if now != last {
            d.signal("-KILL");
            break;
        }
        last = now;
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the records file stopped growing"
        );
        thread::yield_now();
    }
    let st = d
        .wait_exit_status(Duration::from_secs(10))
        .expect("killed daemon exits");
    assert!(st.code().is_none(), "{st:?}");
    stop.store(true, Ordering::Relaxed);
    let ran: usize = loops.into_iter().map(|h| h.join().unwrap_or(0)).sum();
    let (complete, mut tail) = strict_records(&path);
    assert!(complete.len() >= 4, "{} records", complete.len());
    let real_tear = !tail.is_empty();
    if !real_tear {
        let bytes = std::fs::read(&path).unwrap();
        let start = bytes[..bytes.len() - 1]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1);
        let line = &bytes[start..bytes.len() - 1];
        tail = line[..line.len() / 2].to_vec();
        std::fs::OpenOptions::new()
            .append(true)
            .open(&path)
            .unwrap()
            .write_all(&tail)
            .unwrap();
    }
    eprintln!(
        "records file: {ran} tests before SIGKILL, {} complete records, torn tail of {} bytes ({})",
        complete.len(),
        tail.len(),
        if real_tear {
            "left by the kill"
        } else {
            "made by hand"
        }
    );
    // Restart on the same file.
    let d2 = LocalDaemon::start_exact(&["--records", &p, "--records-max-size", "1G"]);
    assert_eq!(d2.log_count("torn line"), 1, "log:\n{}", d2.log_text());
    let (recs, rest) = strict_records(&path);
    assert!(rest.is_empty(), "the torn tail is still there");
    assert_eq!(recs.len(), complete.len());
    let mut torn_path = path.clone().into_os_string();
    torn_path.push(".torn");
    let mut expect = tail.clone();
    expect.push(b'\n');
    assert_eq!(std::fs::read(&torn_path).unwrap(), expect, "FILE.torn");
    legit(d2.addr);
    wait_strict(&path, complete.len() + 1, Duration::from_secs(10));
    let (recs, rest) = strict_records(&path);
    assert!(rest.is_empty());
    assert_eq!(recs.len(), complete.len() + 1, "a whole line appended");
    let ids: std::collections::HashSet<u64> = recs
        .iter()
        .map(|r| r["test_id"].as_u64().unwrap())
        .collect();
    assert_eq!(ids.len(), recs.len(), "test ids unique across the restart");
}

/// `--records FIFO` is refused at start, with a message naming the file; no hang.
#[test]
fn a_fifo_as_the_records_file_is_refused_at_start() {
    let _shared = crate::common::shared();
    let dir = TempDir::new("fifo");
    let fifo = dir.join("records.fifo");
    let ok = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mkfifo failed");
    let f = fifo.to_str().unwrap();
    let out = wb_bounded(
        &["serve", "--port", "0", "--records", f],
        Duration::from_secs(15),
    );
    let err = out.stderr();
    assert_eq!(out.code, Some(1), "{err}");
    assert!(err.contains(f), "{err}");
    assert!(err.contains("not a regular file"), "{err}");
    assert!(!err.contains("listening"), "{err}");
    assert!(out.took < Duration::from_secs(5), "took {:?}", out.took);
}

// ---------------------------------------------------------------------------------------
// 4. Peer text.
// ---------------------------------------------------------------------------------------

/// A hostile hello (magic, software), field name and abort reason (before and while the
/// test runs) and preamble: nothing reaches the daemon's log raw — no forged line, no ESC,
/// BEL, CR or NUL — and the text is still there, escaped. The client, against a fake server
/// whose error messages, software and identity carry terminal escapes, prints them escaped.
#[test]
fn peer_text_never_reaches_a_log_or_a_terminal_raw() {
    let _shared = crate::common::shared_timed();
    let d = LocalDaemon::start_exact(&["--handshake-timeout", "2", "--idle-timeout", "3"]);
    // Hello: magic, then software.
    let mut c = Raw::try_connect(d.addr, None).unwrap();
    c.try_send(&Message::Hello(Hello {
        magic: HOSTILE.into(),
        version: PROTOCOL_VERSION,
        software: HOSTILE.into(),
    }))
    .unwrap();
    assert!(matches!(
        c.recv(Duration::from_secs(5)),
        Some(Message::Error(_))
    ));
    // A field name, at the top and inside the spec.
    for at in ["", "/spec/common"] {
        let mut c = Raw::try_connect(d.addr, None).unwrap();
        c.hello_as(HOSTILE).unwrap();
        let mut req = serde_json::json!({ "test": {
            "spec": serde_json::to_value(spec_16k(1, 1000, None)).unwrap(),
            "auth": null,
        }});
        req.pointer_mut(&format!("/test{at}")).unwrap()[HOSTILE] = serde_json::json!(1);
        let payload = serde_json::to_vec(&req).unwrap();
        let mut f = (payload.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(&payload);
        c.s.write_all(&f).unwrap();
        match c.recv(Duration::from_secs(5)) {
            Some(Message::Error(e)) => assert_eq!(e.code, ErrorCode::BadFrame),
            other => panic!("{other:?}"),
        }
    }
    // An abort reason before the test starts.
    let spec = spec_16k(1, 5000, Some(100));
    let mut c = Raw::try_connect(d.addr, None).unwrap();
    c.admit(&spec).unwrap();
    c.try_send(&Message::Abort(AbortMsg {
        reason: AbortReason::EngineFailed {
            detail: HOSTILE.into(),
        },
    }))
    .unwrap();
    assert!(c.closed_within(Duration::from_secs(5)).is_some());
    // An abort reason while it runs.
    let mut c = Raw::try_connect(d.addr, None).unwrap();
    let (_, token) = c.admit(&spec).unwrap();
    let data = open_all(&mut c, d.addr, &spec, token).unwrap();
    c.try_send(&Message::Start(Default::default())).unwrap();
    c.try_send(&Message::Abort(AbortMsg {
        reason: AbortReason::ProtocolError {
            detail: HOSTILE.into(),
        },
    }))
    .unwrap();
    match c.recv_where(Duration::from_secs(20), |m| {
        matches!(m, Message::Results(_))
    }) {
        Some(Message::Results(_)) => {}
        other => panic!("{other:?}"),
    }
    c.try_send(&Message::Bye(Default::default())).unwrap();
    assert!(c.closed_within(Duration::from_secs(10)).is_some());
    drop(data);
    // A preamble of control bytes.
    let mut s = connect_from(d.addr, None).unwrap();
    s.write_all(b"\n\x1b]0\x07").unwrap();
    let mut c = Raw::from_stream(s);
    assert!(c.closed_within(Duration::from_secs(5)).is_some());
    d.wait_log(FINISHED, 2, Duration::from_secs(15));
    legit(d.addr);
    d.wait_log(FINISHED, 3, Duration::from_secs(15));
    d.wait_log("not a wirebench connection", 1, Duration::from_secs(5));

    let lines = d.log_lines();
    let text = lines.join("\n");
    assert!(
        raw_controls(text.as_bytes()).is_empty(),
        "raw control bytes in the daemon's log:\n{}",
        text.escape_debug()
    );
    for l in &lines {
        assert!(
            l.chars().next().is_some_and(|c| c.is_ascii_digit()),
            "a log line that is not the daemon's own (forged?): {l:?}"
        );
        assert!(!l.trim_start().starts_with("FORGED"), "forged line: {l:?}");
    }
    // The three tests' records, and no forged fourth.
    assert_eq!(
        lines.iter().filter(|l| l.contains(FINISHED)).count(),
        3,
        "{text}"
    );
    // The text did reach the log, escaped (the hello, the field, both abort reasons).
    assert!(
        lines.iter().filter(|l| l.contains("FORGED")).count() >= 4,
        "{text}"
    );

    // The client against hostile servers.
    let hostile_error = Message::Error(ErrorMsg {
        code: ErrorCode::Internal,
        field: None,
        limit: None,
        message: format!("\x1b]0;pwned\x07{HOSTILE}"),
    });
    type Script = Box<dyn FnOnce(&TcpListener, &mut Raw) + Send>;
    type MakeScript = fn(Message) -> Script;
    let scripts: Vec<(&str, MakeScript)> = vec![
        ("an error for the hello", |err| {
            Box::new(move |_, c: &mut Raw| {
                let _ = c.recv(Duration::from_secs(10));
                let _ = c.try_send(&err);
            })
        }),
        ("a hostile welcome, then an error for the test", |err| {
            Box::new(move |_, c: &mut Raw| {
                let _ = c.recv(Duration::from_secs(10));
                let _ = c.try_send(&welcome(HOSTILE, "fake", false));
                let _ = c.recv(Duration::from_secs(10));
                let _ = c.try_send(&err);
            })
        }),
        (
            "a welcome asking for authentication with a hostile identity",
            |_| {
                Box::new(move |_, c: &mut Raw| {
                    let _ = c.recv(Duration::from_secs(10));
                    let _ = c.try_send(&welcome("fake", HOSTILE, true));
                    let _ = c.closed_within(Duration::from_secs(10));
                })
            },
        ),
    ];
    for (what, script) in scripts {
        for json in [false, true] {
            let script = script(hostile_error.clone());
            let (addr, h) = fake_server(move |l, c| script(l, c));
            let port = addr.port().to_string();
            let mut args = vec!["stream", "-H", "127.0.0.1", "-p", &port, "-t", "1"];
            if json {
                args.push("--json");
            }
            let out = wb_bounded(&args, Duration::from_secs(30));
            let _ = h.join();
            assert_eq!(out.code, Some(1), "{what}: {}", out.stderr());
            for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
                assert!(
                    raw_controls(bytes).is_empty(),
                    "{what} (json {json}): raw control bytes on the client's {name}: {:?}",
                    String::from_utf8_lossy(bytes)
                );
            }
            if json {
                out.json();
            } else if what != "a welcome asking for authentication with a hostile identity" {
                assert!(
                    out.stderr().contains("\\x1b]0;pwned\\x07"),
                    "{what}: the escape is not shown escaped: {}",
                    out.stderr()
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// 5. Signals.
// ---------------------------------------------------------------------------------------

/// SIGHUP during a test: the daemon records the running test (aborted, the server was shut
/// down) and exits 0; the client ends aborted (exit 3). SIGTERM to an idle daemon whose
/// bind address is gone (its veth pair deleted inside a namespace): it exits within 5 s.
#[test]
fn sighup_records_the_test_and_sigterm_needs_no_bind_address() {
    let _shared = crate::common::shared_timed();
    let mut d = LocalDaemon::start(&[]);
    let port = d.addr.port().to_string();
    let mut c = Command::new(BIN);
    c.args(["stream", "-H", "127.0.0.1", "-p", &port])
        .args(["-t", "30", "-i", "0.2", "--json"]);
    let client = Running::spawn(c);
    assert!(
        wait_engine(client.id(), Duration::from_secs(15)),
        "the client did not start its engine"
    );
    assert!(
        wait_engine(d.pid(), Duration::from_secs(15)),
        "the daemon did not start its engine"
    );
    d.signal("-HUP");
    assert_eq!(
        d.wait_exit(Duration::from_secs(20)),
        Some(0),
        "the daemon did not exit 0 after SIGHUP; log:\n{}",
        d.log_text()
    );
    let out = client.finish(Duration::from_secs(20));
    assert_eq!(out.code, Some(3), "{}", out.stderr());
    assert_eq!(out.json()["status"], "aborted");
    let recs = wait_strict(&d.records_path, 1, Duration::from_secs(10));
    assert_eq!(recs.len(), 1, "{recs:?}");
    assert_eq!(recs[0]["status"], "aborted");
    assert_eq!(
        recs[0]["reason"],
        serde_json::json!({ "reason": "server_shutdown" })
    );

    // SIGTERM, the bind address gone.
    if !wirebench_sys::require::capability(
        "netns",
        wirebench_lab::available(),
        "network namespaces need root and iproute2",
    ) {
        return;
    }
    use wirebench_lab::{Side, Testbed, ADDR_A, ADDR_B, IF_B};
    let tb = Testbed::pair(1500).expect("testbed");
    let mut c = tb.command(Side::B, BIN);
    c.args([
        "serve",
        "--bind",
        ADDR_B,
        "--port",
        "0",
        "--allow-unauthenticated",
    ]);
    let mut d = LocalDaemon::start_cmd(c, &[]);
    let port = d.addr.port().to_string();
    let mut cl = tb.command(Side::A, BIN);
    cl.args(["stream", "-H", ADDR_B, "-p", &port, "-t", "0.2"]);
    let out = run_bounded(cl, Duration::from_secs(30));
    assert_eq!(out.code, Some(0), "served from {ADDR_A}: {}", out.stderr());
    wait_strict(&d.records_path, 1, Duration::from_secs(10));
    tb.exec(Side::B, &["ip", "link", "del", IF_B])
        .expect("delete the veth pair");
    let addrs = tb.exec(Side::B, &["ip", "-o", "addr"]).unwrap();
    assert!(!addrs.contains(ADDR_B), "{ADDR_B} still there: {addrs}");
    let t = Instant::now();
    d.signal("-TERM");
    let code = d.wait_exit(Duration::from_secs(5));
    assert_eq!(
        code,
        Some(0),
        "no exit within 5 s of SIGTERM (after {:?}); log:\n{}",
        t.elapsed(),
        d.log_text()
    );
}

// ---------------------------------------------------------------------------------------
// 6. A server whose report cannot be true.
// ---------------------------------------------------------------------------------------

type Rewrite = Arc<dyn Fn(Message) -> Message + Send + Sync>;

/// A proxy between the real client and the real daemon that rewrites the messages the
/// daemon sends on control connections (data connections pass untouched).
struct Mitm {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Mitm {
    fn start(to: SocketAddr, rewrite: Rewrite) -> Mitm {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        l.set_nonblocking(true).unwrap();
        let addr = l.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let s2 = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            while !s2.load(Ordering::Relaxed) {
                match l.accept() {
                    Ok((c, _)) => {
                        let rw = Arc::clone(&rewrite);
                        thread::spawn(move || relay(c, to, rw));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Mitm {
            addr,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Mitm {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn relay(client: TcpStream, to: SocketAddr, rewrite: Rewrite) {
    let _ = client.set_nonblocking(false);
    let Ok(mut server) = connect_from(to, None) else {
        return;
    };
    let _ = server.set_write_timeout(None);
    let mut client = client;
    let _ = client.set_nodelay(true);
    let mut pre = [0u8; 4];
    let _ = client.set_read_timeout(Some(Duration::from_secs(10)));
    if client.read_exact(&mut pre).is_err() || server.write_all(&pre).is_err() {
        return;
    }
    let _ = client.set_read_timeout(None);
    let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) else {
        return;
    };
    thread::spawn(move || pipe(c2, s2));
    if pre == CONTROL_PREAMBLE {
        let mut dec = FrameDecoder::new(ABSOLUTE_MAX_FRAME_BYTES);
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match server.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if dec.feed(&buf[..n]).is_err() {
                break;
            }
            while let Ok(Some(m)) = dec.next_message() {
                if client.write_all(&encode(&rewrite(m))).is_err() {
                    return;
                }
            }
        }
        let _ = client.shutdown(std::net::Shutdown::Write);
    } else {
        pipe(server, client);
    }
}

fn pipe(mut from: TcpStream, mut to: TcpStream) {
    let _ = io::copy(&mut from, &mut to);
    let _ = to.shutdown(std::net::Shutdown::Write);
}

/// The real client against the real daemon through a proxy that rewrites the server's
/// `results`: unchanged, the run completes (exit 0); claiming 2^64−1 bytes received, the run
/// is invalid (exit 4, JSON status "invalid"); marked aborted, the run is aborted (exit 3).
#[test]
fn the_client_does_not_believe_an_impossible_server() {
    let _shared = crate::common::shared();
    let d = LocalDaemon::start(&[]);
    let server_results = |f: fn(&mut SideReport)| -> Rewrite {
        Arc::new(move |m| match m {
            Message::Results(mut r) if r.host == HostRole::Server => {
                f(&mut r);
                Message::Results(r)
            }
            other => other,
        })
    };
    let cases: Vec<(&str, Rewrite, i32, &str)> = vec![
        ("unchanged", server_results(|_| {}), 0, "completed"),
        (
            "2^64-1 bytes received",
            server_results(|r| {
                if let Some(SideData::Stream(s)) = &mut r.data {
                    for f in &mut s.flows {
                        f.total_bytes = u64::MAX;
                    }
                }
            }),
            4,
            "invalid",
        ),
        (
            "marked aborted",
            server_results(|r| {
                r.status = SideStatus::Aborted(AbortReason::EngineFailed {
                    detail: "the server says so".into(),
                })
            }),
            3,
            "aborted",
        ),
    ];
    for (what, rewrite, code, status) in cases {
        let proxy = Mitm::start(d.addr, rewrite);
        let port = proxy.addr.port().to_string();
        let out = wb_bounded(
            &[
                "stream",
                "-H",
                "127.0.0.1",
                "-p",
                &port,
                "-t",
                "1",
                "-b",
                "200M",
                "--json",
            ],
            Duration::from_secs(60),
        );
        let j = out.json();
        assert_eq!(
            (out.code, j["status"].as_str()),
            (Some(code), Some(status)),
            "{what}: {}\n{}",
            out.stderr(),
            j
        );
        if what.starts_with("2^64") {
            let got = &j["runs"][0]["server"]["data"]["stream"]["flows"][0]["total_bytes"];
            assert_eq!(
                got.as_u64(),
                Some(u64::MAX),
                "{what}: the forged figure: {got}"
            );
        }
        drop(proxy);
    }
}

// ---------------------------------------------------------------------------------------
// 7. Smaller items.
// ---------------------------------------------------------------------------------------

/// A data connection refused by `--max-conns-per-source` names the limit in the client's
/// error within 5 s, and the refused connections are let go of.
#[test]
fn data_connection_refusal_names_the_limit() {
    let _shared = crate::common::shared_timed();
    let d = LocalDaemon::start(&["--max-conns-per-source", "3"]);
    let base = d.baseline();
    let port = d.addr.port().to_string();
    for json in [true, false] {
        let mut args = vec![
            "stream",
            "-H",
            "127.0.0.1",
            "-p",
            &port,
            "-P",
            "4",
            "-t",
            "2",
        ];
        if json {
            args.push("--json");
        }
        let out = wb_bounded(&args, Duration::from_secs(30));
        // A parameter the server refuses is a usage error (exit 2, README's exit codes).
        assert_eq!(out.code, Some(2), "{}", out.stderr());
        assert!(
            out.took < Duration::from_secs(5),
            "the refusal took {:?} to reach the user",
            out.took
        );
        if json {
            let j = out.json();
            assert_eq!(j["error"]["limit"], "max_conns_per_source", "{j}");
            assert_eq!(j["error"]["kind"], "limit_exceeded", "{j}");
        } else {
            assert!(
                out.stderr().contains("--max-conns-per-source"),
                "{}",
                out.stderr()
            );
        }
    }
    // The refused clients' connections are closed and the daemon let go of them (on a
    // loaded machine it notices a little later): then a legitimate client is served at once.
    d.assert_back_to(base, Duration::from_secs(15), 16 * 1024);
    assert_legit_served_quickly(d.addr);
}

/// `--max-* 0` and `--handshake-timeout 0` are refused with a message, before listening.
#[test]
fn zero_limits_are_refused() {
    let _shared = crate::common::shared();
    for flag in [
        "--max-tests",
        "--max-flows",
        "--max-connections",
        "--max-conns-per-source",
        "--max-tests-per-peer",
    ] {
        let out = wb_bounded(
            &["serve", "--port", "0", flag, "0"],
            Duration::from_secs(15),
        );
        let err = out.stderr();
        assert_eq!(out.code, Some(1), "{flag} 0: {err}");
        assert!(err.contains(&format!("{flag} 0")), "{flag} 0: {err}");
        assert!(err.contains("at least 1"), "{flag} 0: {err}");
        assert!(!err.contains("listening"), "{flag} 0: {err}");
    }
    for flag in ["--handshake-timeout", "--idle-timeout", "--results-timeout"] {
        let out = wb_bounded(
            &["serve", "--port", "0", flag, "0"],
            Duration::from_secs(15),
        );
        let err = out.stderr();
        // The seconds parser refuses it on the command line: a usage error (exit 2) naming
        // the flag and its range.
        assert_eq!(out.code, Some(2), "{flag} 0: {err}");
        assert!(
            err.contains(flag) && err.contains("from 0.001 to"),
            "{flag} 0: {err}"
        );
        assert!(!err.contains("listening"), "{flag} 0: {err}");
    }
}

/// Test ids are unique across two daemon starts on one records file.
#[test]
fn test_ids_are_unique_across_restarts() {
    let _shared = crate::common::shared_timed();
    let dir = TempDir::new("ids");
    let path = dir.join("records.jsonl");
    let p = path.to_str().unwrap().to_string();
    // Both starts fall in one second when they can: start just after a second begins.
    let t = Instant::now();
    while SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .subsec_millis()
        > 100
    {
        assert!(t.elapsed() < Duration::from_secs(2));
        thread::sleep(Duration::from_millis(5));
    }
    let spec = spec_16k(1, 1000, None);
    let mut ids = Vec::new();
    for round in 0..2 {
        let mut d = LocalDaemon::start_exact(&["--records", &p]);
        for n in 1..=2 {
            let mut c = Raw::try_connect(d.addr, None).unwrap();
            let (id, _) = c.admit(&spec).unwrap();
            ids.push(id);
            drop(c);
            // Recorded (and its slot free) before the next one asks.
            d.wait_log(FINISHED, n, Duration::from_secs(10));
        }
        d.signal("-TERM");
        let st = d.wait_exit_status(Duration::from_secs(10));
        assert!(st.is_some_and(|s| s.success()), "round {round}: {st:?}");
    }
    let (recs, tail) = strict_records(&path);
    assert!(tail.is_empty());
    let on_disk: Vec<u64> = recs
        .iter()
        .map(|r| r["test_id"].as_u64().unwrap())
        .collect();
    assert_eq!(on_disk, ids, "the records are the admitted tests");
    let unique: std::collections::HashSet<u64> = ids.iter().copied().collect();
    assert_eq!(
        unique.len(),
        ids.len(),
        "test ids repeat across restarts: {ids:?}"
    );
}

/// The daemon's data-connection deadline passes while the client still connects (10,000
/// flows behind an earlier test's TIME-WAIT sockets did it): it closes the data connections,
/// then sends its `error` on the control connection. The client must report that error, not
/// the closed data connection it saw first.
#[test]
fn the_servers_reason_beats_a_closed_data_connection() {
    let _shared = crate::common::shared();
    const REASON: &str = "timed out waiting for the data connections";
    let (addr, h) = fake_server(move |l, c| {
        let (s, _) = admit_and_take_data_hello(l, c, "00112233445566778899aabbccddeeff")?;
        // The data connection closes first; the reason follows on the control connection.
        drop(s);
        thread::sleep(Duration::from_millis(300));
        c.try_send(&Message::Error(ErrorMsg {
            code: ErrorCode::DataConnection,
            field: None,
            limit: None,
            message: REASON.into(),
        }))
        .ok()?;
        Some(())
    });
    let out = one_second_stream_to(addr);
    assert_eq!(
        h.join().ok().flatten().flatten(),
        Some(()),
        "the fake server's script"
    );
    assert_eq!(out.code, Some(1), "{}", out.stderr());
    let j = out.json();
    let message = j["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains(REASON), "{j}");
}

/// `wirebench stream -t 1 --json` against the loopback server at `addr`, bounded by 30 s.
fn one_second_stream_to(addr: SocketAddr) -> Out {
    let port = addr.port().to_string();
    let args = [
        "stream",
        "-H",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        "1",
        "--json",
    ];
    wb_bounded(&args, Duration::from_secs(30))
}

/// A fake server's script up to the data connections: answer the hello, admit the test
/// with `token`, then accept one data connection (within 3 s) and read its 24-byte hello.
fn admit_and_take_data_hello(
    l: &TcpListener,
    c: &mut Raw,
    token: &str,
) -> Option<(TcpStream, [u8; 24])> {
    c.recv(Duration::from_secs(10))?; // hello
    c.try_send(&welcome("fake", "fake", false)).ok()?;
    c.recv(Duration::from_secs(10))?; // test
    c.try_send(&Message::Accepted(wirebench_proto::message::Accepted {
        test_id: 7,
        token: token.into(),
    }))
    .ok()?;
    let mut s = accept_within(l, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let mut hello = [0u8; 24];
    s.read_exact(&mut hello).ok()?;
    Some((s, hello))
}

/// The client refuses a server's token in uppercase hex and accepts the same in lowercase.
#[test]
fn the_client_refuses_an_uppercase_token() {
    let _shared = crate::common::shared();
    for (token, refused) in [
        ("00112233445566778899AABBCCDDEEFF", true),
        ("00112233445566778899aabbccddeeff", false),
    ] {
        let (addr, h) = fake_server(move |l, c| {
            // A data connection, if the client opens one.
            admit_and_take_data_hello(l, c, token).map(|(_, hello)| hello)
        });
        let out = one_second_stream_to(addr);
        let data_hello = h.join().ok().flatten().flatten();
        if refused {
            assert!(
                data_hello.is_none(),
                "the client opened a data connection with an uppercase token"
            );
            assert_eq!(out.code, Some(1), "{}", out.stderr());
            let j = out.json();
            assert!(
                j["error"]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("token")),
                "{j}"
            );
        } else {
            let expect = DataHello {
                token: Token::from_hex(token).unwrap(),
                flow: 0,
            }
            .encode();
            assert_eq!(
                data_hello,
                Some(expect),
                "control: the lowercase token opens a data connection"
            );
        }
    }
}

/// With `--max-tests 4`, a second test from a peer already running one gets `busy` for the
/// peer (1 of 1), while tests from two other addresses are admitted.
#[test]
fn one_peer_cannot_take_every_slot() {
    let _shared = crate::common::shared();
    let d = LocalDaemon::start(&["--max-tests", "4"]);
    let spec = spec_16k(1, 5000, None);
    let mut first = Raw::try_connect(d.addr, Some(loopback(1))).unwrap();
    first.admit(&spec).unwrap();
    let mut second = Raw::try_connect(d.addr, Some(loopback(1))).unwrap();
    second.hello_as("x").unwrap();
    second
        .try_send(&Message::Test(Box::new(TestRequest::unauthenticated(
            spec.clone(),
        ))))
        .unwrap();
    match second.recv(Duration::from_secs(5)) {
        Some(Message::Busy(b)) => {
            assert_eq!(b.scope, BusyScope::Peer, "{b:?}");
            assert_eq!((b.running, b.cap), (1, 1), "{b:?}");
            assert!(b.retry_after_ms > 0);
        }
        other => panic!("expected busy for the peer, got {other:?}"),
    }
    for last in [2, 3] {
        let mut other = Raw::try_connect(d.addr, Some(loopback(last))).unwrap();
        other
            .admit(&spec)
            .unwrap_or_else(|e| panic!("a test from 127.0.0.{last} was refused: {e}"));
    }
    drop(first);
}
