//! A `wirebench serve` process observed from outside: its address (from its log), its
//! descriptors, threads and memory (from /proc), its log lines and its records file; plus a
//! raw control-protocol client for sending exactly the bytes a test wants.

#![allow(dead_code)]

use std::io::{self, BufRead, BufReader, Read, Write};
use std::net::{IpAddr, SocketAddr, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use socket2::{Domain, Socket, Type};
use wirebench_model::spec::TestSpec;
use wirebench_net::client::{self, ClientConfig, Outcome};
use wirebench_proto::data::{Token, CONTROL_PREAMBLE};
use wirebench_proto::frame::{encode, FrameDecoder, ABSOLUTE_MAX_FRAME_BYTES};
use wirebench_proto::message::ErrorMsg;
use wirebench_proto::message::{
    Hello, Message, TestRequest, Welcome, HELLO_MAGIC, PROTOCOL_VERSION,
};

use crate::bin;

static NEXT: AtomicU64 = AtomicU64::new(0);

/// Resource usage of a process, read from /proc.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Usage {
    /// Open file descriptors (/proc/PID/fd).
    pub fds: usize,
    /// Threads (/proc/PID/task).
    pub threads: usize,
    /// Resident set size, KiB (VmRSS).
    pub rss_kb: u64,
}

/// The usage of live process `pid`.
///
/// # Panics
/// If the process is gone (or a zombie): a daemon that died must fail the test, not read as a
/// process using nothing.
pub fn usage_of(pid: u32) -> Usage {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("process {pid} is gone: /proc/{pid}/status: {e}"));
    let field = |name: &str| -> Option<u64> {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    let state = status
        .lines()
        .find(|l| l.starts_with("State:"))
        .unwrap_or_default();
    assert!(
        !state.contains("zombie"),
        "process {pid} has exited ({state})"
    );
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap_or_else(|e| panic!("process {pid}: /proc/{pid}/fd: {e}"))
        .count();
    let field = |name: &str| -> u64 {
        field(name).unwrap_or_else(|| panic!("process {pid}: no {name} in /proc/{pid}/status"))
    };
    Usage {
        fds,
        threads: field("Threads:") as usize,
        rss_kb: field("VmRSS:"),
    }
}

/// A daemon process started by a test; killed by its PID on drop.
pub struct LocalDaemon {
    child: Option<Child>,
    /// The control address it listens on.
    pub addr: SocketAddr,
    log: Arc<Mutex<Vec<String>>>,
    /// Its records file (`--records`).
    pub records_path: PathBuf,
    /// The kit chose the records file (removed on drop); else it is the test's own.
    own_records: bool,
}

impl LocalDaemon {
    /// `wirebench serve --port 0 --records TMP EXTRA...` on loopback.
    pub fn start(extra: &[&str]) -> LocalDaemon {
        let mut c = Command::new(bin());
        c.args(["serve", "--port", "0"]);
        Self::start_cmd(c, extra)
    }

    /// `wirebench serve --port 0 ARGS` on loopback with exactly these arguments: no records
    /// file of the kit's (`records_path` is the `--records` of `args`, empty without one).
    pub fn start_exact(args: &[&str]) -> LocalDaemon {
        let mut c = Command::new(bin());
        c.args(["serve", "--port", "0"]).args(args);
        let records_path = args
            .iter()
            .position(|a| *a == "--records")
            .and_then(|i| args.get(i + 1))
            .map(PathBuf::from)
            .unwrap_or_default();
        let mut d = Self::spawn(c, records_path);
        d.own_records = false;
        d
    }

