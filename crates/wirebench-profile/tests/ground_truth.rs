//! The profiler against independent ground truth: the sampling frequency (a) and the
//! window measured on CLOCK_MONOTONIC, a raw count of the samples the kernel delivered (b),
//! Debian's `perf record` + `perf script` over the same window and CPUs classified by the
//! same table (c), the receive path (d: discarding received data removes the receiver's
//! copy), and the call-chain bound (e: the whole chain, up to the kernel's 127 frames,
//! classifies as the bound a profile records). (b) to (d) sample with a profile's own
//! settings (`ProfileConfig::sampler_config`: 16 kernel frames, no user chain) while perf
//! records whole chains.
//!
//! These tests need perf events (root, CAP_PERFMON or perf_event_paranoid <= 0); without
//! them they skip unless WIREBENCH_REQUIRE names `perf`. They run one at a time (a lock) and
//! their bounds leave room for a loaded 2-core machine.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use wirebench_model::profile::{ProfileCategory, ProfileReport};

/// Categories.
const NCAT: usize = ProfileCategory::ALL.len();
use wirebench_profile::aggregate::{Aggregator, Symbols};
use wirebench_profile::classify::{classify, FrameSym};
use wirebench_profile::{ProfileConfig, Profiler};
use wirebench_sys::perf::{
    online_cpu_list, Sample, SampleSink, Sampler, SamplerConfig, DEFAULT_FREQ_HZ,
};
use wirebench_sys::require;
use wirebench_testkit::steal::{StealTicks, STEAL_SLACK_PER_CPU};

/// One profiling test at a time (each samples every CPU): the test kit's run lock.
pub(crate) fn lock() -> wirebench_testkit::Held<wirebench_testkit::RunGuard> {
    wirebench_testkit::serial()
}

/// True if perf events can be opened here (else the test skips or, if required, fails).
pub(crate) fn perf_usable() -> bool {
    let cpus = online_cpu_list().unwrap_or_default();
    match Sampler::open(&SamplerConfig::cpu_clock(cpus)) {
        Ok(_) => true,
        Err(e) => require::capability("perf", false, &e.to_string()),
    }
}

/// Threads that keep some CPUs busy until dropped.
struct Load {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    /// Kernel thread id of the receiving thread, for loopback loads.
    receiver_tid: Option<i32>,
}

impl Drop for Load {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One spinning thread pinned to each CPU.
fn spinners(cpus: &[u32]) -> Load {
    let stop = Arc::new(AtomicBool::new(false));
    let threads = cpus
        .iter()
        .map(|&cpu| {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let _ = wirebench_sys::thread::pin_current_thread(cpu as usize);
                let mut x = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
                }
            })
        })
        .collect();
    Load {
        stop,
        threads,
        receiver_tid: None,
    }
}

/// A loopback TCP transfer: a sender writing 64 KiB buffers and a receiver reading them
/// (copying into a buffer, or discarding with `MSG_TRUNC`), each pinned to a CPU when
/// there are two.
fn loopback(discard: bool) -> Load {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let ncpu = online_cpu_list().unwrap().len();
    let (tid_tx, tid_rx) = std::sync::mpsc::channel();
    let s = Arc::clone(&stop);
    let receiver = std::thread::spawn(move || {
        if ncpu >= 2 {
            let _ = wirebench_sys::thread::pin_current_thread(1);
        }
        let _ = tid_tx.send(wirebench_sys::thread::current_thread_id());
        let (mut conn, _) = listener.accept().unwrap();
        conn.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let mut buf = vec![0u8; 128 * 1024];
        while !s.load(Ordering::Relaxed) {
            let n = if discard {
                wirebench_sys::datapath::recv_discard(&conn, buf.len()).unwrap_or(0)
            } else {
                conn.read(&mut buf).unwrap_or(0)
            };
            std::hint::black_box(n);
        }
    });
    let s = Arc::clone(&stop);
    let sender = std::thread::spawn(move || {
        if ncpu >= 2 {
            let _ = wirebench_sys::thread::pin_current_thread(0);
        }
        let mut conn = TcpStream::connect(addr).unwrap();
        conn.set_write_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let buf = vec![7u8; 64 * 1024];
        while !s.load(Ordering::Relaxed) {
            let _ = conn.write(&buf);
        }
    });
    let receiver_tid = tid_rx.recv().ok();
    std::thread::sleep(Duration::from_millis(200));
    Load {
        stop,
        threads: vec![sender, receiver],
        receiver_tid,
    }
}

