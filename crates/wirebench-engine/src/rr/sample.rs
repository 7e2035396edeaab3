//! The request/response side of the timeline: transactions, losses and (clients) round-trip
//! percentiles per interval.
//!
//! # Interval round trips
//!
//! With intervals, a client flow records each round trip twice: in its window histogram
//! (its own, read once at the end) and in an interval histogram behind a mutex that only
//! the sampler also takes, once per interval per flow ([`LatencyHistogram::coarse`]: 2
//! significant digits, about 32 KB per flow, so memory stays bounded whatever the run's
//! length). The flow records the round trip and publishes its transaction count under that
//! lock, and the sampler reads the count and swaps the histogram out under it, so an
//! interval's percentiles cover exactly the transactions it counts. The sampler merges the
//! flows' interval histograms for the all-flows percentiles (percentiles cannot be averaged)
//! and empties them; it works on a spare histogram outside the lock, so a flow waits at most
//! for a swap.

use std::sync::{MutexGuard, PoisonError};

use super::*;
use crate::timeline::WindowEdge;

/// Lock a flow's interval histogram (a poisoned lock still holds a usable histogram).
pub(super) fn lock(m: &Mutex<LatencyHistogram>) -> MutexGuard<'_, LatencyHistogram> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The median and 99th percentile of `h`, ns (`None` when empty).
fn p50_p99(h: &LatencyHistogram) -> (Option<u64>, Option<u64>) {
    (h.value_at_quantile(0.5), h.value_at_quantile(0.99))
}

/// The interval histograms' working set on the sampling thread.
pub(super) struct RttScratch {
    /// Swapped with a flow's interval histogram at each sample, then emptied.
    spare: LatencyHistogram,
    /// Every flow's interval round trips of the current sample.
    merged: LatencyHistogram,
}

impl RttScratch {
    pub(super) fn new() -> Self {
        RttScratch {
            spare: LatencyHistogram::coarse(),
            merged: LatencyHistogram::coarse(),
        }
    }
}

/// The request/response side of the timeline: transaction and loss counts per interval,
/// and the phase the flows count their events in.
pub(super) struct RrSampler<'a> {
    pub(super) shared: &'a Shared,
    /// Flow id per flow index.
    pub(super) ids: &'a [u32],
    /// (transactions, lost) at the previous interval boundary.
    pub(super) prev: Vec<(u64, u64)>,
    pub(super) warmup_ns: u64,
    /// Payload bytes one transaction moves at this end (request + response).
    pub(super) bytes_per_transaction: u64,
    /// Present when the flows keep interval histograms (a client with intervals).
    pub(super) rtt: Option<RttScratch>,
    pub(super) sink: &'a mut dyn Sink<RrInterval>,
}

impl RrSampler<'_> {
    /// Flow `i`'s (transactions, lost) totals now and, with interval histograms, the
    /// percentiles of its round trips since the previous sample (merged into the scratch).
    fn read_flow(&mut self, i: usize) -> ((u64, u64), (Option<u64>, Option<u64>)) {
        let c = &self.shared.counters[i];
        let load = || {
            (
                c.transactions.load(Ordering::Relaxed),
                c.lost.load(Ordering::Relaxed),
            )
        };
        let (Some(m), Some(rtt)) = (self.shared.interval_rtt.get(i), self.rtt.as_mut()) else {
            return (load(), (None, None));
        };
        let now = {
            let mut h = lock(m);
            std::mem::swap(&mut *h, &mut rtt.spare);
            load()
        };
        let p = p50_p99(&rtt.spare);
        rtt.merged.merge(&rtt.spare);
        rtt.spare.reset();
        (now, p)
    }
}

impl Engine for RrSampler<'_> {
    type Sample = RrInterval;

    fn moved_bytes(&self) -> u64 {
        self.shared
            .counters
            .iter()
            .map(|c| c.transactions.load(Ordering::Relaxed))
            .fold(0u64, u64::saturating_add)
            .saturating_mul(self.bytes_per_transaction)
    }

    fn open_window(&mut self, _now_ns: u64) {
        self.shared.phase.store(PHASE_WINDOW, Ordering::Relaxed);
    }

    fn sink_window(&mut self, edge: WindowEdge) {
        match edge {
            WindowEdge::Opened => self.sink.window_opened(),
            WindowEdge::Closed => self.sink.window_closed(),
        }
    }

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> RrInterval {
        let mut out = Vec::with_capacity(self.ids.len());
        for i in 0..self.ids.len() {
            let (now, (rtt_p50_ns, rtt_p99_ns)) = self.read_flow(i);
            out.push(RrFlowInterval {
                flow: self.ids[i],
                transactions: now.0.saturating_sub(self.prev[i].0),
                lost: now.1.saturating_sub(self.prev[i].1),
                rtt_p50_ns,
                rtt_p99_ns,
            });
            self.prev[i] = now;
        }
        let (rtt_p50_ns, rtt_p99_ns) = match self.rtt.as_mut() {
            Some(rtt) => {
                let p = p50_p99(&rtt.merged);
                rtt.merged.reset();
                p
            }
            None => (None, None),
        };
        let s = RrInterval {
            index,
            span: Span { start_ns, end_ns },
            in_warmup: start_ns < self.warmup_ns,
            flows: out,
            rtt_p50_ns,
            rtt_p99_ns,
        };
        self.sink.interval(&s);
        s
    }

    /// The window closes before the CPU snapshot, the clients stop after it.
    fn close_window(&mut self, _stop_ns: u64) {
        self.shared.phase.store(PHASE_AFTER, Ordering::Relaxed);
    }

    fn stop(&mut self, stop_ns: u64) {
        self.shared.stop_at_ns.store(stop_ns, Ordering::Relaxed);
        self.shared.stop.store(true, Ordering::Release);
    }
}
