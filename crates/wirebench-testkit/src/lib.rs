//! Helpers for wirebench's tests: run the real binary, parse its JSON RunResult, start
//! daemons (locally or inside namespaces), talk the control protocol raw, and serialize the
//! tests that measure throughput or CPU.
//!
//! The binary under test is known only to the wirebench crate's integration tests
//! (`CARGO_BIN_EXE_wirebench`): they hand it over with [`use_binary`] (their `common` module
//! does so in `serial()`/`shared()`); [`bin`] falls back to `wirebench` beside the test
//! binary's directory (`target/<profile>/`), where cargo puts it.

pub mod daemon;
pub mod net;
pub mod spec;
pub mod steal;
pub mod streamed;
pub mod threads;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use wirebench_lab::{Side, Testbed};
use wirebench_model::result::RunResult;

static BIN: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();

/// Name the wirebench binary under test (the caller's `env!("CARGO_BIN_EXE_wirebench")`).
/// The first call wins; later calls are no-ops.
pub fn use_binary(path: &'static str) {
    BIN.get_or_init(|| path);
}

/// Path of the wirebench binary under test: the one named by [`use_binary`], else
/// `target/<profile>/wirebench` next to this test binary's `deps/` directory.
pub fn bin() -> &'static str {
    BIN.get_or_init(|| {
        let exe = std::env::current_exe().expect("current_exe");
        let dir = exe
            .parent()
            .and_then(|d| d.parent())
            .expect("test binary in target/<profile>/deps");
        let path = dir.join("wirebench");
        assert!(
            path.exists(),
            "no wirebench binary at {} (call use_binary)",
            path.display()
        );
        Box::leak(path.to_string_lossy().into_owned().into_boxed_str())
    })
}

/// Every end-to-end test holds this lock: measurement tests alone ([`serial`]), or beside
/// a few others whose figures their links set and which leave the CPUs mostly idle
/// ([`link_bound`]); the others side by side ([`shared`], or [`shared_timed`] with a
/// wall-clock bound), so that a measurement never shares the CPUs with a test that competes
/// for them, while the tests that measure nothing still run side by side.
///
/// It prefers the shared side: a shared test starts whenever no measurement runs, even while
/// measurements wait. libtest hands tests to its threads in name order, so a lock that let a
/// waiting measurement hold back every shared test behind it (as `std::sync::RwLock` does)
/// turned each measurement into a barrier: the threads idled until the longest shared test
/// before it ended. Measurements wait instead until no shared test runs; the list is finite,
/// so each gets its turn.
static RUN_LOCK: RunLock = RunLock::new();

/// At most this many shared tests run at once. The workspace runs more test threads than
/// that (`RUST_TEST_THREADS` in `.cargo/config.toml`): libtest hands out tests in name order,
/// and a thread whose measurement waits for the lock is a thread no shared test can use, so
/// with few threads the shared tests ran nearly one at a time between measurements. With
/// more threads than tests they run this many wide, all ahead of the measurements. Most of
/// them wait (on daemons, deadlines, namespaces being built) more than they compute: the
/// wirebench crate's end-to-end binary took 347 s four wide and 312 s eight wide on 2 vCPUs
/// (2026-11-30), with the same tests passing.
pub const SHARED_AT_ONCE: usize = 8;

/// At most this many shared tests run at once while a [`shared_timed`] test runs (it
/// included): a test with a wall-clock bound (a legitimate client served within 1.1 s
/// during a flood, a deadline kept) has at most three others beside it. Eight wide, one such
/// bound failed (a 100 ms test took 1.17 s beside seven other tests, 2026-11-30).
pub const SHARED_BESIDE_TIMED: usize = 4;

/// At most this many [`shared_timed`] tests run at once while no other shared test runs.
/// Most of them wait on daemons' deadlines and timeouts: four at a time, alone, they used
/// 0.85-0.92 of the 2 CPUs (2026-11-30, `WIREBENCH_TEST_TIMES` beside a `/proc/stat` reading
/// per second), once the clients they kill or stop mid-test were paced. The bound that failed
/// eight wide did so beside seven tests of which most were not timed ones.
pub const TIMED_AT_ONCE: usize = 6;