/// Profiles every online CPU for `window` at `hz`.
fn profile(window: Duration, hz: u32) -> ProfileReport {
    let cpus = online_cpu_list().unwrap();
    let profiler = Profiler::open(&ProfileConfig::new(cpus, hz)).expect("open");
    let running = profiler.start().expect("start");
    std::thread::sleep(window);
    running.stop().expect("stop")
}

/// (a) With every CPU busy, the samples (and lost ones) are frequency × the CPUs' running
/// time within 5 %: CPUs × the window taken from CLOCK_MONOTONIC around enable/disable, less
/// the time the host took from them (`steal` in /proc/stat, which cpu-clock cannot sample),
/// give or take the tick accounting's slack per CPU.
#[test]
fn sample_count_matches_frequency_on_busy_cpus() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let cpus = online_cpu_list().unwrap();
    let _load = spinners(&cpus);
    std::thread::sleep(Duration::from_millis(50));
    let steal_before = StealTicks::now();
    let r = profile(Duration::from_secs(1), 4000);
    let steal_after = StealTicks::now();
    let stolen: Duration = cpus
        .iter()
        .map(|&cpu| steal_before.stolen_since(&steal_after, cpu as usize))
        .sum();
    let running_ns = (cpus.len() as f64 * r.window_ns as f64 - stolen.as_nanos() as f64).max(0.0);
    let expected = 4000.0 * running_ns / 1e9;
    let slack = 0.05 * expected + 4000.0 * (cpus.len() as u32 * STEAL_SLACK_PER_CPU).as_secs_f64();
    let got = (r.samples + r.lost_samples) as f64;
    eprintln!(
        "busy: {} samples + {} lost over {} ns on {} CPUs, stolen {stolen:?}: expected \
         {expected:.0} ± {slack:.0} ({:+.2} %)",
        r.samples,
        r.lost_samples,
        r.window_ns,
        cpus.len(),
        (got / expected - 1.0) * 100.0
    );
    assert!(
        (got - expected).abs() <= slack,
        "{got} vs {expected} ± {slack} (stolen {stolen:?})"
    );
    assert_eq!(r.period, 250_000);
}

/// (a, idle) Idle CPUs: what this kernel delivers. Every sample the kernel took is in the
/// report, and the rest of the window is the unsampled idle time; printed for the notes.
#[test]
fn idle_cpus_are_accounted() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let r = profile(Duration::from_secs(1), 4000);
    let idle = r.category(ProfileCategory::Idle).unwrap();
    eprintln!(
        "idle: {} samples over {} ns on {} CPUs ({} expected at 4 kHz); idle-loop samples {}, \
         unsampled {} ns; per CPU samples {:?}",
        r.samples,
        r.window_ns,
        r.cpus.len(),
        4 * r.window_ns * r.cpus.len() as u64 / 1_000_000,
        idle.samples,
        r.unsampled_idle_ns,
        r.per_cpu.iter().map(|c| c.samples).collect::<Vec<_>>()
    );
    for c in &r.per_cpu {
        let sum: u64 = c.cpu_ns.iter().sum();
        // Every CPU's categories account for its whole window: the sampled time, plus the
        // unsampled rest; never less than the window, and more only by what the samples
        // themselves stand for beyond it.
        assert_eq!(
            sum,
            r.window_ns.max(c.samples * r.period),
            "cpu {}: categories {sum} ns, window {} ns, samples {} x {} ns",
            c.cpu,
            r.window_ns,
            c.samples,
            r.period
        );
    }
}

/// Counts what the kernel delivered, independently of the aggregator, and forwards.
struct Tap {
    agg: Aggregator,
    raw_samples: u64,
    raw_period: u64,
    raw_per_cpu: HashMap<u32, u64>,
}

impl SampleSink for Tap {
    fn sample(&mut self, s: &Sample<'_>) {
        self.raw_samples += 1;
        self.raw_period += s.period;
        *self.raw_per_cpu.entry(s.cpu).or_insert(0) += s.period;
        self.agg.sample(s);
    }