    /// Start `cmd` (a `serve` invocation, possibly inside a namespace) with a records file.
    pub fn start_cmd(mut c: Command, extra: &[&str]) -> LocalDaemon {
        let records_path = std::env::temp_dir().join(format!(
            "wb-records-{}-{}.jsonl",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_file(&records_path);
        c.arg("--records").arg(&records_path);
        c.args(extra);
        Self::spawn(c, records_path)
    }

    /// Start `c` with its log collected (lines read as bytes, so that a raw control byte in
    /// the log stays visible to the test) and wait for its address.
    fn spawn(mut c: Command, records_path: PathBuf) -> LocalDaemon {
        c.env("RUST_LOG", "info");
        c.stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn daemon");
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let l2 = Arc::clone(&log);
        std::thread::spawn(move || {
            let mut r = BufReader::new(stderr);
            let mut bytes = Vec::new();
            while r.read_until(b'\n', &mut bytes).is_ok_and(|n| n > 0) {
                let line = String::from_utf8_lossy(&bytes)
                    .trim_end_matches('\n')
                    .to_string();
                bytes.clear();
                if line.contains("daemon listening") {
                    if let Some(a) = line
                        .split_whitespace()
                        .find_map(|w| w.strip_prefix("addr="))
                        .and_then(|a| a.parse::<SocketAddr>().ok())
                    {
                        let _ = tx.send(a);
                    }
                }
                l2.lock().unwrap().push(line);
            }
        });
        let addr = rx.recv_timeout(Duration::from_secs(15));
        let mut d = LocalDaemon {
            child: Some(child),
            addr: SocketAddr::from(([0, 0, 0, 0], 0)),
            log,
            records_path,
            own_records: true,
        };
        d.addr = addr.unwrap_or_else(|_| {
            panic!(
                "daemon did not report its address within 15 s; log:\n{}",
                d.log_text()
            )
        });
        d
    }

    /// The daemon's PID.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Its descriptors, threads and resident memory now.
    pub fn usage(&self) -> Usage {
        usage_of(self.pid())
    }

    /// Usage once the daemon is idle (after a warm-up test, so that lazily created state
    /// exists in the baseline too): the test's record is written, and descriptors and threads
    /// have stopped changing.
    pub fn baseline(&self) -> Usage {
        let before = self.records().len();
        legit(self.addr);
        self.wait_records(before + 1, Duration::from_secs(10));
        self.settled_usage(Duration::from_secs(5))
    }

    /// Poll /proc until the daemon's descriptors and threads read the same five times in a
    /// row, 50 ms apart (its session threads have exited); that reading.
    pub fn settled_usage(&self, within: Duration) -> Usage {
        let t = Instant::now();
        let mut last = self.usage();
        let mut same = 0;
        loop {
            std::thread::sleep(Duration::from_millis(50));
            let u = self.usage();
            if (u.fds, u.threads) == (last.fds, last.threads) {
                same += 1;
                if same >= 5 {
                    return u;
                }
            } else {
                same = 0;
            }
            last = u;
            assert!(
                t.elapsed() < within,
                "daemon usage did not settle within {within:?}: {u:?}"
            );
        }
    }

    /// Wait until a log line contains `needle` (at least `n` such lines).
    pub fn wait_log(&self, needle: &str, n: usize, within: Duration) {
        let t = Instant::now();
        while self.log_count(needle) < n {
            assert!(
                t.elapsed() < within,
                "no {n} log lines with {needle:?} after {within:?}; log:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Assert that descriptors and threads return to `base` (memory within `rss_slack_kb`)
    /// within `within`.
    pub fn assert_back_to(&self, base: Usage, within: Duration, rss_slack_kb: u64) {
        let t = Instant::now();
        loop {
            let u = self.usage();
            if u.fds <= base.fds
                && u.threads <= base.threads
                && u.rss_kb <= base.rss_kb + rss_slack_kb
            {
                return;
            }
            assert!(
                t.elapsed() < within,
                "daemon did not return to its baseline within {within:?}: now {u:?}, baseline {base:?}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Every line it has logged so far (stderr), one string a line.
    pub fn log_lines(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Every line it has logged so far (stderr), joined by newlines.
    pub fn log_text(&self) -> String {
        self.log.lock().unwrap().join("\n")
    }

    /// How many of its log lines contain `needle`.
    pub fn log_count(&self, needle: &str) -> usize {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter(|l| l.contains(needle))
            .count()
    }

    /// The records file, one JSON value per test. A record is complete when its line ends:
    /// a last line without its newline is one the daemon is writing right now (a read racing
    /// a write sees a prefix of it), so it is not one yet. Every complete line must parse.
    pub fn records(&self) -> Vec<serde_json::Value> {
        let text = std::fs::read_to_string(&self.records_path).unwrap_or_default();
        let complete = match text.rfind('\n') {
            Some(i) => &text[..=i],
            None => "",
        };
        complete
            .lines()
            .map(|l| serde_json::from_str(l).expect("every record line is JSON"))
            .collect()
    }

    /// Wait until the records file holds at least `n` records.
    pub fn wait_records(&self, n: usize, within: Duration) -> Vec<serde_json::Value> {
        let t = Instant::now();
        loop {
            let r = self.records();
            if r.len() >= n {
                return r;
            }
            assert!(
                t.elapsed() < within,
                "only {} of {n} records after {within:?}; log:\n{}",
                r.len(),
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stop the daemon with SIGTERM and wait (bounded) for it to exit 0: it finishes or
    /// aborts every session and writes every record before it exits, so the records file
    /// read after this is final (a record that was going to appear late has appeared).
    pub fn stop_and_final_records(&mut self, within: Duration) -> Vec<serde_json::Value> {
        self.signal("-TERM");
        assert_eq!(self.wait_exit(within), Some(0), "daemon exit after SIGTERM");
        self.records()
    }

    /// Send a signal to the daemon.
    pub fn signal(&self, sig: &str) {
        super::kill(self.pid(), sig);
    }

    /// Wait (bounded) for the daemon to exit; its exit code (`None` on timeout or when a
    /// signal ended it).
    pub fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        self.wait_exit_status(within).and_then(|st| st.code())
    }

    /// Wait (bounded) for the daemon to exit; its exit status, `None` on timeout.
    pub fn wait_exit_status(&mut self, within: Duration) -> Option<ExitStatus> {
        let t = Instant::now();
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st);
            }
            if t.elapsed() > within {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for LocalDaemon {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if self.own_records {
            let _ = std::fs::remove_file(&self.records_path);
        }
    }
}

pub use crate::spec::short_spec;

/// Run a legitimate 100 ms test; panics unless it completes. Returns its wall time.
pub fn legit(addr: SocketAddr) -> Duration {
    let t = Instant::now();
    let cfg = ClientConfig::new(addr, short_spec(100));
    let run = client::run(&cfg, &AtomicBool::new(false), &mut |_| {})
        .unwrap_or_else(|e| panic!("legitimate client refused: {e}"));
    assert_eq!(run.outcome, Outcome::Completed);
    t.elapsed()
}

/// A legitimate client is served (admitted, measured, results exchanged) within 1 s of
/// asking: a 100 ms test must finish within 1.1 s.
pub fn assert_legit_served_quickly(addr: SocketAddr) {
    let took = legit(addr);
    assert!(
        took < Duration::from_millis(1100),
        "a legitimate 100 ms test took {took:?}"
    );
}

/// Run a longer legitimate test on a thread; join it for its outcome. Returns once the test
/// is running: its first live interval sample (100 ms) has arrived.
pub fn legit_in_background(
    addr: SocketAddr,
    ms: u64,
) -> std::thread::JoinHandle<Result<Outcome, String>> {
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let mut spec = short_spec(ms);
        spec.common.interval_ms = Some(100);
        let cfg = ClientConfig::new(addr, spec);
        client::run(&cfg, &AtomicBool::new(false), &mut |_| {
            let _ = tx.send(());
        })
        .map(|r| r.outcome)
        .map_err(|e| e.to_string())
    });
    // A failure before the first interval drops the sender: the join then tells why.
    let _ = rx.recv_timeout(Duration::from_secs(10));
    h
}

/// Connect to `addr`, from `from` if given, within 5 s (no delay; writes time out after 20 s).
pub fn connect_from(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<TcpStream> {
    let sock = Socket::new(Domain::for_address(addr), Type::STREAM, None)?;
    if let Some(ip) = from {
        sock.bind(&SocketAddr::new(ip, 0).into())?;
    }
    sock.connect_timeout(&addr.into(), Duration::from_secs(5))?;
    let s: TcpStream = sock.into();
    s.set_nodelay(true)?;
    s.set_write_timeout(Some(Duration::from_secs(20)))?;
    Ok(s)
}

/// A raw control connection: exactly the bytes the test wants.
pub struct Raw {
    /// The connection.
    pub s: TcpStream,
    dec: FrameDecoder,
}

impl Raw {
    /// Connect and send the control preamble.
    pub fn connect(addr: SocketAddr) -> Raw {
        let mut r = Raw::connect_bare(addr, None);
        r.s.write_all(&CONTROL_PREAMBLE).unwrap();
        r
    }

    /// Connect (optionally from a given local address) without sending anything.
    pub fn connect_bare(addr: SocketAddr, from: Option<IpAddr>) -> Raw {
        Raw::from_stream(connect_from(addr, from).unwrap())
    }

    /// Connect (from `from`, if given) and send the control preamble; an error instead of a
    /// panic (so that it can also run on a thread against a daemon about to be killed).
    pub fn try_connect(addr: SocketAddr, from: Option<IpAddr>) -> io::Result<Raw> {
        let mut r = Raw::from_stream(connect_from(addr, from)?);
        r.s.write_all(&CONTROL_PREAMBLE)?;
        Ok(r)
    }

    /// Wrap an already connected stream (writes time out after 20 s).
    pub fn from_stream(s: TcpStream) -> Raw {
        let _ = s.set_write_timeout(Some(Duration::from_secs(20)));
        Raw {
            s,
            dec: FrameDecoder::new(ABSOLUTE_MAX_FRAME_BYTES),
        }
    }

    /// Send one framed message.
    pub fn send(&mut self, m: &Message) {
        self.try_send(m).unwrap();
    }

    /// Send one framed message; the write's error instead of a panic.
    pub fn try_send(&mut self, m: &Message) -> io::Result<()> {
        self.s.write_all(&encode(m))
    }

    /// Frame arbitrary payload bytes with a correct length.
    pub fn send_payload(&mut self, payload: &[u8]) {
        let mut f = (payload.len() as u32).to_be_bytes().to_vec();
        f.extend_from_slice(payload);
        let _ = self.s.write_all(&f);
    }

    /// Next message, `None` on close, error or timeout.
    pub fn recv(&mut self, within: Duration) -> Option<Message> {
        let until = Instant::now() + within;
        let mut buf = [0u8; 65536];
        loop {
            match self.dec.next_message() {
                Ok(Some(m)) => return Some(m),
                Ok(None) => {}
                Err(_) => return None,
            }
            let now = Instant::now();
            if now >= until {
                return None;
            }
            self.s.set_read_timeout(Some(until - now)).ok()?;
            match self.s.read(&mut buf) {
                Ok(0) | Err(_) => return None,
                Ok(n) => self.dec.feed(&buf[..n]).ok()?,
            }
        }
    }

    /// The next message `want` accepts, or the first `error`/`busy`, skipping heartbeats,
    /// intervals and the like; `None` on close or timeout.
    pub fn recv_where(
        &mut self,
        within: Duration,
        want: impl Fn(&Message) -> bool,
    ) -> Option<Message> {
        let until = Instant::now() + within;
        loop {
            let left = until.checked_duration_since(Instant::now())?;
            let m = self.recv(left)?;
            if want(&m) || matches!(m, Message::Error(_) | Message::Busy(_)) {
                return Some(m);
            }
        }
    }

    /// Hello (with `software`) → welcome; what came instead as an error.
    pub fn hello_as(&mut self, software: &str) -> Result<Welcome, String> {
        self.try_send(&Message::Hello(Hello {
            magic: HELLO_MAGIC.into(),
            version: PROTOCOL_VERSION,
            software: software.into(),
        }))
        .map_err(|e| format!("sending hello: {e}"))?;
        match self.recv(Duration::from_secs(10)) {
            Some(Message::Welcome(w)) => Ok(w),
            other => Err(format!("expected welcome, got {other:?}")),
        }
    }

    /// Hello, then the test (unauthenticated): its id and token once accepted, else what
    /// came instead.
    pub fn admit(&mut self, spec: &TestSpec) -> Result<(u64, Token), String> {
        self.hello_as("raw test client")?;
        self.try_send(&Message::Test(Box::new(TestRequest::unauthenticated(
            spec.clone(),
        ))))
        .map_err(|e| format!("sending test: {e}"))?;
        match self.recv(Duration::from_secs(10)) {
            Some(Message::Accepted(a)) => {
                let token = Token::from_hex(&a.token).map_err(|e| format!("token: {e}"))?;
                Ok((a.test_id, token))
            }
            other => Err(format!("expected accepted, got {other:?}")),
        }
    }

    /// Hello → welcome.
    pub fn hello(&mut self) -> Welcome {
        self.send(&Message::Hello(Hello {
            magic: HELLO_MAGIC.into(),
            version: PROTOCOL_VERSION,
            software: "raw test client".into(),
        }));
        match self.recv(Duration::from_secs(5)) {
            Some(Message::Welcome(w)) => w,
            other => panic!("expected welcome, got {other:?}"),
        }
    }

    /// The next `error` message's (code, field, text), panicking on anything else.
    pub fn expect_error(&mut self) -> (String, Option<String>, String) {
        let e = self.expect_error_msg();
        (
            e.code.as_str().to_string(),
            e.field.map(|f| f.as_str().to_string()),
            e.message,
        )
    }

    /// The next `error` message, whole, panicking on anything else.
    pub fn expect_error_msg(&mut self) -> ErrorMsg {
        match self.recv(Duration::from_secs(5)) {
            Some(Message::Error(e)) => e,
            other => panic!("expected an error message, got {other:?}"),
        }
    }

    /// Time until the server closes the connection (reads and discards), up to `within`.
    pub fn closed_within(&mut self, within: Duration) -> Option<Duration> {
        let t = Instant::now();
        let mut buf = [0u8; 4096];
        loop {
            let left = within.checked_sub(t.elapsed())?;
            if self
                .s
                .set_read_timeout(Some(left.max(Duration::from_millis(1))))
                .is_err()
            {
                return Some(t.elapsed());
            }
            match self.s.read(&mut buf) {
                Ok(0) => return Some(t.elapsed()),
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return Some(t.elapsed()),
            }
        }
    }
}

/// Start `wirebench ARGS -H <daemon> -p <port> -t 30 -i 0.2` against `d` (a stream paced at
/// 200 Mbit/s: what is checked is what the daemon notices and records, and an unpaced stream
/// kept both CPUs busy beside the tests that hold wall-clock bounds), send it `sig` ("-KILL"
/// or "-STOP") once it has printed four live interval lines (0.8 s into the test), and wait
/// for the daemon's record of that test (its `n`-th, 1-based). Asserts the daemon noticed
/// within 4.5 s and recorded the test as failed; returns the record. The client is killed
/// and reaped before returning.
pub fn client_signalled_mid_test(
    d: &LocalDaemon,
    args: &[&str],
    sig: &str,
    n: usize,
) -> serde_json::Value {
    let mut c = Command::new(bin());
    c.args(args)
        .args([
            "-H",
            &d.addr.ip().to_string(),
            "-p",
            &d.addr.port().to_string(),
        ])
        .args(["-t", "30", "-i", "0.2"])
        .args(if args.first() == Some(&"stream") {
            &["-b", "200M"][..]
        } else {
            &[]
        })
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = super::Guarded::spawn(&mut c);
    let stderr = child.child().stderr.take().expect("piped stderr");
    let errors = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });
    let running = super::wait_live_lines(child.child(), 4, Duration::from_secs(10));
    super::kill(child.id(), sig);
    let t = Instant::now();
    let recs = if running {
        Some(d.wait_records(n, Duration::from_secs(8)))
    } else {
        None
    };
    let noticed = t.elapsed();
    if sig != "-KILL" {
        super::kill(child.id(), "-KILL");
    }
    child.wait();
    let errors = errors.join().unwrap_or_default();
    assert!(
        running,
        "{args:?}: no four live interval lines within 10 s; stderr: {errors}\nlog:\n{}",
        d.log_text()
    );
    let rec = recs.expect("records")[n - 1].clone();
    assert!(
        noticed < Duration::from_millis(4500),
        "{args:?} {sig}: noticed after {noticed:?}"
    );
    assert_eq!(rec["status"], "failed", "{args:?} {sig}: {rec}");
    rec
}
