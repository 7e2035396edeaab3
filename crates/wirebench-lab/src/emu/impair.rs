//! One direction's impairments: the configuration, the deterministic fate of each frame
//! ([`Impairer`]) and the counters.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::LabError;

/// The impairments of one direction. `Default` is a transparent link.
#[derive(Debug, Clone, PartialEq)]
pub struct EmuConfig {
    /// Time every frame is held before it is sent on.
    pub delay: Duration,
    /// Uniform variation of the delay, `delay ± jitter` (clamped at zero). Never reorders.
    pub jitter: Duration,
    /// Probability in `[0, 1]` that a frame is dropped.
    pub loss: f64,
    /// Probability in `[0, 1]` that a (not dropped) frame is sent twice.
    pub dup: f64,
    /// Probability in `[0, 1]` that a (not dropped) frame is held back by
    /// [`reorder_gap`](Self::reorder_gap) on top of its normal release time, so that
    /// frames arriving within that gap after it overtake it.
    pub reorder: f64,
    /// Extra hold of a frame selected by [`reorder`](Self::reorder).
    pub reorder_gap: Duration,
    /// Most frames held at once; further frames are discarded and counted as `overflow`.
    pub queue_limit: usize,
    /// Seed of the random draws (see the module docs for reproducibility).
    pub seed: u64,
}

impl Default for EmuConfig {
    fn default() -> Self {
        EmuConfig {
            delay: Duration::ZERO,
            jitter: Duration::ZERO,
            loss: 0.0,
            dup: 0.0,
            reorder: 0.0,
            reorder_gap: Duration::from_millis(10),
            queue_limit: 10_000,
            seed: 0x5eed,
        }
    }
}

impl EmuConfig {
    /// A transparent link (same as `Default`).
    pub fn passthrough() -> Self {
        Self::default()
    }

    /// This config with `delay` set.
    pub fn with_delay(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    /// This config with `loss` set.
    pub fn with_loss(mut self, loss: f64) -> Self {
        self.loss = loss;
        self
    }

    /// This config with `dup` set.
    pub fn with_dup(mut self, dup: f64) -> Self {
        self.dup = dup;
        self
    }

    /// This config with `reorder` and `reorder_gap` set.
    pub fn with_reorder(mut self, reorder: f64, gap: Duration) -> Self {
        self.reorder = reorder;
        self.reorder_gap = gap;
        self
    }

    /// This config with `seed` set.
    pub fn with_seed(mut self, seed: u64) -> Self {
        self.seed = seed;
        self
    }

    /// Checks ranges: probabilities finite and in `[0, 1]`, durations at most an hour,
    /// `queue_limit` at least 1.
    pub fn validate(&self) -> Result<(), LabError> {
        for (name, p) in [
            ("loss", self.loss),
            ("dup", self.dup),
            ("reorder", self.reorder),
        ] {
            if !(0.0..=1.0).contains(&p) {
                return Err(LabError::InvalidConfig(format!(
                    "{name} = {p} is not a probability in [0, 1]"
                )));
            }
        }
        let hour = Duration::from_secs(3600);
        for (name, d) in [
            ("delay", self.delay),
            ("jitter", self.jitter),
            ("reorder_gap", self.reorder_gap),
        ] {
            if d > hour {
                return Err(LabError::InvalidConfig(format!(
                    "{name} = {d:?} is longer than an hour"
                )));
            }
        }
        if self.queue_limit == 0 {
            return Err(LabError::InvalidConfig(
                "queue_limit must be at least 1".into(),
            ));
        }
        Ok(())
    }
}

/// The fate [`Impairer::decide`] assigns to one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    /// Dropped by the loss draw.
    Lost,
    /// To be sent at `release`.
    Deliver {
        /// When to send it.
        release: Instant,
        /// 1, or 2 for a duplicated frame.
        copies: u8,
        /// Held back by `reorder_gap` (counted as reordered).
        held_back: bool,
    },
}

/// The random decisions of one direction, without any I/O (steps 2 and 4-6 of the module
/// docs). Public so that the semantics can be checked and reused in isolation.
#[derive(Debug)]
pub struct Impairer {
    cfg: EmuConfig,
    rng: StdRng,
    last_release: Option<Instant>,
}

impl Impairer {
    /// An impairer with `cfg`, its random stream seeded from `cfg.seed`.
    pub fn new(cfg: EmuConfig) -> Self {
        Impairer {
            rng: StdRng::seed_from_u64(cfg.seed),
            cfg,
            last_release: None,
        }
    }

    /// The configuration in force.
    pub fn config(&self) -> &EmuConfig {
        &self.cfg
    }

    /// Replaces the configuration. The random stream restarts from the new seed only if
    /// the seed changed; otherwise it continues.
    pub fn set_config(&mut self, cfg: EmuConfig) {
        if cfg.seed != self.cfg.seed {
            self.rng = StdRng::seed_from_u64(cfg.seed);
        }
        self.cfg = cfg;
    }