    fn on_drain_thread(&mut self, tid: u32) {
        self.agg.on_drain_thread(tid);
    }
}

/// (b) Categories add up to the sampled CPU time exactly: the report's samples and CPU ns
/// per category sum to what a raw tap counted, plus the unsampled idle time.
#[test]
fn categories_sum_to_sampled_time() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let cpus = online_cpu_list().unwrap();
    let _load = loopback(false);
    let sampler =
        Sampler::open(&ProfileConfig::new(cpus.clone(), DEFAULT_FREQ_HZ).sampler_config()).unwrap();
    let tap = Tap {
        agg: Aggregator::new(Symbols::load(), &cpus),
        raw_samples: 0,
        raw_period: 0,
        raw_per_cpu: HashMap::new(),
    };
    let running = sampler.start(tap).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let finished = running.stop().unwrap();
    let tap = finished.sink;
    let (raw_samples, raw_period, raw_per_cpu) = (tap.raw_samples, tap.raw_period, tap.raw_per_cpu);
    let r = tap.agg.into_report(&finished.recording, None);
    assert!(raw_samples > 1000, "{raw_samples}");
    let cat_samples: u64 = r.categories.iter().map(|c| c.samples).sum();
    let cat_ns: u64 = r.categories.iter().map(|c| c.cpu_ns).sum();
    assert_eq!(r.samples, raw_samples);
    assert_eq!(cat_samples, raw_samples);
    assert_eq!(cat_ns, raw_period + r.unsampled_idle_ns);
    let pct: f64 = r.categories.iter().map(|c| c.pct).sum();
    assert!((pct - 100.0).abs() < 1e-6, "{pct}");
    for c in &r.per_cpu {
        let sum: u64 = c.cpu_ns.iter().sum();
        let raw = raw_per_cpu.get(&c.cpu).copied().unwrap_or(0);
        assert_eq!(sum, raw + c.unsampled_idle_ns, "cpu {}", c.cpu);
        assert_eq!(c.unsampled_idle_ns, r.window_ns.saturating_sub(raw));
    }
    let top = &r.category(ProfileCategory::Tcp).unwrap().top_symbols;
    assert!(top.len() <= 10 && top.iter().all(|s| s.symbol.len() <= 200));
}

/// One sample of `perf script`: pid, tid, time and frames (address side and symbol).
struct PerfSample {
    pid: u32,
    tid: u32,
    time_ns: u64,
    frames: Vec<(bool, String)>,
}

/// Parses `12345.678901234:` (seconds with nanoseconds) into ns.
fn parse_time_ns(token: &str) -> Option<u64> {
    let (s, ns) = token.trim_end_matches(':').split_once('.')?;
    Some(s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?)
}

/// Parses `perf script --ns -F pid,tid,cpu,time,ip,sym,dso` output with call chains.
fn parse_perf_script(text: &str) -> Vec<PerfSample> {
    let mut out = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            continue;
        }
        // A sample's header (`pid/tid [cpu]`) is not indented by a tab; its frames are.
        if !line.starts_with('\t') {
            let mut f = line.split_whitespace();
            let (pid, tid) = f
                .next()
                .and_then(|p| p.split_once('/'))
                .map_or((0, 0), |(p, t)| {
                    (p.parse().unwrap_or(0), t.parse().unwrap_or(0))
                });
            let time_ns = f
                .find(|t| t.ends_with(':'))
                .and_then(parse_time_ns)
                .unwrap_or(0);
            out.push(PerfSample {
                pid,
                tid,
                time_ns,
                frames: Vec::new(),
            });
            continue;
        }
        let Some(s) = out.last_mut() else { continue };
        let t = line.trim();
        let Some(open) = t.rfind(" (") else { continue };
        let dso = &t[open + 2..t.len() - 1];
        let mut f = t[..open].splitn(2, ' ');
        let _addr = f.next();
        let sym = f.next().unwrap_or("[unknown]").to_owned();
        s.frames.push((dso.starts_with("[kernel"), sym));
    }
    out
}

