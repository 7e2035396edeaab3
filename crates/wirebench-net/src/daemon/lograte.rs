//! Rate-limited logging of refused connections: at most [`LogLimiter::PER_SECOND`] lines a
//! second, the rest counted and summarised. Peer-supplied text never reaches these lines
//! unescaped.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use super::{RefusalReason, State};

/// At most [`LogLimiter::PER_SECOND`] lines a second about refused connections; the rest are
/// counted and summarised.
pub(super) struct LogLimiter {
    window: Option<Instant>,
    shown: u32,
    suppressed: u64,
}

impl LogLimiter {
    const PER_SECOND: u32 = 5;

    /// True if this line may be logged now.
    pub(super) fn allow(&mut self, now: Instant) -> bool {
        let fresh = self
            .window
            .is_none_or(|w| now.saturating_duration_since(w) >= Duration::from_secs(1));
        if fresh {
            if self.suppressed > 0 {
                tracing::info!(
                    "{} similar messages about refused connections suppressed",
                    self.suppressed
                );
            }
            self.window = Some(now);
            self.shown = 0;
            self.suppressed = 0;
        }
        if self.shown < Self::PER_SECOND {
            self.shown += 1;
            true
        } else {
            self.suppressed += 1;
            false
        }
    }
}

impl LogLimiter {
    /// A limiter that has logged nothing yet.
    pub(super) fn new() -> LogLimiter {
        LogLimiter {
            window: None,
            shown: 0,
            suppressed: 0,
        }
    }
}

/// Log `what` about `peer`, unless the limiter says there were enough such lines this second.
pub(super) fn log_refused(state: &State, peer: SocketAddr, what: &str) {
    log_refused_as(state, peer, RefusalReason::Protocol, what);
}

/// [`log_refused`] for a refusal counted under `why`.
pub(super) fn log_refused_as(state: &State, peer: SocketAddr, why: RefusalReason, what: &str) {
    state.refusals.count(why);
    if state
        .log_limiter
        .lock()
        .map(|mut l| l.allow(Instant::now()))
        .unwrap_or(false)
    {
        tracing::info!(%peer, "{what}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_lines_a_second_then_quiet() {
        let mut l = LogLimiter::new();
        let t0 = Instant::now();
        let allowed = (0..20).filter(|_| l.allow(t0)).count();
        assert_eq!(allowed, LogLimiter::PER_SECOND as usize);
        assert_eq!(l.suppressed, 15);
        // A second later the window starts again (and the summary resets the count).
        assert!(l.allow(t0 + Duration::from_millis(1000)));
        assert_eq!(l.suppressed, 0);
        assert_eq!(l.shown, 1);
    }
}
