//! Each end's profile per unit of work: a category's CPU ns per KB delivered (stream and
//! UDP tests) or per transaction (request/response tests).
//!
//! Definitions: a category's `cpu_ns` (see [`ProfileReport`]) divided by what the test
//! delivered over the window, the same denominators as the CPU service demand
//! ([`crate::cpu`]): the receivers' window bytes over all directions in KB
//! (1024 bytes, netperf's unit), or the client's window transactions. The idle category is
//! reported like the others (its "cost" is the headroom left per unit of work). With no
//! payload or no transaction, the figure is `None`.

use wirebench_model::profile::{CategoryCost, EndProfile, ProfileReport};
use wirebench_model::side::{HostRole, SideReport};

/// The work a profile's window delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// Payload bytes delivered over the window (Σ receiver window bytes).
    PayloadBytes(u64),
    /// Transactions completed over the window.
    Transactions(u64),
}

/// CPU ns per KB (1024 bytes) of payload; `None` without payload.
pub fn cpu_ns_per_kb(cpu_ns: u64, payload_bytes: u64) -> Option<f64> {
    (payload_bytes > 0).then(|| cpu_ns as f64 * 1024.0 / payload_bytes as f64)
}

/// CPU ns per transaction; `None` without transactions.
pub fn cpu_ns_per_transaction(cpu_ns: u64, transactions: u64) -> Option<f64> {
    (transactions > 0).then(|| cpu_ns as f64 / transactions as f64)
}

/// Every category of `report` with its cost per unit of `delivered`, in report order.
pub fn category_costs(report: &ProfileReport, delivered: Delivered) -> Vec<CategoryCost> {
    report
        .categories
        .iter()
        .map(|c| {
            let (per_kb, per_tx) = match delivered {
                Delivered::PayloadBytes(b) => (cpu_ns_per_kb(c.cpu_ns, b), None),
                Delivered::Transactions(t) => (None, cpu_ns_per_transaction(c.cpu_ns, t)),
            };
            CategoryCost {
                category: c.category,
                pct: c.pct,
                cpu_ns: c.cpu_ns,
                cpu_ns_per_kb: per_kb,
                cpu_ns_per_transaction: per_tx,
            }
        })
        .collect()
}

/// The profiles of the ends that took one, client first.
pub(crate) fn ends(reports: &[(HostRole, &SideReport)], delivered: Delivered) -> Vec<EndProfile> {
    reports
        .iter()
        .filter_map(|(host, r)| {
            r.profile.as_ref().map(|p| EndProfile {
                host: *host,
                categories: category_costs(p, delivered),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // 2 ms of copy for 4 MiB delivered: 2e6 ns / 4096 KB = 488.28125 ns/KB.
        assert_eq!(cpu_ns_per_kb(2_000_000, 4 << 20), Some(488.281_25));
        assert_eq!(cpu_ns_per_kb(5, 0), None);
        // 3 ms over 1500 transactions: 2000 ns each.
        assert_eq!(cpu_ns_per_transaction(3_000_000, 1500), Some(2000.0));
        assert_eq!(cpu_ns_per_transaction(1, 0), None);
    }
}