/// At most this many [`link_bound`] measurements run at once. Each uses well under a quarter
/// of a CPU (its traffic is shaped or paced far below what the CPUs carry), so three leave
/// both CPUs mostly idle: what they measure is set by their links, not by the CPUs. In the
/// wirebench crate's end-to-end binary the serial phase used 0.9 of its 2 CPUs on average
/// (2026-11-30, `WIREBENCH_TEST_TIMES` beside a `/proc/stat` reading per second); eleven of its
/// measurements used 0.02–0.22 of a CPU each, 43 s of the phase's 190 s one after the other.
pub const LINK_BOUND_AT_ONCE: usize = 3;

/// The run lock's state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct LockState {
    /// Shared holders, timed ones included.
    shared: usize,
    /// Shared holders with a wall-clock bound.
    timed: usize,
    /// Whether a measurement holds the lock.
    exclusive: bool,
    /// Link-bound measurements holding the lock.
    link_bound: usize,
}

struct RunLock {
    state: Mutex<LockState>,
    changed: Condvar,
}

impl RunLock {
    const fn new() -> RunLock {
        RunLock {
            state: Mutex::new(LockState {
                shared: 0,
                timed: 0,
                exclusive: false,
                link_bound: 0,
            }),
            changed: Condvar::new(),
        }
    }

    fn acquire(&'static self, kind: RunKind) -> RunGuard {
        let mut st = self.state.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            let LockState {
                shared,
                timed,
                exclusive,
                link_bound,
            } = *st;
            let wide = if timed > 0 {
                SHARED_BESIDE_TIMED
            } else {
                SHARED_AT_ONCE
            };
            let measuring = exclusive || link_bound > 0;
            let timed_wide = if shared > timed {
                SHARED_BESIDE_TIMED
            } else {
                TIMED_AT_ONCE
            };
            let free = match kind {
                RunKind::Shared => !measuring && shared < wide,
                RunKind::SharedTimed => !measuring && shared < timed_wide,
                RunKind::Serial => !measuring && shared == 0,
                RunKind::LinkBound => !exclusive && shared == 0 && link_bound < LINK_BOUND_AT_ONCE,
            };
            if free {
                break;
            }
            st = self.changed.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        match kind {
            RunKind::Shared => st.shared += 1,
            RunKind::SharedTimed => {
                st.shared += 1;
                st.timed += 1;
            }
            RunKind::Serial => st.exclusive = true,
            RunKind::LinkBound => st.link_bound += 1,
        }
        RunGuard { lock: self, kind }
    }
}

/// Which side of the run lock a test holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    /// A measurement: alone.
    Serial,
    /// Measures nothing: beside other shared tests.
    Shared,
    /// Measures nothing but holds a wall-clock bound: beside at most
    /// [`SHARED_BESIDE_TIMED`] − 1 other shared tests, or [`TIMED_AT_ONCE`] − 1 other timed
    /// ones when no other shared test runs.
    SharedTimed,
    /// A measurement whose figures a shaped or emulated link sets, using a small share of a
    /// CPU: beside at most [`LINK_BOUND_AT_ONCE`] − 1 others of its kind, never beside any
    /// other test.
    LinkBound,
}

/// One test's hold on the run lock; released when dropped (also when the test panics).
pub struct RunGuard {
    lock: &'static RunLock,
    kind: RunKind,
}

impl Drop for RunGuard {
    fn drop(&mut self) {
        let mut st = self.lock.state.lock().unwrap_or_else(|e| e.into_inner());
        match self.kind {
            RunKind::Shared => st.shared -= 1,
            RunKind::SharedTimed => {
                st.shared -= 1;
                st.timed -= 1;
            }
            RunKind::Serial => st.exclusive = false,
            RunKind::LinkBound => st.link_bound -= 1,
        }
        drop(st);
        self.lock.changed.notify_all();
    }
}