/// Category shares (% of samples) of perf's samples, classified by the same table; the
/// samples of thread `drain_tid` (this profile's drain thread) are the sampler's.
fn perf_shares(samples: &[PerfSample], own_pid: u32, drain_tid: Option<u32>) -> [f64; NCAT] {
    let mut counts = [0u64; NCAT];
    for s in samples {
        if Some(s.tid) == drain_tid {
            counts[ProfileCategory::Sampler.index()] += 1;
            continue;
        }
        let frames = s.frames.iter().map(|(kernel, sym)| {
            if *kernel {
                FrameSym::Kernel((sym != "[unknown]").then_some(sym.as_str()))
            } else {
                FrameSym::User {
                    wirebench: s.pid == own_pid,
                }
            }
        });
        counts[classify(frames).index()] += 1;
    }
    let n: u64 = counts.iter().sum();
    counts.map(|c| c as f64 * 100.0 / n.max(1) as f64)
}

/// Category shares (% of samples, the unsampled remainder left out) of a report.
fn report_shares(r: &ProfileReport) -> [f64; NCAT] {
    let mut out = [0.0; NCAT];
    for c in &r.categories {
        out[c.category.index()] = c.samples as f64 * 100.0 / r.samples.max(1) as f64;
    }
    out
}

/// perf's frequency in (c): 11 Hz off this profile's 4000 Hz, so that the phase between the
/// two samplers' timers sweeps the whole period 22 times in the window. At the same
/// frequency the phase stays put, and whichever sampler fires just after the other keeps
/// landing in the other's interrupt exit path (up to 5 points of `interrupts` moved from the
/// interrupted category, in either direction, depending on the run).
const PERF_HZ: &str = "3989";

/// (c) On the same recording window and CPUs, during a loopback transfer, the category
/// shares agree with `perf record -a -C <cpus> -F 3989 -g -k mono` + `perf script`
/// (its samples cut to this profile's CLOCK_MONOTONIC window) classified by the same table,
/// within 3 points each. The `perf record` process is left out of both sides (see
/// [`WithoutPid`]).
///
/// Two system-wide samplers on the same CPUs can disturb each other: a sample handler that
/// spins on a lock the other CPU's handler holds lands in `locks` (seen once in CI: perf
/// 13.4 % locks against 3.3 %). Each attempt is a new recording of both samplers; the test
/// passes when one attempt of three agrees in every category, and prints every attempt.
#[test]
fn agrees_with_perf_record() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let have_perf = require::command_works("perf", "--version");
    if !require::capability(
        "perf-tool",
        have_perf,
        "Debian's perf (linux-perf) not installed",
    ) {
        return;
    }
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        match compare_with_perf_once() {
            Ok(()) => {
                require::note_retry("profile agrees_with_perf_record", attempt);
                return;
            }
            Err(e) => {
                eprintln!("attempt {attempt}: {e}");
                failures.push(e);
            }
        }
    }
    panic!("no attempt agreed with perf within 3 points: {failures:#?}");
}

