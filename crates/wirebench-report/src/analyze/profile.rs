//! A profile's categories per unit of work: CPU ns per KB delivered (stream and UDP tests)
//! or per transaction (request/response tests).
//!
//! Definitions: a category's `cpu_ns` (see [`ProfileReport`]) divided by the payload the
//! end delivered over the same window in units of 1 KB = 1000 bytes, or by the transactions
//! it completed. The idle category is reported like the others (its "cost" is the headroom
//! left per unit of work). With no payload or no transaction, the figure is `None`.

use wirebench_model::profile::{ProfileCategory, ProfileReport};

/// The work a profile's window delivered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivered {
    /// Payload bytes moved by this end over the window.
    PayloadBytes(u64),
    /// Transactions completed over the window.
    Transactions(u64),
}

/// One category's cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CategoryCost {
    /// The category.
    pub category: ProfileCategory,
    /// Its share of the window's CPU time, %.
    pub pct: f64,
    /// Its CPU time, ns.
    pub cpu_ns: u64,
    /// CPU ns per KB (1000 bytes) delivered, for [`Delivered::PayloadBytes`].
    pub cpu_ns_per_kb: Option<f64>,
    /// CPU ns per transaction, for [`Delivered::Transactions`].
    pub cpu_ns_per_transaction: Option<f64>,
}

/// CPU ns per KB (1000 bytes) of payload; `None` without payload.
pub fn cpu_ns_per_kb(cpu_ns: u64, payload_bytes: u64) -> Option<f64> {
    (payload_bytes > 0).then(|| cpu_ns as f64 * 1000.0 / payload_bytes as f64)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_answers() {
        // 2 ms of copy for 4 MB delivered: 2e6 ns / 4000 KB = 500 ns/KB.
        assert_eq!(cpu_ns_per_kb(2_000_000, 4_000_000), Some(500.0));
        assert_eq!(cpu_ns_per_kb(5, 0), None);
        // 3 ms over 1500 transactions: 2000 ns each.
        assert_eq!(cpu_ns_per_transaction(3_000_000, 1500), Some(2000.0));
        assert_eq!(cpu_ns_per_transaction(1, 0), None);
    }
}
