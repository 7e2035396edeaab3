//! [`Abort`]: the flag every data thread polls, the reason the first abort gave, and the
//! peer-finished hint servers use to end their wind-down early.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use wirebench_model::abort::AbortReason;

/// Stops a running engine early. The first reason given wins; later ones are ignored.
#[derive(Debug, Default)]
pub struct Abort {
    flag: AtomicBool,
    reason: Mutex<Option<AbortReason>>,
    /// The peer reported its results: it sends nothing more (not an abort).
    peer_finished: AtomicBool,
}

impl Abort {
    /// A handle that has not fired.
    pub fn new() -> Abort {
        Abort::default()
    }

    /// Stop the run for `reason` (flows notice within their poll period, about 100 ms).
    pub fn abort(&self, reason: AbortReason) {
        if let Ok(mut r) = self.reason.lock() {
            r.get_or_insert(reason);
        }
        self.flag.store(true, Ordering::Release);
    }

    /// True once [`Abort::abort`] was called.
    pub fn is_set(&self) -> bool {
        self.flag.load(Ordering::Relaxed)
    }

    /// The peer has finished and reported its results, so it sends nothing more on the data
    /// connections. Not an abort: a server that ends on idleness after its stop instant
    /// (CRR, UDP request/response) may end as soon as what already arrived is served.
    pub fn peer_finished(&self) {
        self.peer_finished.store(true, Ordering::Release);
    }

    /// True once [`Abort::peer_finished`] was called.
    pub fn is_peer_finished(&self) -> bool {
        self.peer_finished.load(Ordering::Acquire)
    }

    /// The reason of the first abort, if there was one.
    pub fn reason(&self) -> Option<AbortReason> {
        if !self.is_set() {
            return None;
        }
        let r = self.reason.lock().ok().and_then(|r| r.clone());
        Some(r.unwrap_or(AbortReason::Unspecified))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_reason_wins() {
        let a = Abort::new();
        assert!(!a.is_set());
        assert_eq!(a.reason(), None);
        a.abort(AbortReason::Interrupted);
        a.abort(AbortReason::ServerShutdown);
        assert!(a.is_set());
        assert_eq!(a.reason(), Some(AbortReason::Interrupted));
    }
}
