//! `serve --metrics ADDR`: an OpenMetrics (Prometheus) text endpoint on the daemon.
//!
//! - The last result per peer, workload and direction, as gauges: receiver throughput,
//!   transactions/s, round-trip p50/p99, UDP loss, retransmits, CPU busy at each end, and
//!   when it ended. Fed by the daemon's records ([`RecordTap`]) on a thread of its own
//!   ("wb-metrics"), each read as `history import` reads a record.
//! - The daemon's health: tests recorded by status, refusals by reason, running tests, open
//!   connections, and this process' open descriptors and resident memory.
//!
//! Label cardinality is bounded: at most [`MAX_SERIES`] (peer, workload, direction) series
//! are kept, the one updated longest ago evicted first (and counted). The peer label is the
//! authenticated identity, or the client's address without its port.
//!
//! The exposition is prometheus-client's encoder; the HTTP side ([`http`]) answers `GET
//! /metrics` only, one connection at a time, each bounded in bytes and time.

mod http;
mod registry;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use anyhow::{Context, Result};
use wirebench_net::daemon::{CountersFn, RecordTap};

use registry::Series;
pub use registry::MAX_SERIES;

/// Record bytes waiting for the metrics thread at most.
const QUEUE_BYTES: usize = 16 << 20;

/// How long the threads wait before they look at the stop flag.
const POLL: Duration = Duration::from_millis(200);

/// The last results and the health source, shared by the record thread and the HTTP side.
pub(crate) struct Shared {
    pub(crate) series: Mutex<registry::Table>,
    pub(crate) health: Mutex<Option<CountersFn>>,
}

/// The endpoint's threads.
pub struct Metrics {
    tap: RecordTap,
    shared: Arc<Shared>,
    done: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
    addr: SocketAddr,
}

impl Metrics {
    /// Bind `addr` and start the record and HTTP threads. An address that cannot be bound
    /// stops the daemon's start, naming it.
    pub fn start(addr: SocketAddr) -> Result<Metrics> {
        let listener = std::net::TcpListener::bind(addr)
            .with_context(|| format!("binding the metrics endpoint {addr}"))?;
        let addr = listener.local_addr()?;
        listener.set_nonblocking(true)?;
        let tap = RecordTap::new("the metrics endpoint", QUEUE_BYTES);
        let shared = Arc::new(Shared {
            series: Mutex::new(registry::Table::default()),
            health: Mutex::new(None),
        });
        let done = Arc::new(AtomicBool::new(false));
        let (t, s, d) = (tap.clone(), Arc::clone(&shared), Arc::clone(&done));
        let records = std::thread::Builder::new()
            .name("wb-metrics".into())
            .spawn(move || record_loop(&t, &s, &d))
            .context("starting the metrics thread")?;
        let (s, d) = (Arc::clone(&shared), Arc::clone(&done));
        let server = std::thread::Builder::new()
            .name("wb-metrics-http".into())
            .spawn(move || http::serve(listener, &s, &d))
            .context("starting the metrics endpoint")?;
        Ok(Metrics {
            tap,
            shared,
            done,
            threads: vec![records, server],
            addr,
        })
    }

    /// The queue the daemon hands its records to.
    pub fn tap(&self) -> RecordTap {
        self.tap.clone()
    }

    /// Where the endpoint listens.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where scrapes read the daemon's counters from (set once the daemon runs).
    pub fn set_health(&self, f: CountersFn) {
        if let Ok(mut h) = self.shared.health.lock() {
            *h = Some(f);
        }
    }

    /// Stop both threads.
    pub fn finish(mut self) {
        self.done.store(true, Ordering::Release);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

fn record_loop(tap: &RecordTap, shared: &Shared, done: &AtomicBool) {
    while !done.load(Ordering::Acquire) {
        let Some(line) = tap.take(POLL) else {
            continue;
        };
        let text = String::from_utf8_lossy(&line);
        match Series::of_record(&text) {
            Ok(s) => {
                if let Ok(mut t) = shared.series.lock() {
                    t.update(s);
                }
            }
            Err(e) => tracing::debug!(
                "a record is not shown in the metrics: {}",
                wirebench_model::text::escape(&e)
            ),
        }
    }
}

/// This process' open descriptors and resident bytes, from /proc/self.
pub(crate) fn process_figures() -> (Option<u64>, Option<u64>) {
    let fds = std::fs::read_dir("/proc/self/fd")
        .ok()
        .map(|d| d.count() as u64);
    let rss = std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let kb = s.lines().find_map(|l| l.strip_prefix("VmRSS:"))?;
            kb.trim().trim_end_matches("kB").trim().parse::<u64>().ok()
        });
    (fds, rss.map(|kb| kb * 1024))
}

/// Counts per status of the records seen.
pub(crate) type StatusCounts = HashMap<&'static str, u64>;