/// One recording by both samplers; `Err` names the first category more than 3 points off.
fn compare_with_perf_once() -> Result<(), String> {
    let cpus = online_cpu_list().unwrap();
    let cpu_list = cpus
        .iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(",");
    let dir = std::env::temp_dir().join(format!("wb-profile-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let data = dir.join("perf.data");
    let _load = loopback(false);
    let sampler =
        Sampler::open(&ProfileConfig::new(cpus.clone(), DEFAULT_FREQ_HZ).sampler_config()).unwrap();
    let agg = Aggregator::new(Symbols::load(), &cpus);
    let perf = std::process::Command::new("perf")
        .args([
            "record",
            "-q",
            "-k",
            "mono",
            "-e",
            "cpu-clock",
            "-a",
            "-C",
            &cpu_list,
        ])
        .args(["-F", PERF_HZ, "-g", "-o"])
        .arg(&data)
        .args(["--", "sleep", "2.5"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut perf = KillOnDrop(perf);
    let perf_pid = perf.0.id();
    // perf needs a moment to open its events; this window lies inside perf's.
    std::thread::sleep(Duration::from_millis(250));
    let running = sampler
        .start(WithoutPid {
            inner: agg,
            pid: perf_pid,
        })
        .unwrap();
    // The recording window (not a timing bound): 2 s of samples, inside perf's 2.5 s.
    std::thread::sleep(Duration::from_secs(2));
    let finished = running.stop().unwrap();
    let (start, stop) = (finished.recording.started_ns, finished.recording.stopped_ns);
    let drain_tid = finished.sink.inner.drain_tid();
    let mine = finished.sink.inner.into_report(&finished.recording, None);
    assert!(perf.0.wait().unwrap().success(), "perf record failed");
    let script = std::process::Command::new("perf")
        .args(["script", "--ns", "-F", "pid,tid,cpu,time,ip,sym,dso", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    let _ = std::fs::remove_dir_all(&dir);
    let text = String::from_utf8_lossy(&script.stdout);
    let all = parse_perf_script(&text);
    let theirs: Vec<PerfSample> = all
        .into_iter()
        .filter(|s| (start..=stop).contains(&s.time_ns) && s.pid != perf_pid)
        .collect();
    assert!(
        theirs.len() > 1000,
        "perf script gave {} samples in the window",
        theirs.len()
    );
    let a = report_shares(&mine);
    let b = perf_shares(&theirs, std::process::id(), drain_tid);
    eprintln!(
        "category          wirebench   perf   ({} vs {} samples)",
        mine.samples,
        theirs.len()
    );
    for c in ProfileCategory::ALL {
        let i = c.index();
        eprintln!("{:<18} {:>7.2}  {:>7.2}", c.key(), a[i], b[i]);
    }
    if std::env::var_os("WB_PROFILE_DEBUG").is_some() {
        print_symbol_comparison(&mine, &theirs);
    }
    for c in ProfileCategory::ALL {
        let i = c.index();
        if (a[i] - b[i]).abs() > 3.0 {
            // What this profile put there (other processes show as "[comm]").
            if let Some(cat) = mine.categories.iter().find(|x| x.category == c) {
                for t in &cat.top_symbols {
                    eprintln!(
                        "   {} {:>6.2} {}",
                        c.key(),
                        t.samples as f64 * 100.0 / mine.samples.max(1) as f64,
                        t.symbol
                    );
                }
            }
            return Err(format!("{}: {:.2} vs perf {:.2}", c.key(), a[i], b[i]));
        }
    }
    Ok(())
}

/// A sink that passes every sample but one process' to an [`Aggregator`]: the comparison
/// leaves `perf record` itself out of both sides. perf reads `/proc/kallsyms` and writes
/// its buffers while this profile records (3 points of `other` in CI), and it does not
/// sample its own start-up, so only this profile would count that work.
struct WithoutPid {
    inner: Aggregator,
    pid: u32,
}

impl SampleSink for WithoutPid {
    fn sample(&mut self, s: &Sample<'_>) {
        if s.pid != self.pid {
            self.inner.sample(s);
        }
    }

    fn on_drain_thread(&mut self, tid: u32) {
        self.inner.on_drain_thread(tid);
    }
}

/// Ends `perf record` when the comparison fails before waiting for it.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if self.0.try_wait().ok().flatten().is_none() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Diagnostics: per category, this profile's top symbols and perf's (% of samples).
fn print_symbol_comparison(mine: &ProfileReport, theirs: &[PerfSample]) {
    let own = std::process::id();
    let mut perf_syms: HashMap<(usize, String), u64> = HashMap::new();
    for s in theirs {
        let frames = s.frames.iter().map(|(kernel, sym)| {
            if *kernel {
                FrameSym::Kernel((sym != "[unknown]").then_some(sym.as_str()))
            } else {
                FrameSym::User {
                    wirebench: s.pid == own,
                }
            }
        });
        let cat = classify(frames).index();
        let name = s.frames.first().map_or("-".to_owned(), |f| f.1.clone());
        *perf_syms.entry((cat, name)).or_insert(0) += 1;
    }
    for c in &mine.categories {
        eprintln!("== {}", c.category.key());
        for t in &c.top_symbols {
            eprintln!(
                "   mine {:>6.2} {}",
                t.samples as f64 * 100.0 / mine.samples as f64,
                t.symbol
            );
        }
        let mut v: Vec<_> = perf_syms
            .iter()
            .filter(|((k, _), _)| *k == c.category.index())
            .collect();
        v.sort_by(|a, b| b.1.cmp(a.1));
        for ((_, name), n) in v.into_iter().take(10) {
            eprintln!(
                "   perf {:>6.2} {}",
                *n as f64 * 100.0 / theirs.len() as f64,
                name
            );
        }
    }
}

/// Per-thread category counts of this process' samples.
struct ByThread {
    agg: Aggregator,
    pid: u32,
    counts: HashMap<u32, [u64; NCAT]>,
    /// Own symbols of the copy samples, per thread (for the failure message).
    copy_symbols: HashMap<(u32, String), u64>,
}

impl SampleSink for ByThread {
    fn sample(&mut self, s: &Sample<'_>) {
        if s.pid != self.pid {
            return;
        }
        let (cat, name) = self.agg.classify_sample(s);
        self.counts.entry(s.tid).or_insert([0; NCAT])[cat.index()] += 1;
        if cat == ProfileCategory::Copy {
            *self.copy_symbols.entry((s.tid, name)).or_insert(0) += 1;
        }
    }
}

/// The receiving thread's copy share (% of its samples) under a loopback transfer, its
/// samples, its copy samples' own symbols, and its samples by category (largest first).
fn receiver_copy_share(discard: bool) -> (f64, u64, Vec<(String, u64)>, String) {
    let cpus = online_cpu_list().unwrap();
    let load = loopback(discard);
    let sampler =
        Sampler::open(&ProfileConfig::new(cpus.clone(), DEFAULT_FREQ_HZ).sampler_config()).unwrap();
    let sink = ByThread {
        agg: Aggregator::new(Symbols::load(), &cpus),
        pid: std::process::id(),
        counts: HashMap::new(),
        copy_symbols: HashMap::new(),
    };
    let running = sampler.start(sink).unwrap();
    // The recording window (not a timing bound): 2 s of samples of the transfer (1 s gave a
    // discarding receiver, mostly idle, 199 samples on a busy CI machine: too few to judge).
    std::thread::sleep(Duration::from_secs(2));
    let finished = running.stop().unwrap();
    let tid = load.receiver_tid.unwrap() as u32;
    drop(load);
    let counts = finished.sink.counts.get(&tid).copied().unwrap_or([0; NCAT]);
    let n: u64 = counts.iter().sum();
    let copy = counts[ProfileCategory::Copy.index()] as f64 * 100.0 / n.max(1) as f64;
    let mut symbols: Vec<(String, u64)> = finished
        .sink
        .copy_symbols
        .into_iter()
        .filter(|((t, _), _)| *t == tid)
        .map(|((_, name), n)| (name, n))
        .collect();
    symbols.sort_by_key(|s| std::cmp::Reverse(s.1));
    let mut by_category: Vec<(ProfileCategory, u64)> = ProfileCategory::ALL
        .iter()
        .map(|c| (*c, counts[c.index()]))
        .filter(|(_, k)| *k > 0)
        .collect();
    by_category.sort_by_key(|c| std::cmp::Reverse(c.1));
    let by_category = by_category
        .iter()
        .map(|(c, k)| format!("{} {:.1} %", c.key(), *k as f64 * 100.0 / n.max(1) as f64))
        .collect::<Vec<_>>()
        .join(", ");
    (copy, n, symbols, by_category)
}

/// (d) Discarding received data (`MSG_TRUNC`) takes the receiver's copy to near zero, where
/// reading into a buffer makes copy a clear share of the receiving thread's time. (This test
/// found `_copy_to_user`/`_copy_from_user` of system-call arguments counted as copy, 3 % of
/// the discarding thread's samples; the table now lets their callers decide.)
///
/// The copying share is not a constant: besides its reads, the receiving thread carries
/// whatever else the kernel runs in its context (interrupts, softirq network processing, the
/// scheduler), and a copy costs more or less per byte on another CPU kind. Idle or beside a
/// spinner on either CPU this machine gave 50–57 %; the CI machine (busy, its CPU kind not
/// recorded) once gave 14.3 %. The bound, 5 %, is what separates "copies every byte
/// it reads" from "copies nothing" (the discarding thread: 0.0 % in every run so far) with
/// room for both; the categories are printed so that a low share can be explained.
#[test]
fn discard_removes_the_receivers_copy() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let (copy_pct, copy_n, _, read_mix) = receiver_copy_share(false);
    let (discard_pct, discard_n, left, discard_mix) = receiver_copy_share(true);
    eprintln!(
        "receiver copy share: read {copy_pct:.1} % of {copy_n} samples, discard {discard_pct:.1} \
         % of {discard_n} ({:?})\n  reading thread: {read_mix}\n  discarding thread: \
         {discard_mix}",
        &left[..left.len().min(3)]
    );
    assert!(copy_n > 200 && discard_n > 200, "{copy_n} {discard_n}");
    assert!(
        copy_pct >= 5.0,
        "copying receiver: copy only {copy_pct:.1} % ({read_mix})"
    );
    assert!(
        discard_pct <= 2.0,
        "discarding receiver: copy {discard_pct:.1} %: {left:?} ({discard_mix})"
    );
}

/// Classifies every sample from its whole kernel call chain and from the chain cut to a few
/// depths, and counts where the two disagree.
struct Truncation {
    kernel: wirebench_profile::kallsyms::KernelSymbolTable,
    /// The depths compared (frames, the sample's own address included).
    depths: Vec<usize>,
    /// Per depth: samples classified differently than from the whole chain.
    differ: Vec<u64>,
    samples: u64,
    /// Samples whose chain reached the recording's bound (the "whole" chain was cut too).
    at_bound: u64,
    bound: usize,
}

impl SampleSink for Truncation {
    fn sample(&mut self, s: &Sample<'_>) {
        let frames: Vec<FrameSym<'_>> = s
            .frames()
            .map(|f| {
                if f.kernel {
                    FrameSym::Kernel(self.kernel.lookup(f.addr))
                } else {
                    FrameSym::User { wirebench: false }
                }
            })
            .collect();
        if frames.is_empty() || !s.kernel_mode {
            return; // user-mode samples are classified by their own address alone
        }
        self.samples += 1;
        self.at_bound += u64::from(frames.len() >= self.bound);
        let whole = classify(frames.iter().copied());
        for (i, &d) in self.depths.iter().enumerate() {
            if classify(frames.iter().copied().take(d)) != whole {
                self.differ[i] += 1;
            }
        }
    }
}

/// (e) The call-chain bound the sampler records by default
/// (`wirebench_profile::CALLCHAIN_FRAMES`) classifies kernel samples as the whole chain does:
/// under a loopback transfer, chains of up to 127 frames (the kernel's
/// `perf_event_max_stack`) cut to the default classify differently in under 0.5 % of the
/// kernel samples. Shorter cuts are printed, to show the margin.
#[test]
fn the_default_call_chain_bound_classifies_as_the_whole_chain() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let cpus = online_cpu_list().unwrap();
    let _load = loopback(false);
    let bound = 127;
    let sampler = Sampler::open(&SamplerConfig {
        max_stack: bound as u16,
        ..SamplerConfig::cpu_clock(cpus)
    })
    .unwrap();
    let default = usize::from(wirebench_profile::CALLCHAIN_FRAMES);
    let mut depths = vec![1, 2, 3, 4, 6, 8, 12, 16, 24, 33];
    depths.retain(|&d| d != default);
    depths.push(default);
    let sink = Truncation {
        kernel: wirebench_profile::kallsyms::KernelSymbolTable::load().0,
        differ: vec![0; depths.len()],
        depths,
        samples: 0,
        at_bound: 0,
        bound,
    };
    let running = sampler.start(sink).unwrap();
    // The recording window (not a timing bound): 1 s of samples of the transfer.
    std::thread::sleep(Duration::from_secs(1));
    let t = running.stop().unwrap().sink;
    let shares: Vec<String> = t
        .depths
        .iter()
        .zip(&t.differ)
        .map(|(d, n)| format!("{d}: {:.2} %", *n as f64 * 100.0 / t.samples.max(1) as f64))
        .collect();
    eprintln!(
        "kernel samples {} ({} at the {bound}-frame bound); classified differently when cut to \
         N frames: {}",
        t.samples,
        t.at_bound,
        shares.join(", ")
    );
    assert!(t.samples > 1000, "{}", t.samples);
    let differ = *t.differ.last().unwrap() as f64 * 100.0 / t.samples as f64;
    assert!(
        differ < 0.5,
        "cut to {default} frames, {differ:.2} % of kernel samples change category"
    );
}

/// The thread of this process named `name` (`/proc/self/task/*/comm`), waited for up to 2 s.
fn own_thread_named(name: &str) -> u32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(2);
    loop {
        for task in std::fs::read_dir("/proc/self/task").unwrap().flatten() {
            let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
            if comm.trim_end() == name {
                return task.file_name().to_string_lossy().parse().unwrap();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no thread named {name} appeared"
        );
        std::thread::yield_now();
    }
}

/// Counts the samples of one thread, independently of the aggregator, and forwards.
struct ThreadTap {
    agg: Aggregator,
    tid: Arc<std::sync::atomic::AtomicU32>,
    of_tid: u64,
}

impl SampleSink for ThreadTap {
    fn sample(&mut self, s: &Sample<'_>) {
        if s.tid == self.tid.load(Ordering::Relaxed) {
            self.of_tid += 1;
        }
        self.agg.sample(s);
    }

    fn on_drain_thread(&mut self, tid: u32) {
        self.agg.on_drain_thread(tid);
    }
}

/// (f) The profiler's own work is its own category: under a loopback transfer at 4 kHz, every
/// sample of the drain thread (found by its name in `/proc/self/task`, not by what the sampler
/// says) is `sampler`, and `sampler` holds nothing else (no other profiler runs in this
/// process); before this category existed they were `wirebench` and kernel categories.
#[test]
fn the_drain_threads_samples_are_the_sampler_category() {
    let _g = lock();
    if !perf_usable() {
        return;
    }
    let cpus = online_cpu_list().unwrap();
    let _load = loopback(false);
    let sampler =
        Sampler::open(&ProfileConfig::new(cpus.clone(), DEFAULT_FREQ_HZ).sampler_config()).unwrap();
    let tid = Arc::new(std::sync::atomic::AtomicU32::new(u32::MAX));
    let tap = ThreadTap {
        agg: Aggregator::new(Symbols::load(), &cpus),
        tid: Arc::clone(&tid),
        of_tid: 0,
    };
    let running = sampler.start(tap).unwrap();
    // The thread's first samples can land before the store below (the tap then misses
    // them); the comparison allows for that.
    let drain = wirebench_sys::perf::DRAIN_THREAD_NAME;
    tid.store(own_thread_named(drain), Ordering::Relaxed);
    // The recording window (not a timing bound): 1 s of samples of the transfer.
    std::thread::sleep(Duration::from_secs(1));
    let finished = running.stop().unwrap();
    let of_tid = finished.sink.of_tid;
    assert_eq!(
        finished.sink.agg.drain_tid(),
        Some(tid.load(Ordering::Relaxed)),
        "the sampler's drain thread is the thread named {drain}"
    );
    let r = finished.sink.agg.into_report(&finished.recording, None);
    let sampler_cat = r.category(ProfileCategory::Sampler).unwrap();
    let wb = r.category(ProfileCategory::Wirebench).unwrap();
    eprintln!(
        "drain thread: {of_tid} samples seen by tid; sampler category {} samples ({:.2} %) top \
         {:?}; wirebench {} samples top {:?}",
        sampler_cat.samples,
        sampler_cat.pct,
        sampler_cat.top_symbols.iter().take(3).collect::<Vec<_>>(),
        wb.samples,
        wb.top_symbols.iter().take(3).collect::<Vec<_>>()
    );
    assert!(of_tid > 0, "the drain thread was never sampled at 4 kHz");
    // The tap counts from the moment the thread was found (a few ms after it started), the
    // report from its first sample: the report may hold more, never fewer; at most every
    // sample of every CPU in 100 ms more (frequency × CPUs × 0.1 s).
    let slack = u64::from(DEFAULT_FREQ_HZ) * cpus.len() as u64 / 10;
    assert!(
        sampler_cat.samples >= of_tid && sampler_cat.samples <= of_tid + slack,
        "sampler category {} samples, drain thread {of_tid}",
        sampler_cat.samples
    );
    assert!(
        wb.top_symbols
            .iter()
            .all(|s| !s.symbol.contains("Aggregator") && !s.symbol.contains("ThreadTap")),
        "the aggregator's own code is still counted as wirebench: {:?}",
        wb.top_symbols
    );
}
