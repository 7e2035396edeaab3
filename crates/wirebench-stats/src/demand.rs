//! Service demand: CPU time spent per unit of work, netperf's definition.
//!
//! Service demand normalizes CPU cost by the work done, so runs at different throughputs
//! (or on machines with different CPU counts) can be compared: a lower value means less CPU
//! per byte or per transaction.
//!
//! With `busy` the utilization of the whole machine in percent (100 = every CPU busy the
//! whole window, as in [`SystemCpuUtil::total`](crate::cpu::SystemCpuUtil)) and `cpus` the
//! number of CPUs it covers, the machine spends
//!
//! ```text
//! cpu_us_per_s = busy / 100 × cpus × 1 000 000     [CPU µs per wall-clock second]
//! ```
//!
//! and the service demand is that divided by the work rate:
//!
//! ```text
//! µs/KB  = cpu_us_per_s / (throughput_bps / 8 / 1024)   (KB = 1024 bytes)
//! µs/Tr  = cpu_us_per_s / transactions_per_s
//! ```
//!
//! The `_from_cpu_ns` variants take CPU time measured directly (e.g. the CPU time of the
//! benchmark's own threads) instead of a utilization.

/// Bytes per KB in service demand (netperf uses 1024).
pub const BYTES_PER_KB: f64 = 1024.0;

/// CPU microseconds spent per wall-clock second by `cpus` CPUs that are `busy_pct_all_cpus`
/// percent busy on average: `busy_pct_all_cpus / 100 × cpus × 1e6`.
///
/// `None` if `busy_pct_all_cpus` is negative or not finite.
pub fn cpu_us_per_s(busy_pct_all_cpus: f64, cpus: u32) -> Option<f64> {
    if !busy_pct_all_cpus.is_finite() || busy_pct_all_cpus < 0.0 {
        return None;
    }
    finite(busy_pct_all_cpus / 100.0 * f64::from(cpus) * 1e6)
}

/// Service demand in CPU microseconds per KB (1024 bytes) transferred:
///
/// ```text
/// (busy_pct_all_cpus / 100 × cpus × 1e6 µs/s) / (throughput_bps / 8 / 1024 KB/s)
/// ```
///
/// `busy_pct_all_cpus` is the utilization of all CPUs together
/// ([`SystemCpuUtil::total`](crate::cpu::SystemCpuUtil)`.busy_pct`, 100 = all busy) and
/// `cpus` how many CPUs it covers. Example: 50 % of 2 CPUs at 8 Gbit/s is
/// 1e6 µs/s / 976 562.5 KB/s = 1.024 µs/KB.
///
/// `None` if `throughput_bps` ≤ 0, `busy_pct_all_cpus` < 0, or an input or the result is
/// not finite.
pub fn us_per_kb(busy_pct_all_cpus: f64, cpus: u32, throughput_bps: f64) -> Option<f64> {
    let us = cpu_us_per_s(busy_pct_all_cpus, cpus)?;
    if !throughput_bps.is_finite() || throughput_bps <= 0.0 {
        return None;
    }
    finite(us / (throughput_bps / 8.0 / BYTES_PER_KB))
}

/// Service demand in CPU microseconds per KB (1024 bytes) from CPU time measured directly:
/// `(cpu_ns / 1000) / (bytes / 1024)`.
///
/// `None` if `bytes` is 0.
pub fn us_per_kb_from_cpu_ns(cpu_ns: u64, bytes: u64) -> Option<f64> {
    if bytes == 0 {
        return None;
    }
    finite((cpu_ns as f64 / 1000.0) / (bytes as f64 / BYTES_PER_KB))
}

/// Service demand in CPU microseconds per transaction (request/response round trip):
///
/// ```text
/// (busy_pct_all_cpus / 100 × cpus × 1e6 µs/s) / transactions_per_s
/// ```
///
/// `None` if `transactions_per_s` ≤ 0, `busy_pct_all_cpus` < 0, or an input or the result
/// is not finite.
pub fn us_per_transaction(
    busy_pct_all_cpus: f64,
    cpus: u32,
    transactions_per_s: f64,
) -> Option<f64> {
    let us = cpu_us_per_s(busy_pct_all_cpus, cpus)?;
    if !transactions_per_s.is_finite() || transactions_per_s <= 0.0 {
        return None;
    }
    finite(us / transactions_per_s)
}

