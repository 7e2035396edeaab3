//! Whether a stream's rate held over the run.
//!
//! From the interval rows measured at the receiving end of a direction: the intervals after
//! the warm-up, without the first of them (it holds the ramp-up: slow start, buffer
//! autotuning, connection setup of many flows) and without any interval shorter than
//! [`FULL_INTERVAL_SHARE`] of the median length (the last one, cut by the stop). With at least
//! [`MIN_INTERVALS`] of them, when the slowest moved at most 1/[`RATE_VARIED_RATIO`] of what
//! the fastest moved, the direction gets a [`Warning::RateVaried`]: its total is an average
//! over different states of the path or of the machine, and one run of it is not
//! representative. (On a VM, for example, the host's placement of the two vCPUs can change
//! how fast bytes cross from one to the other several-fold, for seconds at a time.)

use wirebench_model::result::IntervalRow;
use wirebench_model::spec::FlowDir;
use wirebench_model::warning::Warning;
use wirebench_stats::summary::spread;

/// Fastest over slowest interval rate at or above which the rate counts as varied.
pub const RATE_VARIED_RATIO: f64 = 2.0;

/// Fewest full intervals the check needs.
pub const MIN_INTERVALS: usize = 4;

/// Share of the median interval length below which an interval is left out (partial).
pub const FULL_INTERVAL_SHARE: f64 = 0.75;

/// The warning for `dir`, if its receivers' interval rates in `rows` varied (see the module
/// documentation); rows of other directions are ignored.
pub(crate) fn rate_varied(dir: FlowDir, rows: &[IntervalRow]) -> Option<Warning> {
    let mut mine: Vec<&IntervalRow> = rows
        .iter()
        .filter(|r| r.dir == dir && !r.in_warmup)
        .collect();
    mine.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
    let after_ramp = mine.get(1..)?;
    let lengths: Vec<f64> = after_ramp.iter().map(|r| r.end_s - r.start_s).collect();
    let median_len = spread(&lengths)?.median;
    let rates: Vec<f64> = after_ramp
        .iter()
        .filter(|r| r.end_s - r.start_s >= FULL_INTERVAL_SHARE * median_len)
        .map(|r| r.throughput_bps)
        .collect();
    if rates.len() < MIN_INTERVALS || median_len <= 0.0 {
        return None;
    }
    let s = spread(&rates)?;
    (s.max > 0.0 && s.min * RATE_VARIED_RATIO <= s.max).then_some(Warning::RateVaried {
        dir,
        intervals: s.n,
        interval_s: median_len,
        min_bps: s.min,
        median_bps: s.median,
        max_bps: s.max,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use wirebench_model::side::HostRole;

    fn rows(rates_mbps: &[f64], len_s: f64) -> Vec<IntervalRow> {
        rates_mbps
            .iter()
            .enumerate()
            .map(|(i, &r)| IntervalRow {
                start_s: i as f64 * len_s,
                end_s: (i + 1) as f64 * len_s,
                host: HostRole::Server,
                dir: FlowDir::ClientToServer,
                bytes: (r * 1e6 * len_s / 8.0) as u64,
                throughput_bps: r * 1e6,
                in_warmup: false,
            })
            .collect()
    }

    const FWD: FlowDir = FlowDir::ClientToServer;

    #[test]
    fn a_halved_rate_is_named_with_its_extremes() {
        let w = rate_varied(
            FWD,
            &rows(&[10.0, 200.0, 200.0, 190.0, 50.0, 48.0, 52.0], 0.5),
        );
        match w {
            Some(Warning::RateVaried {
                dir,
                intervals,
                interval_s,
                min_bps,
                median_bps,
                max_bps,
            }) => {
                assert_eq!(dir, FWD);
                assert_eq!(intervals, 6, "the ramp-up interval is left out");
                assert_eq!(interval_s, 0.5);
                assert_eq!(min_bps, 48e6);
                assert_eq!(median_bps, 121e6);
                assert_eq!(max_bps, 200e6);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_steady_rate_a_slow_first_interval_or_too_few_intervals_is_not() {
        assert_eq!(
            rate_varied(FWD, &rows(&[100.0, 95.0, 105.0, 99.0, 101.0], 1.0)),
            None
        );
        // Only the ramp-up is slow.
        assert_eq!(
            rate_varied(FWD, &rows(&[5.0, 95.0, 105.0, 99.0, 101.0], 1.0)),
            None
        );
        // Below the ratio: 1.9x.
        assert_eq!(
            rate_varied(FWD, &rows(&[100.0, 100.0, 190.0, 100.0, 100.0], 1.0)),
            None
        );
        // Three full intervals after the ramp-up are not enough.
        assert_eq!(
            rate_varied(FWD, &rows(&[100.0, 100.0, 20.0, 100.0], 1.0)),
            None
        );
        // The other direction's rows are not this one's.
        assert_eq!(
            rate_varied(
                FlowDir::ServerToClient,
                &rows(&[1.0, 100.0, 10.0, 100.0, 9.0], 1.0)
            ),
            None
        );
    }

    #[test]
    fn warm_up_and_partial_intervals_are_left_out() {
        let mut r = rows(&[1.0, 1.0, 100.0, 100.0, 100.0, 100.0, 100.0], 1.0);
        r[0].in_warmup = true;
        // A last interval of 0.1 s that caught only a few bytes.
        r.push(IntervalRow {
            start_s: 7.0,
            end_s: 7.1,
            throughput_bps: 1e6,
            ..r[6].clone()
        });
        assert_eq!(rate_varied(FWD, &r), None);
        // A stall (0 bytes) in a full interval is the extreme case.
        r[4].throughput_bps = 0.0;
        assert!(matches!(
            rate_varied(FWD, &r),
            Some(Warning::RateVaried { min_bps, .. }) if min_bps == 0.0
        ));
    }
}
