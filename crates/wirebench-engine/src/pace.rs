//! The one pacing schedule every engine uses: unit `k` (a byte of a paced stream, a datagram
//! of a paced UDP flow, a request of an open-loop RR flow) is due at
//! `base + (k − base_unit) × num / den` ns, computed exactly in integers so that no rounding
//! accumulates over a long run.
//!
//! A sender that falls behind may catch up by sending overdue units back to back, but only
//! up to an allowance: further behind, [`Schedule::limit_lag`] moves the schedule forward
//! (dropping the slots beyond the allowance) and counts a reset, so a late sender never
//! bursts more than the allowance. [`wait_until`] sleeps until a due time and spins the last
//! stretch (a sleep alone overshoots by tens of µs, more than the gap between datagrams at
//! high rates).

use std::thread;
use std::time::{Duration, Instant};

/// A fixed-rate schedule of units.
#[derive(Debug, Clone)]
pub(crate) struct Schedule {
    base: Instant,
    base_unit: u64,
    /// ns per unit = num / den.
    num: u128,
    den: u128,
    resets: u64,
}

impl Schedule {
    /// `units` units every `per_ns` nanoseconds, starting at `base` (unit 0 due at `base`).
    /// A zero rate is taken as the slowest representable one.
    pub(crate) fn new(base: Instant, units: u128, per_ns: u128) -> Schedule {
        Schedule {
            base,
            base_unit: 0,
            num: per_ns.max(1),
            den: units.max(1),
            resets: 0,
        }
    }

    /// `bits_per_s` bits per second of units of `bits_per_unit` bits.
    pub(crate) fn bits(base: Instant, bits_per_s: u64, bits_per_unit: u64) -> Schedule {
        Schedule::new(
            base,
            u128::from(bits_per_s),
            u128::from(bits_per_unit) * 1_000_000_000,
        )
    }

    /// `per_s` units per second.
    pub(crate) fn per_second(base: Instant, per_s: u64) -> Schedule {
        Schedule::new(base, u128::from(per_s), 1_000_000_000)
    }

    /// The interval between two units, ns (rounded down, at least 1).
    pub(crate) fn gap_ns(&self) -> u64 {
        u64::try_from(self.num / self.den)
            .unwrap_or(u64::MAX)
            .max(1)
    }

    /// When unit `k` is due; `None` if that lies beyond the representable future.
    pub(crate) fn due(&self, k: u64) -> Option<Instant> {
        let off = u128::from(k.saturating_sub(self.base_unit)).checked_mul(self.num)? / self.den;
        self.base
            .checked_add(Duration::from_nanos(u64::try_from(off).ok()?))
    }

    /// Units due strictly before `t` (from unit 0).
    pub(crate) fn units_before(&self, t: Instant) -> u64 {
        let ns = u128::from(
            u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX),
        );
        let n = (ns * self.den).div_ceil(self.num);
        self.base_unit
            .saturating_add(u64::try_from(n).unwrap_or(u64::MAX))
    }

    /// Unit `k` is about to be sent at `now`: if it is more than `max_behind` units late,
    /// move the schedule so that it is exactly `max_behind` units late, and count a reset.
    pub(crate) fn limit_lag(&mut self, k: u64, now: Instant, max_behind: u64) {
        let Some(due) = self.due(k) else { return };
        let allowance = Duration::from_nanos(self.gap_ns().saturating_mul(max_behind));
        if now.saturating_duration_since(due) > allowance {
            self.base = now.checked_sub(allowance).unwrap_or(now);
            self.base_unit = k;
            self.resets += 1;
        }
    }

    /// How often [`Schedule::limit_lag`] moved the schedule.
    pub(crate) fn resets(&self) -> u64 {
        self.resets
    }
}

/// Longest single sleep while waiting, so that `stop` is looked at often.
const MAX_SLEEP: Duration = Duration::from_millis(20);

/// Sleep until `t`, spinning the last `spin` of the wait; returns false as soon as `stop()`
/// says so (checked at least every 20 ms), true once `t` has come.
pub(crate) fn wait_until(t: Instant, spin: Duration, stop: &dyn Fn() -> bool) -> bool {
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        let left = t - now;
        if left > spin {
            thread::sleep((left - spin).min(MAX_SLEEP));
        } else {
            // Spin, not yield: a yield hands a busy CPU to another thread for a whole time
            // slice (milliseconds), far past the due time.
            std::hint::spin_loop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn due_times_are_exact_and_do_not_drift() {
        let t0 = Instant::now();
        // 1400-byte datagrams at 1 Mbit/s: 11.2 ms apart.
        let s = Schedule::bits(t0, 1_000_000, 1400 * 8);
        assert_eq!(s.gap_ns(), 11_200_000);
        assert_eq!(s.due(0), Some(t0));
        assert_eq!(s.due(1_000_000), Some(t0 + Duration::from_secs(11_200)));
        // 3 per second: 333_333_333.33 ns apart, exact at every third unit.
        let r = Schedule::per_second(t0, 3);
        assert_eq!(r.due(3), Some(t0 + Duration::from_secs(1)));
        assert_eq!(r.due(3_000_000), Some(t0 + Duration::from_secs(1_000_000)));
        assert_eq!(r.units_before(t0), 0);
        assert_eq!(r.units_before(t0 + Duration::from_nanos(1)), 1);
        assert_eq!(r.units_before(t0 + Duration::from_secs(1)), 3);
        assert_eq!(r.units_before(t0 + Duration::from_millis(1001)), 4);
        // A byte schedule: 8 Gbit/s is one byte per ns.
        let b = Schedule::bits(t0, 8_000_000_000, 8);
        assert_eq!(b.due(1_000), Some(t0 + Duration::from_micros(1)));
    }

    #[test]
    fn a_late_sender_is_held_to_its_allowance() {
        let t0 = Instant::now();
        let mut s = Schedule::per_second(t0, 1000); // 1 ms gap
        let now = t0 + Duration::from_millis(100);
        s.limit_lag(10, now, 8); // due at 10 ms, 90 ms late
        assert_eq!(s.resets(), 1);
        assert_eq!(s.due(10), Some(now - Duration::from_millis(8)));
        assert_eq!(s.due(18), Some(now));
        s.limit_lag(11, now, 8); // 7 ms late now: within the allowance
        assert_eq!(s.resets(), 1);
    }

    #[test]
    fn wait_until_stops_early() {
        let t = Instant::now() + Duration::from_secs(60);
        assert!(!wait_until(t, Duration::ZERO, &|| true));
        assert!(wait_until(
            Instant::now(),
            Duration::from_micros(50),
            &|| false
        ));
    }
}
