//! Rule 3 of the verdict: a stream run against this machine's limits (`wirebench limits`,
//! cached for this boot). A run above 100 % of a limit is evidence that the limit's figure
//! was measured low (under load, say), never that the limit held the run back.

use wirebench_model::limits::LimitsResult;
use wirebench_model::result::RunResult;
use wirebench_model::verdict::{CeilingReading, Evidence, Limiter, Missing, Suggestion, Verdict};

use super::{COPY_LIMIT_PCT, LOOPBACK_CEILING_PCT};

/// Above this share of a machine limit the run exceeded it: the limit's figure was measured
/// low, and it is not the limit, percent.
pub const LIMIT_EXCEEDED_PCT: f64 = 100.0;

/// How a run at `pct` % of a limit reads against it, with the band's lower edge `from_pct`.
fn reading(pct: f64, from_pct: f64, comparable: bool) -> CeilingReading {
    if !comparable {
        CeilingReading::NotComparable
    } else if pct > LIMIT_EXCEEDED_PCT {
        CeilingReading::MeasuredLow
    } else if pct >= from_pct {
        CeilingReading::Reached
    } else {
        CeilingReading::Below
    }
}

/// Puts each stream run's verdict against this machine's limits (`wirebench limits`,
/// cached for this boot; rule 3 of the module docs). With `limits`, every run gets the
/// evidence of when and under what load they were measured, the copy-bandwidth evidence
/// (from the result's `physical` context: its copies per byte and copy bandwidth, this
/// run's payload) and, when both ends shared one kernel, the loopback-ceiling evidence; a
/// limiter found after rule 3 (a CPU, a busy host, idle senders, loss, or none) gives way to
/// the machine's limit when one is reached (and not exceeded). A limit the run exceeded
/// adds the suggestion to measure the limits again. Without `limits` the verdicts list them
/// missing.
pub fn machine_limits(result: &mut RunResult, limits: Option<&LimitsResult>) {
    let physical = result.physical.clone();
    for run in &mut result.runs {
        let Some(summary) = run.summary.as_mut() else {
            continue;
        };
        let Some(stream) = summary.stream() else {
            continue;
        };
        let throughput_bps: f64 = stream
            .directions
            .iter()
            .map(|d| d.receiver_throughput_bps)
            .sum();
        let same_host = summary.same_host;
        let congestion = summary.congestion.first().cloned();
        let profiled = !summary.profiles.is_empty();
        let Some(v) = summary.verdict.as_mut() else {
            continue;
        };
        let Some(limits) = limits else {
            if !v.missing.contains(&Missing::Limits) {
                v.missing.push(Missing::Limits);
            }
            continue;
        };
        v.evidence.push(Evidence::LimitsMeasured {
            started_utc: limits.started_utc.clone(),
            load_average_1m: limits.load_average_1m,
            other_busy_pct: limits.load.as_ref().map(|l| l.other_busy_pct),
            busy: limits.load.as_ref().is_some_and(|l| l.busy),
        });
        let mut reached = None;
        let mut exceeded = false;
        if let Some(p) = physical.as_ref().filter(|p| p.copy_bytes_per_s > 0.0) {
            let payload = throughput_bps / 8.0;
            let copied = payload * p.copies_per_byte;
            let pct = copied / p.copy_bytes_per_s * 100.0;
            let r = reading(pct, COPY_LIMIT_PCT, true);
            let limiting = r == CeilingReading::Reached;
            exceeded |= r == CeilingReading::MeasuredLow;
            v.evidence.push(Evidence::CopyBandwidth {
                payload_bytes_per_s: payload,
                copies_per_byte: p.copies_per_byte,
                copy_bytes_per_s: p.copy_bytes_per_s,
                buffer_bytes: p.buffer_bytes,
                copy_threads: p.copy_threads,
                copy_bandwidth_pct: pct,
                limiting,
                reading: Some(r),
            });
            if limiting {
                reached = Some(Limiter::CopyBandwidth {
                    copied_bytes_per_s: copied,
                    copy_bytes_per_s: p.copy_bytes_per_s,
                    copy_bandwidth_pct: pct,
                });
            }
        }
        let ceiling = limits
            .loopback
            .as_ref()
            .filter(|c| same_host && c.throughput_bps > 0.0);
        if let Some(ceiling) = ceiling {
            let pct = throughput_bps / ceiling.throughput_bps * 100.0;
            let same_cc = match (&ceiling.congestion, &congestion) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            };
            let r = reading(pct, LOOPBACK_CEILING_PCT, same_cc);
            let limiting = r == CeilingReading::Reached;
            exceeded |= r == CeilingReading::MeasuredLow;
            v.evidence.push(Evidence::LoopbackCeiling {
                throughput_bps,
                ceiling_bps: ceiling.throughput_bps,
                ceiling_pct: pct,
                ceiling_congestion: ceiling.congestion.clone(),
                congestion: congestion.clone(),
                limiting,
                reading: Some(r),
            });
            if limiting && reached.is_none() {
                reached = Some(Limiter::LoopbackCeiling {
                    throughput_bps,
                    ceiling_bps: ceiling.throughput_bps,
                    ceiling_pct: pct,
                });
            }
        }
        apply(v, reached, exceeded, profiled);
    }
}

/// Names a reached machine limit in place of a limiter found after rule 3, and asks for the
/// limits again when the run exceeded one.
fn apply(v: &mut Verdict, reached: Option<Limiter>, exceeded: bool, profiled: bool) {
    let after_rule_3 = matches!(
        v.limiter,
        Limiter::Cpu { .. }
            | Limiter::BusyHost { .. }
            | Limiter::HostSteal { .. }
            | Limiter::SenderIdle { .. }
            | Limiter::Loss { .. }
            | Limiter::Undetermined
    );
    if let Some(l) = reached.filter(|_| after_rule_3) {
        v.limiter = l;
        v.suggestions = [
            Suggestion::ZeroCopy,
            Suggestion::Profile,
            Suggestion::MoreFlows,
        ]
        .into_iter()
        .filter(|s| !(profiled && *s == Suggestion::Profile))
        .collect();
    }
    if exceeded && !v.suggestions.contains(&Suggestion::RefreshLimits) {
        v.suggestions.push(Suggestion::RefreshLimits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A run above 100 % of a limit exceeded it: the figure is low, never the limit; the
    /// band below is the limit, under it not.
    #[test]
    fn a_limit_the_run_exceeded_is_never_the_limit() {
        assert_eq!(reading(147.0, 75.0, true), CeilingReading::MeasuredLow);
        assert_eq!(reading(100.5, 90.0, true), CeilingReading::MeasuredLow);
        assert_eq!(reading(100.0, 90.0, true), CeilingReading::Reached);
        assert_eq!(reading(80.0, 75.0, true), CeilingReading::Reached);
        assert_eq!(reading(70.0, 75.0, true), CeilingReading::Below);
        assert_eq!(reading(95.0, 90.0, false), CeilingReading::NotComparable);
        let mut v = Verdict {
            limiter: Limiter::Undetermined,
            evidence: Vec::new(),
            suggestions: Vec::new(),
            missing: Vec::new(),
        };
        apply(&mut v, None, true, false);
        assert_eq!(v.limiter, Limiter::Undetermined);
        assert_eq!(v.suggestions, vec![Suggestion::RefreshLimits]);
    }
}