    /// Decides the fate of the next frame, which arrived at `arrival`. Always consumes
    /// exactly four random numbers.
    pub fn decide(&mut self, arrival: Instant) -> Fate {
        let u_loss: f64 = self.rng.random();
        let u_dup: f64 = self.rng.random();
        let u_reorder: f64 = self.rng.random();
        let u_jitter: f64 = self.rng.random();
        let cfg = &self.cfg;
        if u_loss < cfg.loss {
            return Fate::Lost;
        }
        let base = arrival + cfg.delay;
        let mut release = if cfg.jitter.is_zero() {
            base
        } else {
            let offset = (2.0 * u_jitter - 1.0) * cfg.jitter.as_secs_f64();
            if offset >= 0.0 {
                base + Duration::from_secs_f64(offset)
            } else {
                base.checked_sub(Duration::from_secs_f64(-offset))
                    .map_or(arrival, |t| t.max(arrival))
            }
        };
        if let Some(last) = self.last_release {
            release = release.max(last);
        }
        let held_back = u_reorder < cfg.reorder;
        if held_back {
            release += cfg.reorder_gap;
        } else {
            self.last_release = Some(release);
        }
        Fate::Deliver {
            release,
            copies: if u_dup < cfg.dup { 2 } else { 1 },
            held_back,
        }
    }
}

/// One direction of the path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Frames from A to B (read on `wbma`, written to `wbmb`).
    AToB,
    /// Frames from B to A.
    BToA,
}

impl Direction {
    pub(super) fn index(self) -> usize {
        match self {
            Direction::AToB => 0,
            Direction::BToA => 1,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Direction::AToB => "a->b",
            Direction::BToA => "b->a",
        })
    }
}

/// Counters of one direction (see the module docs for the exact definitions). Each field is
/// exact; a snapshot taken while frames flow is not atomic across fields.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EmuCounters {
    /// Frames read from the ingress interface (outgoing frames excluded).
    pub received: u64,
    /// Their bytes (link-layer header included, as on the wire without FCS).
    pub received_bytes: u64,
    /// Successful writes to the egress interface (a duplicated frame counts twice).
    pub forwarded: u64,
    /// Bytes of those writes.
    pub forwarded_bytes: u64,
    /// Frames dropped by the loss draw.
    pub dropped: u64,
    /// Frames selected for duplication (each adds one extra write).
    pub duplicated: u64,
    /// Frames held back by `reorder_gap`.
    pub reordered: u64,
    /// Frames discarded because the queue was full (`queue_limit`).
    pub overflow: u64,
    /// Frames discarded because they did not fit the receive buffer.
    pub oversize: u64,
    /// Failed writes (e.g. `ENOBUFS` when the far end's backlog is full).
    pub send_errors: u64,
    /// Frames the kernel dropped on the ingress socket before the forwarder read them
    /// (folded in every 50 ms and when the forwarder stops).
    pub kernel_drops: u64,
    /// Frames waiting in the queue now.
    pub queued: u64,
}

impl EmuCounters {
    /// True if the conservation law of the module docs holds (meaningful when
    /// `queued == 0`).
    pub fn balanced(&self) -> bool {
        self.forwarded + self.send_errors + self.oversize + self.dropped + self.overflow
            == self.received + self.duplicated
    }
}

/// Counters of both directions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PathCounters {
    /// Direction A → B.
    pub a_to_b: EmuCounters,
    /// Direction B → A.
    pub b_to_a: EmuCounters,
}

#[derive(Debug, Default)]
pub(super) struct AtomicCounters {
    pub(super) received: AtomicU64,
    pub(super) received_bytes: AtomicU64,
    pub(super) forwarded: AtomicU64,
    pub(super) forwarded_bytes: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) duplicated: AtomicU64,
    pub(super) reordered: AtomicU64,
    pub(super) overflow: AtomicU64,
    pub(super) oversize: AtomicU64,
    pub(super) send_errors: AtomicU64,
    pub(super) kernel_drops: AtomicU64,
    pub(super) queued: AtomicU64,
}

pub(super) fn bump(c: &AtomicU64, n: u64) {
    c.fetch_add(n, Ordering::Relaxed);
}

impl AtomicCounters {
    pub(super) fn snapshot(&self) -> EmuCounters {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        EmuCounters {
            received: g(&self.received),
            received_bytes: g(&self.received_bytes),
            forwarded: g(&self.forwarded),
            forwarded_bytes: g(&self.forwarded_bytes),
            dropped: g(&self.dropped),
            duplicated: g(&self.duplicated),
            reordered: g(&self.reordered),
            overflow: g(&self.overflow),
            oversize: g(&self.oversize),
            send_errors: g(&self.send_errors),
            kernel_drops: g(&self.kernel_drops),
            queued: g(&self.queued),
        }
    }
}
