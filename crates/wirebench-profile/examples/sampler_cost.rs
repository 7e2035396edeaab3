//! What the sampler costs a loopback TCP transfer, per setting, by fast alternation.
//!
//! A sender thread pinned to CPU 0 writes 64 KiB buffers to a receiver thread pinned to CPU
//! 1 over 127.0.0.1 (this process' network namespace: run it in a namespace whose routes
//! carry `congctl cubic` for a fixed congestion control). Phases of `PHASE` alternate:
//! nothing sampled, then one setting's sampler on both CPUs (events enabled, ring drained
//! by its thread, every sample symbolized and classified as a profile does), then nothing,
//! then the next setting ... Each sampled phase is paired with the mean of the unsampled
//! phases just before and after it, so drifts of a shared machine slower than a second
//! cancel; the figure per setting is the median of its paired ratios of bytes received per
//! second; and the same for bytes per CPU-second of this process (every thread's scheduler
//! run time, the drain thread's included: on a shared machine the CPU cost per byte moves
//! much less than the rate, which other processes' load changes). Settings: `old` (64 frames, user call chains: the profile's settings before
//! `CALLCHAIN_FRAMES`), `user-off` (64 kernel frames), `k<N>` (N kernel frames, no user
//! chain; `k16` is a profile's setting now), and `k1-count` (one frame, samples only counted,
//! not symbolized: the floor of sampling at all).
//!
//! Needs perf events (root or CAP_PERFMON) and two CPUs.
//! Usage: cargo run --release -p wirebench-profile --example sampler_cost [PAIRS] [HZ]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use wirebench_profile::aggregate::{Aggregator, Symbols};
use wirebench_sys::perf::{Sample, SampleSink, Sampler, SamplerConfig};

/// Classifies each sample as a profile does, or only counts it.
struct CostSink {
    agg: Aggregator,
    classify: bool,
    n: u64,
}

impl SampleSink for CostSink {
    fn sample(&mut self, s: &Sample<'_>) {
        self.n += 1;
        if self.classify {
            self.agg.sample(s);
        }
    }
}

/// One phase.
const PHASE: Duration = Duration::from_millis(300);

fn main() {
    let mut args = std::env::args().skip(1);
    let pairs: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(15);
    let hz: u32 = args.next().and_then(|a| a.parse().ok()).unwrap_or(4000);
    // (name, frames, user chain, classify each sample)
    let settings: Vec<(&str, u16, bool, bool)> = vec![
        ("old", 64, true, true),
        ("user-off", 64, false, true),
        ("k16", 16, false, true),
        ("k8", 8, false, true),
        ("k1", 1, false, true),
        ("k1-count", 1, false, false),
    ];
    let received = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let threads = transfer(&received, &stop);
    std::thread::sleep(Duration::from_millis(500));
    let phase = |sampler: Option<(Sampler, bool)>| -> (f64, f64) {
        let running = sampler.map(|(s, classify)| {
            let agg = Aggregator::new(Symbols::load(), s.cpus());
            s.start(CostSink {
                agg,
                classify,
                n: 0,
            })
            .expect("start")
        });
        let (t0, b0, c0) = (Instant::now(), received.load(Ordering::Relaxed), cpu_ns());
        std::thread::sleep(PHASE);
        let (t1, b1, c1) = (Instant::now(), received.load(Ordering::Relaxed), cpu_ns());
        if let Some(r) = running {
            let f = r.stop().expect("stop");
            assert!(f.recording.stats.lost == 0, "lost samples");
        }
        let bytes = (b1 - b0) as f64;
        (
            bytes / (t1 - t0).as_secs_f64(),
            bytes / (c1.saturating_sub(c0)).max(1) as f64,
        )
    };
    let mut ratios: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    let mut cpu_ratios: Vec<Vec<f64>> = vec![Vec::new(); settings.len()];
    let mut before = phase(None);
    for _ in 0..pairs {
        for (i, &(_, frames, user, classify)) in settings.iter().enumerate() {
            let sampler = Sampler::open(&SamplerConfig {
                freq_hz: hz,
                max_stack: frames,
                user_callchain: user,
                ..SamplerConfig::cpu_clock(vec![0, 1])
            })
            .expect("perf events");
            let on = phase(Some((sampler, classify)));
            let after = phase(None);
            ratios[i].push(on.0 / ((before.0 + after.0) / 2.0));
            cpu_ratios[i].push(on.1 / ((before.1 + after.1) / 2.0));
            before = after;
        }
    }
    stop.store(true, Ordering::Relaxed);
    for t in threads {
        let _ = t.join();
    }
    println!(
        "{} pairs of {} ms phases, {hz} Hz per CPU on CPUs 0 and 1; loopback TCP, sender CPU 0, \
         receiver CPU 1",
        pairs,
        PHASE.as_millis()
    );
    for (((name, frames, user, classify), r), c) in settings.into_iter().zip(ratios).zip(cpu_ratios)
    {
        let (r, c) = (quartiles(r), quartiles(c));
        println!(
            "{name:<9} ({frames} frames, user chain {user}, classified {classify}): bytes/s \
             {:.3} [{:.3}..{:.3}], bytes per process CPU-s {:.3} [{:.3}..{:.3}]",
            r.1, r.0, r.2, c.1, c.0, c.2
        );
    }
}

/// The transfer: returns its threads; `received` counts the receiver's bytes.
fn transfer(received: &Arc<AtomicU64>, stop: &Arc<AtomicBool>) -> Vec<std::thread::JoinHandle<()>> {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    let (rx, s1) = (Arc::clone(received), Arc::clone(stop));
    let receiver = std::thread::spawn(move || {
        let _ = wirebench_sys::thread::pin_current_thread(1);
        let (mut c, _) = listener.accept().expect("accept");
        c.set_read_timeout(Some(Duration::from_millis(100))).ok();
        let mut buf = vec![0u8; 128 * 1024];
        while !s1.load(Ordering::Relaxed) {
            let n = c.read(&mut buf).unwrap_or(0);
            rx.fetch_add(n as u64, Ordering::Relaxed);
        }
    });
    let s2 = Arc::clone(stop);
    let sender = std::thread::spawn(move || {
        let _ = wirebench_sys::thread::pin_current_thread(0);
        let mut c = TcpStream::connect(addr).expect("connect");
        c.set_write_timeout(Some(Duration::from_millis(100))).ok();
        let buf = vec![7u8; 64 * 1024];
        while !s2.load(Ordering::Relaxed) {
            let _ = c.write(&buf);
        }
    });
    vec![receiver, sender]
}

/// (first quartile, median, third quartile).
fn quartiles(mut v: Vec<f64>) -> (f64, f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 4], v[v.len() / 2], v[v.len() * 3 / 4])
}

/// CPU time of every thread of this process so far (`/proc/self/task/*/schedstat`, the
/// scheduler's run time: hard and soft interrupts taken while a thread ran are charged to
/// it on this kernel, which has no IRQ time accounting), ns.
fn cpu_ns() -> u64 {
    let Ok(dir) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    dir.filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}
