//! The forwarder of one direction: reads frames from the ingress packet socket, decides
//! their fate, holds them until their release time and writes them out of the egress one.

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime};

use wirebench_sys::packet::PacketSocket;

use super::impair::{bump, AtomicCounters, Direction, EmuConfig, Fate, Impairer};
use crate::LabError;

/// Longest wait of a forwarder between looks at its stop flag and its config.
const MAX_WAIT: Duration = Duration::from_millis(5);
/// Frames read per loop iteration at most, before releasing due frames.
const BATCH: usize = 64;
/// Receive buffer for one frame; longer frames count as `oversize`.
const FRAME_BUF: usize = 65536 + 256;
/// Socket buffers of the packet sockets.
pub(super) const SOCK_BUF: usize = 8 << 20;
/// How often the kernel's drop counter of the ingress socket is folded in.
const STATS_EVERY: Duration = Duration::from_millis(50);
/// Arrival timestamps older than this are not trusted (the receive instant is used).
const MAX_TIMESTAMP_AGE: Duration = Duration::from_secs(1);

/// State shared between an [`EmulatedPath`] and one forwarder thread.
#[derive(Debug)]
pub(super) struct Shared {
    pub(super) stop: AtomicBool,
    pub(super) config: Mutex<EmuConfig>,
    pub(super) generation: AtomicU64,
    pub(super) counters: AtomicCounters,
    pub(super) failure: Mutex<Option<String>>,
}

pub(super) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A poisoned lock only means a panic elsewhere; the data (a config) is still whole.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// A frame waiting for its release time; ordered so that `BinaryHeap` pops the earliest
/// release first, and among equal release times the earliest arrival.
#[derive(Debug)]
pub(super) struct Held {
    pub(super) release: Instant,
    pub(super) seq: u64,
    pub(super) copies: u8,
    pub(super) frame: Vec<u8>,
}

impl PartialEq for Held {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == CmpOrdering::Equal
    }
}
impl Eq for Held {}
impl PartialOrd for Held {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Held {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        // Reversed: the max-heap yields the smallest (release, seq).
        (other.release, other.seq).cmp(&(self.release, self.seq))
    }
}

/// When a frame arrived, as an `Instant`: from its kernel timestamp if it is plausible,
/// else the time it was read.
pub(super) fn arrival_instant(timestamp: Option<SystemTime>, read_at: Instant) -> Instant {
    timestamp
        .and_then(|ts| SystemTime::now().duration_since(ts).ok())
        .filter(|age| *age <= MAX_TIMESTAMP_AGE)
        .and_then(|age| read_at.checked_sub(age))
        .unwrap_or(read_at)
}

pub(super) fn forward_loop(
    rx: &PacketSocket,
    tx: &PacketSocket,
    shared: &Shared,
) -> io::Result<()> {
    let c = &shared.counters;
    let mut generation = shared.generation.load(Ordering::Acquire);
    let mut imp = Impairer::new(lock(&shared.config).clone());
    let mut heap: BinaryHeap<Held> = BinaryHeap::new();
    let mut buf = vec![0u8; FRAME_BUF];
    let mut seq: u64 = 0;
    let mut last_stats = Instant::now();
    while !shared.stop.load(Ordering::Acquire) {
        let g = shared.generation.load(Ordering::Acquire);
        if g != generation {
            generation = g;
            imp.set_config(lock(&shared.config).clone());
        }
        for _ in 0..BATCH {
            let Some(meta) = rx.recv(&mut buf)? else {
                break;
            };
            if meta.outgoing() {
                continue;
            }
            let arrival = arrival_instant(meta.timestamp, Instant::now());
            bump(&c.received, 1);
            bump(&c.received_bytes, meta.len as u64);
            let fate = imp.decide(arrival);
            if meta.truncated {
                bump(&c.oversize, 1);
                continue;
            }
            match fate {
                Fate::Lost => bump(&c.dropped, 1),
                Fate::Deliver {
                    release,
                    copies,
                    held_back,
                } => {
                    if heap.len() >= imp.config().queue_limit {
                        bump(&c.overflow, 1);
                        continue;
                    }
                    if copies > 1 {
                        bump(&c.duplicated, 1);
                    }
                    if held_back {
                        bump(&c.reordered, 1);
                    }
                    heap.push(Held {
                        release,
                        seq,
                        copies,
                        frame: buf[..meta.len].to_vec(),
                    });
                    seq += 1;
                    c.queued.store(heap.len() as u64, Ordering::Relaxed);
                }
            }
        }
        let now = Instant::now();
        while heap.peek().is_some_and(|h| h.release <= now) {
            let Some(h) = heap.pop() else { break };
            for _ in 0..h.copies {
                match tx.send(&h.frame) {
                    Ok(_) => {
                        bump(&c.forwarded, 1);
                        bump(&c.forwarded_bytes, h.frame.len() as u64);
                    }
                    Err(_) => bump(&c.send_errors, 1),
                }
            }
        }
        c.queued.store(heap.len() as u64, Ordering::Relaxed);
        if now.duration_since(last_stats) >= STATS_EVERY {
            bump(&c.kernel_drops, u64::from(rx.statistics()?.drops));
            last_stats = now;
        }
        let wait = heap
            .peek()
            .map_or(MAX_WAIT, |h| {
                h.release.saturating_duration_since(Instant::now())
            })
            .min(MAX_WAIT);
        if !wait.is_zero() {
            rx.wait_readable(wait)?;
        }
    }
    bump(&c.kernel_drops, u64::from(rx.statistics()?.drops));
    Ok(())
}

/// One direction's thread; stopped and joined on drop.
#[derive(Debug)]
pub(super) struct Forwarder {
    pub(super) shared: Arc<Shared>,
    pub(super) thread: Option<JoinHandle<()>>,
}

impl Forwarder {
    pub(super) fn spawn(
        direction: Direction,
        rx: PacketSocket,
        tx: PacketSocket,
        cfg: EmuConfig,
    ) -> Result<Forwarder, LabError> {
        let shared = Arc::new(Shared {
            stop: AtomicBool::new(false),
            config: Mutex::new(cfg),
            generation: AtomicU64::new(0),
            counters: AtomicCounters::default(),
            failure: Mutex::new(None),
        });
        let sh = Arc::clone(&shared);
        let name = match direction {
            Direction::AToB => "wb-emu-a2b",
            Direction::BToA => "wb-emu-b2a",
        };
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Err(e) = forward_loop(&rx, &tx, &sh) {
                    *lock(&sh.failure) = Some(e.to_string());
                }
            })
            .map_err(|source| LabError::Io {
                what: format!("spawning forwarder {direction}"),
                source,
            })?;
        Ok(Forwarder {
            shared,
            thread: Some(thread),
        })
    }

    pub(super) fn stop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        if let Some(t) = self.thread.take() {
            // The loop checks the flag at least every MAX_WAIT; a panic is already
            // reported on stderr.
            let _ = t.join();
        }
    }
}

impl Drop for Forwarder {
    fn drop(&mut self) {
        self.stop();
    }
}