/// Measurement tests take this so that no other test competes for the two CPUs.
pub fn serial() -> Held<RunGuard> {
    Held::new(RUN_LOCK.acquire(RunKind::Serial), RunKind::Serial)
}

/// Measurements whose figures a shaped or emulated link sets (a tbf or nftables rule, the
/// emulator's delay, loss or reordering, a paced rate far below what the CPUs carry) take
/// this: at most [`LINK_BOUND_AT_ONCE`] of them run at once, never beside another test.
///
/// A test qualifies only if (a) it used under a quarter of a CPU when it ran alone (measured
/// with `WIREBENCH_TEST_TIMES` beside a `/proc/stat` reading per second), (b) every counter it
/// checks belongs to its own namespaces, sockets or processes (no host-wide `/proc/net/snmp`,
/// `/proc/stat` or loopback interface counter), and (c) none of its bounds is on CPU time.
/// Everything else that measures takes [`serial`].
pub fn link_bound() -> Held<RunGuard> {
    Held::new(RUN_LOCK.acquire(RunKind::LinkBound), RunKind::LinkBound)
}

/// Tests that measure nothing take this: they run beside each other, never beside a
/// measurement test.
pub fn shared() -> Held<RunGuard> {
    Held::new(RUN_LOCK.acquire(RunKind::Shared), RunKind::Shared)
}

/// Tests that measure nothing but assert a wall-clock bound (a deadline, a client served
/// within a second during a flood) take this: like [`shared`], with at most
/// [`SHARED_BESIDE_TIMED`] shared tests running while they do, or [`TIMED_AT_ONCE`] when
/// all of them are timed ones.
pub fn shared_timed() -> Held<RunGuard> {
    Held::new(RUN_LOCK.acquire(RunKind::SharedTimed), RunKind::SharedTimed)
}

/// A held run lock. When `WIREBENCH_TEST_TIMES` names a file, dropping it appends a line:
/// how long the test held the lock (s), the test's name (libtest names each test's thread
/// after it), the lock's kind (`serial`, `link`, `shared` or `timed`) and when the test took
/// it (s since the process's first test took it), so that the suite's slowest tests can be
/// listed (`sort -rn FILE | head`) and its timeline drawn.
pub struct Held<G> {
    _guard: G,
    kind: RunKind,
    since: Instant,
}

/// When the first test of this process took the run lock: the origin of the start times in
/// the `WIREBENCH_TEST_TIMES` log.
static FIRST_HELD: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();

impl<G> Held<G> {
    fn new(guard: G, kind: RunKind) -> Held<G> {
        let since = Instant::now();
        FIRST_HELD.get_or_init(|| since);
        Held {
            _guard: guard,
            kind,
            since,
        }
    }
}

impl<G> Drop for Held<G> {
    fn drop(&mut self) {
        let Some(path) = std::env::var_os("WIREBENCH_TEST_TIMES") else {
            return;
        };
        let name = std::thread::current().name().unwrap_or("?").to_owned();
        let kind = match self.kind {
            RunKind::Serial => "serial",
            RunKind::Shared => "shared",
            RunKind::SharedTimed => "timed",
            RunKind::LinkBound => "link",
        };
        let began = self
            .since
            .duration_since(*FIRST_HELD.get_or_init(Instant::now));
        let line = format!(
            "{:.1}\t{name}\t{kind}\t{:.1}\n",
            self.since.elapsed().as_secs_f64(),
            began.as_secs_f64()
        );
        use std::io::Write;
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = f.write_all(line.as_bytes());
        }
    }
}