/// Service demand in CPU microseconds per transaction from CPU time measured directly:
/// `(cpu_ns / 1000) / transactions`.
///
/// `None` if `transactions` is 0.
pub fn us_per_transaction_from_cpu_ns(cpu_ns: u64, transactions: u64) -> Option<f64> {
    if transactions == 0 {
        return None;
    }
    finite((cpu_ns as f64 / 1000.0) / transactions as f64)
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn netperf_example_half_of_two_cpus_at_8_gbit() {
        // 0.5 × 2 × 1e6 = 1e6 µs/s; 8e9 / 8 / 1024 = 976 562.5 KB/s.
        let d = us_per_kb(50.0, 2, 8e9).unwrap();
        assert!(close(d, 1.024), "{d}");
    }

    #[test]
    fn one_cpu_fully_busy_at_one_kb_per_second() {
        // 1e6 µs/s of CPU for 1 KB/s = 1e6 µs/KB.
        assert!(close(us_per_kb(100.0, 1, 8.0 * 1024.0).unwrap(), 1e6));
    }

    #[test]
    fn us_per_kb_rejects_bad_inputs() {
        assert_eq!(us_per_kb(50.0, 2, 0.0), None);
        assert_eq!(us_per_kb(50.0, 2, -1.0), None);
        assert_eq!(us_per_kb(50.0, 2, f64::NAN), None);
        assert_eq!(us_per_kb(50.0, 2, f64::INFINITY), None);
        assert_eq!(us_per_kb(f64::NAN, 2, 1e9), None);
        assert_eq!(us_per_kb(f64::INFINITY, 2, 1e9), None);
        assert_eq!(us_per_kb(-1.0, 2, 1e9), None);
        // Result overflow.
        assert_eq!(us_per_kb(100.0, u32::MAX, f64::MIN_POSITIVE), None);
        // Zero busy is a valid zero demand.
        assert_eq!(us_per_kb(0.0, 4, 1e9), Some(0.0));
    }

    #[test]
    fn from_cpu_ns() {
        // 1 ms of CPU for 1 MiB = 1000 µs / 1024 KB.
        let d = us_per_kb_from_cpu_ns(1_000_000, 1024 * 1024).unwrap();
        assert!(close(d, 1000.0 / 1024.0));
        assert_eq!(us_per_kb_from_cpu_ns(1_000_000, 0), None);
        assert_eq!(us_per_kb_from_cpu_ns(0, 10), Some(0.0));
        assert!(us_per_kb_from_cpu_ns(u64::MAX, 1).unwrap().is_finite());

        assert!(close(
            us_per_transaction_from_cpu_ns(5_000, 2).unwrap(),
            2.5
        ));
        assert_eq!(us_per_transaction_from_cpu_ns(5_000, 0), None);
    }

    #[test]
    fn per_transaction() {
        // 25 % of 4 CPUs = 1e6 µs/s; at 20 000 tx/s that is 50 µs/tx.
        assert!(close(us_per_transaction(25.0, 4, 20_000.0).unwrap(), 50.0));
        assert_eq!(us_per_transaction(25.0, 4, 0.0), None);
        assert_eq!(us_per_transaction(25.0, 4, -5.0), None);
        assert_eq!(us_per_transaction(25.0, 4, f64::NAN), None);
        assert_eq!(us_per_transaction(f64::NAN, 4, 1.0), None);
    }

    #[test]
    fn cpu_us_per_s_values() {
        assert_eq!(cpu_us_per_s(100.0, 8), Some(8e6));
        assert_eq!(cpu_us_per_s(0.0, 8), Some(0.0));
        assert_eq!(cpu_us_per_s(50.0, 0), Some(0.0));
        assert_eq!(cpu_us_per_s(-0.5, 8), None);
    }
}
