//! The UDP side of the timeline: each flow's running totals, written by its data thread with
//! plain stores, and the sampler that turns them into interval samples.
//!
//! A receiving flow also publishes its sequence accounting: the extended highest sequence
//! number (`seq_end` = highest + 1), the sequence numbers below it still missing
//! (`missing`, see [`FlowRecvAccounting::missing`]) and the current jitter. An interval's
//! `lost` is the increase of `missing` over the interval, clamped at 0: one counter read
//! once per sample, so the intervals' losses add up to the flow's final `missing` whatever
//! the timing of the samples (as long as no late datagram is clamped away; see
//! [`UdpFlowInterval`]).

use super::*;
use crate::timeline::WindowEdge;

/// Running totals of one flow, written by its data thread, read by the sampling thread.
#[repr(align(64))]
#[derive(Default)]
pub(super) struct Counters {
    pub(super) datagrams: AtomicU64,
    pub(super) bytes: AtomicU64,
    /// Sender: refused and failed sends together.
    pub(super) send_errors: AtomicU64,
    pub(super) late: AtomicU64,
    pub(super) duplicate: AtomicU64,
    /// Receiver: highest sequence number seen + 1 (0 before the first datagram).
    pub(super) seq_end: AtomicU64,
    /// Receiver: sequence numbers below `seq_end` not received (yet).
    pub(super) missing: AtomicU64,
    /// Receiver: RFC 3550 jitter, ns, rounded.
    pub(super) jitter_ns: AtomicU64,
}

/// A reading of one flow's [`Counters`].
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Counts {
    pub(super) datagrams: u64,
    pub(super) bytes: u64,
    pub(super) send_errors: u64,
    late: u64,
    duplicate: u64,
    seq_end: u64,
    missing: u64,
    jitter_ns: u64,
}

impl Counters {
    pub(super) fn load(&self) -> Counts {
        Counts {
            datagrams: self.datagrams.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
            send_errors: self.send_errors.load(Ordering::Relaxed),
            late: self.late.load(Ordering::Relaxed),
            duplicate: self.duplicate.load(Ordering::Relaxed),
            seq_end: self.seq_end.load(Ordering::Relaxed),
            missing: self.missing.load(Ordering::Relaxed),
            jitter_ns: self.jitter_ns.load(Ordering::Relaxed),
        }
    }
}

/// What one flow did between two readings `prev` and `now`.
fn interval_of(flow: u32, role: Role, now: &Counts, prev: &Counts) -> UdpFlowInterval {
    let receiver = role == Role::Receiver;
    UdpFlowInterval {
        flow,
        role,
        datagrams: now.datagrams.saturating_sub(prev.datagrams),
        bytes: now.bytes.saturating_sub(prev.bytes),
        send_errors: now.send_errors.saturating_sub(prev.send_errors),
        late: now.late.saturating_sub(prev.late),
        duplicate: now.duplicate.saturating_sub(prev.duplicate),
        expected: if receiver {
            now.seq_end.saturating_sub(prev.seq_end)
        } else {
            0
        },
        // Late datagrams lower `missing`: an interval where they outnumber new gaps
        // reports 0, as RFC 3550 clamps the fraction lost.
        lost: if receiver {
            now.missing.saturating_sub(prev.missing)
        } else {
            0
        },
        jitter_ns: (receiver && now.datagrams > 0).then_some(now.jitter_ns),
    }
}

/// The UDP side of the timeline: datagram and byte counts per interval.
pub(super) struct UdpSampler<'a> {
    pub(super) shared: &'a Shared,
    /// Which flow and role each counter block belongs to.
    pub(super) meta: &'a [(u32, Role)],
    /// Counters at the previous interval boundary.
    pub(super) prev: Vec<Counts>,
    pub(super) warmup_ns: u64,
    pub(super) sink: &'a mut dyn Sink<UdpInterval>,
}

impl Engine for UdpSampler<'_> {
    type Sample = UdpInterval;

    fn moved_bytes(&self) -> u64 {
        self.shared
            .counters
            .iter()
            .map(|c| c.bytes.load(Ordering::Relaxed))
            .fold(0u64, u64::saturating_add)
    }

    fn sink_window(&mut self, edge: WindowEdge) {
        match edge {
            WindowEdge::Opened => self.sink.window_opened(),
            WindowEdge::Closed => self.sink.window_closed(),
        }
    }

    fn sample(&mut self, index: u32, start_ns: u64, end_ns: u64) -> UdpInterval {
        let mut flows = Vec::with_capacity(self.meta.len());
        for ((&(flow, role), c), p) in self
            .meta
            .iter()
            .zip(&self.shared.counters)
            .zip(self.prev.iter_mut())
        {
            let now = c.load();
            flows.push(interval_of(flow, role, &now, p));
            *p = now;
        }
        let s = UdpInterval {
            index,
            span: Span { start_ns, end_ns },
            in_warmup: start_ns < self.warmup_ns,
            flows,
        };
        self.sink.interval(&s);
        s
    }

    fn stop(&mut self, _stop_ns: u64) {
        self.shared.stop.store(true, Ordering::Relaxed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn interval_loss_is_the_increase_of_missing_clamped() {
        let at = |datagrams, late, seq_end, missing| Counts {
            datagrams,
            late,
            seq_end,
            missing,
            jitter_ns: 7,
            ..Counts::default()
        };
        let rx = |now: &Counts, prev: &Counts| interval_of(3, Role::Receiver, now, prev);
        // Nothing yet: no jitter.
        let none = rx(&Counts::default(), &Counts::default());
        assert_eq!((none.expected, none.lost, none.jitter_ns), (0, 0, None));
        // 0..=9 covered, 8 arrived: 2 lost.
        let a = at(8, 0, 10, 2);
        let i = rx(&a, &Counts::default());
        assert_eq!(
            (i.datagrams, i.expected, i.lost, i.jitter_ns),
            (8, 10, 2, Some(7))
        );
        // 10..=14 covered, 5 arrived of which 1 late (a gap of the first interval filled)
        // and one of the new ones missing: net 0 more missing.
        let b = at(13, 1, 15, 2);
        let i = rx(&b, &a);
        assert_eq!((i.expected, i.datagrams, i.late, i.lost), (5, 5, 1, 0));
        // Only the other late one: missing falls; the interval reports 0, not −1.
        let c = at(14, 2, 15, 1);
        assert_eq!(rx(&c, &b).lost, 0);
        // A sender's interval carries no receiver figures.
        let tx = interval_of(3, Role::Sender, &a, &Counts::default());
        assert_eq!(
            (tx.datagrams, tx.expected, tx.lost, tx.jitter_ns),
            (8, 0, 0, None)
        );
    }
}