/// What one invocation produced.
pub struct Ran {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

impl Ran {
    /// Standard output parsed as a RunResult (panics with both outputs when it is not).
    pub fn json(&self) -> RunResult {
        RunResult::from_json(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not a RunResult ({e}):\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }
}

/// Run a prepared command with stdin closed; its exit code and output.
pub fn finish(mut c: Command) -> Ran {
    let out = c.stdin(Stdio::null()).output().expect("run wirebench");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Run `wirebench ARGS` on the host.
pub fn wb(args: &[&str]) -> Ran {
    let mut c = Command::new(bin());
    c.args(args);
    finish(c)
}

/// Run `wirebench ARGS` under `prlimit --nofile=N:N` (soft and hard descriptor limit N).
pub fn wb_with_nofile(nofile: u64, args: &[&str]) -> Ran {
    let mut c = Command::new("prlimit");
    c.arg(format!("--nofile={nofile}:{nofile}"))
        .arg(bin())
        .args(args);
    finish(c)
}

/// Run `wirebench ARGS` inside a testbed namespace.
pub fn wb_in(tb: &Testbed, side: Side, args: &[&str]) -> Ran {
    let mut c = tb.command(side, bin());
    c.args(args);
    finish(c)
}

/// A daemon started by a test; killed (by its PID) on drop.
pub struct Daemon {
    child: Child,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start `wirebench serve` inside a namespace and wait until it listens.
pub fn daemon_in(tb: &Testbed, side: Side, extra: &[&str]) -> Daemon {
    let mut c = tb.command(side, bin());
    c.args(["serve", "--bind", Testbed::addr(side)]);
    // A private namespace's address: opting out of authentication is explicit.
    if !extra.contains(&"--auth-keys") {
        c.arg("--allow-unauthenticated");
    }
    c.args(extra);
    spawn_daemon(c)
}

/// Spawn `c`, a `wirebench serve` command, and wait until it says it listens (10 s at most;
/// a daemon that does not is killed and the test fails).
pub fn spawn_daemon(mut c: Command) -> Daemon {
    c.env("RUST_LOG", "info");
    c.stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    let mut child = c.spawn().expect("spawn daemon");
    let stderr = child.stderr.take().expect("stderr");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.contains("listening") {
                let _ = tx.send(());
            }
        }
    });
    let got = rx.recv_timeout(Duration::from_secs(10)).is_ok();
    let d = Daemon { child };
    assert!(got, "daemon did not report listening within 10 s");
    d
}

/// Namespaces are required: these tests run as root in CI. Fail loudly otherwise.
pub fn require_netns() {
    assert!(
        wirebench_lab::available(),
        "these tests need root and iproute2 (network namespaces); CI runs them as root"
    );
}

/// Idle time so far of all CPUs together (idle + iowait of /proc/stat's aggregate line), ns.
/// The kernel times idle stretches to the ns on a tickless kernel and shows them in 10 ms
/// units; the busy states it samples at the tick (short bursts escape them), so busy time
/// over a window is the window times the CPUs less this.
pub fn proc_stat_idle_ns() -> u64 {
    proc_stat_line_idle_ns("cpu ")
}

/// One CPU's idle time so far (idle + iowait of its /proc/stat line), ns.
pub fn proc_stat_cpu_idle_ns(cpu: u32) -> u64 {
    proc_stat_line_idle_ns(&format!("cpu{cpu} "))
}

/// idle + iowait of the /proc/stat line that starts with `prefix` (fields: user nice system
/// idle iowait ...), in ns (10 ms per unit).
fn proc_stat_line_idle_ns(prefix: &str) -> u64 {
    let s = std::fs::read_to_string("/proc/stat").unwrap();
    let line = s
        .lines()
        .find(|l| l.starts_with(prefix))
        .expect("the /proc/stat line");
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .take(5)
        .map(|x| x.parse().unwrap())
        .collect();
    (v[3] + v[4]) * 10_000_000
}

/// Send a signal (e.g. "-KILL") to a process this test started, by its PID.
pub fn kill(pid: u32, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([sig, &pid.to_string()])
        .status()
        .unwrap()
        .success();
    assert!(ok, "kill {sig} {pid}");
}

/// Read `child`'s stdout on a thread until it has printed `n` live interval lines
/// (`[ a- b s] ...`); false if it did not within `within`. The reader keeps draining the
/// pipe afterwards, so the child never blocks on a full pipe.
pub fn wait_live_lines(child: &mut Child, n: usize, within: Duration) -> bool {
    let out = child.stdout.take().expect("piped stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut seen = 0;
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            if line.starts_with('[') && line.contains(" s]") {
                seen += 1;
                if seen == n {
                    let _ = tx.send(());
                }
            }
        }
    });
    rx.recv_timeout(within).is_ok()
}

