//! Why the daemon turned connections and tests away, counted per reason (`serve --metrics`
//! exports them). The reasons are a closed set, so the counters are bounded.

use std::collections::HashMap;
use std::sync::Mutex;

use wirebench_model::validate::LimitName;
use wirebench_proto::message::BusyScope;

/// Why a connection or a test was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RefusalReason {
    /// A connection over one of the server's connection limits.
    Limit(LimitName),
    /// A test answered `busy`: the server runs as many tests as it allows.
    BusyServer,
    /// A test answered `busy`: this peer runs as many tests as one peer may.
    BusyPeer,
    /// The client failed authentication.
    Authentication,
    /// A connection that broke the protocol, or left before its handshake or admission
    /// (malformed, silent, evicted, unknown token).
    Protocol,
}

impl RefusalReason {
    /// The reason as a metric label value: the limit's name (`max_connections`), or
    /// `busy_server`, `busy_peer`, `authentication`, `protocol`.
    pub fn label(self) -> String {
        match self {
            RefusalReason::Limit(l) => serde_json::to_value(l)
                .ok()
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "limit".into()),
            RefusalReason::BusyServer => "busy_server".into(),
            RefusalReason::BusyPeer => "busy_peer".into(),
            RefusalReason::Authentication => "authentication".into(),
            RefusalReason::Protocol => "protocol".into(),
        }
    }

    pub(super) fn of_busy(scope: BusyScope) -> RefusalReason {
        match scope {
            BusyScope::Server => RefusalReason::BusyServer,
            BusyScope::Peer => RefusalReason::BusyPeer,
        }
    }
}

/// The counters.
#[derive(Debug, Default)]
pub(super) struct Refusals(Mutex<HashMap<RefusalReason, u64>>);

impl Refusals {
    pub(super) fn count(&self, why: RefusalReason) {
        if let Ok(mut m) = self.0.lock() {
            *m.entry(why).or_insert(0) += 1;
        }
    }

    /// Every reason counted so far with its count, by label.
    pub(super) fn snapshot(&self) -> Vec<(RefusalReason, u64)> {
        let mut v: Vec<_> = self
            .0
            .lock()
            .map(|m| m.iter().map(|(k, n)| (*k, *n)).collect())
            .unwrap_or_default();
        v.sort_by_key(|(k, _)| k.label());
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_are_counted_and_labelled() {
        let r = Refusals::default();
        r.count(RefusalReason::Limit(LimitName::MaxConnections));
        r.count(RefusalReason::of_busy(BusyScope::Peer));
        r.count(RefusalReason::of_busy(BusyScope::Peer));
        let s = r.snapshot();
        assert_eq!(
            s,
            vec![
                (RefusalReason::BusyPeer, 2),
                (RefusalReason::Limit(LimitName::MaxConnections), 1)
            ]
        );
        assert_eq!(s[0].0.label(), "busy_peer");
        assert_eq!(s[1].0.label(), "max_connections");
    }
}
