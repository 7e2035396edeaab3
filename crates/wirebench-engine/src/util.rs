//! Small helpers shared by the engines.

use std::io;
use std::thread;
use std::time::{Duration, Instant};

use crate::abort::Abort;

/// ns from `start` to `t` (0 if `t` is earlier; saturating at `u64::MAX`, after 584 years).
pub(crate) fn ns_since(start: Instant, t: Instant) -> u64 {
    u64::try_from(t.saturating_duration_since(start).as_nanos()).unwrap_or(u64::MAX)
}

/// A socket call that only timed out or was interrupted: try again (after looking at the
/// stop and abort flags).
pub(crate) fn is_timeout(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

/// Sleep until `t` or until `abort` is set (checked at least every 20 ms); false on abort.
pub(crate) fn sleep_until(t: Instant, abort: &Abort) -> bool {
    loop {
        if abort.is_set() {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        thread::sleep((t - now).min(Duration::from_millis(20)));
    }
}