/// Names of the threads of process `pid` (/proc/PID/task/*/comm).
pub fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|e| std::fs::read_to_string(e.ok()?.path().join("comm")).ok())
                .map(|n| n.trim_end().to_string())
                .collect()
        })
        .unwrap_or_default()
}

/// Poll /proc until process `pid` runs a data thread of a test engine (`wb-flow-*`,
/// `wb-many-*`, `wb-rr-*`, `wb-udp-*`): its test is past the handshake and measuring. False
/// if not within `within`.
pub fn wait_engine(pid: u32, within: Duration) -> bool {
    let t = Instant::now();
    loop {
        let running = thread_names(pid).iter().any(|n| {
            ["wb-flow-", "wb-many-", "wb-rr-", "wb-udp-"]
                .iter()
                .any(|p| n.starts_with(p))
        });
        if running {
            return true;
        }
        if t.elapsed() > within {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// A child process a test started; killed (by its PID) and reaped on drop, so that a failing
/// test leaves no process behind.
pub struct Guarded {
    child: Option<Child>,
}

impl Guarded {
    /// Spawn `c`.
    pub fn spawn(c: &mut Command) -> Guarded {
        Guarded {
            child: Some(c.spawn().expect("spawn")),
        }
    }

    /// The process's PID.
    pub fn id(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// The child process.
    pub fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("running")
    }

    /// Wait for it to exit.
    pub fn wait(&mut self) -> ExitStatus {
        let st = self.child().wait().expect("wait");
        self.child = None;
        st
    }

    /// Wait for it to exit, collecting its piped output.
    pub fn wait_with_output(mut self) -> Output {
        self.child
            .take()
            .expect("running")
            .wait_with_output()
            .expect("wait")
    }
}

impl Drop for Guarded {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// An independent observer of an emulated path's round trip: a plain TCP ping-pong of
/// 1-byte messages written here (no wirebench code), `n` round trips, their median (ns).
pub fn ping_pong_p50_ns(path: &wirebench_lab::emu::EmulatedPath, n: usize) -> u64 {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    use wirebench_lab::ADDR_B;
    let listener = path
        .run_in(Side::B, || TcpListener::bind((ADDR_B, 0)).unwrap())
        .unwrap();
    let port = listener.local_addr().unwrap().port();
    let server = std::thread::spawn(move || {
        let (mut s, _) = listener.accept().unwrap();
        s.set_nodelay(true).unwrap();
        let mut b = [0u8; 1];
        while s.read_exact(&mut b).is_ok() {
            if s.write_all(&b).is_err() {
                break;
            }
        }
    });
    let mut rtts = path
        .run_in(Side::A, move || {
            let mut c = TcpStream::connect((ADDR_B, port)).unwrap();
            c.set_nodelay(true).unwrap();
            let mut b = [0u8; 1];
            (0..n)
                .map(|_| {
                    let t = Instant::now();
                    c.write_all(&b).unwrap();
                    c.read_exact(&mut b).unwrap();
                    t.elapsed().as_nanos() as u64
                })
                .collect::<Vec<u64>>()
        })
        .unwrap();
    server.join().unwrap();
    rtts.sort_unstable();
    rtts[rtts.len() / 2]
}

/// A path through the link emulator with `each_way` of delay in both directions, and a
/// daemon listening on its side B (any port).
pub fn delayed_path_with_daemon(
    each_way: Duration,
) -> (wirebench_lab::emu::EmulatedPath, daemon::LocalDaemon) {
    use wirebench_lab::emu::{EmuConfig, EmulatedPath};
    let delay = EmuConfig::default().with_delay(each_way);
    let path = EmulatedPath::new(1500, delay.clone(), delay).unwrap();
    let mut c = path.command(Side::B, bin());
    c.args([
        "serve",
        "--bind",
        wirebench_lab::ADDR_B,
        "--allow-unauthenticated",
    ]);
    let d = daemon::LocalDaemon::start_cmd(c, &["--port", "0"]);
    (path, d)
}

/// A directory of the test's own (under the system's temp dir, named after `tag`, this
/// process and a counter), removed with its contents on drop.
pub struct TempDir(pub std::path::PathBuf);

/// This machine's limits document (its JSON text), measured once per test binary by
/// `wirebench limits --quick --json` in a state directory of its own, for the tests that need
/// a real document but do not check how it is measured or cached (those run `limits`
/// themselves). A failed measurement panics in the caller, and the next caller measures again.
pub fn quick_limits_json() -> &'static str {
    static DOC: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    DOC.get_or_init(|| {
        let dir = std::env::temp_dir().join(format!("wb-limits-once-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a state directory for limits");
        let r = wb_state(&dir, &["limits", "--quick", "--json"]);
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(r.code, 0, "wirebench limits --quick: {}", r.stderr);
        r.stdout
    })
}

/// A state directory of its own (`WIREBENCH_STATE_DIR`), removed on drop.
pub type StateDir = TempDir;

impl TempDir {
    /// A fresh, empty directory named after `tag`.
    pub fn new(tag: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let d = std::env::temp_dir().join(format!(
            "wb-test-{tag}-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).expect("create temp dir");
        TempDir(d)
    }

    /// The path of `name` inside it.
    pub fn join(&self, name: &str) -> std::path::PathBuf {
        self.0.join(name)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `wirebench ARGS` with `WIREBENCH_STATE_DIR=dir`.
pub fn wb_state(dir: &std::path::Path, args: &[&str]) -> Ran {
    let out = Command::new(bin())
        .args(args)
        .env("WIREBENCH_STATE_DIR", dir)
        .stdin(Stdio::null())
        .output()
        .expect("run wirebench");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Writes a key file at `path` holding identity `alice` with a fixed test key, mode `mode`
/// (0600 for one a daemon or client accepts).
pub fn write_alice_keys(path: &std::path::Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    std::fs::write(
        path,
        "alice 00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n",
    )
    .unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::mpsc::Receiver;
    use std::sync::Arc;

    /// A measurement waiting for the lock does not hold back a shared test, and never runs
    /// beside one: a shared holder, a measurement that queues behind it, then a second shared
    /// test that starts before the measurement, which starts only once both shared tests end.
    #[test]
    fn shared_tests_pass_a_waiting_measurement_which_then_runs_alone() {
        static LOCK: RunLock = RunLock::new();
        let first = LOCK.acquire(RunKind::Shared);
        let running = Arc::new(AtomicUsize::new(1));
        let (tx, rx) = std::sync::mpsc::channel();
        let r = Arc::clone(&running);
        let measurement = std::thread::spawn(move || {
            let _g = LOCK.acquire(RunKind::Serial);
            tx.send(r.load(Ordering::SeqCst)).unwrap();
        });
        // The measurement is waiting (it cannot have the lock while `first` is held).
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            rx.try_recv().is_err(),
            "a measurement ran beside a shared test"
        );
        // On a thread: with a lock that holds shared tests back behind a waiting
        // measurement, this would wait for ever; here it fails after 10 s.
        let (gtx, grx) = std::sync::mpsc::channel();
        std::thread::spawn(move || gtx.send(LOCK.acquire(RunKind::Shared)).unwrap());
        let second = grx
            .recv_timeout(Duration::from_secs(10))
            .expect("a shared test waited behind a waiting measurement");
        running.fetch_add(1, Ordering::SeqCst);
        assert_eq!(LOCK.state.lock().unwrap().shared, 2);
        drop(first);
        running.fetch_sub(1, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            rx.try_recv().is_err(),
            "a measurement ran beside a shared test"
        );
        running.fetch_sub(1, Ordering::SeqCst);
        drop(second);
        assert_eq!(rx.recv_timeout(Duration::from_secs(10)).unwrap(), 0);
        measurement.join().unwrap();
        // And a shared test waits while the measurement holds the lock.
        let held = LOCK.acquire(RunKind::Serial);
        let (tx, rx) = std::sync::mpsc::channel();
        let shared = std::thread::spawn(move || {
            let _g = LOCK.acquire(RunKind::Shared);
            tx.send(()).unwrap();
        });
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            rx.try_recv().is_err(),
            "a shared test ran beside a measurement"
        );
        drop(held);
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        shared.join().unwrap();
    }

    /// Eight light shared tests run at once; a timed one waits until at most three others
    /// run, and while it runs, no more than four run in all.
    #[test]
    fn a_timed_shared_test_has_at_most_three_others_beside_it() {
        static LOCK: RunLock = RunLock::new();
        let light: Vec<RunGuard> = (0..SHARED_AT_ONCE)
            .map(|_| LOCK.acquire(RunKind::Shared))
            .collect();
        assert_eq!(LOCK.state.lock().unwrap().shared, SHARED_AT_ONCE);
        let (tx, rx) = std::sync::mpsc::channel();
        let timed = std::thread::spawn(move || {
            let g = LOCK.acquire(RunKind::SharedTimed);
            tx.send(LOCK.state.lock().unwrap().shared).unwrap();
            // The guard goes back to the test, which holds it while it checks the next rule.
            g
        });
        let mut light = light;
        // Down to four light tests: the timed one still waits (it would make five).
        while light.len() > SHARED_BESIDE_TIMED {
            assert!(
                rx.try_recv().is_err(),
                "a timed test ran beside {}",
                light.len()
            );
            light.pop();
        }
        std::thread::sleep(Duration::from_millis(50));
        assert!(
            rx.try_recv().is_err(),
            "a timed test ran beside four others"
        );
        light.pop();
        assert_eq!(
            rx.recv_timeout(Duration::from_secs(10)).unwrap(),
            SHARED_BESIDE_TIMED
        );
        let timed = timed.join().unwrap();
        // While it runs, a light test waits once four run in all.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(LOCK.acquire(RunKind::Shared)).unwrap());
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "five ran beside a timed test");
        drop(timed);
        let fifth = rx
            .recv_timeout(Duration::from_secs(10))
            .expect("a light test waits once the timed one ends");
        drop(fifth);
        drop(light);
        assert_eq!(*LOCK.state.lock().unwrap(), LockState::default());
    }

    /// A thread that takes `kind` on `lock` and hands the guard over once it has it.
    fn waits(lock: &'static RunLock, kind: RunKind) -> Receiver<RunGuard> {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || tx.send(lock.acquire(kind)).unwrap());
        rx
    }

    /// Asserts that the thread behind `rx` still waits 50 ms on.
    fn still_waiting(rx: &Receiver<RunGuard>, what: &str) {
        std::thread::sleep(Duration::from_millis(50));
        assert!(rx.try_recv().is_err(), "{what}");
    }

    /// Link-bound measurements run up to three at once and beside nothing else: a fourth
    /// waits, a serial measurement waits until none runs, a shared test likewise; and none
    /// starts while a serial measurement or a shared test holds the lock.
    #[test]
    fn link_bound_measurements_share_only_with_their_own_kind() {
        static LOCK: RunLock = RunLock::new();
        let mut links: Vec<RunGuard> = (0..LINK_BOUND_AT_ONCE)
            .map(|_| LOCK.acquire(RunKind::LinkBound))
            .collect();
        assert_eq!(LOCK.state.lock().unwrap().link_bound, LINK_BOUND_AT_ONCE);
        let fourth = waits(&LOCK, RunKind::LinkBound);
        let serial = waits(&LOCK, RunKind::Serial);
        let shared = waits(&LOCK, RunKind::Shared);
        still_waiting(&fourth, "a fourth link-bound measurement ran");
        still_waiting(&serial, "a serial measurement ran beside link-bound ones");
        still_waiting(&shared, "a shared test ran beside link-bound measurements");
        // One ends: the fourth takes its place; the others still wait.
        links.pop();
        links.push(
            fourth
                .recv_timeout(Duration::from_secs(10))
                .expect("the fourth link-bound measurement"),
        );
        still_waiting(&serial, "a serial measurement ran beside link-bound ones");
        still_waiting(&shared, "a shared test ran beside link-bound measurements");
        // All end: the shared test or the serial measurement goes first, the other after it.
        drop(links);
        let deadline = Instant::now() + Duration::from_secs(10);
        let first = loop {
            if let Ok(g) = shared.try_recv() {
                break g;
            }
            if let Ok(g) = serial.try_recv() {
                break g;
            }
            assert!(
                Instant::now() < deadline,
                "neither ran once the link-bound ones ended"
            );
            std::thread::sleep(Duration::from_millis(5));
        };
        let second = match first.kind {
            RunKind::Shared => &serial,
            _ => &shared,
        };
        still_waiting(second, "a shared test and a serial measurement ran at once");
        drop(first);
        let second = second.recv_timeout(Duration::from_secs(10)).unwrap();
        let after = waits(&LOCK, RunKind::LinkBound);
        still_waiting(&after, "a link-bound measurement ran beside another test");
        drop(second);
        drop(after.recv_timeout(Duration::from_secs(10)).unwrap());
        assert_eq!(*LOCK.state.lock().unwrap(), LockState::default());
    }

    /// Timed tests alone run six at once; a seventh waits, and so does an untimed shared
    /// test until at most three run; beside an untimed one, a timed test has at most three
    /// others.
    #[test]
    fn timed_tests_alone_run_six_at_once_and_four_beside_others() {
        static LOCK: RunLock = RunLock::new();
        let mut timed: Vec<RunGuard> = (0..TIMED_AT_ONCE)
            .map(|_| {
                waits(&LOCK, RunKind::SharedTimed)
                    .recv_timeout(Duration::from_secs(10))
                    .expect("six timed tests at once")
            })
            .collect();
        let seventh = waits(&LOCK, RunKind::SharedTimed);
        still_waiting(&seventh, "a seventh timed test ran");
        timed.pop();
        timed.push(
            seventh
                .recv_timeout(Duration::from_secs(10))
                .expect("the seventh timed test once one ends"),
        );
        // Six timed tests, then an untimed one waits until at most three run.
        let untimed = waits(&LOCK, RunKind::Shared);
        while timed.len() > SHARED_BESIDE_TIMED - 1 {
            still_waiting(
                &untimed,
                "an untimed test ran beside four or more timed ones",
            );
            timed.pop();
        }
        let untimed = untimed
            .recv_timeout(Duration::from_secs(10))
            .expect("the untimed test once three timed ones run");
        assert_eq!(LOCK.state.lock().unwrap().shared, SHARED_BESIDE_TIMED);
        // Beside an untimed test, a timed one has at most three others.
        let another = waits(&LOCK, RunKind::SharedTimed);
        still_waiting(&another, "a timed test ran beside four others");
        drop(untimed);
        drop(another.recv_timeout(Duration::from_secs(10)).unwrap());
        drop(timed);
        assert_eq!(*LOCK.state.lock().unwrap(), LockState::default());
    }
}
